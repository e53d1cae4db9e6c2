"""`python -m autograder grade`: layouts, zips (safely), CSV, cache, malformed notebooks, help."""
import csv
import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent

from autograder.run.engine import load, replace_cell  # noqa: E402
from autograder.instructor.release import generate  # noqa: E402
from autograder.instructor.submissions import assignments, discover, extract_zip  # noqa: E402

FIX = ROOT / "tests" / "fixtures" / "autograder"
TINY = FIX / "solutions" / "tiny" / "tiny.ipynb"


def _class(folder: Path) -> None:
    (folder / "alice" / "tiny").mkdir(parents=True)
    nbformat.write(load(TINY), folder / "alice" / "tiny" / "tiny.ipynb")
    (folder / "bob" / "tiny").mkdir(parents=True)
    (folder / "bob" / "tiny" / "tiny.ipynb").write_text(generate(TINY))
    wrong = replace_cell(load(TINY), "halve", "def halve(x):\n    return x // 2\n")
    with zipfile.ZipFile(folder / "carol_1234_attempt.zip", "w") as zf:
        zf.writestr("submission/tiny.ipynb", nbformat.writes(wrong))
    (folder / "dave_tiny.ipynb").write_text("{ this is not json")
    with zipfile.ZipFile(folder / "mallory.zip", "w") as zf:
        zf.writestr("../../escape/tiny.ipynb", nbformat.writes(load(TINY)))


@pytest.mark.slow
def test_grade_command_writes_the_grade_sheet_and_caches(tmp_path):
    subs, state, out = tmp_path / "subs", tmp_path / "state", tmp_path / "grades.csv"
    course = tmp_path / "course"
    shutil.copytree(FIX / "solutions", course / "solutions")
    _class(subs)
    cmd = [sys.executable, "-m", "autograder", "grade", str(subs), "--out", str(out),
           "--jobs", "2", "--timeout", "20", "--root", str(course), "--state", str(state)]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    rows = list(csv.reader(out.open()))
    assert rows[0] == ["student", "assignment", "test_double", "test_double__array",
                       "test_halve", "explain", "total", "max", "needs_manual_grade", "reason"]
    by = {r[0]: r[2:] for r in rows[1:]}
    assert by["alice"] == ["2", "1", "1", "", "4", "5", "explain", ""]
    assert by["bob"] == ["0", "0", "0", "0", "0", "5", "", ""]       # released stub: no answer
    assert by["carol"][:3] == ["2", "1", "0"] and by["carol"][4] == "3"
    assert by["dave"] == ["", "", "", "", "", "5", "", "not a notebook"]   # not graded: blank
    assert by["mallory"] == ["", "", "", "", "", "5", "", "bad zip"]
    assert (course / "gradebook.db").exists()
    assert (course / "autograded" / "alice" / "tiny" / "tiny.ipynb").exists()
    assert "dave / tiny" in done.stdout and "invalid notebook" in done.stdout
    assert "mallory / tiny" in done.stdout and "unsafe path" in done.stdout
    assert not (tmp_path / "escape").exists()
    first = out.read_bytes()
    again = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert "graded 3 submission(s) (3 from the cache), 2 not graded" in again.stdout
    assert out.read_bytes() == first


def test_discover_reads_nbgrader_folders_zips_and_loose_files(tmp_path):
    subs = tmp_path / "subs"
    _class(subs)
    found = discover(subs, assignments(FIX), tmp_path / "staging")
    assert [(s.student, s.assignment) for s in found] == [
        ("alice", "tiny"), ("bob", "tiny"), ("carol", "tiny"), ("dave", "tiny"),
        ("mallory", "tiny")]
    assert found[4].notebook is None and "unsafe path" in found[4].problem


def test_every_subcommand_documents_every_argument_and_its_default():
    from autograder.__main__ import parser
    import argparse
    top = parser()
    subs = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    assert set(subs.choices) == {"release", "grade", "cluster-certs", "feedback", "export",
                                 "catalogue", "selfcheck", "check-course", "student-edition",
                                 "class-server"}
    for name, p in subs.choices.items():
        assert p.description, name
        for action in p._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            assert action.help and action.help != argparse.SUPPRESS, (name, action.dest)
            if action.option_strings:
                assert "default" in action.help, (name, action.dest)
    for name in ("grade", "feedback"):
        text = subs.choices[name].format_help()
        for words in ("<student>/<assignment>/<notebook>.ipynb", "<student>_<anything>.zip",
                      "cache", "formgrader", "make formgrader", "gradebook.db", "--state"):
            assert words in text, (name, words)


