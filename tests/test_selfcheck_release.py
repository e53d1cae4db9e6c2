"""Selfcheck: the committed student versions are exactly what ``release`` generates."""
import pytest

from autograder.instructor.release import release

pytestmark = pytest.mark.selfcheck


def test_committed_student_versions_are_current():
    lines = []
    assert release(check=True, out=lines.append) == 0, "\n".join(lines)
