"""A row nobody graded is blank, never 0 (the outside red team's findings, point 3).

A duplicate upload, a bad zip, a file that is not a notebook, a zip without one, an upload whose
name reads as two students' and a grader error were written as rows of zeros, and the gradebook
and the exports recorded 0: an LMS import then gave a 0 for work nobody graded. Now their score
cells and total are empty in grades.csv, nothing is recorded for them in nbgrader's gradebook,
the exports carry no score for them, and the reason column and the summary say why. Work that
was graded and scored 0 (the released notebook, a timeout) keeps its 0s. The stand-in engine of
tests/test_autograder_gradebook.py grades (a test passes iff its answer is the solution).
"""
from __future__ import annotations

import csv
import re
import shutil
import zipfile

import nbformat
import pytest
from nbgrader.api import MissingEntry

from autograder.run import engine
from autograder.instructor import export, grade
from autograder.feedback.pages import feedback_notebook, to_html
from autograder.instructor.gradebook import CourseGradebook
from autograder.instructor.safecsv import SafeCsvExportPlugin
from autograder.instructor.submissions import Submission
from test_autograder_gradebook import (TINY, Fake, course, put, released, released_text, rows,
                                       set_hand_grade, solution_nb, text)

SCORES = ["test_double", "test_double__array", "test_halve", "explain"]
NOT_GRADED = {"dana": "duplicate upload: none graded", "erin": "bad zip",
              "frank": "not a notebook", "gina": "no notebook", "hal": "not a notebook",
              "ivan": "grader error"}


class Engine(Fake):
    """The stand-in, with a grader error (the grader's fault) and a timeout (the student's)."""

    def __call__(self, assignment_id, nb_or_path, *a, **kw):
        body = open(nb_or_path, encoding="utf-8").read()
        if "# crash the grader" in body:
            raise RuntimeError("the grader broke")
        r = super().__call__(assignment_id, nb_or_path, *a, **kw)
        if "# loop forever" in body:
            r.failure = "timeout: halve did not finish within 3 s and was interrupted"
        return r


@pytest.fixture
def stand_in(monkeypatch):
    monkeypatch.setattr(engine, "grade_notebook", Engine())


def work(tag: str) -> str:
    nb = engine.replace_cell(solution_nb(), "explain", f"Doubling is linear ({tag}).")
    return nbformat.writes(nb)


def marked(marker: str) -> str:
    nb = engine.replace_cell(solution_nb(), "halve", f"def halve(x):\n    {marker}\n    "
                             "return x / 2\n")
    return nbformat.writes(nb)


def the_class(subs):
    """alice right, bob the released notebook (graded: 0), carol a timeout (graded), and one
    student per way of not being graded."""
    put(subs, "alice", solution_nb())
    put(subs, "bob", released())
    (subs / "carol_tiny.ipynb").write_text(marked("# loop forever"))
    (subs / "dana_1_tiny.ipynb").write_text(work("one"))
    (subs / "dana_2_tiny.ipynb").write_text(work("two"))
    (subs / "erin_tiny_upload.zip").write_bytes(b"PK\x03\x04 truncated")
    (subs / "frank_tiny.ipynb").write_text("{ not json")
    with zipfile.ZipFile(subs / "gina_tiny.zip", "w") as zf:
        zf.writestr("notes.txt", "no notebook here")
    (subs / "hal_tiny.pdf").write_bytes(b"%PDF-1.4")
    (subs / "ivan_tiny.ipynb").write_text(marked("# crash the grader"))
    (subs / "mallory_101_7_555_9002_tiny.ipynb").write_text(released_text())


def grade_class(subs, root, tmp_path):
    out = tmp_path / "grades.csv"
    records, failures = grade.grade_all(subs, root=root, out=out, jobs=1, timeout=20,
                                        state=tmp_path / "state", progress=False,
                                        gradebook=True, code="fixed")
    return records, failures, rows(out), out