def test_help_runs_for_every_subcommand():
    for name in ("release", "grade", "cluster-certs", "feedback", "export", "catalogue",
                 "selfcheck", "check-course", "student-edition", "class-server"):
        done = subprocess.run([sys.executable, "-m", "autograder", name, "--help"], cwd=ROOT,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0 and "usage:" in done.stdout, (name, done.stderr)


def test_extract_zip_refuses_links_and_oversized_members(tmp_path):
    z = tmp_path / "x.zip"
    with zipfile.ZipFile(z, "w") as zf:
        info = zipfile.ZipInfo("link.ipynb")
        info.external_attr = (0o120777 << 16)
        zf.writestr(info, "/etc/passwd")
    with pytest.raises(ValueError, match="link"):
        extract_zip(z, tmp_path / "out")
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("/abs/tiny.ipynb", "{}")
    with pytest.raises(ValueError, match="unsafe"):
        extract_zip(z, tmp_path / "out2")


def test_a_broken_upload_is_one_submission_even_with_several_assignments(tmp_path):
    """Not one row per assignment: one submission of that student, saying what was wrong."""
    for aid in ("tiny", "tiny2"):
        (tmp_path / "course" / "solutions" / aid).mkdir(parents=True)
        shutil.copy(TINY, tmp_path / "course" / "solutions" / aid / f"{aid}.ipynb")
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "erin.zip").write_bytes(b"PK\x03\x04 truncated")
    (subs / "frank_tiny2_upload.zip").write_bytes(b"not a zip at all")
    (subs / "gina_homework.ipynb").write_text("{}")
    (subs / "hal.pdf").write_bytes(b"%PDF-1.4")
    found = discover(subs, assignments(tmp_path / "course"), tmp_path / "staging")
    assert [(s.student, s.assignment, s.notebook) for s in found] == [
        ("erin", "", None), ("frank", "tiny2", None), ("gina", "", None), ("hal", "", None)]
    assert "bad zip" in found[0].problem and "bad zip" in found[1].problem
    assert "names no assignment" in found[2].problem and "not a notebook" in found[3].problem


# --- the CSV's reason: a student's timeout is "timeout", never "grader error" (issue 16) ----

