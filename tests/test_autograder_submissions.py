"""Whose upload is it (issue 16, point 3): LMS exports read by their unique id, and two uploads
of one student and assignment never resolved silently. Layouts: autograder/instructor/lms.py."""
import functools
import shutil
import zipfile
from pathlib import Path

import nbformat
import pytest

from autograder.instructor import grade
from autograder.run.engine import load, replace_cell
from autograder.instructor.lms import owner, owners
from autograder.instructor.release import generate
from autograder.instructor.submissions import assignments, discover

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "tests" / "fixtures" / "autograder"
TINY = FIX / "solutions" / "tiny" / "tiny.ipynb"
KNOWN = assignments(FIX)


def _work(tag: str = "") -> str:
    """A real answer (the solution), made distinct by ``tag`` so copies are not identical."""
    nb = replace_cell(load(TINY), "halve", f"def halve(x):\n    return x / 2  # {tag}\n")
    return nbformat.writes(nb)


@functools.cache
def _blank() -> str:
    return generate(TINY)        # the released student version: no answer


def _find(folder: Path, tmp_path: Path):
    return {(s.student, s.assignment): s for s in discover(folder, KNOWN, tmp_path / "st")}


def test_the_issues_name_collision_no_longer_replaces_danas_grade(tmp_path):
    """dana_1_ (an attacker's blank) and dana_2_ (dana's work): no id, no time, so neither is
    graded, and the CSV and the summary say so, naming both files."""
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "dana_1_tiny.ipynb").write_text(_blank())
    (subs / "dana_2_tiny.ipynb").write_text(_work("dana"))
    found = discover(subs, KNOWN, tmp_path / "st")
    assert len(found) == 1
    dana = found[0]
    assert (dana.student, dana.assignment, dana.notebook) == ("dana", "tiny", None)
    assert dana.problem.startswith("duplicate upload")
    assert dana.duplicates == ["dana_1_tiny.ipynb", "dana_2_tiny.ipynb"]
    record = grade.grade_one(dana, TINY, grade.options_key(20, "auto"), None, "code")
    assert record["reason"] == "duplicate upload: none graded"
    out = tmp_path / "grades.csv"
    grade.write_csv([record], KNOWN, out)
    row = out.read_text().splitlines()[1]     # not graded: blank score cells, never 0
    assert row == '"dana","tiny","","","","","",5,"","duplicate upload: none graded"', row
    text = grade.summary([record], [record])
    assert "dana_1_tiny.ipynb" in text and "dana_2_tiny.ipynb" in text
    assert "none graded" in text


def test_canvas_export_is_read_by_user_id_even_for_one_name(tmp_path):
    """Canvas: <lastfirst>[_LATE]_<user id>_<file id>_<file>. Two students both called
    Dana Smith (the same lastfirst) are two students; a PDF next to a notebook is set aside."""
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "smithdana_101_9001_tiny.ipynb").write_text(_work("101"))
    (subs / "smithdana_LATE_103_9002_tiny.ipynb").write_text(_work("103"))
    (subs / "smithdana_101_9003_tiny.pdf").write_bytes(b"%PDF-1.4")
    (subs / "jonesdana_102_9004_tiny.ipynb").write_text(_work("102"))
    (subs / "anon_Xy12z_9005_tiny.ipynb").write_text(_work("anon"))
    found = _find(subs, tmp_path)
    assert set(found) == {("101", "tiny"), ("102", "tiny"), ("103", "tiny"),
                          ("anon_Xy12z", "tiny")}
    assert found["101", "tiny"].notebook.name == "smithdana_101_9001_tiny.ipynb"
    assert found["103", "tiny"].notebook.name == "smithdana_LATE_103_9002_tiny.ipynb"
    assert found["101", "tiny"].set_aside == ["smithdana_101_9003_tiny.pdf"]
    assert found["101", "tiny"].name == "smithdana" and not found["101", "tiny"].duplicates


