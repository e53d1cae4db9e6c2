"""Every CSV the grader writes is inert in a spreadsheet (issue 16, point 6; OWASP's CSV
injection rule, autograder/instructor/safecsv.py), while the scores stay numbers."""
import csv
import io
import os
import sys
from pathlib import Path

import pytest

from autograder.instructor import grade, safecsv
from autograder.instructor.submissions import assignments

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "tests" / "fixtures" / "autograder"
KNOWN = assignments(FIX)
PAYLOADS = ["=2+3", "@SUM(A1)", "+cmd|' /C calc'!A0", "-1+1", "\t=1+1", "\r=1+1",
            "  =HYPERLINK(\"http://x\")", "\0=1"]
TRIGGERS = ("=", "+", "-", "@", "\t", "\r", "\n", "\0")


def _record(student, reason="", total=-1.0):
    return {"student": student, "assignment": "tiny", "origin": "x", "failure": None,
            "scores": {"test_double": [-1.0, 2.0], "test_double__array": [0.5, 1.0],
                       "test_halve": [1.0, 1.0]},
            "manual": {"explain": 1.0}, "total": total, "possible": 4.0, "reason": reason}


def _inert(text: str) -> bool:
    """What OWASP asks of a cell: it does not begin (after spaces) with a formula trigger."""
    return not text.lstrip(" ").startswith(TRIGGERS)


def test_grade_sheet_cells_from_students_are_inert_and_scores_stay_numbers(tmp_path):
    out = tmp_path / "grades.csv"
    records = [_record(s) for s in PAYLOADS] + [_record("dana", reason="=1+1")]
    grade.write_csv(records, KNOWN, out)
    raw = out.read_bytes().decode("utf-8")
    rows = list(csv.reader(io.StringIO(raw, newline="")))
    assert rows[0][:2] == ["student", "assignment"]
    students = [r[0] for r in rows[1:]]
    # a leading quote on each; a tab, CR or LF is a separator too, so what follows it is quoted
    # as well
    assert students == ["'" + p.replace("\t=", "\t'=").replace("\r=", "\r'=").replace("\n=", "\n'=")
                        for p in PAYLOADS] + ["dana"]
    assert all(_inert(c) for r in rows for c in r if not _number(c))
    assert rows[-1][-1] == "'=1+1"                        # the reason column too
    # scores are the grader's numbers: written bare, -1 stays the number -1, 0.5 stays 0.5
    assert raw.count(',-1,0.5,1,"",-1,5,"explain",') == len(records)
    assert rows[1][2:7] == ["-1", "0.5", "1", "", "-1"]


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def test_a_separator_inside_a_name_cannot_start_a_new_cell(tmp_path):
    """Text is always quoted (one cell for a reader that honours quotes), and the part after a
    separator is inert too (a spreadsheet that splits on ';' anyway)."""
    out = tmp_path / "grades.csv"
    grade.write_csv([_record("a;=1+1")], KNOWN, out)
    line = out.read_text(encoding="utf-8").splitlines()[1]
    assert line.startswith('"a;\'=1+1",')


@pytest.mark.parametrize("value, written", [
    ("=2+3", "'=2+3"), ("plain", "plain"), ("", ""), (None, ""), (-1, -1), (2.5, 2.5),
    (True, "True"), ("-1", "'-1"), (" @x", "' @x"),
])
def test_cell(value, written):
    assert safecsv.cell(value) == written


@pytest.mark.slow
def test_nbgrader_export_through_the_safe_plugin_is_inert(tmp_path, monkeypatch):
    """`nbgrader export` writes raw values joined by commas; SafeCsvExportPlugin writes the
    same columns through safecsv."""
    from nbgrader.api import Gradebook
    monkeypatch.setenv("PATH", os.pathsep.join([str(Path(sys.executable).parent),
                                                os.environ.get("PATH", "")]))  # alembic
    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    with Gradebook(url) as gb:
        gb.add_assignment("tiny")
        gb.add_student("=2+3", first_name="@SUM(A1)", last_name="-1+1",
                       email="+cmd|' /C calc'!A0")
    out = tmp_path / "export.csv"
    with Gradebook(url) as gb:
        safecsv.SafeCsvExportPlugin(to=str(out)).export(gb)
    rows = list(csv.reader(out.open(encoding="utf-8")))
    assert rows[0] == list(safecsv.SafeCsvExportPlugin.KEYS)
    row = dict(zip(rows[0], rows[1]))
    assert row["student_id"] == "'=2+3" and row["first_name"] == "'@SUM(A1)"
    assert row["last_name"] == "'-1+1" and row["email"] == "'+cmd|' /C calc'!A0"
    assert row["score"] == "0.0" and all(_inert(c) for c in rows[1])


def test_the_course_folder_selects_the_safe_exporter():
    """Stock `nbgrader export` run at the repository root writes through SafeCsvExportPlugin."""
    from traitlets.config.loader import PyFileConfigLoader
    root = Path(__file__).resolve().parents[1]
    config = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
    assert config.ExportApp.plugin_class == "autograder.instructor.safecsv.SafeCsvExportPlugin"


def _fields_as_split_by(text: str, sep: str) -> list:
    """Every field as a spreadsheet opened with another separator splits it: at ``sep``,
    quotes or not (LibreOffice and Excel in a ``;`` locale did, in an outside review)."""
    return [f.strip(' "') for line in text.splitlines() for f in line.split(sep)]


@pytest.mark.parametrize("sep", [";", "\t", ","])
def test_no_field_starts_a_formula_whatever_the_separator(tmp_path, sep):
    names = ["x;=1+1;y", "x,=1+1,y", "x\t@SUM(1)", 'x; "=HYPERLINK(1)', "a;-2+3", "x;+1",
             "dana;'=1", "x\n=SUM(A1:A3)\ny", "x\r\n=1+1", "x\r@SUM(1)", "x\n\t=1",
             "Smith-Jones; Lee", "plain text"]     # a line break: a row of its own (review)
    path = tmp_path / "out.csv"
    safecsv.write(path, ["name", "score"], [[n, 3] for n in names])
    for field in _fields_as_split_by(path.read_text(encoding="utf-8"), sep):
        assert not field.startswith(("=", "+", "-", "@")), (sep, field)
    rows = list(csv.reader(path.open(encoding="utf-8")))
    assert [r[0] for r in rows[1:]][-2:] == ["Smith-Jones; Lee", "plain text"]   # honest: as is
