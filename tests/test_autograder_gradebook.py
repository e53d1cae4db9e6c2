"""Grades at home in nbgrader's gradebook (autograder/instructor/gradebook.py, grade.py, feedback.py).

Fast tests replace the execution engine by a stand-in that scores a test cell by whether the
answer it belongs to equals the solution, so they check the bookkeeping alone: what reaches
nbgrader's gradebook, what comes back from it (hand scores, comments, corrections made as
formgrader makes them), the CSV, the cache key and the feedback page. The slow end-to-end test
at the bottom uses the real engine and stock nbgrader commands.
"""
from __future__ import annotations

import csv
import functools
import html
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent

from autograder.proofs import catalogue
from autograder.run import engine
from autograder.instructor import grade  # noqa: E402
from autograder.cells import grade_id, is_answer, is_autograded_test as is_test, load, points  # noqa: E402
from autograder.instructor.gradebook import CourseGradebook, answers_of  # noqa: E402
from autograder.instructor.release import generate  # noqa: E402

TINY = ROOT / "tests" / "fixtures" / "autograder" / "solutions" / "tiny" / "tiny.ipynb"
NBGRADER = Path(sys.executable).with_name("nbgrader")


class Result:
    """What engine.grade_notebook returns (engine.GradeResult's fields)."""

    def __init__(self, assignment_id, failure=None, executed=None):
        self.assignment_id, self.failure, self.executed = assignment_id, failure, executed
        self.scores, self.manual, self.errors, self.notes = {}, {}, {}, []

    @property
    def total(self):
        return float(sum(a for a, _ in self.scores.values()))

    @property
    def possible(self):
        return float(sum(p for _, p in self.scores.values()))


class Fake:
    """Stands in for engine.grade_notebook: full marks on test_<g>* iff answer g is right."""

    def __init__(self):
        self.calls = 0

    def __call__(self, assignment_id, nb_or_path, timeout=60, *, source=None, sandbox="auto",
                 **run):
        self.calls += 1
        src = load(source)
        right = {g: catalogue.solution_text(s) for g, s in answers_of(src).items()}
        try:
            theirs = answers_of(load(nb_or_path))
        except Exception as e:  # noqa: BLE001
            return Result(assignment_id, failure=f"invalid notebook: {e}")
        merged = load(src)
        for cell in merged.cells:
            if is_answer(cell):
                cell.source = theirs.get(grade_id(cell), cell.source)
        r = Result(assignment_id, executed=merged)
        for cell in src.cells:
            gid = grade_id(cell)
            if is_test(cell):
                g = next(a for a in right if gid == f"test_{a}" or gid.startswith(f"test_{a}__"))
                ok = theirs.get(g, "").strip() == right[g].strip()
                r.scores[gid] = (points(cell) if ok else 0.0, points(cell))
                if not ok:
                    r.errors[gid] = (f"AssertionError: {g} is wrong [x](javascript:alert(1))\n"
                                     f"Hint: reread the task")
            elif cell.cell_type == "markdown" and is_answer(cell):
                r.manual[gid] = points(cell)
        return r


@pytest.fixture
def fake(monkeypatch):
    f = Fake()
    monkeypatch.setattr(engine, "grade_notebook", f)
    return f


def course(tmp_path: Path) -> Path:
    """A course folder like the repository: the root's nbgrader_config.py and the tiny source."""
    root = tmp_path / "course"
    (root / "solutions" / "tiny").mkdir(parents=True)
    shutil.copy(TINY, root / "solutions" / "tiny" / "tiny.ipynb")
    (root / "autograder").mkdir()
    shutil.copy(ROOT / "nbgrader_config.py", root / "nbgrader_config.py")
    shutil.copy(ROOT / "autograder" / "nbgrader_config.py", root / "autograder")
    return root


def solution_nb():
    nb = load(TINY)
    for cell in nb.cells:
        if is_answer(cell):
            cell.source = catalogue.solution_text(cell.source)
    return nb


def put(folder: Path, student: str, nb) -> None:
    (folder / student / "tiny").mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, folder / student / "tiny" / "tiny.ipynb")


@functools.lru_cache(maxsize=None)
def released_text() -> str:
    return generate(TINY)


def released():
    return nbformat.reads(released_text(), as_version=4)


def text(page: str) -> str:
    """The visible text of a page: tags dropped, references resolved, spaces squeezed."""
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", "", page)))


