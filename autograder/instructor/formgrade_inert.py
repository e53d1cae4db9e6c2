"""What formgrader shows of a student is inert: no student text runs in the instructor's browser.

nbgrader's formgrader renders ``autograded/<student>/<assignment>/<notebook>.ipynb`` with
nbconvert's ``HTMLExporter`` and its ``formgrade`` template, which puts markdown cells through
``markdown2html`` with raw HTML and every link scheme allowed and never sanitises them, even
with ``HTMLExporter.sanitize_html`` on (``autograder/README.md``, "Hand grading"). So:

- a student's markdown stays markdown only when nbconvert's own parser (the one formgrader
  renders with) finds nothing in it but plain markdown: no raw HTML (an HTML comment alone on
  its lines excepted), no image, no link other than http(s), mailto or ``#``, no ``mermaid``
  block; anything else is shown as the text the student wrote, in a code block, under a note;
- outputs keep plain text, PNG, streams and errors only, without metadata;
- ``grade`` writes ``autograded/`` this way (``gradebook.py``), and ``InertStudentWork`` does
  the same again when formgrader renders a page (the repository's ``nbgrader_config.py``), so
  an older copy or one written by stock ``nbgrader autograde`` is safe too. Text that is the
  instructor's own (a markdown cell of the source notebook, a mark scheme) is left alone.
"""
from __future__ import annotations

import html
import re
from pathlib import Path

import nbformat
from nbconvert.preprocessors import Preprocessor

from ..cells import grade_id, is_answer, is_manual, load, mark_scheme_text

SAFE_URL = ("http://", "https://", "mailto:", "#")
SAFE_MIME = ("text/plain", "image/png")
# mistune token types whose HTML nbconvert writes with the student's text escaped
PLAIN = frozenset({
    "text", "emphasis", "strong", "codespan", "linebreak", "softbreak", "paragraph", "heading",
    "blank_line", "thematic_break", "block_text", "block_code", "block_quote", "list",
    "list_item", "task_list_item", "strikethrough", "table", "table_head", "table_body",
    "table_row", "table_cell", "def_list", "def_list_head", "def_list_item", "inline_math",
    "block_math", "latex_environment", "link"})
# an HTML comment that every browser also ends where it seems to end (no "--" inside it)
COMMENT = re.compile(r"\s*<!--(?!-?>)(?:(?!--)[^\x00])*-->\s*")
NOTE = ("*Shown as text: this answer holds {what}, which could run or load something in "
        "the grader's browser (autograder/README.md, \"Hand grading\").*")


def _parser():
    from nbconvert.filters.markdown_mistune import MarkdownWithMath
    return MarkdownWithMath(renderer=None)   # the parser of nbconvert's markdown2html


def _url_ok(url) -> bool:
    # what a browser makes of it: C0 controls and spaces stripped at the ends, tabs and
    # newlines dropped anywhere, scheme case-insensitive
    url = re.sub(r"^[\x00-\x20]+|[\x00-\x20]+$", "", re.sub(r"[\t\n\r]", "", str(url)))
    return url.lower().startswith(SAFE_URL)


def _walk(tokens, found: set) -> None:
    for tok in tokens or []:
        kind = tok.get("type")
        attrs = tok.get("attrs") or {}
        if kind in ("block_html", "inline_html"):
            if not COMMENT.fullmatch(tok.get("raw", "")):
                found.add("raw HTML")
        elif kind == "image":
            found.add("an image")
        elif kind not in PLAIN:
            found.add(f"markdown this check does not know ({kind})")
        elif kind == "link" and not _url_ok(attrs.get("url", "")):
            found.add("a link that is not http(s), mailto or #")
        elif kind == "block_code" and str(attrs.get("info") or "").strip().lower() \
                .startswith("mermaid"):
            found.add("a mermaid block (nbconvert writes it unescaped)")
        _walk(tok.get("children"), found)


def problems(markdown: str) -> list[str]:
    """What in ``markdown`` formgrader would render as markup, a script, a request or a live
    link; [] for plain markdown."""
    found: set = set()
    _walk(_parser().parse(_normal(markdown))[0], found)
    return sorted(found)


def _normal(text: str) -> str:
    return str(text).replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "\ufffd")


