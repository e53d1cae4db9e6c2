"""One definition of the cell kinds (``autograder/cells.py``), used by release, grading and the
gradebook, on a course folder with every kind nbgrader has: an autograded answer and its test, a
written answer graded by hand, a code answer graded by hand, and a task cell.  (An adopter found
``cells.py`` and ``gradebook.py`` disagreeing on which cells are graded by hand.)"""
import csv

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from autograder import cells
from autograder.instructor.grade import grade_all
from autograder.instructor.release import generate


def meta(gid, **flags):
    return {"nbgrader": {"grade": False, "solution": False, "locked": False, "grade_id": gid,
                         "schema_version": 3, **flags}}


def source_notebook():
    nb = new_notebook()
    nb.cells = [
        new_markdown_cell("# Kinds", id="intro"),
        new_code_cell("def double(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n"
                      "    ### END SOLUTION", id="double", metadata=meta("double", solution=True)),
        new_code_cell("assert double(2) == 4", id="test_double",
                      metadata=meta("test_double", grade=True, locked=True, points=2)),
        new_markdown_cell("### BEGIN SOLUTION\nBecause it is linear.\n### END SOLUTION",
                          id="why", metadata=meta("why", grade=True, solution=True, points=3)),
        new_code_cell("### BEGIN SOLUTION\ndef tidy():\n    return 'neat code'\n### END SOLUTION",
                      id="style", metadata=meta("style", grade=True, solution=True, points=4)),
        new_markdown_cell("Plot something and describe it (graded by hand).", id="plot_task",
                          metadata=meta("plot_task", task=True, locked=True, points=5)),
    ]
    return nb


def test_every_part_of_the_grader_sees_the_same_kinds():
    nb = source_notebook()
    kinds = {c.id: (cells.is_answer(c), cells.is_autograded_test(c), cells.is_manual(c))
             for c in nb.cells}
    assert kinds["double"] == (True, False, False)
    assert kinds["test_double"] == (False, True, False)
    assert kinds["why"] == (True, False, True) and kinds["style"] == (True, False, True)
    assert kinds["plot_task"] == (False, False, True)
    roles = dict(cells.roles(nb))
    assert roles[1] == "student" and roles[2] == "test" and roles[4] == "student"


@pytest.mark.slow
def test_release_grading_and_the_gradebook_agree_on_them(tmp_path):
    root = tmp_path / "course"
    source = root / "solutions" / "kinds" / "kinds.ipynb"
    source.parent.mkdir(parents=True)
    nbformat.write(source_notebook(), str(source))
    released = nbformat.reads(generate(source), as_version=4)
    by_id = {c.id: c for c in released.cells}
    assert "neat code" not in by_id["style"].source and "linear" not in by_id["why"].source
    subs = tmp_path / "subs" / "ann" / "kinds"
    subs.mkdir(parents=True)
    nbformat.write(source_notebook(), str(subs / "kinds.ipynb"))
    records, _ = grade_all(tmp_path / "subs", root=root, out=tmp_path / "grades.csv", jobs=1,
                           timeout=30, state=tmp_path / "state", progress=False)
    r = records[0]
    assert r["scores"] == {"test_double": [2.0, 2.0]}
    assert r["manual"] == {"why": 3.0, "style": 4.0, "plot_task": 5.0}
    rows = list(csv.reader((tmp_path / "grades.csv").open()))
    header, row = rows[0], dict(zip(rows[0], rows[1]))
    for gid in ("why", "style", "plot_task"):
        assert gid in header and row[gid] == ""               # not graded yet: blank
        assert gid in row["needs_manual_grade"]
    assert row["max"] == "14"
