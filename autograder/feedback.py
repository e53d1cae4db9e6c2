"""``python -m autograder feedback SUBMISSIONS --out DIR``: per-student HTML feedback.

Each file shows the student's own answers (with their outputs), the VISIBLE part of every
test, and each test's score and first error line; and nothing else. It is built from the
released student version (what the student already has), never from the source notebook:
hidden tests, solutions and mark schemes cannot leak (upstream ``nbgrader generate_feedback``
includes the hidden tests: nbgrader issue #1363). Test-cell outputs are dropped, because a
traceback quotes the hidden lines that raised. Student-written HTML is sanitised.
"""
from __future__ import annotations

import html
from pathlib import Path

import nbformat

from . import engine, paths
from .grade import grade_all
from .release import generate
from .submissions import assignments


def _note(text: str, cell_id: str):
    return nbformat.v4.new_markdown_cell(text, id=cell_id)


def feedback_notebook(record: dict, student_version) -> nbformat.NotebookNode:
    """The feedback notebook of one graded record (see ``grade.grade_one``)."""
    executed = nbformat.from_dict(record["executed"]) if record.get("executed") else None
    by_id = {}
    if executed is not None:
        for cell in executed.cells:
            gid = engine.grade_id(cell)
            if gid:
                by_id[gid] = cell
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3",
                                                           "display_name": "Python 3",
                                                           "language": "python"}})
    total, possible = record["total"], record["possible"]
    lines = [f"# Feedback: {html.escape(record['assignment'])}",
             f"Student: **{html.escape(record['student'])}**. Autograded score: "
             f"**{_fmt(total)} / {_fmt(possible)}**."]
    if record.get("failure"):
        lines.append(f"\nProblem while grading: `{_safe(record['failure'])}`")
    if record.get("manual"):
        lines.append("\nStill to be graded by hand: "
                     + ", ".join(f"`{html.escape(g)}` ({_fmt(p)} pt)"
                                 for g, p in record["manual"].items()))
    lines.append("\n| test | score | first error |\n| --- | --- | --- |")
    for gid, (got, pts) in record["scores"].items():
        lines.append(f"| `{html.escape(gid)}` | {_fmt(got)} / {_fmt(pts)} | "
                     f"{_safe(record['errors'].get(gid, '')).replace('|', '/')} |")
    nb.cells.append(_note("\n".join(lines), "feedback-summary"))
    for cell in student_version.cells:
        gid = engine.grade_id(cell)
        new = nbformat.from_dict(dict(cell))
        if gid and engine.is_answer(cell):
            theirs = by_id.get(gid)
            if theirs is not None:
                if new.cell_type == "code":
                    new.source = theirs.source
                    new.outputs = [_plain(o) for o in theirs.get("outputs", [])]
                    new.outputs = [o for o in new.outputs if o is not None]
                else:
                    new.source = f"<pre>{html.escape(str(theirs.source))}</pre>"
        elif gid and engine.is_autograded_test(cell):
            new.outputs = []
            got, pts = record["scores"].get(gid, (0, engine.points(cell)))
            err = record["errors"].get(gid)
            mark = "passed" if not err else f"failed: `{_safe(err)}`"
            nb.cells.append(new)
            nb.cells.append(_note(f"**{html.escape(gid)}: {_fmt(got)} / {_fmt(pts)}**, {mark}",
                                  f"score-{gid}"[:64]))
            continue
        elif new.cell_type == "code":
            new.outputs = []
        nb.cells.append(new)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.execution_count = None
    return nb


def _fmt(x) -> str:
    x = float(x)
    return str(int(x)) if x.is_integer() else f"{x:g}"


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


def _safe(text: str) -> str:
    return html.escape(str(text)).replace("`", "'")


def to_html(nb) -> str:
    from nbconvert import HTMLExporter
    # nbconvert's sanitize_html escapes the course's own markdown into visible tags; untrusted
    # content is made inert in feedback_notebook instead (see the module docstring).
    exporter = HTMLExporter(template_name="lab")
    body, _ = exporter.from_notebook_node(nb)
    return body


def feedback_all(submissions: Path, out: Path, *, root: Path = paths.ROOT, jobs=None,
                 timeout: float = 60, state=None) -> list[Path]:
    """Grade (cached) and write ``out/<student>/<assignment>.html`` for every submission."""
    records, _ = grade_all(submissions, root=root, out=None, jobs=jobs, timeout=timeout,
                           state=state)
    known = assignments(root)
    released = {}
    written = []
    for r in records:
        aid = r["assignment"]
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
