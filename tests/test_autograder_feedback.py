"""Feedback HTML: the student's answers, visible tests, scores; never hidden tests or solutions."""
import html
import re
import shutil
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent

from autograder.run.engine import load, replace_cell  # noqa: E402
from autograder.feedback.pages import feedback_all  # noqa: E402
from autograder.instructor.release import generate  # noqa: E402

FIX = ROOT / "tests" / "fixtures" / "autograder"
TINY = FIX / "solutions" / "tiny" / "tiny.ipynb"
pytestmark = pytest.mark.slow


def _course(tmp_path: Path) -> Path:
    """A throwaway course folder holding the tiny source (its gradebook is written there)."""
    shutil.copytree(FIX / "solutions", tmp_path / "course" / "solutions")
    return tmp_path / "course"


def _region_lines(source: str, begin: str, end: str) -> list[str]:
    lines, inside = [], False
    for line in source.splitlines():
        if begin in line:
            inside = True
        elif end in line:
            inside = False
        elif inside and line.strip():
            lines.append(line.strip())
    return lines


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _text(page: str) -> str:
    """The page's visible text without any whitespace (highlighting splits code tokens)."""
    return _squash(html.unescape(re.sub(r"<[^>]+>", " ", page)))


def test_feedback_never_contains_hidden_tests_or_solutions(tmp_path):
    src = load(TINY)
    student = nbformat.reads(generate(TINY), as_version=4)   # what the student got
    wrong = replace_cell(student, "double", "def double(x):\n    return x + 2  # my answer\n")
    wrong = replace_cell(wrong, "halve", "def halve(x):\n    return 0.5 * x\n")
    wrong = replace_cell(wrong, "explain", "It is linear <script>alert('x')</script>.")
    (tmp_path / "subs" / "eve" / "tiny").mkdir(parents=True)
    nbformat.write(wrong, tmp_path / "subs" / "eve" / "tiny" / "tiny.ipynb")
    written = feedback_all(tmp_path / "subs", tmp_path / "fb", root=_course(tmp_path), jobs=1,
                           timeout=20, state=tmp_path / "state")
    assert [p.relative_to(tmp_path / "fb").as_posix() for p in written] == ["eve/tiny.html"]
    page = written[0].read_text()
    text = _text(page)
    hidden = [ln for c in src.cells
              for ln in _region_lines(c.source, "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")]
    solutions = [ln for c in src.cells
                 for ln in _region_lines(c.source, "BEGIN SOLUTION", "END SOLUTION")]
    # a line the student wrote too (e.g. "def halve(x):") is theirs to see
    theirs = _squash("".join(c.source for c in wrong.cells))
    solutions = [ln for ln in solutions if _squash(ln) not in theirs]
    assert hidden and solutions
    for line in hidden + solutions:
        assert _squash(line) not in text, line
    for marker in ("BEGIN HIDDEN", "HIDDEN-LINE", "SOLUTION-PROSE", "LREACT-DONE"):
        assert marker not in page
    # what it must contain: the answer, the visible test, the scores and the error line
    for shown in ("return x + 2  # my answer", "assert_close(double(3), 6, name='double(3)')",
                  "test_double: 0 / 2", "test_halve: 1 / 1",
                  "AssertionError: double(3) is wrong"):
        assert _squash(shown) in text, shown
    assert "<script>alert" not in page


def _live_script(page: str):
    """The bodies of <script> elements and the on* attributes of a page, as a browser parses it."""
    from html.parser import HTMLParser

    class Finder(HTMLParser):
        def __init__(self):
            super().__init__()
            self.scripts, self.handlers, self._in = [], [], False

        def handle_starttag(self, tag, attrs):
            self._in = tag == "script"
            if self._in:
                self.scripts.append("")
            self.handlers += [f"{tag} {k}={v}" for k, v in attrs if k.lower().startswith("on")]

        def handle_endtag(self, tag):
            self._in = False

        def handle_data(self, data):
            if self._in:
                self.scripts[-1] += data

    f = Finder()
    f.feed(page)
    return f.scripts, f.handlers