def test_grades_csv_leaves_what_nobody_graded_blank_and_keeps_real_zeros(tmp_path, stand_in):
    root, subs = course(tmp_path), tmp_path / "subs"
    subs.mkdir()
    the_class(subs)
    records, failures, sheet, out = grade_class(subs, root, tmp_path)
    refused = next(k for k in sheet if k.startswith("mallory_101_7"))
    for student, reason in {**NOT_GRADED, refused: "ambiguous name"}.items():
        row = sheet[student]
        assert [row[c] for c in SCORES] == ["", "", "", ""], (student, row)
        assert (row["total"], row["max"], row["needs_manual_grade"], row["reason"]) == \
            ("", "5", "", reason), student
    # graded work that scored 0 keeps its 0s; a timeout is graded
    assert [sheet["bob"][c] for c in SCORES] + [sheet["bob"]["total"]] == ["0"] * 5
    assert sheet["carol"]["reason"] == "timeout" and sheet["carol"]["test_halve"] == "0"
    assert sheet["carol"]["test_double"] == "2" and sheet["alice"]["total"] == "4"
    # the cells are empty strings, not numbers: no spreadsheet reads 0 there
    with open(out, newline="") as f:
        typed = {r[0]: r for r in csv.reader(f, quoting=csv.QUOTE_NONNUMERIC)}
    assert typed["dana"][2:8] == ["", "", "", "", "", 5.0]
    assert typed["bob"][2:8] == [0.0, 0.0, 0.0, 0.0, 0.0, 5.0]
    # nothing of theirs is in nbgrader's gradebook; the graded ones are
    with CourseGradebook(root).open() as gb:
        for student in [*NOT_GRADED, refused]:
            with pytest.raises(MissingEntry):
                gb.find_submission("tiny", student)
        assert gb.find_submission("tiny", "bob").score == 0.0
    assert not (root / "autograded" / "dana").exists()
    # the summary lists them as not graded, each with its reason
    summary = grade.summary(records, failures)
    assert "graded 3 submission(s) (0 from the cache), 7 not graded" in summary
    assert "7 submission(s) not graded: their score cells are blank" in summary
    for student, reason in NOT_GRADED.items():
        assert f"  {student} / tiny ({reason})" in summary, student
    assert "none graded (blank)" in summary and "zeros" not in summary


def two_assignments(tmp_path):
    root = course(tmp_path)
    (root / "solutions" / "tiny2").mkdir()
    shutil.copy(root / "solutions" / "tiny" / "tiny.ipynb",
                root / "solutions" / "tiny2" / "tiny2.ipynb")
    return root


def put2(subs, student, body: str):
    (subs / student / "tiny2").mkdir(parents=True, exist_ok=True)
    (subs / student / "tiny2" / "tiny2.ipynb").write_text(body)


def read_typed(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.reader(f, quoting=csv.QUOTE_NONNUMERIC))


def test_every_export_gives_no_score_for_what_nobody_graded(tmp_path, stand_in):
    """dana: tiny graded, tiny2 a duplicate; erin: only a bad zip; bob: the released notebook
    (graded, 0). In each format dana's tiny2 cell is empty, erin has no row (nothing of hers
    was graded, so the LMS keeps what it has), bob has his 0. (Neither dana's tiny2 nor erin's
    upload reached the gradebook: the export, which reads it, does not know of them; grade's
    summary lists them.)"""
    root, subs = two_assignments(tmp_path), tmp_path / "subs"
    subs.mkdir()
    put(subs, "alice", solution_nb())
    put2(subs, "alice", work("alice"))
    put(subs, "bob", released())
    put(subs, "dana", nbformat.reads(work("dana"), as_version=4))
    (subs / "dana_1_tiny2.ipynb").write_text(work("one"))
    (subs / "dana_2_tiny2.ipynb").write_text(work("two"))
    (subs / "erin_tiny2_upload.zip").write_bytes(b"not a zip")
    _, _, _, out = grade_class(subs, root, tmp_path)
    with open(out, newline="") as f:
        totals = {(r["student"], r["assignment"]): r["total"] for r in csv.DictReader(f)}
    assert (totals["dana", "tiny"], totals["dana", "tiny2"], totals["erin", "tiny2"]) == \
        ("4", "", "")
    for fmt in export.FORMATS:
        path, warnings = export.export(fmt, tmp_path / f"{fmt}.csv", root=root)
        header, *table = read_typed(path)
        who = {"canvas": 3, "moodle": 4, "csv": 0}[fmt]     # SIS Login ID, Username, student
        got = {r[who]: dict(zip(header[5:], r[5:])) for r in table
               if r[0] != "Points Possible"}
        assert set(got) == {"alice", "bob", "dana"}, fmt
        assert got["dana"]["tiny2"] == "" and got["dana"]["tiny"] == 4.0, fmt
        assert got["bob"]["tiny"] == 0.0 and got["bob"]["tiny2"] == "", fmt
        if fmt == "csv":
            assert (got["dana"]["total"], got["dana"]["max"]) == (4.0, 10.0)
        assert not any("not graded" in w for w in warnings), fmt