def rows(path: Path) -> dict:
    with open(path, newline="") as f:
        table = list(csv.reader(f))
    return {"header": table[0], **{r[0]: dict(zip(table[0], r)) for r in table[1:]}}


def run(subs, root, tmp_path, **kw):
    out = tmp_path / "grades.csv"
    records, failures = grade.grade_all(subs, root=root, out=out, jobs=1, timeout=20,
                                        state=tmp_path / "state", progress=False,
                                        gradebook=True, code="fixed", **kw)
    return records, rows(out)


def set_hand_grade(root, student, cell, score, comment=None, comment_on=None):
    """What formgrader does when the instructor saves a score and a comment (comments belong
    to answer cells: ``comment_on``, default ``cell``)."""
    with CourseGradebook(root).open() as gb:
        g = gb.find_grade(cell, "tiny", "tiny", student)
        g.manual_score = score
        g.needs_manual_grade = False
        if comment is not None:
            c = gb.find_comment(comment_on or cell, "tiny", "tiny", student)
            c.manual_comment = comment
        gb.db.commit()


def test_grade_records_the_class_and_reads_hand_grades_back(tmp_path, fake):
    root, subs = course(tmp_path), tmp_path / "subs"
    explained = engine.replace_cell(solution_nb(), "explain", "Doubling is linear.")
    put(subs, "alice", explained)
    put(subs, "bob", released())
    records, sheet = run(subs, root, tmp_path)
    assert sheet["header"] == ["student", "assignment", "test_double", "test_double__array",
                               "test_halve", "explain", "total", "max", "needs_manual_grade",
                               "reason"]
    # alice: every autograded point, the free-text answer waits for the instructor
    assert [sheet["alice"][k] for k in ("test_double", "test_halve", "explain", "total",
                                        "max", "needs_manual_grade")] == \
        ["2", "1", "", "4", "5", "explain"]
    # bob left the answer as released: 0 without hand grading, nothing to grade
    assert [sheet["bob"][k] for k in ("explain", "total", "needs_manual_grade")] == \
        ["0", "0", ""]
    # formgrader finds what it needs: the submission in the gradebook, the graded notebook
    book = CourseGradebook(root)
    with book.open() as gb:
        assert sorted(s.id for s in gb.students) == ["alice", "bob"]
        assert gb.find_grade("explain", "tiny", "tiny", "alice").needs_manual_grade
    copy = nbformat.read(book.autograded_path("alice", "tiny", "tiny"), as_version=4)
    scheme = [c for c in copy.cells if c.get("id") == "mark-scheme-explain"]
    assert scheme and "SOLUTION-PROSE" in scheme[0].source   # the model answer, beside it
    # the page formgrader renders for it: a score box and a comment box for the free-text
    # answer, the mark scheme right after it
    from nbconvert import HTMLExporter
    from nbgrader.server_extensions.formgrader import handlers
    exporter = HTMLExporter(template_name="formgrade",
                            extra_template_basedirs=[handlers.template_path])
    page, _ = exporter.from_filename(str(book.autograded_path("alice", "tiny", "tiny")),
                                     resources={"base_url": "", "submission_id": "x",
                                                "notebook_id": "tiny", "assignment_id": "tiny",
                                                "index": 0, "total": 1})
    assert 'id="explain"' in page and 'id="explain-comment"' in page
    assert page.index('id="explain-comment"') < page.index("Mark scheme for") \
        < page.index("SOLUTION-PROSE")
    # and nbgrader's submitted/ copy, which formgrader counts
    assert (root / "submitted" / "alice" / "tiny" / "tiny.ipynb").read_bytes() == \
        (subs / "alice" / "tiny" / "tiny.ipynb").read_bytes()
    # the instructor grades in formgrader; the next run reads it back
    set_hand_grade(root, "alice", "explain", 0.5, "Say why it is linear.")
    records, sheet = run(subs, root, tmp_path)
    assert [sheet["alice"][k] for k in ("explain", "total", "max", "needs_manual_grade")] == \
        ["0.5", "4.5", "5", ""]
    alice = next(r for r in records if r["student"] == "alice")
    assert alice["grades"]["explain"]["comment"] == "Say why it is linear."
    assert all(r["cached"] for r in records) and fake.calls == 2