def test_feedback_shows_answers_as_text_and_drops_markup_outputs(tmp_path):
    """A submission must not run script in the browser of whoever opens its feedback."""
    student = nbformat.reads(generate(TINY), as_version=4)
    evil = replace_cell(student, "double", (
        "from IPython.display import HTML, SVG, Javascript, display\n"
        "display(HTML('<script>alert(\"from-html\")</script>'))\n"
        "display(Javascript('alert(\"from-js\")'))\n"
        "display(SVG('<svg xmlns=\"http://www.w3.org/2000/svg\"><script>alert(\"from-svg\")'\n"
        "            '</script></svg>'))\n"
        "print('plain <b>text</b> stays visible')\n"
        "def double(x):\n    return 2 * x\n"))
    evil = replace_cell(evil, "explain", "# Heading?\n<img src=x onerror=alert('from-md')>")
    (tmp_path / "subs" / "mallory" / "tiny").mkdir(parents=True)
    nbformat.write(evil, tmp_path / "subs" / "mallory" / "tiny" / "tiny.ipynb")
    page = feedback_all(tmp_path / "subs", tmp_path / "fb", root=_course(tmp_path), jobs=1,
                        timeout=20, state=tmp_path / "state")[0].read_text()
    # the payloads may be shown as (escaped) source text, but never as live script
    scripts, handlers = _live_script(page)
    assert not [s for s in scripts if "alert(" in s], scripts
    assert not handlers, handlers
    assert "plain &lt;b&gt;text&lt;/b&gt; stays visible" in page
    assert "&lt;img src=x onerror=alert(" in page   # shown as text, not as an element
    assert "<h1" in page   # the course's own markdown is still rendered as markup


# --- hidden tests' data never reaches the feedback (issue 16, point 7) ------------------------
# The student process sees every argument a hidden test passes; an answer can stash them and
# print them from a later answer cell or raise them in a later test's error. The feedback takes
# only scores from grading: outputs and errors come from a run without the hidden tests.

STASHER = {   # tiny: double stashes its arguments; halve prints them and raises them
    "double": "SEEN = []\ndef double(x):\n    SEEN.append(repr(x))\n    return 2 * x\n",
    "halve": ("print('seen so far:', SEEN)\n"
              "def halve(x):\n    raise ValueError(f'seen: {SEEN}')\n"),
}


def _write(nb, folder: Path, student: str, aid: str) -> Path:
    dest = folder / student / aid / f"{aid}.ipynb"
    dest.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, dest)
    return dest


def _visible_text(page: str) -> str:
    """What a reader of the page sees: no style sheets, no tags, entities decoded."""
    page = re.sub(r"<(style|script)\b.*?</\1>", " ", page, flags=re.S | re.I)
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


def test_a_stashed_hidden_argument_is_neither_printed_nor_raised_into_the_feedback(tmp_path):
    from autograder.run import engine
    student = nbformat.reads(generate(TINY), as_version=4)
    nb = replace_cell(replace_cell(student, "double", STASHER["double"]), "halve",
                      STASHER["halve"])
    _write(nb, tmp_path / "subs", "mallory", "tiny")
    course = _course(tmp_path)
    # the attack works: while grading, halve saw what the hidden tests passed to double
    graded = engine.grade_notebook("tiny", nb, 20, source=TINY, state=tmp_path / "state")
    assert "-2.5" in graded.errors["test_halve"] and "array([1., 2.])" in graded.errors[
        "test_halve"]
    # ... and the graded notebook (formgrader's copy, nbgrader generate_feedback's input) keeps
    # no answer output produced after a hidden test had run
    halve = next(c for c in graded.executed.cells if c.get("id") == "halve")
    assert [o.get("text") for o in halve.outputs] == [engine.AFTER_HIDDEN]
    page = feedback_all(tmp_path / "subs", tmp_path / "fb", root=course, jobs=1, timeout=20,
                        state=tmp_path / "state")[0].read_text()
    seen = _squash(_visible_text(page))
    for secret in ("-2.5", "array(", "double(-2.5)", "double(array)", "HIDDEN-LINE"):
        assert _squash(secret) not in seen, secret
    # what it shows instead: the output and the error of the run with the visible tests only
    assert _squash("seen so far: ['3']") in seen
    assert _squash("test_halve: 0 / 1, failed: ValueError: seen: ['3']") in seen
    assert _squash("test_double__array: 1 / 1, passed") in seen