def test_moodle_folders_and_flat_files_are_read_by_participant_id(tmp_path):
    """Moodle: <Full Name>_<id>_assignsubmission_file/ (4.1+), ..._file_/ (3.1-4.0), flat
    ..._file_<file>, a zip inside the folder; two students called Dana Smith."""
    subs = tmp_path / "subs"
    for folder, text in (("Dana Smith_5001_assignsubmission_file", "5001"),
                         ("Dana Smith_5002_assignsubmission_file", "5002")):
        (subs / folder).mkdir(parents=True)
        (subs / folder / "tiny.ipynb").write_text(_work(text))
    (subs / "Dana Jones_5003_assignsubmission_file_tiny.ipynb").write_text(_work("5003"))
    (subs / "Eve Park_5004_assignsubmission_file_" / "lab").mkdir(parents=True)
    (subs / "Eve Park_5004_assignsubmission_file_" / "lab" / "tiny.ipynb").write_text(_work("e"))
    (subs / "Finn Lee_5005_assignsubmission_file").mkdir()
    with zipfile.ZipFile(subs / "Finn Lee_5005_assignsubmission_file" / "work.zip", "w") as zf:
        zf.writestr("work/tiny.ipynb", _work("5005"))
    (subs / "Gus Roe_5006_assignsubmission_onlinetext").mkdir()
    (subs / "Gus Roe_5006_assignsubmission_onlinetext" / "onlinetext.html").write_text("hi")
    found = _find(subs, tmp_path)
    assert set(found) == {(k, "tiny") for k in ("5001", "5002", "5003", "5004", "5005", "5006")}
    for key in ("5001", "5002", "5003", "5005"):
        assert f"# {key}" in found[key, "tiny"].notebook.read_text(), key
    assert found["5001", "tiny"].name == "Dana Smith"
    assert found["5004", "tiny"].notebook is not None
    gus = found["5006", "tiny"]         # an online text, no file: a row that says so
    assert gus.notebook is None and "no notebook" in gus.problem


