"""Smoke test of scripts/benchmark_grading.py (two copies; no timing assertions)."""
import pytest

from autograder import paths

pytestmark = pytest.mark.slow


@pytest.mark.skipif(not paths.source_path(paths.EXERCISES).exists(),
                    reason="no exercises source notebook yet")
def test_benchmark_gives_identical_scores_to_nbgrader(capsys):
    from scripts import benchmark_grading
    assert benchmark_grading.main(["--n", "2", "--assignment", paths.EXERCISES]) == 0
    out = capsys.readouterr().out
    assert "scores identical on all" in out and ": True" in out
    assert "ratio:" in out
