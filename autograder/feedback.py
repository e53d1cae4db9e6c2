"""``python -m autograder feedback SUBMISSIONS --out DIR``: per-student HTML feedback.

Each page shows the student's own answers (with their outputs), the VISIBLE part of every
test, each test's score with its first error and the test's hint, and each hand-graded cell's
score and comment from nbgrader's gradebook (``gradebook.py``); and nothing else. It is built
from the released student version (what the student already has), never from the source
notebook: hidden tests, solutions and mark schemes cannot leak (upstream ``nbgrader
generate_feedback`` includes the hidden tests: nbgrader issue #1363). Test-cell outputs are
dropped, because a traceback quotes the hidden lines that raised.

Untrusted text is inert everywhere: the student's markdown is shown as escaped text, their
outputs keep only plain text and PNG, and every error message, name or comment is written as
character references inside ``<code>`` (so ``[x](javascript:...)`` or ``![t](http://...)``
stays text, never a link or an image). Maths in the course's own markdown is typeset to MathML
while the page is written (``latex2mathml``), so the page needs no script and no network.
"""
from __future__ import annotations

import ast
import html
import re
from pathlib import Path

import nbformat

from . import paths
from .grade import grade_all, sheet
from .gradebook import grade_id, is_answer, is_manual, is_test, points
from .release import generate
from .submissions import assignments

TEMPLATES = Path(__file__).with_name("templates")


# --- inert text ----------------------------------------------------------------------------

def inert(text) -> str:
    """``text`` as HTML that no Markdown or HTML parser turns into markup: every character
    other than a letter, digit or space becomes a character reference, inside <code>."""
    out = []
    for ch in str(text):
        if ch == "\n":
            out.append("<br>")
        elif ch.isalnum() and ch.isascii() or ch == " ":
            out.append(ch)
        else:
            out.append(f"&#{ord(ch)};")
    return f'<code class="lreact-inert">{"".join(out)}</code>'


def _fmt(x) -> str:
    x = float(x)
    return str(int(x)) if x.is_integer() else f"{x:g}"


# --- maths without a CDN ---------------------------------------------------------------------

_CODE = re.compile(r"(```.*?```|~~~.*?~~~|`[^`\n]*`)", re.S)
_MATH = re.compile(r"(?<!\\)\$\$(.+?)(?<!\\)\$\$|(?<![\\$])\$(?!\s)([^$\n]+?)(?<![\s\\])\$(?!\$)",
                   re.S)


def typeset(markdown: str) -> str:
    """The course's markdown with every ``$...$`` and ``$$...$$`` replaced by MathML
    (code spans and fences untouched; a formula that cannot be converted stays as TeX)."""
    from latex2mathml.converter import convert

    def one(m):
        tex, display = (m.group(1), "block") if m.group(1) is not None else (m.group(2),
                                                                              "inline")
        try:
            return convert(tex.strip(), display=display).replace("\n", "")
        except Exception:  # noqa: BLE001 - unknown macro: show the TeX source
            return m.group(0)

    parts = _CODE.split(markdown)
    return "".join(p if i % 2 else _MATH.sub(one, p) for i, p in enumerate(parts))


# --- hints ---------------------------------------------------------------------------------

def hint_of(test_source: str, error: str = "") -> str:
    """The hint of a failing test: the ``Hint:`` line of its error, else the test's visible
    ``hint = '...'`` line ('' when it has none)."""
    for line in str(error or "").splitlines():
        if line.strip().startswith("Hint:"):
            return line.strip()[len("Hint:"):].strip()
    try:
        tree = ast.parse(test_source)
    except SyntaxError:
        return ""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "hint"
                                                for t in node.targets):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                continue
            if isinstance(value, str):
                return value
    return ""


def _first_error(error: str) -> str:
    for line in str(error or "").splitlines():
        if line.strip() and not line.strip().startswith("Hint:"):
            return line.strip()
    return str(error or "").strip()


# --- the page --------------------------------------------------------------------------------

def _note(text: str, cell_id: str):
    return nbformat.v4.new_markdown_cell(text, id=cell_id[:64])


def _hand_note(gid: str, grade: dict | None, possible: float) -> str:
    if not grade or (grade.get("manual") is None and grade.get("auto") is None):
        return (f"<p><b>{inert(gid)}: not graded yet</b> ({_fmt(possible)} point(s), graded "
                f"by hand)</p>")
    text = (f"<p><b>{inert(gid)}: {_fmt(grade['score'])} / {_fmt(grade['max'])}</b>, "
            f"graded by hand")
    if grade.get("needs_manual_grade"):
        text += " (your answer changed after it was graded: to be checked again)"
    text += "</p>"
    if grade.get("comment"):
        text += f"<p>Comment: {inert(grade['comment'])}</p>"
    return text