def test_regrading_keeps_hand_grades_of_unchanged_answers_and_flags_changed_ones(
        tmp_path, fake):
    root, subs = course(tmp_path), tmp_path / "subs"
    first = engine.replace_cell(solution_nb(), "explain", "Doubling is linear.")
    put(subs, "alice", first)
    put(subs, "carol", first)
    run(subs, root, tmp_path)
    set_hand_grade(root, "alice", "explain", 1.0, "Right.")
    set_hand_grade(root, "carol", "explain", 1.0, "Right.")
    # alice fixes a code answer only; carol rewrites the free-text answer
    put(subs, "alice", engine.replace_cell(first, "halve", "def halve(x):\n    return x * 0.5\n"))
    put(subs, "carol", engine.replace_cell(first, "explain", "Something else entirely."))
    records, sheet = run(subs, root, tmp_path)
    assert sheet["alice"]["explain"] == "1" and sheet["alice"]["needs_manual_grade"] == ""
    assert sheet["carol"]["explain"] == "1" and sheet["carol"]["needs_manual_grade"] == "explain"
    carol = next(r for r in records if r["student"] == "carol")
    assert carol["flagged"] == ["explain"]
    assert "carol / tiny: the answers changed since explain was graded by hand" in \
        grade.summary(records, [])
    # still flagged on the next run, until the instructor checks it in formgrader
    _, sheet = run(subs, root, tmp_path)
    assert sheet["carol"]["needs_manual_grade"] == "explain"
    set_hand_grade(root, "carol", "explain", 0.0)
    _, sheet = run(subs, root, tmp_path)
    assert sheet["carol"]["needs_manual_grade"] == "" and sheet["carol"]["total"] == "4"


def test_the_autograded_copy_shows_html_as_text_and_keeps_its_hand_grade(tmp_path, fake):
    """Formgrader's page must not run a student's HTML (issue 16; tests/test_formgrader_inert.py
    renders it): the copy shows such an answer as text, plain markdown as it is, and a hand
    grade stays put over re-grades, also after a copy written verbatim by an older grader."""
    root, subs = course(tmp_path), tmp_path / "subs"
    attack = "Doubling is *linear*. <img src=x onerror=alert(1)> [x](javascript:alert(2))"
    put(subs, "alice", engine.replace_cell(solution_nb(), "explain", attack))
    put(subs, "bob", engine.replace_cell(solution_nb(), "explain", "It is *linear*: `a<b`."))
    run(subs, root, tmp_path)
    book = CourseGradebook(root)

    def shown(student):
        nb = nbformat.read(book.autograded_path(student, "tiny", "tiny"), as_version=4)
        return answers_of(nb)["explain"]
    assert shown("bob") == "It is *linear*: `a<b`."
    assert shown("alice").startswith("*Shown as text") and f"\n{attack}\n" in shown("alice")
    set_hand_grade(root, "alice", "explain", 1.0)
    _, sheet = run(subs, root, tmp_path)
    assert sheet["alice"]["explain"] == "1" and sheet["alice"]["needs_manual_grade"] == ""
    copy = nbformat.read(book.autograded_path("alice", "tiny", "tiny"), as_version=4)
    next(c for c in copy.cells if grade_id(c) == "explain").source = attack   # an old copy
    nbformat.write(copy, book.autograded_path("alice", "tiny", "tiny"))
    _, sheet = run(subs, root, tmp_path)
    assert sheet["alice"]["needs_manual_grade"] == "" and shown("alice") != attack
    put(subs, "alice", engine.replace_cell(solution_nb(), "explain", attack + " <b>!</b>"))
    _, sheet = run(subs, root, tmp_path)
    assert sheet["alice"]["explain"] == "1" and sheet["alice"]["needs_manual_grade"] == "explain"


def test_a_correction_of_an_autograded_score_in_formgrader_is_honoured(tmp_path, fake):
    root, subs = course(tmp_path), tmp_path / "subs"
    put(subs, "dave", engine.replace_cell(solution_nb(), "halve",
                                          "def halve(x):\n    return x // 2\n"))
    _, sheet = run(subs, root, tmp_path)
    assert sheet["dave"]["test_halve"] == "0"
    set_hand_grade(root, "dave", "test_halve", 1.0, "Integer division is fine here.",
                   comment_on="halve")
    records, sheet = run(subs, root, tmp_path)
    assert sheet["dave"]["test_halve"] == "1" and sheet["dave"]["total"] == "4"
    from autograder.feedback.pages import feedback_notebook, to_html
    page = to_html(feedback_notebook(records[0], released()))
    assert "score set by hand" in text(page) and "Integer division is fine here." in text(page)


