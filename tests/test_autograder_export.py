"""Grade sheets an LMS imports (autograder/instructor/export.py, ``python -m autograder export``).

A small class of two assignments is graded into a throwaway course's gradebook as
tests/test_autograder_gradebook.py does (its stand-in engine scores a test by whether the answer
equals the solution), hand grades are set as formgrader sets them, and each export is read the
way its LMS reads it: Canvas's ``GradebookImporter`` (instructure/canvas-lms
``app/models/gradebook_importer.rb``: header rules, the "Points Possible" row) and Moodle's
``gradeimport_csv_load_data`` (moodle/moodle ``grade/import/csv/classes/load_data.php``: one
mapped identifier per row, every grade a number or empty). Every score must equal the total of
its row in grades.csv and the score of ``nbgrader export``.
"""
from __future__ import annotations

import csv
import os
import re
import shutil
import subprocess

import nbformat
import pytest

from autograder.run import engine
from autograder.instructor import export, grade
from autograder.__main__ import main
from autograder.instructor.lms import safe_key
from test_autograder_gradebook import (NBGRADER, course, put, released, set_hand_grade,
                                       solution_nb)

HOSTILE = '=HYPERLINK("http:evil")'           # a folder name, hence a student id
HOSTILE_KEY = safe_key(HOSTILE)                 # grade files it under a safe key (lms.py)
TRIGGERS = ("=", "+", "-", "@", "\t", "\r")    # OWASP: a cell starting so is a formula


def put2(folder, student, nb):
    (folder / student / "tiny2").mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, folder / student / "tiny2" / "tiny2.ipynb")


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """(course root, folder, grades.csv rows by (student, assignment)): alice and carol hand
    graded on tiny, alice's tiny2 answer still waiting, bob without a tiny2 submission."""
    from test_autograder_gradebook import Fake
    tmp = tmp_path_factory.mktemp("export")
    root, subs = course(tmp), tmp / "subs"
    (root / "solutions" / "tiny2").mkdir()
    shutil.copy(root / "solutions" / "tiny" / "tiny.ipynb",
                root / "solutions" / "tiny2" / "tiny2.ipynb")
    answered = engine.replace_cell(solution_nb(), "explain", "Doubling is linear.")
    put(subs, "alice", answered)
    put2(subs, "alice", answered)
    put(subs, "bob", released())
    wrong = engine.replace_cell(answered, "halve", "def halve(x):\n    return x // 2\n")
    put(subs, "carol", wrong)
    put2(subs, "carol", released())
    put(subs, HOSTILE, solution_nb())
    out = tmp / "grades.csv"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(engine, "grade_notebook", Fake())
        run = dict(root=root, out=out, jobs=1, timeout=20, state=tmp / "state",
                   progress=False, gradebook=True, code="fixed")
        grade.grade_all(subs, **run)
        set_hand_grade(root, "alice", "explain", 0.5, "Say why.")
        set_hand_grade(root, "carol", "explain", 1.0)
        grade.grade_all(subs, **run)          # grades.csv as the instructor has it now
    with open(out, newline="") as f:
        sheet = {(r["student"].lstrip("'"), r["assignment"]): r for r in csv.DictReader(f)}
    return root, tmp, sheet


def read_typed(path):
    """The rows as a spreadsheet types them: a bare field must be a number (float), a quoted
    one is text (csv.QUOTE_NONNUMERIC raises on a bare non-number)."""
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.reader(f, quoting=csv.QUOTE_NONNUMERIC))


def canvas_read(path):
    """Canvas's GradebookImporter on our file: header checks (row_has_student_headers?,
    update_column_count, the last student column includes "Section"), the Points Possible
    row (row[0] includes it), then one student per row keyed by SIS Login ID."""
    table = read_typed(path)
    header = table[0]
    assert len(header) > 3 and "Student" in header[0] and "ID" in header[1]
    assert re.search(r"SIS\s+User\s+ID", header[2])
    assert re.search(r"SIS\s+Login\s+ID", header[3])
    columns = 3 + 2                       # name, ID, then SIS User ID and SIS Login ID
    assert "Section" in header[columns - 1]
    titles = header[columns:]
    points = [r for r in table[1:] if "Points Possible" in str(r[0])]
    assert len(points) == 1 and table[1] is points[0]       # right under the header
    students = {r[3]: dict(zip(titles, r[columns:])) for r in table[2:]}
    return header, dict(zip(titles, points[0][columns:])), students, table