def feedback_notebook(record: dict, student_version) -> nbformat.NotebookNode:
    """The feedback notebook of one graded record (see ``grade.grade_one``; with the
    gradebook's ``grades`` when ``grade.record_in_gradebook`` added them)."""
    executed = nbformat.from_dict(record["executed"]) if record.get("executed") else None
    by_id = {grade_id(c): c for c in (executed.cells if executed is not None else [])
             if grade_id(c)}
    grades = record.get("grades") or {}
    cells_scored, total, top, _ = sheet(record)
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3",
                                                           "display_name": "Python 3",
                                                           "language": "python"}})
    head = [f"<h1>Feedback: {inert(record['assignment'])}</h1>",
            f"<p>Student: <b>{inert(record['student'])}</b>. Score: "
            f"<b>{_fmt(total)} / {_fmt(top)}</b> (autograded tests and answers graded by "
            f"hand).</p>"]
    if record.get("failure"):
        head.append(f"<p>Problem while grading: {inert(record['failure'])}</p>")
    rows = []
    visible = {grade_id(c): c for c in student_version.cells if grade_id(c)}
    for gid, value in cells_scored.items():
        g = grades.get(gid, {})
        possible = g.get("max", record["scores"].get(gid, (0, record.get("manual", {})
                                                             .get(gid, 0)))[1])
        score = "not graded yet" if value is None else f"{_fmt(value)} / {_fmt(possible)}"
        err = record["errors"].get(gid, "")
        detail = inert(_first_error(err)) if err else ""
        if err and gid in visible:
            hint = hint_of(visible[gid].source, err)
            if hint:
                detail += f"<br>Hint: {inert(hint)}"
        if g.get("manual") is not None and gid in record["scores"]:
            detail += "<br>score set by hand"
        rows.append(f"<tr><td>{inert(gid)}</td><td>{score}</td><td>{detail}</td></tr>")
    head.append("<table>\n<thead><tr><th>graded cell</th><th>score</th>"
                "<th>first error</th></tr></thead>\n<tbody>\n" + "\n".join(rows)
                + "\n</tbody>\n</table>")
    nb.cells.append(_note("\n".join(head), "feedback-summary"))
    for cell in student_version.cells:
        gid = grade_id(cell)
        new = nbformat.from_dict(dict(cell))
        if gid and is_answer(cell):
            theirs = by_id.get(gid)
            if theirs is not None:
                if new.cell_type == "code":
                    new.source = theirs.source
                    new.outputs = [o for o in map(_plain, theirs.get("outputs", []))
                                   if o is not None]
                else:
                    new.source = f"<pre>{html.escape(str(theirs.source))}</pre>"
            nb.cells.append(new)
            if is_manual(cell):
                nb.cells.append(_note(_hand_note(gid, grades.get(gid), points(cell)),
                                      f"score-{gid}"))
            elif grades.get(gid, {}).get("comment"):
                nb.cells.append(_note(f"<p>Comment on {inert(gid)}: "
                                      f"{inert(grades[gid]['comment'])}</p>", f"comment-{gid}"))
            continue
        if gid and is_test(cell):
            new.outputs = []
            nb.cells.append(new)
            got, pts = record["scores"].get(gid, (0, points(cell)))
            g = grades.get(gid, {})
            if g.get("manual") is not None:
                got = g["score"]
            err = record["errors"].get(gid)
            text = f"<p><b>{inert(gid)}: {_fmt(got)} / {_fmt(pts)}</b>, "
            if err:
                text += f"failed: {inert(_first_error(err))}"
                hint = hint_of(cell.source, err)
                if hint:
                    text += f"<br>Hint: {inert(hint)}"
            else:
                text += "passed"
            if g.get("manual") is not None:
                text += " (score set by hand)"
            nb.cells.append(_note(text + "</p>", f"score-{gid}"))
            continue
        if new.cell_type == "code":
            new.outputs = []
        elif new.cell_type == "markdown":
            new.source = typeset(new.source)
        nb.cells.append(new)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.execution_count = None
    return nb


SAFE_MIME = ("text/plain", "image/png")


def _plain(output):
    """An answer cell's output reduced to what cannot carry markup or script."""
    kind = output.get("output_type")
    if kind in ("stream", "error"):
        return output          # nbconvert escapes these itself
    if kind in ("display_data", "execute_result"):
        data = {k: v for k, v in (output.get("data") or {}).items() if k in SAFE_MIME}
        if not data:
            return None
        out = nbformat.from_dict(dict(output))
        out["data"] = data
        out["metadata"] = {}
        return out
    return None


def to_html(nb) -> str:
    """The page, with JupyterLab's look and no MathJax (maths is MathML already)."""
    from nbconvert import HTMLExporter
    # nbconvert's sanitize_html escapes the course's own markdown into visible tags; untrusted
    # content is made inert in feedback_notebook instead (see the module docstring).
    exporter = HTMLExporter(template_name="lab", extra_template_paths=[str(TEMPLATES)],
                            template_file="feedback.html.j2")
    body, _ = exporter.from_notebook_node(nb)
    return body


def feedback_all(submissions: Path, out: Path, *, root: Path = paths.ROOT, jobs=None,
                 timeout: float = 60, state=None, gradebook: bool = True,
                 code=None) -> list[Path]:
    """Grade (cached) and write ``out/<student>/<assignment>.html`` for every submission of
    a known assignment; with ``gradebook``, hand grades and comments come from nbgrader's."""
    records, _ = grade_all(submissions, root=root, out=None, jobs=jobs, timeout=timeout,
                           state=state, gradebook=gradebook, code=code)
    known = assignments(root)
    released = {}
    written = []
    for r in records:
        aid = r["assignment"]
        if aid not in known:
            continue
        if aid not in released:
            released[aid] = nbformat.reads(generate(known[aid]), as_version=4)
        page = to_html(feedback_notebook(r, released[aid]))
        dest = Path(out) / _safe_name(r["student"]) / f"{aid}.html"
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(page, encoding="utf-8")
        written.append(dest)
    return written


def _safe_name(name: str) -> str:
    keep = "".join(ch if ch.isalnum() or ch in "-_.@" else "_" for ch in name).strip(".")
    return keep or "student"
