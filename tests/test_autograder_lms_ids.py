"""Whose upload is it, against hostile names (autograder/instructor/lms.py; the outside red team's findings:
"LMS ids misread, honest grades replaced").

Each LMS writes part of a download's names from free text: Canvas from the student's sortable
name (lowercased, word characters only, so it may hold ``_`` and digits) and their own file
name, Moodle from the student's file name, Blackboard from the assignment title and the
username (both may hold ``_``). These tests put another student's id, ``LATE``, ``anon_``,
``attempt_``, ``assignsubmission_file``, other digits, Unicode and very long text there, and
require that an upload is never given to another student: it is read as its own student's, or
refused ("ambiguous name", not graded for anyone). Honest names of every layout keep the keys
they had. Layouts and sources: autograder/instructor/lms.py and autograder/README.md.
"""
from __future__ import annotations

import functools
import time
import tracemalloc

import nbformat
import pytest

from autograder.instructor import grade, lms
from autograder.run.engine import load, replace_cell
from autograder.instructor.release import generate
from autograder.instructor.submissions import discover
from test_autograder_submissions import KNOWN, TINY

owner = lms.owner

STAMP1, STAMP2 = "2024-03-01-10-00-00", "2024-03-02-09-30-00"


def _work(tag: str) -> str:
    """A real answer, made distinct by ``tag`` so that copies are not identical."""
    nb = replace_cell(load(TINY), "halve", f"def halve(x):\n    return x / 2  # {tag}\n")
    return nbformat.writes(nb)


@functools.cache
def _blank() -> str:
    return generate(TINY)


def _find(folder, tmp_path) -> dict:
    return {(s.student, s.assignment): s for s in discover(folder, KNOWN, tmp_path / "st")}


def _folder(tmp_path, files: dict):
    subs = tmp_path / "subs"
    subs.mkdir()
    for name, body in files.items():
        (subs / name).write_text(body)
    return subs


# --- the two findings, exactly -------------------------------------------------------------

def test_blackboard_usernames_with_underscores_stay_two_students(tmp_path):
    """dana_smith's work and john_smith's newer blank: two students, each graded from their own
    upload (the old reading cut both at the last '_', read "smith" twice and graded john's blank
    as the newest attempt of both: dana 55 -> 0, no row of her own)."""
    subs = _folder(tmp_path, {
        f"Lab 1_dana_smith_attempt_{STAMP1}_tiny.ipynb": _work("dana"),
        f"Lab 1_dana_smith_attempt_{STAMP1}.txt": "Name: Dana Smith (dana_smith)",
        f"Lab 1_john_smith_attempt_{STAMP2}_tiny.ipynb": _blank(),
        f"Lab 1_john_smith_attempt_{STAMP2}.txt": "Name: John Smith (john_smith)",
    })
    found = _find(subs, tmp_path)
    assert set(found) == {("dana_smith", "tiny"), ("john_smith", "tiny")}
    dana, john = found["dana_smith", "tiny"], found["john_smith", "tiny"]
    assert "# dana" in dana.notebook.read_text() and not dana.duplicates and not dana.problem
    assert john.notebook.read_text() == _blank() and not john.duplicates
    assert dana.set_aside == [f"Lab 1_dana_smith_attempt_{STAMP1}.txt"]


def test_a_canvas_name_holding_another_users_ids_is_refused_not_given_to_them(tmp_path):
    """Mallory (Canvas user 555) sets her name so that Canvas writes ``mallory_101_7`` as her
    lastfirst: her upload reads as user 101's too. Dana (user 101) keeps her own grade (she went
    from 55 to 0, "duplicate upload: none graded"); Mallory's upload is graded for nobody and
    the row says why."""
    attacker = "mallory_101_7_555_9002_tiny.ipynb"
    subs = _folder(tmp_path, {"smithdana_101_9001_tiny.ipynb": _work("dana"),
                              attacker: _blank(),
                              "jonesal_102_9003_tiny.ipynb": _work("al")})
    found = _find(subs, tmp_path)
    dana = found["101", "tiny"]
    assert "# dana" in dana.notebook.read_text() and not dana.duplicates and not dana.problem
    refused = [s for s in found.values() if s.origin == attacker]
    assert len(refused) == 1 and refused[0].student not in ("101", "555", "7")
    assert refused[0].notebook is None and refused[0].problem.startswith("ambiguous name")
    assert "user 101" in refused[0].problem and "user 555" in refused[0].problem
    record = grade.grade_one(refused[0], TINY, grade.options_key(20, "auto"), None, "code")
    assert record["reason"] == "ambiguous name"