def test_honest_feedback_shows_output_visible_errors_and_what_was_left_out(tmp_path,
                                                                          monkeypatch):
    from autograder.run import engine
    student = nbformat.reads(generate(TINY), as_version=4)
    nb = replace_cell(student, "double", "print('doubling by adding 2')\n"
                                         "def double(x):\n    return x + 2\n")
    nb = replace_cell(nb, "halve",
                      "def halve(x):\n    return x / 2\nprint('halve(8) =', halve(8))\n")
    _write(nb, tmp_path / "subs", "hana", "tiny")
    course = _course(tmp_path)
    page = feedback_all(tmp_path / "subs", tmp_path / "fb", root=course, jobs=1, timeout=20,
                        state=tmp_path / "state", code="fixed")[0].read_text()
    seen = _squash(_visible_text(page))
    for shown in ("doubling by adding 2",                 # output before any hidden test
                  "halve(8) = 4.0",                        # output after one (from the run
                  "test_double: 0 / 2, failed: AssertionError: double(3) is wrong",  # without)
                  "test_double__array: 0 / 1, failed in its hidden tests: a failed check",
                  "test_halve: 1 / 1, passed",
                  "come from a run of your notebook with the visible tests only"):
        assert _squash(shown) in seen, shown
    assert "double(-2.5)" not in seen and "not kept by the grader" not in seen

    # feedback again (after hand grading, say) runs nothing: both runs come from the cache
    def no_run(*a, **k):
        raise AssertionError("ran again instead of using the cache")

    monkeypatch.setattr(engine, "grade_notebook", no_run)
    monkeypatch.setattr(engine, "feedback_run", no_run)
    again = feedback_all(tmp_path / "subs", tmp_path / "fb2", root=course, jobs=1, timeout=20,
                         state=tmp_path / "state", code="fixed")[0].read_text()
    assert _squash(_visible_text(again)) == seen


# The lab and lab 2 with the hostile stash entries, every other answer right (the student
# who gets the most hidden data through): a string that only hidden tests contain must not be
# on the page. A string that a run WITHOUT hidden tests also produces (from visible arguments)
# proves nothing, so those are set aside with a control run.

def _literals(source: str) -> set:
    import ast
    import io
    import tokenize
    found = set()
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return found
    for t in tokens:
        if t.type == tokenize.NUMBER:
            found.add(t.string)
        elif t.type == tokenize.STRING:
            try:
                value = ast.literal_eval(t.string)
            except (ValueError, SyntaxError):
                continue
            if isinstance(value, str):
                found.add(value)
    return found


def _forms(s: str) -> set:
    """A string as a page or a source may show it: itself, its repr and JSON escapes."""
    import json
    return {_squash(s), _squash(repr(s)[1:-1]), _squash(json.dumps(s)[1:-1])}


def hidden_only_strings(aid: str) -> list[str]:
    """String literals and numbers (4+ characters) of the hidden-test regions that neither the
    released notebook nor the lreact package (which the student has) contains."""
    from autograder import paths
    found = set()
    for cell in load(paths.source_path(aid)).cells:
        inside, lines = False, []
        for line in cell.source.splitlines():   # whole lines (indentation kept) for tokenize
            if "BEGIN HIDDEN TESTS" in line:
                inside = True
            elif "END HIDDEN TESTS" in line:
                inside = False
            elif inside:
                lines.append(line)
        found |= _literals("\n".join(lines) + "\n")
    released = nbformat.reads(generate(paths.source_path(aid)), as_version=4)
    public = _squash("\n".join(c.source for c in released.cells)
                     + "".join(p.read_text() for p in (ROOT / "lreact").rglob("*.py")))
    public += public.replace("`", "")      # markdown as rendered: `</function>` shows without
    return sorted(s for s in found if len(s.strip()) >= 4
                  and not any(f in public for f in _forms(s)))


def found_in(strings, text: str) -> list[str]:
    """The strings that occur in ``text`` (numbers as whole tokens, the rest squashed)."""
    squashed = _squash(text)
    out = []
    for s in strings:
        if re.fullmatch(r"[\d_.eE+-]+", s):
            if re.search(r"(?<![\w.])" + re.escape(s) + r"(?![\w])", text):
                out.append(s)
        elif any(f in squashed for f in _forms(s)):
            out.append(s)
    return out


HOSTILE_STASH = {"lecture-ReAct-lab": "stash_hidden_arguments",
                 "lecture-ReAct-lab2": "stash_hidden_arguments_lab2"}