def test_a_broken_upload_is_one_row_with_its_reason(tmp_path, fake):
    root, subs = course(tmp_path), tmp_path / "subs"
    subs.mkdir()
    (subs / "erin_upload.zip").write_bytes(b"PK\x03\x04 truncated")
    (subs / "frank_tiny.ipynb").write_text("{ not json")
    with zipfile.ZipFile(subs / "gina.zip", "w") as zf:
        zf.writestr("notes.txt", "no notebook here")
    (subs / "hal_report.pdf").write_bytes(b"%PDF-1.4")
    records, sheet = run(subs, root, tmp_path)
    assert [(r["student"], r["assignment"]) for r in records] == [
        ("erin", "tiny"), ("frank", "tiny"), ("gina", "tiny"), ("hal", "tiny")]
    assert {s: sheet[s]["reason"] for s in ("erin", "frank", "gina", "hal")} == {
        "erin": "bad zip", "frank": "not a notebook", "gina": "no notebook",
        "hal": "not a notebook"}
    assert all(sheet[s]["total"] == "" and sheet[s]["needs_manual_grade"] == ""  # not graded
               for s in ("erin", "frank", "gina", "hal"))
    # everything the grader writes besides the course's own files is under --state
    state = tmp_path / "state"
    assert list((state / "unzipped").iterdir()) and list((state / "cache").glob("*.json"))


def test_reasons_name_what_went_wrong():
    assert grade.reason_of("timeout: the whole notebook took too long") == "timeout"
    assert grade.reason_of("kernel died (the grading process ended)") == "kernel died"
    assert grade.reason_of("invalid notebook: NotJSONError: ...") == "not a notebook"
    assert grade.reason_of("bad zip file: File is not a zip file") == "bad zip"
    assert grade.reason_of("grader error: KeyError: 'x'") == "grader error"
    assert grade.reason_of(None) == ""


# --- the cache key ------------------------------------------------------------------------

def test_equal_options_give_equal_keys_and_any_score_input_changes_the_key(tmp_path):
    nb = tmp_path / "alice_tiny.ipynb"
    nbformat.write(solution_nb(), nb)
    sub = grade.Submission("alice", "tiny", nb, nb.name)
    key = grade.cache_key(sub, TINY, grade.options_key(60, "auto"), "code")
    assert key == grade.cache_key(sub, TINY, grade.options_key(60.0, "auto"), "code")
    assert key != grade.cache_key(sub, TINY, grade.options_key(61, "auto"), "code")
    assert key != grade.cache_key(sub, TINY, grade.options_key(60, "off"), "code")
    assert key != grade.cache_key(sub, TINY, grade.options_key(60, "auto"), "other code")
    other = tmp_path / "source.ipynb"
    other.write_bytes(TINY.read_bytes() + b"\n")
    assert key != grade.cache_key(sub, other, grade.options_key(60, "auto"), "code")