# --- hostile names in a class folder: never another student's --------------------------------

CANVAS_CLASS = ["smithdana_101_9001_tiny.ipynb", "jonesal_102_9003_tiny.ipynb",
                "smithdana_101_9004_notes.pdf"]
REFUSED = None


@pytest.mark.parametrize("name, key", [
    # a lastfirst (lowercased word characters: it may hold '_' and digits) with ids in it
    ("mallory_101_7_555_9002_tiny.ipynb", REFUSED),
    ("dana_2_555_9002_tiny.ipynb", REFUSED),                   # a lastfirst ending in digits
    ("mallory_late_101_7_555_9002_tiny.ipynb", REFUSED),       # 'late': Canvas lowercases names
    ("x_101_7_" * 25 + "555_9002_tiny.ipynb", REFUSED),        # long, many ids
    ("anon_abcde_555_9002_tiny.ipynb", "555"),                 # 'anon_' in a lastfirst
    ("x_5_assignsubmission_file_555_9002_tiny.ipynb", "555"),  # Moodle's marker in a lastfirst
    # the student's own file name with another student's ids or LMS markers in it
    ("smithmallory_555_9002_x_101_7_tiny.ipynb", REFUSED),
    ("smithmallory_555_9002_x_LATE_101_7_tiny.ipynb", REFUSED),
    ("smithmallory_555_9002_x_101_attempt_2099-01-01-00-00-00_tiny.ipynb", "555"),
    ("smithmallory_555_9002_Dana Smith_101_assignsubmission_file_tiny.ipynb", "555"),
    ("smithmallory_LATE_555_9002_anon_Xy12z_9005_tiny.ipynb", "555"),
    # Unicode: Canvas keeps non-ASCII letters and digits; ids are ASCII digits
    ("dana_\u0661\u0660\u0661_\u0667_555_9002_tiny.ipynb", "555"),  # Arabic-Indic 101, 7
    ("dana_\uff11\uff10\uff11_\uff17_555_9002_tiny.ipynb", "555"),  # fullwidth 101, 7
    ("m\u00fcllerj\u00fcrgen_555_9002_tiny.ipynb", "555"),
    ("\u5f20\u4f1f_555_9002_\u4f5c\u4e1a_tiny.ipynb", "555"),
    ("a" * 200 + "_555_9002_tiny.ipynb", "555"),
])
def test_hostile_canvas_names_are_read_as_their_own_student_or_refused(tmp_path, name, key):
    files = {n: _work(n[:8]) for n in CANVAS_CLASS}
    files[name] = _blank()
    found = _find(_folder(tmp_path, files), tmp_path)
    mine = [s for s in found.values() if name in s.origin]
    assert len(mine) == 1, [s.origin for s in found.values()]
    theirs = mine[0]
    if key is REFUSED:
        assert theirs.problem.startswith("ambiguous name") and theirs.notebook is None
        assert theirs.student not in ("101", "102", "555", "2", "7")
    else:
        assert (theirs.student, theirs.problem) == (key, None)
    # the others keep their own grade, untouched
    assert "# smithdan" in found["101", "tiny"].notebook.read_text()
    assert not found["101", "tiny"].duplicates and not found["101", "tiny"].problem
    assert found["101", "tiny"].set_aside == ["smithdana_101_9004_notes.pdf"]
    assert "# jonesal_" in found["102", "tiny"].notebook.read_text()


MOODLE_CLASS = ["Dana Smith_5001_assignsubmission_file_tiny.ipynb",
                "Al Jones_5002_assignsubmission_file_tiny.ipynb"]