def _messages(path: Path) -> list:
    """(kind, text) of every failure or error message ``path`` writes, placeholders as "10":
    ``stop(...)`` arguments, values assigned to failure/error/reason, "failure" entries."""
    import ast

    def render(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [node.value]
        if isinstance(node, ast.JoinedStr):
            return ["".join(v.value if isinstance(v, ast.Constant) else "10"
                            for v in node.values)]
        if isinstance(node, ast.IfExp):
            return render(node.body) + render(node.orelse)
        return []

    out = []
    for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(n, ast.Call) and getattr(n.func, "attr", None) == "stop":
            out += [("stop", t) for a in n.args for t in render(a)]
        elif isinstance(n, ast.Assign):
            names = {t.id for t in n.targets if isinstance(t, ast.Name)}
            for kind in names & {"failure", "error", "reason"}:
                out += [(kind, t) for t in render(n.value)]
        elif isinstance(n, ast.Dict):
            out += [("failure", t) for k, v in zip(n.keys, n.values)
                    if isinstance(k, ast.Constant) and k.value == "failure" for t in render(v)]
    return out


def test_reason_of_the_wording_tester_and_engine_really_use():
    from autograder.instructor.grade import reason_of
    stops = [t for path in ("inside/trusted_namespace.py", "inside/trusted.py", "run/engine.py")
             for kind, t in _messages(ROOT / "autograder" / path) if kind == "stop"]
    assert len(set(stops)) >= 4, stops            # the extraction still finds them
    for text in stops:   # why the student's process was stopped: never the grader's fault
        assert reason_of(text) == ("kernel died" if "ended" in text else "timeout"), text
    for path in ("inside/trusted_namespace.py", "inside/trusted.py", "run/engine.py"):
        for kind, text in _messages(ROOT / "autograder" / path):
            got = reason_of(text)
            if kind != "error":
                assert got != "other", (path, text)
                assert (got == "grader error") == text.startswith("grader error"), (path, text)
            if text.startswith("timeout"):
                assert got == "timeout" == reason_of(f"the setup cell 3 failed: {text}"), text
            if "cannot be reached" in text:
                assert got == "kernel died", text
    # as a run writes them (tests/test_autograder_engine.py, issue 16)
    assert reason_of("the cell did not finish within 10 s") == "timeout"
    assert reason_of("an answer did not reply within 10 s in <test cell test_x>") == "timeout"
    assert reason_of("<test cell test_sample_token> ran past 10 s") == "timeout"
    assert reason_of("timeout: sample_token did not finish within 10 s and was interrupted "
                     "(in <test cell test_sample_token>)") == "timeout"
    assert reason_of("the process running the answers ended (the other process ended)") \
        == "kernel died"
    assert reason_of("the answers cannot be reached: the cell did not finish within 10 s") \
        in ("timeout", "kernel died")
    # the start decides: words a student chose further on cannot relabel a failure
    assert reason_of("grader error: KeyError: 'timeout'") == "grader error"
    assert reason_of("bad zip file: 'timeout.ipynb' is larger than it claims") == "bad zip"
    assert reason_of("the setup cell 1 failed: ModuleNotFoundError: No module named 'x'") \
        == "grader error"
    assert reason_of("something nobody wrote yet") == "other"


@pytest.mark.slow
def test_a_students_timeout_is_timeout_in_the_csv(tmp_path):
    """An answer that swallows the interrupt is stopped at the time limit: the row's reason
    is "timeout" (it was "grader error")."""
    from autograder import paths
    from autograder.instructor import grade
    from autograder.instructor.submissions import Submission
    endless = ("def double(x):\n    return 2 * x\nwhile True:\n    try:\n        while True:\n"
               "            pass\n    except BaseException:\n        pass\n")
    nb = tmp_path / "tiny.ipynb"
    nbformat.write(replace_cell(load(TINY), "double", endless), nb)
    record = grade.grade_one(Submission("dana", "tiny", nb, "dana_tiny.ipynb"), TINY,
                             grade.options_key(3, "auto"), None, "code", timeout=3,
                             run={"state": paths.State(tmp_path / "state")})
    assert record["failure"] and record["reason"] == "timeout", record["failure"]
    out = tmp_path / "grades.csv"
    grade.write_csv([record], {"tiny": TINY}, out)
    assert list(csv.reader(out.open()))[1][-1] == "timeout"


# --- the terminal: names from submissions are printed with their controls escaped ---------

def test_summary_shows_escape_sequences_in_names_instead_of_obeying_them(tmp_path):
    from autograder.instructor import grade
    subs = tmp_path / "subs"
    subs.mkdir()
    fake = "x\x1b[2K\r no failures\x1b[8m tiny.ipynb"
    with zipfile.ZipFile(subs / "mallory.zip", "w") as zf:
        zf.writestr(fake, "{ not json")
    (subs / "\x1b[2K\rdana\u202e_tiny.ipynb").write_text("{ not json")
    found = discover(subs, assignments(FIX), tmp_path / "staging")
    records = [grade.grade_one(s, TINY, grade.options_key(20, "auto"), None, "code")
               for s in found]
    text = grade.summary(records, [r for r in records if r["failure"]])
    assert "\x1b" not in text and "\r" not in text and "\u202e" not in text
    assert r"mallory.zip:x\x1b[2K\r no failures\x1b[8m tiny.ipynb" in text
    # the unsafe name is graded under a safe key, and the renaming is listed, escaped
    assert r"\x1b[2K\rdana\u202e -> " in text
    assert all(line.startswith(("graded", "2 submission", "1 upload", "  "))
               for line in text.splitlines())


@pytest.mark.slow
def test_a_lone_surrogate_in_one_submission_stops_nothing(tmp_path):
    """An outside review stopped ``grade`` (and ``feedback``) for a whole class with one lone
    surrogate, printed by an answer or written in a markdown answer: no UTF-8 file can hold it,
    and nbformat.write raised while the gradebook copy was written.  Stock nbgrader grades on."""
    subs, state, out = tmp_path / "subs", tmp_path / "state", tmp_path / "grades.csv"
    course = tmp_path / "course"
    shutil.copytree(FIX / "solutions", course / "solutions")
    odd = replace_cell(load(TINY), "double",
                       'def double(x):\n    print("\\ud800 printed")\n    return 2 * x\n')
    odd = replace_cell(odd, "explain", "Because \ud800 it is.")
    for student, nb in (("odd", odd), ("honest", load(TINY))):
        (subs / student / "tiny").mkdir(parents=True)
        # the surrogate escaped as "\ud800" in the JSON, as a notebook file holds it
        (subs / student / "tiny" / "tiny.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    cmd = [sys.executable, "-m", "autograder", "grade", str(subs), "--out", str(out),
           "--timeout", "20", "--root", str(course), "--state", str(state)]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    by = {r[0]: r for r in csv.reader(out.open(encoding="utf-8"))}
    assert by["honest"][6] == "4" and by["odd"][6] == "4", by     # both graded, as stock nbgrader
    graded = (course / "autograded" / "odd" / "tiny" / "tiny.ipynb").read_text(encoding="utf-8")
    assert "\ufffd" in graded and "\ud800" not in graded