def test_canvas_sheet_reads_as_canvas_imports_it_and_totals_equal_grades_csv(graded, tmp_path):
    root, _, sheet = graded
    path, warnings = export.export("canvas", tmp_path / "canvas.csv", root=root)
    header, possible, students, table = canvas_read(path)
    assert header == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "tiny",
                      "tiny2"]
    assert possible == {"tiny": 5.0, "tiny2": 5.0}
    assert {(s, a): float(sheet[(s, a)]["max"]) for s, a in sheet} == \
        {(s, a): possible[a] for s, a in sheet}
    # every submission's score is its grades.csv total, a number; no submission: empty
    logins = {s.lstrip("'") for s in students}
    assert logins == {"alice", "bob", "carol", HOSTILE_KEY}
    got = {(s.lstrip("'"), a): v for s, row in students.items() for a, v in row.items()}
    assert {k: v for k, v in got.items() if v != ""} == \
        {k: float(r["total"]) for k, r in sheet.items()}
    assert got[("bob", "tiny2")] == "" and got[("alice", "tiny")] == 4.5
    assert got[("carol", "tiny")] == 4.0 and got[("carol", "tiny2")] == 0.0
    assert all(isinstance(v, float) or v == "" for r in table[1:] for v in r[5:])
    # alice's tiny2 answer still waits for the instructor: said, with the cell
    assert any("alice / tiny2: explain" in w for w in warnings)


def test_scores_equal_nbgrader_export(graded, tmp_path):
    root, _, sheet = graded
    env = {**os.environ, "PATH": f"{NBGRADER.parent}{os.pathsep}/usr/bin:/bin"}
    done = subprocess.run([str(NBGRADER), "export", "--to", str(tmp_path / "nb.csv")],
                          cwd=root, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    with open(tmp_path / "nb.csv", newline="") as f:
        theirs = {(r["student_id"].lstrip("'"), r["assignment"]): r for r in csv.DictReader(f)}
    path, _ = export.export("csv", tmp_path / "plain.csv", root=root)
    table = read_typed(path)
    assert table[0] == ["student", "name", "email", "id", "section", "tiny", "tiny2", "total",
                        "max"]
    ours = {(r[0].lstrip("'"), a): v for r in table[1:]
            for a, v in zip(("tiny", "tiny2"), r[5:7])}
    for key, r in theirs.items():     # nbgrader writes 0 where there is no submission
        assert (ours[key] or 0.0) == float(r["score"]), key
        assert float(r["max_score"]) == 5.0
    assert ours[("bob", "tiny2")] == ""
    for r in table[1:]:               # total and max over the exported assignments
        assert r[7] == sum(v for v in r[5:7] if v != "") and r[8] == 10.0
    assert {k for k, v in ours.items() if v != ""} == set(sheet)


def write_ids(path, header, *lines):
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([header, *lines])
    return path


def test_moodle_sheet_with_a_mapping_reads_as_moodle_imports_it(graded, tmp_path):
    """Moodle's own export headers in the mapping; bob is not in it (left out, said); Moodle
    maps "Email address" to useremail: every row must carry one, every grade a number."""
    root, _, sheet = graded
    ids = write_ids(tmp_path / "ids.csv",
                    ["First name", "Last name", "ID number", "Email address", "Username",
                     "submission"],
                    ["Alice", "Liddell", "1001", "alice@uni.example", "al", "alice"],
                    ["Carol", "Danvers", "1003", "carol@uni.example", "", "carol"],
                    ["@SUM(A1:A9)", "-2+3", "1004", "eve@uni.example", "", HOSTILE_KEY],
                    ["Zed", "Typo", "1009", "zed@uni.example", "", "zedd"])
    path, warnings = export.export("moodle", tmp_path / "moodle.csv", root=root, ids=ids)
    table = read_typed(path)
    assert table[0] == ["First name", "Last name", "ID number", "Email address", "Username",
                        "tiny", "tiny2"]
    by_email = {r[3]: dict(zip(("tiny", "tiny2"), r[5:])) for r in table[1:]}
    assert sorted(by_email) == ["alice@uni.example", "carol@uni.example", "eve@uni.example"]
    email_of = {"alice": "alice@uni.example", "carol": "carol@uni.example",
                HOSTILE_KEY: "eve@uni.example"}
    for (s, a), r in sheet.items():
        if s in email_of:
            assert by_email[email_of[s]][a] == float(r["total"])
    assert sorted(r[:3] for r in table[1:]) == sorted([["Alice", "Liddell", "1001"],
                                                       ["Carol", "Danvers", "1003"],
                                                       ["'@SUM(A1:A9)", "'-2+3", "1004"]])
    assert any("LEFT OUT" in w and "bob" in w for w in warnings)
    assert any("zedd" in w and "no student of the gradebook" in w for w in warnings)
    # an identifier some rows lack would stop Moodle's whole import if mapped: said
    assert any("2 of 3 row(s) have no Username" in w for w in warnings)
    assert not any("Email address" in w for w in warnings)
    # the same people in a Canvas sheet have no Canvas id: matched by name only, said
    _, warnings = export.export("canvas", tmp_path / "canvas.csv", root=root, ids=ids)
    assert any("Canvas can match them by name only" in w for w in warnings)


def test_canvas_mapping_with_canvas_headers_and_titles(graded, tmp_path, capsys):
    """A mapping made from Canvas's own export (Student, ID, SIS ids, Section) plus a
    submission column; the column titled so that Canvas matches the assignment by its id."""
    root, _, sheet = graded
    ids = write_ids(tmp_path / "ids.csv",
                    ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "submission"],
                    ["Liddell, Alice", "101", "S1", "aliddell", "Lab A", "alice"],
                    ["Points Possible", "", "", "", "", ""],
                    ["Bobson, Bob", "102", "S2", "bbobson", "Lab B", "bob"])
    out = tmp_path / "canvas.csv"
    assert main(["export", "--format", "canvas", "--root", str(root), "--out", str(out),
                 "--ids", str(ids), "--assignment", "tiny=ReAct lab (4321)"]) == 0
    printed = capsys.readouterr()
    assert f"wrote {out}" in printed.out and "LEFT OUT" in printed.err
    header, possible, students, _ = canvas_read(out)
    assert header[5:] == ["ReAct lab (4321)"] and possible == {"ReAct lab (4321)": 5.0}
    assert students == {"aliddell": {"ReAct lab (4321)": 4.5},
                        "bbobson": {"ReAct lab (4321)": 0.0}}
    assert [r[:5] for r in read_typed(out)[2:]] == [
        ["Liddell, Alice", "101", "S1", "aliddell", "Lab A"],
        ["Bobson, Bob", "102", "S2", "bbobson", "Lab B"]]


