"""Test cells written as nbgrader's documentation teaches, graded as stock ``nbgrader autograde``
grades them.

``tests/fixtures/nbgrader_patterns/`` is a small course of our own, one notebook per pattern, in
nbgrader's documented style (plain asserts, hidden blocks, read-only set-up cells): the "uses"
test that deletes and rebinds a student's name, the standard library's containers and records
(``Counter``, ``OrderedDict``, ``defaultdict``, ``deque``, ``namedtuple``, a ``dataclass``,
``Fraction``, ``Decimal``, an ``Enum``, ``frozenset``, ``bytes``, dict views, ``range``), classes
the notebook defines (an exception a test catches, ``isinstance``), numpy's own assertions on
several dtypes, and tests that compare what an answer prints.  Each is graded twice, right (the
source) and wrong (``wrong.json``: one answer cell changed), by stock ``nbgrader autograde`` and by
this grader: the score of every test cell must be the same.  (An adopter found the "uses" test and
``.most_common()`` on a returned Counter scoring 0 for a right answer here.)
"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder.cells import load, replace_cell
from autograder.instructor.grade import grade_all

ROOT = Path(__file__).resolve().parent.parent
COURSE = ROOT / "tests" / "fixtures" / "nbgrader_patterns"
PATTERNS = sorted(p.name for p in (COURSE / "solutions").iterdir())
WRONG = json.loads((COURSE / "wrong.json").read_text())
pytestmark = pytest.mark.slow


def submissions(aid: str) -> dict:
    source = load(COURSE / "solutions" / aid / f"{aid}.ipynb")
    gid, cell = next(iter(WRONG[aid].items()))
    return {"right": source, "wrong": replace_cell(source, gid, cell)}


def stock_nbgrader(aid: str, subs: dict, tmp: Path) -> dict:
    """{(student, test cell): score} from ``nbgrader autograde`` in a course folder of its own."""
    from nbgrader.api import Gradebook
    course = tmp / "stock"
    shutil.copytree(COURSE / "solutions" / aid, course / "source" / aid)
    (course / "nbgrader_config.py").write_text(
        "c = get_config()\n"
        f"c.CourseDirectory.root = {str(course)!r}\n"
        f"c.CourseDirectory.db_assignments = [dict(name={aid!r})]\n"
        f"c.CourseDirectory.db_students = [dict(id=s) for s in {sorted(subs)!r}]\n"
        "c.Execute.timeout = 60\n")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    nbg = [sys.executable, "-m", "nbgrader"]
    subprocess.run(nbg + ["generate_assignment", aid, "--force"], cwd=course, env=env,
                   check=True, capture_output=True, timeout=300)
    for student, nb in subs.items():
        dest = course / "submitted" / student / aid
        dest.mkdir(parents=True)
        nbformat.write(nb, str(dest / f"{aid}.ipynb"))
    done = subprocess.run(nbg + ["autograde", aid, "--force"], cwd=course, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    out = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for sub in gb.assignment_submissions(aid):
            for notebook in sub.notebooks:
                for g in notebook.grades:
                    if g.cell_type == "code":
                        out[(sub.student.id, g.name)] = float(g.score)
    return out


def ours(aid: str, subs: dict, tmp: Path) -> tuple:
    folder = tmp / "ours"
    for student, nb in subs.items():
        dest = folder / "subs" / student / aid
        dest.mkdir(parents=True)
        nbformat.write(nb, str(dest / f"{aid}.ipynb"))
    shutil.copytree(COURSE / "solutions" / aid, folder / "root" / "solutions" / aid)
    records, _ = grade_all(folder / "subs", root=folder / "root", out=folder / "grades.csv",
                           jobs=1, timeout=60, state=folder / "state", progress=False,
                           cache=False, gradebook=False)
    scores = {(r["student"], g): float(v[0]) for r in records for g, v in r["scores"].items()}
    errors = {(r["student"], g): e for r in records for g, e in r.get("errors", {}).items()}
    return scores, errors


@pytest.mark.parametrize("aid", PATTERNS)
def test_each_cell_scores_what_stock_nbgrader_gives(aid, tmp_path):
    subs = submissions(aid)
    theirs = stock_nbgrader(aid, subs, tmp_path)
    mine, errors = ours(aid, subs, tmp_path)
    assert set(mine) == set(theirs)
    differ = {k: (mine[k], theirs[k], errors.get(k)) for k in theirs if mine[k] != theirs[k]}
    assert not differ, differ
    right = [v for (student, _), v in theirs.items() if student == "right"]
    wrong = [v for (student, _), v in theirs.items() if student == "wrong"]
    assert all(v > 0 for v in right) and sum(wrong) < sum(right)   # the pattern itself is sound