def shown_as_text(markdown: str, what: str) -> str:
    """Markdown that shows ``markdown`` verbatim in a code block (nbconvert escapes it),
    under a note saying why."""
    text = _normal(markdown)
    fence = "~" * max(3, 1 + max((len(r) for r in re.findall(r"~+", text)), default=0))
    body = text if text.endswith("\n") or not text else text + "\n"
    out = f"{NOTE.format(what=what)}\n\n{fence}\n{body}{fence}\n"
    tokens = _parser().parse(out)[0]
    blocks = [t for t in tokens if t.get("type") == "block_code"]
    if problems(out) or len(blocks) != 1 or blocks[0].get("raw") != body:
        # (never seen) every character as a numeric character reference: text, no markup
        return NOTE.format(what=what) + "\n\n" + "".join(
            ch if ch.isascii() and ch.isalnum() or ch in " \n" else f"&#{ord(ch)};"
            for ch in text)
    return out


def inert_markdown(markdown: str) -> str:
    """``markdown`` itself when it is plain, else ``shown_as_text``."""
    found = problems(markdown)
    return markdown if not found else shown_as_text(markdown, " and ".join(found))


def inert_outputs(outputs) -> list:
    """Streams, errors, and displays reduced to plain text and PNG; no metadata."""
    kept = []
    for out in outputs or []:
        kind = out.get("output_type")
        if kind == "stream":
            kept.append(nbformat.v4.new_output(
                "stream", name="stderr" if out.get("name") == "stderr" else "stdout",
                text=_text(out.get("text"))))
        elif kind == "error":
            kept.append(nbformat.v4.new_output(
                "error", ename=_text(out.get("ename")), evalue=_text(out.get("evalue")),
                traceback=[_text(t) for t in out.get("traceback") or []]))
        elif kind in ("display_data", "execute_result"):
            data = {k: _text(v) for k, v in (out.get("data") or {}).items() if k in SAFE_MIME}
            if data:
                new = nbformat.v4.new_output("display_data", data=data)
                if kind == "execute_result":
                    new = nbformat.v4.new_output("execute_result", data=data,
                                                 execution_count=None)
                kept.append(new)
    return kept


def _text(value) -> str:
    if isinstance(value, list):
        return "".join(str(v) for v in value)
    return "" if value is None else str(value)


def inert_notebook(nb, trusted=frozenset()):
    """``nb`` (changed in place and returned) as formgrader may show it: every markdown cell
    whose source is not in ``trusted`` (the instructor's own text) through
    ``inert_markdown``, every code cell's outputs through ``inert_outputs``."""
    for cell in nb.cells:
        if cell.cell_type == "markdown" and cell.source not in trusted:
            cell.source = inert_markdown(cell.source)
            cell.pop("attachments", None)
        elif cell.cell_type == "code":
            cell.outputs = inert_outputs(cell.get("outputs"))
    nb.metadata.pop("widgets", None)
    return nb


def course_text(source_nb) -> set:
    """The instructor's own markdown of an assignment: the source notebook's markdown cells
    and the mark-scheme cells ``grade`` writes from it."""
    nb = load(source_nb)
    text = {c.source for c in nb.cells if c.cell_type == "markdown"}
    text |= {mark_scheme_text(grade_id(c), c.source) for c in nb.cells
             if is_manual(c) and is_answer(c)}
    return text


# what formgrader's page header prints unescaped (formgrade/formgrade_macros.html.j2, nav)
PAGE_TEXT = ("student", "first_name", "last_name", "notebook_path")


class InertStudentWork(Preprocessor):
    """nbconvert preprocessor: ``inert_notebook`` when a page is rendered (formgrader's
    ``HTMLExporter``, stock ``nbgrader generate_feedback``), with the course's text of the
    assignment (from ``resources``) trusted; without it, every markdown cell is checked.
    The student's name and path in formgrader's page header are escaped too."""

    def preprocess(self, nb, resources):
        resources = resources if resources is not None else {}
        for key in PAGE_TEXT:
            if isinstance(resources.get(key), str):
                resources[key] = html.escape(resources[key], quote=True)
        return inert_notebook(nb, self._trusted(resources)), resources

    def _trusted(self, resources) -> frozenset:
        ours = resources.get("nbgrader") or {}
        aid = resources.get("assignment_id") or ours.get("assignment")
        name = resources.get("notebook_id") or ours.get("notebook")
        if not aid or not name:
            return frozenset()
        try:
            from nbgrader.coursedir import CourseDirectory
            cd = CourseDirectory(config=self.config)
            path = Path(cd.format_path(cd.source_directory, ".", aid)) / f"{name}.ipynb"
            return frozenset(course_text(path))
        except Exception:  # noqa: BLE001 - no source to compare with: check every cell
            return frozenset()
