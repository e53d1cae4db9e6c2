"""The grading engine on a tiny fixture assignment (tests/fixtures/autograder/)."""
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from autograder.engine import grade_notebook, load, merge, replace_cell  # noqa: E402

SRC = ROOT / "tests" / "fixtures" / "autograder" / "solutions" / "tiny" / "tiny.ipynb"
pytestmark = pytest.mark.slow


def grade(nb):
    return grade_notebook("tiny", nb, timeout=20, source=SRC)


def test_source_scores_full_marks_and_lists_manual_cells():
    r = grade(SRC)
    assert r.scores == {"test_double": (2.0, 2.0), "test_double__array": (1.0, 1.0),
                        "test_halve": (1.0, 1.0)}
    assert r.manual == {"explain": 1.0}
    assert r.errors == {} and r.failure is None
    assert (r.total, r.possible) == (4.0, 4.0)


def test_wrong_answer_loses_only_its_tests_with_the_first_error_line():
    nb = replace_cell(load(SRC), "double", "def double(x):\n    return x + 2\n")
    r = grade(nb)
    assert r.scores["test_double"] == (0.0, 2.0)
    assert r.scores["test_double__array"] == (0.0, 1.0)
    assert r.scores["test_halve"] == (1.0, 1.0)
    assert r.errors["test_double"].startswith("AssertionError: double(3) is wrong")


def test_stderr_in_a_test_cell_zeroes_it():
    nb = replace_cell(load(SRC), "halve",
                      "import sys\ndef halve(x):\n    print('warn', file=sys.stderr)\n"
                      "    return x / 2\n")
    r = grade(nb)
    assert r.scores["test_halve"] == (0.0, 1.0)
    assert r.errors["test_halve"].startswith("wrote to stderr")
    assert r.scores["test_double"] == (2.0, 2.0)


def test_merge_takes_only_answer_cells_and_keeps_stub_for_missing_ones():
    sub = load(SRC)
    for cell in sub.cells:
        if cell.id == "test_double":
            cell.source = "pass  # tests edited away"
    sub.cells = [c for c in sub.cells if c.id != "halve"]
    sub.cells.append(sub.cells[0].copy())
    merged = merge(load(SRC), sub)
    by_id = {c.id: c for c in merged.cells}
    assert [c.id for c in merged.cells] == [c.id for c in load(SRC).cells]
    assert "assert_close(double(3)" in by_id["test_double"].source
    assert "raise NotImplementedError" in by_id["halve"].source
    assert "return 2 * x" in by_id["double"].source


def test_answer_cell_of_the_wrong_type_keeps_the_stub():
    sub = load(SRC)
    for cell in sub.cells:
        if cell.id == "double":
            cell.cell_type = "markdown"
            cell.pop("outputs", None)
            cell.pop("execution_count", None)
    merged = merge(load(SRC), sub)
    assert "raise NotImplementedError" in [c for c in merged.cells if c.id == "double"][0].source


def test_stub_notebook_scores_zero():
    r = grade(merge(load(SRC), {"cells": []}))
    assert r.total == 0.0 and set(r.errors) == set(r.scores)


def test_blanked_test_cell_by_input_transformer_scores_zero():
    nb = replace_cell(load(SRC), "double",
                      "get_ipython().input_transformers_cleanup.append(lambda lines: [])\n"
                      "def double(x):\n    return 0\n")
    r = grade(nb)
    assert r.scores["test_double"] == (0.0, 2.0)
    # the guard removed the transformer before each test: the honest answer still counts
    assert r.scores["test_halve"] == (1.0, 1.0)


def test_malformed_notebook_scores_zero_with_a_reason(tmp_path):
    bad = tmp_path / "bad.ipynb"
    bad.write_text("{not json")
    r = grade(bad)
    assert r.total == 0.0 and r.failure.startswith("invalid notebook")


def test_replace_cell_unknown_grade_id():
    with pytest.raises(KeyError):
        replace_cell(load(SRC), "nope", "")


def test_a_cell_where_the_kernel_dies_scores_zero_even_after_printing_the_sentinel():
    # the answer finds the sentinel in the calling test's code, prints it, then kills the kernel
    cheat = ("import sys, os\n"
             "def double(x):\n"
             "    for const in sys._getframe(1).f_code.co_consts:\n"
             "        if isinstance(const, str) and const.startswith('LREACT-DONE-'):\n"
             "            print(const, flush=True)\n"
             "    sys.stdout.flush()\n"
             "    import time; time.sleep(0.5)\n"
             "    os._exit(0)\n")
    r = grade(replace_cell(load(SRC), "double", cheat))
    assert r.total == 0.0 and "kernel died" in r.failure