@pytest.mark.parametrize("name, key", [
    # Moodle replaces '_' in a full name by a space: the name ends at the first '_'
    ("Mal Lory_5009_assignsubmission_file_smithdana_101_9001_tiny.ipynb", "5009"),
    ("mallory_5009_assignsubmission_file_x_5001_assignsubmission_file_tiny.ipynb", "5009"),
    ("mallory_5009_assignsubmission_file_x_101_9001_tiny.ipynb", "5009"),
    ("mallory_5009_assignsubmission_file_Lab 1_dana_attempt_2024-03-01-10-00-00_tiny.ipynb",
     "5009"),
    ("Mal 5001 Lory_5009_assignsubmission_file_tiny.ipynb", "5009"),
    ("Participant_5010_assignsubmission_file_tiny.ipynb", "5010"),      # blind marking
])
def test_hostile_moodle_names_are_read_by_their_participant_id(tmp_path, name, key):
    files = {n: _work(n[:8]) for n in MOODLE_CLASS}
    files[name] = _blank()
    found = _find(_folder(tmp_path, files), tmp_path)
    mine = [s for s in found.values() if s.origin == name]
    assert len(mine) == 1 and (mine[0].student, mine[0].problem) == (key, None)
    assert "# Dana Smi" in found["5001", "tiny"].notebook.read_text()
    assert not found["5001", "tiny"].duplicates


def test_blackboard_reads_the_first_attempt_marker_and_one_title_per_download(tmp_path):
    """The student's file name comes after the first ``_attempt_<time>`` and cannot move the
    upload; the assignment title is the same for every name of one download (here it holds a
    '_' too), so usernames with '_' are read whole."""
    hostile = f"Lab_1_mallory_attempt_{STAMP1}_x_dana_smith_attempt_2099-01-01-00-00-00_tiny.ipynb"
    subs = _folder(tmp_path, {
        f"Lab_1_dana_smith_attempt_{STAMP1}_tiny.ipynb": _work("dana"),
        f"Lab_1_eve_attempt_{STAMP2}_tiny.ipynb": _work("eve"),
        hostile: _blank(),
    })
    found = _find(subs, tmp_path)
    assert set(found) == {("dana_smith", "tiny"), ("eve", "tiny"), ("mallory", "tiny")}
    assert found["mallory", "tiny"].origin == hostile
    assert "# dana" in found["dana_smith", "tiny"].notebook.read_text()


def test_two_blackboard_accounts_read_as_one_key_are_never_resolved_by_the_newest(tmp_path):
    """Two assignments' downloads, each of one student, in one folder: ``X_dana_smith`` alone
    cannot tell its title from its username and reads as "smith", like ``Y_smith``. The newest
    attempt rule applies only to attempts of one Blackboard account (the same title and
    username): here neither upload is graded, and the summary names both."""
    subs = _folder(tmp_path, {f"X_dana_smith_attempt_{STAMP1}_tiny.ipynb": _work("dana"),
                              f"Y_smith_attempt_{STAMP2}_tiny.ipynb": _blank()})
    smith = _find(subs, tmp_path)["smith", "tiny"]
    assert smith.notebook is None and smith.rule == ""
    assert smith.problem.startswith("duplicate upload") and len(smith.duplicates) == 2


# --- honest names keep their keys --------------------------------------------------------------

@pytest.mark.parametrize("name, key", [
    ("smithdana_101_9001_tiny.ipynb", "101"),
    ("smithdana_LATE_103_9002_tiny.ipynb", "103"),
    ("o_neilpat_104_9006_tiny.ipynb", "104"),
    ("smith2dana_105_9007_lab_v2.ipynb", "105"),
    ("m\u00fcllerj\u00fcrgen_106_9008_tiny.ipynb", "106"),
    ("smithdana_101_9001_Lab 1 (final).ipynb", "101"),
    ("anon_Xy12z_9005_tiny.ipynb", "anon_Xy12z"),
    ("LATE_anon_Xy12z_9005_tiny.ipynb", "anon_Xy12z"),
    ("Dana Smith_5001_assignsubmission_file_tiny.ipynb", "5001"),
    ("Participant_5007_assignsubmission_file_tiny.ipynb", "5007"),
    (f"Lab 1_dana_attempt_{STAMP1}_tiny.ipynb", "dana"),
    (f"Lab 1_dana_attempt_{STAMP1}.txt", "dana"),
    (f"Lab_1_dana_attempt_{STAMP1}_tiny.ipynb", "dana"),
    ("dana_1_tiny.ipynb", "dana"),
    ("carol_1234_attempt.zip", "carol"),
    ("dana.smith@uni_x.ipynb", "dana.smith@uni"),
])
def test_honest_names_keep_the_keys_they_had(name, key):
    assert owner(name).key == key and not getattr(owner(name), "problem", "")