def test_an_earlier_grade_is_withdrawn_when_the_submission_is_not_graded_now(tmp_path,
                                                                           stand_in):
    """dana's upload was graded and hand graded; a second upload appears: none is graded now.
    Her autograded scores leave the gradebook (the hand grade stays, for when one upload is
    kept), grades.csv and the export have no score for her, and the summary says so."""
    root, subs = course(tmp_path), tmp_path / "subs"
    subs.mkdir()
    put(subs, "alice", solution_nb())
    (subs / "dana_1_tiny.ipynb").write_text(work("one"))
    grade_class(subs, root, tmp_path)
    set_hand_grade(root, "dana", "explain", 1.0)
    assert grade_class(subs, root, tmp_path)[2]["dana"]["total"] == "5"
    (subs / "dana_2_tiny.ipynb").write_text(work("two"))
    records, failures, sheet, _ = grade_class(subs, root, tmp_path)
    assert sheet["dana"]["total"] == "" and sheet["dana"]["test_double"] == ""
    with CourseGradebook(root).open() as gb:
        grades = {g.name: g for g in gb.find_submission_notebook("tiny", "tiny", "dana").grades}
        assert [grades[g].auto_score for g in SCORES[:3]] == [None, None, None]
        assert grades["explain"].manual_score == 1.0
    for fmt in export.FORMATS:
        path, warnings = export.export(fmt, tmp_path / f"{fmt}.csv", root=root)
        assert "dana" not in path.read_text(), fmt
        said = [w for w in warnings if "not graded by the last grade run" in w]
        assert len(said) == 1 and "dana / tiny" in said[0] and "have no row" in said[0], fmt
    assert "dana / tiny: its grade from an earlier run was withdrawn" in \
        grade.summary(records, failures)
    with CourseGradebook(root).open() as gb:         # nbgrader export, through safecsv
        SafeCsvExportPlugin(to=str(tmp_path / "nb.csv")).export(gb)
    with open(tmp_path / "nb.csv", newline="") as f:
        nb_rows = {r["student_id"]: r for r in csv.DictReader(f)}
    assert (nb_rows["dana"]["raw_score"], nb_rows["dana"]["score"]) == ("", "")
    assert nb_rows["alice"]["score"] == "4.0"
    # the instructor keeps one upload: graded again, the hand grade is back
    (subs / "dana_2_tiny.ipynb").unlink()
    assert grade_class(subs, root, tmp_path)[2]["dana"]["total"] == "5"


def test_the_feedback_page_says_not_graded_instead_of_a_score():
    sub = Submission("dana", "tiny", None, "dana_1_tiny.ipynb, dana_2_tiny.ipynb",
                     "duplicate upload: 2 uploads of this student and assignment")
    record = grade.annotate(grade.zero_record(sub, TINY, sub.problem), sub)
    page = text(to_html(feedback_notebook(record, released())))
    page = page[page.index("Feedback: tiny"):]               # the page's text, not its CSS
    assert "Score: not graded (duplicate upload: none graded)" in page
    assert "test_halve: not graded" in page and not re.search(r"\b0 / [0-9]", page)


@pytest.mark.parametrize("failure, graded", [
    (None, True), ("timeout: halve did not finish within 3 s and was interrupted", True),
    ("the process running the answers ended (the other process ended)", True),
    ("something nobody wrote yet", True),
    ("the setup cell 1 failed: ModuleNotFoundError: No module named 'x'", False),
    ("grader error: KeyError: 'x'", False), ("bad zip file: truncated", False),
    ("invalid notebook: NotJSONError: x", False), ("not a notebook: upload a .ipynb", False),
    ("no notebook in it", False), ("duplicate upload: 2 uploads", False),
    ("ambiguous name: it reads as Canvas user 101's or as Canvas user 555's", False),
])
def test_which_rows_were_graded(failure, graded):
    """Scored work keeps its numbers (a timeout, a kernel that died, an unknown failure after
    the answers ran); only what never reached a verdict on the work is blank."""
    from autograder.instructor.reasons import graded as was_graded
    assert was_graded({"failure": failure}) is graded