def test_changing_a_tolerance_in_a_check_regrades(tmp_path, fake):
    """A copy of lreact/ and autograder/ with one tolerance changed is new code: the cache
    must not serve the old grade."""
    code = tmp_path / "code"
    for pkg in ("lreact", "autograder"):
        shutil.copytree(ROOT / pkg, code / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    dirs = [code / "lreact", code / "autograder"]
    root, subs = course(tmp_path), tmp_path / "subs"
    put(subs, "alice", solution_nb())
    before = grade.code_fingerprint(dirs)
    grade.grade_all(subs, root=root, jobs=1, state=tmp_path / "state", progress=False,
                    code=before)
    grade.grade_all(subs, root=root, jobs=1, state=tmp_path / "state", progress=False,
                    code=grade.code_fingerprint(dirs))
    assert fake.calls == 1                        # same code: from the cache
    checks = code / "lreact" / "checks.py"
    text = checks.read_text()
    assert "tol=1e-6" in text
    checks.write_text(text.replace("tol=1e-6", "tol=1e-3", 1))
    after = grade.code_fingerprint(dirs)
    assert after != before
    records, _ = grade.grade_all(subs, root=root, jobs=1, state=tmp_path / "state",
                                 progress=False, code=after)
    assert fake.calls == 2 and not records[0]["cached"]


def test_the_default_fingerprint_covers_the_checks_and_the_engine():
    dirs = {d.name for d in grade.code_dirs()}
    assert dirs == {"lreact", "autograder"}


# --- feedback -----------------------------------------------------------------------------

def test_feedback_shows_hand_grades_comments_hints_and_error_text_as_inert_text(tmp_path, fake):
    root, subs = course(tmp_path), tmp_path / "subs"
    wrong = engine.replace_cell(solution_nb(), "double", "def double(x):\n    return x + 2\n")
    put(subs, "alice", engine.replace_cell(wrong, "explain", "Doubling is linear."))
    run(subs, root, tmp_path)
    set_hand_grade(root, "alice", "explain", 0.5,
                   "See ![t](http://evil.invalid/t.png) and [x](javascript:alert(1))")
    from autograder.feedback.pages import feedback_all
    page = feedback_all(subs, tmp_path / "fb", root=root, jobs=1, timeout=20,
                        state=tmp_path / "state", code="fixed")[0].read_text()
    seen = text(page)
    assert "explain: 0.5 / 1, graded by hand" in seen
    assert "See ![t](http://evil.invalid/t.png)" in seen   # the comment, shown as text
    assert "Score: 1.5 / 5" in seen          # halve 1 + explain 0.5
    assert "AssertionError: double is wrong" in seen and "Hint: reread the task" in seen
    # nothing untrusted became a link, an image or a script; no network at all
    from html.parser import HTMLParser

    class Tags(HTMLParser):
        found = []

        def handle_starttag(self, tag, attrs):
            self.found.append((tag, dict(attrs)))

    t = Tags()
    t.feed(page)
    assert not [a for tag, a in t.found if tag == "a" and "javascript" in a.get("href", "")]
    assert not [a for tag, a in t.found if tag == "img"]
    assert not [tag for tag, a in t.found if tag == "script"]
    assert "cdnjs" not in page and "https://" not in "".join(
        a.get("src", "") + a.get("href", "") for _, a in t.found)


def test_error_text_in_the_summary_is_inert():
    """The summary table used to be Markdown: an error message became a live link/image."""
    from autograder.feedback.pages import feedback_notebook, to_html
    student = released()
    record = {"student": "eve", "assignment": "tiny", "failure": None,
              "scores": {"test_double": [0.0, 2.0]}, "manual": {}, "total": 0.0,
              "possible": 2.0, "executed": None,
              "errors": {"test_double": "ValueError: [x](javascript:alert(1)) "
                                        "![t](http://evil.invalid/t.png) <b>bold</b> $x$"}}
    # errors are shown from the run without hidden tests (feedback.py, released_run.py)
    shown = {"executed": None, "errors": record["errors"], "failure": None}
    page = to_html(feedback_notebook(record, student, shown))
    assert "javascript:" not in "".join(re.findall(r"<a [^>]*>", page))
    assert "<img" not in page and "<b>bold</b>" not in page
    assert "[x](javascript:alert(1))" in text(page)       # visible, as text
    assert "<math" not in page.split("feedback-summary")[-1].split("</table>")[0]


def test_inert_text_stays_text_wherever_markdown_puts_it():
    """Even inside a Markdown paragraph or table (where the summary used to be), inert text
    makes no link, no image and no tag."""
    from autograder.feedback.pages import inert, to_html
    evil = "[x](javascript:alert(1)) ![t](http://evil.invalid/t.png) <i>tag</i> **bold**"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(f"Error: {inert(evil)}"),
                nbformat.v4.new_markdown_cell(
                    f"| test | error |\n| --- | --- |\n| t | {inert(evil)} |")]
    page = to_html(nb)
    assert not re.findall(r"<a [^>]*javascript", page) and "<img" not in page
    assert "<i>tag</i>" not in page and "<strong>bold</strong>" not in page
    assert text(page).count(evil) == 2


def test_maths_is_typeset_offline_and_code_spans_are_left_alone():
    from autograder.feedback.pages import typeset
    out = typeset(r"The softmax $e^{z_i} / \sum_j e^{z_j}$, `echo $HOME $PATH` and $$x^2$$.")
    assert out.count("<math") == 2 and "`echo $HOME $PATH`" in out
    assert 'display="block"' in out


def test_hint_comes_from_the_error_or_the_visible_test():
    from autograder.feedback.pages import hint_of
    assert hint_of("x = 1", "AssertionError: wrong\nHint: reread Part I") == "reread Part I"
    assert hint_of("hint = 'reread Part II'\nassert f()", "AssertionError") == "reread Part II"
    assert hint_of("assert f()", "AssertionError") == ""


# --- the repository as an nbgrader course ---------------------------------------------------