def test_blackboard_attempts_grade_the_newest_and_say_so(tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    old = "Lab 1_dana_attempt_2024-03-01-10-00-00"
    new = "Lab 1_dana_attempt_2024-03-02-09-30-00"
    (subs / f"{old}_tiny.ipynb").write_text(_blank())
    (subs / f"{new}_tiny.ipynb").write_text(_work("dana"))
    (subs / f"{old}.txt").write_text("Name: Dana Smith (dana)")
    (subs / f"{new}.txt").write_text("Name: Dana Smith (dana)")
    (subs / "Lab 1_eve_attempt_2024-03-01-11-00-00_tiny.ipynb").write_text(_work("eve"))
    found = _find(subs, tmp_path)
    dana = found["dana", "tiny"]
    assert dana.notebook.name == f"{new}_tiny.ipynb" and dana.rule == "newest"
    assert dana.duplicates == [f"{old}_tiny.ipynb", f"{new}_tiny.ipynb"]
    assert sorted(dana.set_aside) == [f"{old}.txt", f"{new}.txt"]
    assert found["eve", "tiny"].notebook is not None and not found["eve", "tiny"].duplicates
    record = grade.annotate({"failure": None}, dana)
    assert record["reason"] == "duplicate upload: graded the newest attempt"


def test_identical_copies_are_graded_once_and_listed(tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "dana_a_tiny.ipynb").write_text(_work("same"))
    (subs / "dana_b_tiny.ipynb").write_text(_work("same"))
    dana = _find(subs, tmp_path)["dana", "tiny"]
    assert dana.notebook is not None and dana.rule == "identical"
    assert dana.duplicates == ["dana_a_tiny.ipynb", "dana_b_tiny.ipynb"]
    record = grade.annotate({"failure": "the cell did not finish within 3 s"}, dana)
    assert record["reason"] == "duplicate upload: identical copies, graded once; timeout"
    text = grade.summary([{**record, "student": "dana", "assignment": "tiny",
                           "origin": dana.origin, "cached": False}], [])
    assert "dana_a_tiny.ipynb" in text and "dana_b_tiny.ipynb" in text


def test_two_notebooks_in_one_zip(tmp_path):
    """nbgrader's rule inside ONE upload: <assignment>.ipynb is the one; without it, two
    notebooks of the assignment are a duplicate, never the first in sorted order."""
    subs = tmp_path / "subs"
    subs.mkdir()
    with zipfile.ZipFile(subs / "dana_upload.zip", "w") as zf:
        zf.writestr("tiny.ipynb", _work("real"))
        zf.writestr("tiny-Copy1.ipynb", _blank())
    with zipfile.ZipFile(subs / "eve_upload.zip", "w") as zf:
        zf.writestr("tiny-v1.ipynb", _blank())
        zf.writestr("tiny-v2.ipynb", _work("eve"))
    found = _find(subs, tmp_path)
    assert found["dana", "tiny"].notebook.name == "tiny.ipynb"
    assert found["dana", "tiny"].set_aside == ["dana_upload.zip:tiny-Copy1.ipynb"]
    eve = found["eve", "tiny"]
    assert eve.notebook is None and eve.problem.startswith("duplicate upload")
    assert eve.duplicates == ["eve_upload.zip:tiny-v1.ipynb", "eve_upload.zip:tiny-v2.ipynb"]


def test_a_folder_without_assignment_folders_is_not_dropped_silently(tmp_path):
    subs = tmp_path / "subs"
    (subs / "frank").mkdir(parents=True)
    (subs / "frank" / "tiny.ipynb").write_text(_work("frank"))
    (subs / "gina" / "notes").mkdir(parents=True)
    (subs / "hal_1_2_x" / "tiny").mkdir(parents=True)     # nbgrader: the whole folder name
    (subs / "hal_1_2_x" / "tiny" / "tiny.ipynb").write_text(_work("hal"))
    found = _find(subs, tmp_path)
    assert found["hal_1_2_x", "tiny"].notebook.name == "tiny.ipynb"
    assert found["frank", "tiny"].notebook.name == "tiny.ipynb"
    gina = found["gina", "tiny"]
    assert gina.notebook is None and "no notebook" in gina.problem


CLASS = {"canvas": ["smithdana_101_9001_tiny.ipynb"], "": [],
         "blackboard": ["Lab 1_eve_attempt_2024-03-01-11-00-00_tiny.ipynb"]}


@pytest.mark.parametrize("name, key, lms", [
    # the LMS writes the owner part; the student's own file name (after it) can never move the
    # upload to another student. Read with the other names of its download (lms.owners): alone,
    # the first name also reads as Blackboard's and is refused (tests/test_autograder_lms_ids.py)
    ("smithmallory_102_9003_x_101_attempt_2099-01-01-00-00-00_tiny.ipynb", "102", "canvas"),
    ("smithmallory_102_9003_Dana Smith_5001_assignsubmission_file_tiny.ipynb", "102", ""),
    ("Mal Lory_5009_assignsubmission_file_smithdana_101_9001_tiny.ipynb", "5009", ""),
    ("Lab 1_mallory_attempt_2024-03-01-10-00-00_smithdana_101_9001_tiny.ipynb", "mallory",
     "blackboard"),
    ("Lab_1_dana_attempt_2024-03-01-10-00-00_tiny.ipynb", "dana", ""),
    ("o_neilpat_104_9006_tiny.ipynb", "104", ""),
    ("dana_1_tiny.ipynb", "dana", ""),
    ("carol_1234_attempt.zip", "carol", ""),
])
def test_the_owner_is_read_from_the_lms_part_of_the_name(name, key, lms):
    assert owners([name, *CLASS[lms]])[name].key == key
    if not lms:
        assert owner(name).key == key


def test_zip_staging_is_named_by_content_not_by_the_students_name(tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    with zipfile.ZipFile(subs / "dana_x.zip", "w") as zf:
        zf.writestr("tiny.ipynb", _work("z"))
    shutil.copy(subs / "dana_x.zip", subs / "eve_x.zip")
    found = _find(subs, tmp_path)
    assert found["dana", "tiny"].notebook == found["eve", "tiny"].notebook
    staged = [p.name for p in (tmp_path / "st").iterdir()]
    assert staged == [found["dana", "tiny"].notebook.parent.name]


@pytest.mark.parametrize("name", ['<img src=x onerror=alert(1)>_tiny.ipynb',
                                  "ann\\'+alert(1)+\\'_tiny.ipynb", "\u202eevil_tiny.ipynb",
                                  "-dana_tiny.ipynb"])
def test_a_student_name_unsafe_in_formgrader_gets_a_safe_key_and_is_listed(tmp_path, name):
    """formgrader prints student ids unescaped (even inside a script): a name with other
    characters is graded under a safe key, and grade's summary lists the renaming."""
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / name).write_text(_work("x"))
    (sub,) = discover(subs, KNOWN, tmp_path / "st")
    assert SAFE.fullmatch(sub.student) and sub.renamed == name.rsplit("_", 1)[0]
    record = grade.annotate(grade.zero_record(sub, TINY, ""), sub)
    text = grade.summary([record], [])
    assert "graded under a safe name" in text and sub.student in text
    assert "<img" not in sub.student and "\u202e" not in text


def test_two_unsafe_names_never_meet():
    a, b = owner("<a>_x.ipynb").key, owner("<b>_x.ipynb").key
    assert a != b and SAFE.fullmatch(a) and SAFE.fullmatch(b)
    assert owner("dana.smith@uni_x.ipynb").key == "dana.smith@uni"     # safe: unchanged


SAFE = __import__("re").compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,99}")
