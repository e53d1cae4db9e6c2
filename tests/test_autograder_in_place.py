"""An answer's value changed in place reaches the tests, as it would in one kernel.

An outside review created ``first_failed_check = {}`` in one answer cell and filled it with
``first_failed_check.update(...)`` in Exercise 14's cell: stock ``nbgrader autograde`` gave the 8
Exercise 14 tests their 3 points, this grader none, because only names bound to a new object were
sent to the tests.  Now a cell's values are compared with what the tests last received
(``inside.student.StudentNamespace.changes``), and a test that reads an answer's global sees what a call of the
answer's functions changed (``inside.trusted_namespace.TrustedNamespace.watch_names``).
"""
from pathlib import Path

import pytest

from autograder.cells import grade_id
from autograder.run.engine import grade_notebook, load, replace_cell

ROOT = Path(__file__).resolve().parent.parent
EXERCISES = ROOT / "solutions" / "lecture-ReAct-exercises" / "lecture-ReAct-exercises.ipynb"
pytestmark = pytest.mark.slow


def _answer(nb, gid) -> str:
    cell = next(c for c in nb.cells if grade_id(c) == gid)
    return cell.source


def test_a_dict_created_early_and_filled_in_a_later_cell_earns_its_points():
    nb = load(EXERCISES)
    filled = _answer(nb, "ex14_validation").replace("first_failed_check = {",
                                                    "first_failed_check.update({")
    filled = filled.rstrip().rsplit("}", 1)[0] + "})\n"
    nb = replace_cell(nb, "ex13_tool_schema",
                      _answer(nb, "ex13_tool_schema") + "\nfirst_failed_check = {}\n")
    nb = replace_cell(nb, "ex14_validation", filled)
    graded = grade_notebook("lecture-ReAct-exercises", nb, timeout=60, source=EXERCISES)
    ex14 = {k: v for k, v in graded.scores.items() if k.startswith("test_ex14")}
    assert len(ex14) == 8 and all(got == most for got, most in ex14.values()), \
        (ex14, graded.errors)
    assert graded.total == graded.possible, graded.errors


def test_a_dicts_keys_as_a_list_of_labels_earns_what_stock_nbgrader_gives():
    """An outside review: the exercises' tests accept any iterable of strings, and a dict's
    keys() scored 43/43 under stock nbgrader and 41/43 here (the channel refused dict_keys)."""
    nb = load(EXERCISES)
    edits = {"ex04_truncation": ('topk_tokens = ["rainy", "cloudy"]',
                                 'topk_tokens = {"rainy": 0.571, "cloudy": 0.429}.keys()'),
             "ex10_trajectory": ('action_lines = ["L3", "L5", "L8"]',
                                 'action_lines = {"L3": 1, "L5": 2, "L8": 3}.keys()')}
    for gid, (old, new) in edits.items():
        assert old in _answer(nb, gid)
        nb = replace_cell(nb, gid, _answer(nb, gid).replace(old, new))
    graded = grade_notebook("lecture-ReAct-exercises", nb, timeout=60, source=EXERCISES)
    assert graded.total == graded.possible, graded.errors