@pytest.mark.parametrize("name, key", [
    ("Dana Smith_5001_assignsubmission_file", "5001"),
    ("Eve Park_5004_assignsubmission_file_", "5004"),
    ("Gus Roe_5006_assignsubmission_onlinetext", "5006"),
    ("hal_1_2_x", "hal_1_2_x"),                      # nbgrader's <student>/: the whole name
])
def test_honest_folder_names_keep_the_keys_they_had(name, key):
    assert owner(name, folder=True).key == key


def test_an_anonymous_id_of_digits_only_is_read_in_an_anonymous_download():
    """``anon_12345_...`` also reads as the Canvas user 12345 named "anon"; in a download whose
    other names are anonymous it is the anonymous student's (and refused alone)."""
    honest = ["anon_Xy12z_9005_tiny.ipynb", "anon_Qr7Tu_9006_tiny.ipynb"]
    got = lms.owners(honest + ["anon_12345_9007_tiny.ipynb"])
    assert got["anon_12345_9007_tiny.ipynb"].key == "anon_12345"
    assert owner("anon_12345_9007_tiny.ipynb").problem.startswith("ambiguous name")


def test_a_refused_name_stays_inert_in_the_summary_and_the_grade_sheet(tmp_path):
    """A refused upload's key is its own file name, made safe (lms.safe_key); its message
    names the readings by their ids; every name printed goes through safetext.shown."""
    name = "x\u202e\u2066_101_7_555_9002_tiny.ipynb"             # bidi controls in a lastfirst
    subs = _folder(tmp_path, {name: _blank(), "smithdana_101_9001_tiny.ipynb": _work("d")})
    refused = next(s for s in discover(subs, KNOWN, tmp_path / "st") if s.origin == name)
    assert refused.problem.startswith("ambiguous name") and refused.renamed == ""
    assert lms.SAFE_KEY.fullmatch(refused.student)
    record = grade.grade_one(refused, TINY, grade.options_key(20, "auto"), None, "code")
    text = grade.summary([record], [record])
    assert "\u202e" not in text and "\u2066" not in text and r"x\u202e\u2066_101" in text
    out = tmp_path / "grades.csv"
    grade.write_csv([record], KNOWN, out)
    assert "\u202e" not in out.read_text(encoding="utf-8")


def test_very_long_names_are_read_quickly():
    """Time and memory stay linear in the name (it had a copy of the name's front per place
    that reads as an id: 1.2 GB for a 120,000-character name)."""
    names = ["a_" * 50_000 + "101_9001_tiny.ipynb", "x_1_2_" * 20_000 + "555_9002_tiny.ipynb",
             "Lab_" * 30_000 + f"dana_attempt_{STAMP1}_tiny.ipynb",
             "M_5_assignsubmission_file_" * 10_000 + "tiny.ipynb",
             "".join(f"x_{i}_{i}_" for i in range(1, 20_000)) + "555_9002_tiny.ipynb"]
    start = time.monotonic()
    tracemalloc.start()
    try:
        got = lms.owners(names)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert time.monotonic() - start < 10 and peak < 50 * 1024**2, peak
    assert "and 19995 more" in got[names[4]].problem      # ids 1..19999
    assert got[names[0]].key == "101"
    assert got[names[1]].problem.startswith("ambiguous name")
    assert got[names[2]].key == "dana"
    assert all(len(o.key) <= 100 for o in got.values())