def test_hostile_student_text_is_inert_in_every_format(graded, tmp_path):
    root, _, _ = graded
    for fmt in export.FORMATS:
        table = read_typed(export.export(fmt, tmp_path / f"{fmt}.csv", root=root)[0])
        text = [v for r in table for v in r if isinstance(v, str)]
        assert not [v for v in text if v.lstrip(" ").startswith(TRIGGERS)], fmt
        raw = (tmp_path / f"{fmt}.csv").read_text()
        assert HOSTILE_KEY in text and "HYPERLINK(" not in raw, fmt    # the safe key only
    # a name printed in a warning shows its escape sequences, never obeys them
    ids = write_ids(tmp_path / "ids.csv", ["submission", "email"],
                    ["alice", "a@x.example"], ["\x1b[2Kmallory", "m@x.example"])
    _, warnings = export.export("csv", tmp_path / "w.csv", root=root, ids=ids)
    assert any("\\x1b[2Kmallory" in w for w in warnings)
    assert not any("\x1b" in w for w in warnings)


def test_bad_input_is_a_clear_error(graded, tmp_path):
    root, tmp, _ = graded
    empty = tmp_path / "empty"
    empty.mkdir()
    shutil.copy(root / "nbgrader_config.py", empty)
    (empty / "autograder").mkdir()
    shutil.copy(root / "autograder" / "nbgrader_config.py", empty / "autograder")
    with pytest.raises(SystemExit, match="no gradebook at .*grade the class first"):
        export.export("canvas", tmp_path / "x.csv", root=empty)
    with pytest.raises(SystemExit, match="no assignment nope; it has: tiny, tiny2"):
        export.export("canvas", tmp_path / "x.csv", root=root, assignments=["nope"])
    bad = write_ids(tmp_path / "a.csv", ["student", "email"], ["alice", "a@x.example"])
    with pytest.raises(SystemExit, match="needs a header with a 'submission' column"):
        export.export("moodle", tmp_path / "x.csv", root=root, ids=bad)
    twice = write_ids(tmp_path / "b.csv", ["submission", "email"], ["alice", "a@x.example"],
                      ["carol", "a@x.example"])
    with pytest.raises(SystemExit, match="carol and alice have the same email"):
        export.export("moodle", tmp_path / "x.csv", root=root, ids=twice)
    with pytest.raises(SystemExit, match="no file"):
        export.export("moodle", tmp_path / "x.csv", root=root, ids=tmp_path / "missing.csv")
    assert not (tmp_path / "x.csv").exists()
