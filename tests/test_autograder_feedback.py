"""Feedback HTML: the student's answers, visible tests, scores; never hidden tests or solutions."""
import html
import re
import shutil
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent

from autograder.engine import load, replace_cell  # noqa: E402
from autograder.feedback import feedback_all  # noqa: E402
from autograder.release import generate  # noqa: E402

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
