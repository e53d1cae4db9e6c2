"""`python -m autograder release`: idempotent, byte-reproducible, keeps cell ids, --check."""
import json
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

from autograder import paths  # noqa: E402
from autograder.instructor.release import release  # noqa: E402

TINY = ROOT / "tests" / "fixtures" / "autograder" / "solutions" / "tiny" / "tiny.ipynb"
pytestmark = pytest.mark.slow


@pytest.fixture
def course(tmp_path, monkeypatch):
    """A throwaway repository root whose exercises source is the tiny fixture (and no lab
    source: outside CI a missing source is skipped, so CI's own setting is cleared here)."""
    monkeypatch.delenv("CI", raising=False)
    aid = paths.EXERCISES
    dest = tmp_path / "solutions" / aid / f"{aid}.ipynb"
    dest.parent.mkdir(parents=True)
    shutil.copy(TINY, dest)
    return tmp_path


def test_release_is_idempotent_and_check_names_stale_files(course):
    lines = []
    assert release(root=course, out=lines.append) == 0
    student = paths.student_path(paths.EXERCISES, course)
    first = student.read_bytes()
    assert release(root=course, out=lines.append) == 0
    assert student.read_bytes() == first          # byte-reproducible
    assert release(check=True, root=course, out=lines.append) == 0
    student.write_text(first.decode().replace("YOUR CODE HERE", "edited by hand"))
    lines.clear()
    assert release(check=True, root=course, out=lines.append) == 1
    assert any("exercises/lecture-ReAct-exercises.ipynb" in line for line in lines)
    assert any("SKIPPED lecture-ReAct-lab" in line for line in lines)


def test_released_version_has_no_solutions_hidden_tests_or_outputs(course):
    release(root=course, out=lambda _: None)
    text = paths.student_path(paths.EXERCISES, course).read_text()
    nb = json.loads(text)
    src = json.loads(TINY.read_text())
    assert [c["id"] for c in nb["cells"]] == [c["id"] for c in src["cells"]]
    for banned in ("HIDDEN-LINE", "BEGIN HIDDEN", "return 2 * x", "SOLUTION-PROSE",
                   "BEGIN SOLUTION"):
        assert banned not in text
    assert "YOUR ANSWER HERE" in text and "raise NotImplementedError()" not in text
    # every stub names what to write: the function around it, or the one it must define
    assert "raise NotImplementedError('double: write this function (see the task above)')" in text
    assert "raise NotImplementedError('halve: write this function (see the task above)')" in text
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None
    assert text.startswith('{\n "cells": [\n  {') and text.endswith("}\n")


def test_in_ci_a_missing_source_notebook_is_a_failure(course, monkeypatch):
    release(root=course, out=lambda _: None)
    monkeypatch.setenv("CI", "true")
    lines = []
    assert release(check=True, root=course, out=lines.append) == 1
    assert any("missing source notebooks in CI" in line for line in lines)


def test_stub_source_names_the_function_or_the_variables():
    from autograder.run.engine import stub
    from autograder.cells import stub_message, stub_source

    lab = {"cell_type": "code", "metadata": {"nbgrader": {"solution": True, "grade_id": "f"}},
           "source": "def softmax(z):\n    \"\"\"doc\"\"\"\n    ### BEGIN SOLUTION\n    return z\n"
                     "    ### END SOLUTION"}
    out = stub_source(lab)
    assert "return z" not in out and out.startswith('def softmax(z):\n    """doc"""\n')
    assert "raise NotImplementedError('softmax: write this function (see the task above)')" in out
    import nbformat
    assert stub(nbformat.from_dict(lab)).source == out  # the grader's stub for a missing answer is the released one
    exercise = "# p = [...]\n### BEGIN SOLUTION\np_cold = [0.8]\np_hot, ratio = [0.5], 2.0\n### END SOLUTION"
    assert stub_message(exercise) == "set p_cold, p_hot, ratio (see the exercise above)"
    assert stub_message("no markers at all") == "write your answer here (see the task above)"
