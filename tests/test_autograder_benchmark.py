"""Smoke test of scripts/benchmark_grading.py (two copies; no timing assertions, only that
both ratios are printed from times that were measured)."""
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
    assert "n = 2 submissions" in out
    # both ratios side by side, each from measured times: wall, and CPU time per core
    ratio = next(line for line in out.splitlines() if line.startswith("ratio:"))
    wall, per_core = (float(ratio.split(key)[1].split("x")[0]) for key in ("wall ", "per core "))
    assert wall > 0 and per_core > 0, ratio
    rows = [line.split() for line in out.splitlines()
            if line.startswith(("ours (", "nbgrader autograde"))]
    assert len(rows) == 2 and all(float(r[-2]) > 0 for r in rows), rows  # CPU seconds measured