@pytest.mark.parametrize("aid", sorted(HOSTILE_STASH))
def test_hidden_test_data_a_lab_answer_stashes_never_reaches_its_feedback(tmp_path, aid):
    import json

    from autograder import paths
    from autograder.run import engine
    from autograder.cells import merge
    entry = (paths.HOSTILE_DIR / f"{HOSTILE_STASH[aid]}.py").read_text()
    gid = entry.splitlines()[0].split(":")[1].split()[1]
    nb = replace_cell(load(paths.source_path(aid)), gid, entry)
    _write(nb, tmp_path / "subs", "mallory", aid)
    state = tmp_path / "state"
    page = feedback_all(tmp_path / "subs", tmp_path / "fb", jobs=1, timeout=60, state=state,
                        gradebook=False)[0].read_text()
    # the control: the same answers against the notebook with the hidden tests cut out
    visible_only = load(paths.source_path(aid))
    from autograder.cells import is_autograded_test, visible_source
    for cell in visible_only.cells:
        if is_autograded_test(cell):
            cell.source = visible_source(cell)
    control = engine.grade_notebook(aid, nb, 60, source=visible_only, state=state)
    without_hidden = json.dumps(dict(control.executed)) + json.dumps(control.errors)
    secrets = [s for s in hidden_only_strings(aid) if not found_in([s], without_hidden)]
    # the attack works: while grading, the student process printed and raised hidden-only data
    raw, _ = engine.execute(merge(load(paths.source_path(aid)), nb), timeout=60, state=state)
    gathered = found_in(secrets, json.dumps(raw))
    print(f"\n{aid}: {len(secrets)} hidden-only strings; the graded run's answer output and "
          f"errors hold {len(gathered)}")
    assert len(gathered) >= 10, gathered
    leaked = found_in(secrets, _visible_text(page))
    assert not leaked, f"{len(leaked)} of {len(secrets)} hidden-only strings: {leaked[:5]}"
    # and the page still shows the answers' output and the visible tests' errors
    seen = _visible_text(page)
    assert re.search(r"(?m)^STASH ", seen)                  # printed by later answer cells
    assert "failed: ValueError: STASH" in re.sub(r"\s+", " ", seen)


def test_after_a_hidden_test_only_the_kind_of_a_graded_failure_is_shown():
    """Scores come from grading; its texts never do once answers ran (no run needed here)."""
    from autograder.feedback.pages import feedback_notebook, to_html
    from autograder.feedback.released_run import hidden_test_ids
    released = nbformat.reads(generate(TINY), as_version=4)
    record = {"student": "mallory", "assignment": "tiny", "executed": {"cells": []},
              "failure": "the process running the answers ended (a message of 31337001 bytes "
                         "is over the limit)", "reason": "kernel died",
              "scores": {"test_double": [0.0, 2.0], "test_double__array": [0.0, 1.0],
                         "test_halve": [0.0, 1.0]},
              "manual": {}, "total": 0.0, "possible": 4.0,
              "errors": {"test_double": "ValueError: stashed 31337002",
                         "test_double__array": "Stash31337003Error: x",
                         "test_halve": "timeout: halve got 31337004"}}
    shown = {"executed": {"cells": []}, "failure": None,
             "errors": {"test_halve": "AssertionError: halve(3) is wrong: got 7\nHint: halve it"}}
    page = to_html(feedback_notebook(record, released, shown, hidden_test_ids(TINY)))
    seen = _squash(_visible_text(page))
    assert "31337" not in seen
    assert "ValueError" not in seen     # an answer picks its exception: the name carries bits
    for shown in ("Problem while grading: kernel died",
                  "test_double: 0 / 2, failed in its hidden tests: an error",
                  "test_double__array: 0 / 1, failed in its hidden tests: an error",
                  "test_halve: 0 / 1, failed: AssertionError: halve(3) is wrong: got 7",
                  "Hint: halve it"):
        assert _squash(shown) in seen, shown


def test_two_students_never_share_a_feedback_folder():
    """An outside review had ``dana`` and ``dana.`` (and ``dana_x`` and ``dana+x``) write into
    one folder, the later page replacing the earlier: the keys are the folders now, and keys
    that differ only in case (one folder on macOS and Windows) get a digest each."""
    from autograder.feedback.pages import folder_names
    keys = ["dana", "dana.", "dana_x", "dana+x", "Dana", "sam"]
    folders = folder_names(keys)
    assert len({f.casefold() for f in folders.values()}) == len(keys)
    assert folders["sam"] == "sam" and folders["dana."] == "dana." and folders["dana+x"] == "dana+x"
    assert folders["dana"] != folders["Dana"] and folders["dana"].startswith("dana-")
