"""The grading engine on a tiny fixture assignment (tests/fixtures/autograder/)."""
from pathlib import Path

import pytest

from autograder import paths
from autograder.run.engine import grade_notebook, load, merge, replace_cell

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "tests" / "fixtures" / "autograder" / "solutions" / "tiny" / "tiny.ipynb"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def state(tmp_path_factory):
    return paths.State(tmp_path_factory.mktemp("state"))


def grade(nb, state, timeout=20):
    return grade_notebook("tiny", nb, timeout=timeout, source=SRC, state=state)


def test_source_scores_full_marks_and_lists_manual_cells(state):
    r = grade(SRC, state)
    assert r.scores == {"test_double": (2.0, 2.0), "test_double__array": (1.0, 1.0),
                        "test_halve": (1.0, 1.0)}
    assert r.manual == {"explain": 1.0}
    assert r.errors == {} and r.failure is None
    assert (r.total, r.possible) == (4.0, 4.0)
    assert r.answers_ran == {"double": True, "halve": True}


def test_wrong_answer_loses_only_its_tests_with_the_first_error_line(state):
    nb = replace_cell(load(SRC), "double", "def double(x):\n    return x + 2\n")
    r = grade(nb, state)
    assert r.scores["test_double"] == (0.0, 2.0)
    assert r.scores["test_double__array"] == (0.0, 1.0)
    assert r.scores["test_halve"] == (1.0, 1.0)
    assert r.errors["test_double"].startswith("AssertionError: double(3) is wrong")
    assert r.answers_ran["double"] is True


def test_an_answer_cell_that_raises_is_reported_as_not_run(state):
    nb = replace_cell(load(SRC), "halve", "def halve(x):\n    return x / 2\nraise ValueError('x')\n")
    r = grade(nb, state)
    assert r.answers_ran == {"double": True, "halve": False}
    assert r.scores["test_halve"] == (1.0, 1.0)     # the function was defined before the raise


def test_feedback_notebook_never_holds_hidden_tests_or_solutions(state):
    nb = replace_cell(load(SRC), "halve",
                      "print(In)\nprint(globals().keys())\ndef halve(x):\n    return x / 2\n")
    r = grade(nb, state)
    text = str(r.executed)
    assert "HIDDEN-LINE" not in text and "BEGIN HIDDEN TESTS" not in text
    assert r.scores["test_halve"] == (1.0, 1.0)
    test_cell = [c for c in r.executed.cells if c.get("id") == "test_double"][0]
    assert "assert_close(double(3), 6" in test_cell.source


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


def test_stub_notebook_scores_zero(state):
    r = grade(merge(load(SRC), {"cells": []}), state)
    assert r.total == 0.0 and set(r.errors) == set(r.scores)
    # the stub of double defines a function that raises; the stub of halve raises itself
    assert r.answers_ran == {"double": True, "halve": False}


def test_input_transformers_in_the_answers_cannot_touch_the_tests(state):
    nb = replace_cell(load(SRC), "double",
                      "get_ipython().input_transformers_cleanup.append(lambda lines: [])\n"
                      "def double(x):\n    return 0\n")
    r = grade(nb, state)
    assert r.scores["test_double"] == (0.0, 2.0)
    # the transformer blanks the student's own later cells, never a test cell
    assert r.scores["test_halve"] == (0.0, 1.0)


def test_malformed_notebook_scores_zero_with_a_reason(tmp_path, state):
    bad = tmp_path / "bad.ipynb"
    bad.write_text("{not json")
    r = grade(bad, state)
    assert r.total == 0.0 and r.failure.startswith("invalid notebook")


def test_replace_cell_unknown_grade_id():
    with pytest.raises(KeyError):
        replace_cell(load(SRC), "nope", "")


def test_an_answer_that_kills_its_process_scores_zero_for_what_needs_it(state):
    cheat = "import os\ndef double(x):\n    os._exit(0)\n"
    r = grade(replace_cell(load(SRC), "double", cheat), state)
    assert r.total == 0.0 and "ended" in r.failure
    assert "cannot be reached" in r.errors["test_halve"]


def test_an_answer_that_hangs_is_interrupted_at_the_time_limit_and_the_rest_still_runs(state):
    # as nbgrader does (it interrupts the kernel on a timeout): only the tests of the endless
    # function fail, the other answers are still graded
    nb = replace_cell(load(SRC), "double", "def double(x):\n    while True:\n        pass\n")
    r = grade(nb, state, timeout=3)
    assert r.scores["test_double"] == (0.0, 2.0)
    assert r.errors["test_double"].startswith("timeout") and "3 s" in r.errors["test_double"]
    assert "double did not finish within 3 s and was interrupted" in r.errors["test_double"]
    assert r.scores["test_halve"] == (1.0, 1.0) and r.failure is None


def test_an_answer_cell_that_hangs_is_interrupted_and_keeps_what_it_defined(state):
    nb = replace_cell(load(SRC), "double",
                      "def double(x):\n    return 2 * x\nimport time\nwhile True:\n    time.sleep(0.1)\n")
    r = grade(nb, state, timeout=3)
    assert r.answers_ran["double"] is False
    assert r.scores["test_double"] == (2.0, 2.0) and r.scores["test_halve"] == (1.0, 1.0)


def test_an_answer_that_ignores_the_interrupt_is_stopped(state):
    nb = replace_cell(load(SRC), "double",
                      "import signal\ndef double(x):\n    signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                      "    while True:\n        pass\n")
    r = grade(nb, state, timeout=3)
    assert r.scores["test_double"] == (0.0, 2.0)
    assert r.errors["test_double"].startswith("timeout")
    assert "3 s" in r.failure
    assert "cannot be reached" in r.errors["test_halve"]


def test_the_verdict_needs_the_test_to_run_to_its_end(state):
    # an answer that returns an object pretending to be anything gets plain data only
    cheat = ("class Anything(float):\n"
             "    def __eq__(self, other):\n        return True\n"
             "    def __sub__(self, other):\n        return 0.0\n"
             "    __rsub__ = __sub__\n"
             "def double(x):\n    return Anything(7.0)\n")
    r = grade(replace_cell(load(SRC), "double", cheat), state)
    assert r.scores["test_double"] == (0.0, 2.0)