def test_nbgrader_sees_the_course_at_the_repository_root(tmp_path):
    """What formgrader and stock nbgrader commands see when started at the root (PATH without
    the environment's bin/, as when JupyterLab is started without activating it)."""
    code = (
        "import json, sys\n"
        "from nbgrader.apps.baseapp import NbGrader\n"
        "from nbgrader.coursedir import CourseDirectory\n"
        "from nbgrader.apps.api import NbGraderAPI\n"
        "app = NbGrader(); app.load_config_file()\n"
        "cd = CourseDirectory(config=app.config)\n"
        "db = cd.db_url\n"
        f"cd.db_url = 'sqlite:///{tmp_path}/gradebook.db'\n"
        "api = NbGraderAPI(cd)\n"
        "names = sorted(a['name'] for a in api.get_assignments())\n"
        "print(json.dumps({'root': cd.root, 'source': cd.source_directory, 'db': db,\n"
        "                  'course': cd.course_id, 'assignments': names}))\n")
    env = {**os.environ, "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    import json
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["root"] == str(ROOT) and seen["source"] == "solutions"
    assert seen["db"] == f"sqlite:///{ROOT}/gradebook.db"
    assert seen["course"] == "lecture-ReAct"
    assert {"lecture-ReAct-exercises", "lecture-ReAct-lab"} <= set(seen["assignments"])


@pytest.mark.slow
def test_end_to_end_grade_hand_grade_feedback_and_nbgrader_export(tmp_path):
    """A small class graded with the real engine; hand grades written through the gradebook
    API as formgrader writes them; grade and feedback again; nbgrader export agrees; stock
    generate_feedback holds no hidden test and no mark scheme."""
    root, subs = course(tmp_path), tmp_path / "subs"
    env = {**os.environ, "PATH": "/usr/bin:/bin"}    # alembic must be found regardless
    done = subprocess.run([str(NBGRADER), "generate_assignment", "tiny", "--force"], cwd=root,
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert (root / "release" / "tiny" / "tiny.ipynb").exists()
    put(subs, "alice", engine.replace_cell(solution_nb(), "explain", "Doubling is linear."))
    put(subs, "bob", released())
    put(subs, "carol", engine.replace_cell(
        engine.replace_cell(solution_nb(), "halve", "def halve(x):\n    return x // 2\n"),
        "explain", "Because 2(x + y) = 2x + 2y."))
    cmd = [sys.executable, "-m", "autograder", "grade", str(subs), "--out",
           str(tmp_path / "grades.csv"), "--jobs", "2", "--timeout", "20", "--root", str(root),
           "--state", str(tmp_path / "state")]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    sheet = rows(tmp_path / "grades.csv")
    assert {s: sheet[s]["total"] for s in ("alice", "bob", "carol")} == \
        {"alice": "4", "bob": "0", "carol": "3"}
    assert sheet["alice"]["needs_manual_grade"] == "explain"
    set_hand_grade(root, "alice", "explain", 1.0, "Right.")
    set_hand_grade(root, "carol", "explain", 0.5, "Say which property this is.")
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]   # (the cache: tested above)
    sheet = rows(tmp_path / "grades.csv")
    assert {s: (sheet[s]["total"], sheet[s]["max"]) for s in ("alice", "bob", "carol")} == \
        {"alice": ("5", "5"), "bob": ("0", "5"), "carol": ("3.5", "5")}
    fb = [*cmd[:3], "feedback", *cmd[4:5], "--out", str(tmp_path / "fb"), *cmd[7:]]
    done = subprocess.run(fb, cwd=ROOT, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    page = (tmp_path / "fb" / "carol" / "tiny.html").read_text()
    assert "explain: 0.5 / 1" in text(page) and "Say which property this is." in text(page)
    # nbgrader's own export agrees with our sheet
    done = subprocess.run([str(NBGRADER), "export", "--to", str(tmp_path / "export.csv")],
                          cwd=root, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    with open(tmp_path / "export.csv", newline="") as f:
        exported = {r["student_id"]: (float(r["score"]), float(r["max_score"]))
                    for r in csv.DictReader(f)}
    assert exported == {s: (float(sheet[s]["total"]), float(sheet[s]["max"]))
                        for s in ("alice", "bob", "carol")}
    # stock generate_feedback, run from the course folder, leaks neither tests nor schemes
    done = subprocess.run([str(NBGRADER), "generate_feedback", "tiny", "--force"], cwd=root,
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    pages = sorted((root / "feedback").rglob("*.html"))
    assert len(pages) == 3
    for p in pages:
        body = p.read_text()
        assert "HIDDEN-LINE" not in body and "SOLUTION-PROSE" not in body, p
        assert "MARK SCHEME" not in body and "Mark scheme" not in body, p
