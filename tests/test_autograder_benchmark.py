"""Smoke test of scripts/benchmark_grading.py (two copies; no timing assertions)."""
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT))

from autograder import paths  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.mark.skipif(not paths.source_path(paths.EXERCISES).exists(),
                    reason="no exercises source notebook yet")
def test_benchmark_gives_identical_scores_to_nbgrader(capsys):
    import benchmark_grading
    assert benchmark_grading.main(["--n", "2", "--assignment", paths.EXERCISES]) == 0
    out = capsys.readouterr().out
    assert "scores identical on all" in out and ": True" in out
    assert "ratio:" in out
