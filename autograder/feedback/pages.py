"""``python -m autograder feedback SUBMISSIONS --out DIR``: per-student HTML feedback.

Each page shows the student's own answers (with their outputs), the VISIBLE part of every
test, each test's score with its first error and the test's hint, and each hand-graded cell's
score and comment from nbgrader's gradebook (``gradebook.py``); and nothing else. It is built
from the released student version (what the student already has), never from the source
notebook: hidden tests, solutions and mark schemes cannot leak (upstream ``nbgrader
generate_feedback`` includes the hidden tests: nbgrader issue #1363). Test-cell outputs are
dropped, because a traceback quotes the hidden lines that raised.

From grading only the scores are taken. The answers' outputs and the tests' errors come from
a run of the submission with the visible tests only (``released_run.py``): the student process
sees a hidden test's arguments, so anything printed or raised after one ran may carry them. A
test that lost points only in its hidden tests says so, with the kind of error and the hint
of its visible source, never text the graded run produced.

Untrusted text is inert everywhere: the student's markdown is shown as escaped text, their
outputs keep only plain text and PNG, and every error message, name or comment is written as
character references inside ``<code>`` (so ``[x](javascript:...)`` or ``![t](http://...)``
stays text, never a link or an image). Maths in the course's own markdown is typeset to MathML
while the page is written (``latex2mathml``), so the page needs no script and no network.
"""
from __future__ import annotations

import hashlib
import html
from pathlib import Path

import nbformat

from .. import paths
from ..cells import grade_id, is_answer, is_autograded_test, is_manual, points
from ..instructor.grade import grade_all, sheet
from ..instructor.release import generate
from ..instructor.submissions import assignments
from .released_run import hidden_test_ids, released_runs
from .text import SHOWN_FROM, failed_note, fmt, hint_of, inert, typeset  # noqa: F401

TEMPLATES = Path(__file__).with_name("templates")


# --- the page --------------------------------------------------------------------------------

def _note(text: str, cell_id: str):
    return nbformat.v4.new_markdown_cell(text, id=cell_id[:64])


def _hand_note(gid: str, grade: dict | None, possible: float) -> str:
    if not grade or (grade.get("manual") is None and grade.get("auto") is None):
        return (f"<p><b>{inert(gid)}: not graded yet</b> ({fmt(possible)} point(s), graded "
                f"by hand)</p>")
    text = (f"<p><b>{inert(gid)}: {fmt(grade['score'])} / {fmt(grade['max'])}</b>, "
            f"graded by hand")
    if grade.get("needs_manual_grade"):
        text += " (your answer changed after it was graded: to be checked again)"
    text += "</p>"
    if grade.get("comment"):
        text += f"<p>Comment: {inert(grade['comment'])}</p>"
    return text


def _by_id(nb_dict) -> dict:
    nb = nbformat.from_dict(nb_dict) if nb_dict else None
    return {grade_id(c): c for c in (nb.cells if nb is not None else []) if grade_id(c)}


def feedback_notebook(record: dict, student_version, shown: dict | None = None,
                      hidden: set = frozenset()) -> nbformat.NotebookNode:
    """The feedback notebook of one graded record (see ``grade.grade_one``; with the
    gradebook's ``grades`` when ``grade.record_in_gradebook`` added them). ``shown``: the run
    without hidden tests (``released_run``), the only source of outputs and errors;
    ``hidden``: the ids of the test cells that have hidden tests."""
    by_id = _by_id(record.get("executed"))
    outputs_by_id = _by_id((shown or {}).get("executed"))
    grades = record.get("grades") or {}
    cells_scored, total, top, _ = sheet(record)
    ungraded = total is None                       # nobody graded it: no score anywhere
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3",
                                                           "display_name": "Python 3",
                                                           "language": "python"}})
    score = (f"not graded ({inert(record.get('reason') or 'see below')})" if ungraded
             else f"{fmt(total)} / {fmt(top)}")
    head = [f"<h1>Feedback: {inert(record['assignment'])}</h1>",
            f"<p>Student: <b>{inert(record['student'])}</b>. Score: "
            f"<b>{score}</b> (autograded tests and answers graded by hand).</p>"]
    if record.get("failure"):
        # once answers ran, the failure's text may hold a hidden test's data: its kind only
        why = (record.get("reason") or "an error") if record.get("executed") \
            else record["failure"]
        head.append(f"<p>Problem while grading: {inert(why)}</p>")
    if record.get("executed"):
        head.append(SHOWN_FROM)
        if not (shown or {}).get("executed"):
            why = (shown or {}).get("failure") or "your notebook could not be run again"
            head.append(f"<p>Your answers' output is not shown: {inert(why)}</p>")
        elif shown.get("failure"):
            head.append(f"<p>Problem in the run without hidden tests: "
                        f"{inert(shown['failure'])}</p>")
    rows = []
    visible = {grade_id(c): c for c in student_version.cells if grade_id(c)}
    for gid, value in cells_scored.items():
        g = grades.get(gid, {})
        possible = g.get("max", record["scores"].get(gid, (0, record.get("manual", {})
                                                             .get(gid, 0)))[1])
        score = ("not graded" if ungraded else "not graded yet") if value is None \
            else f"{fmt(value)} / {fmt(possible)}"
        detail = failed_note(gid, record, shown, hidden,
                             visible[gid].source if gid in visible else "")
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
                    ran = outputs_by_id.get(gid)
                    new.outputs = [o for o in map(_plain, ran.get("outputs", []) if ran else [])
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
        if gid and is_autograded_test(cell):
            new.outputs = []
            nb.cells.append(new)
            got, pts = record["scores"].get(gid, (0, points(cell)))
            g = grades.get(gid, {})
            if g.get("manual") is not None:
                got = g["score"]
            if ungraded:
                nb.cells.append(_note(f"<p><b>{inert(gid)}: not graded</b></p>",
                                      f"score-{gid}"))
                continue
            text = f"<p><b>{inert(gid)}: {fmt(got)} / {fmt(pts)}</b>, "
            text += failed_note(gid, record, shown, hidden, cell.source) or "passed"
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
    """Grade (cached), run each submission once more with the visible tests only (cached:
    ``released_run``), and write ``out/<student>/<assignment>.html`` for every submission of
    a known assignment; with ``gradebook``, hand grades and comments come from nbgrader's."""
    records, _ = grade_all(submissions, root=root, out=None, jobs=jobs, timeout=timeout,
                           state=state, gradebook=gradebook, code=code)
    known = assignments(root)
    runs = released_runs(records, known, state=state, timeout=timeout, jobs=jobs, code=code)
    released, hidden = {}, {}
    written = []
    folders = folder_names(r["student"] for r in records)
    for r, shown in zip(records, runs):
        aid = r["assignment"]
        if aid not in known or r.get("reason") == "ambiguous name":
            continue             # no assignment, or whose upload it is cannot be told
        if aid not in released:
            released[aid] = nbformat.reads(generate(known[aid]), as_version=4)
            hidden[aid] = hidden_test_ids(known[aid])
        page = to_html(feedback_notebook(r, released[aid], shown, hidden[aid]))
        dest = Path(out) / folders[r["student"]] / f"{aid}.html"
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(page, encoding="utf-8")
        written.append(dest)
    return written


def folder_names(students) -> dict:
    """``{student key: its feedback folder}``: the key itself (keys hold only letters, digits
    and ``. _ @ + -``, ``lms.safe_key``), except where two keys differ only in case, which a
    case-insensitive file system (macOS, Windows) would make one folder: those get a short
    digest of the key too.  Two students never share a folder (an outside review had ``dana``
    and ``dana.`` write one page, the second overwriting the first)."""
    keys = sorted(set(students))
    by_case: dict = {}
    for key in keys:
        by_case.setdefault(key.casefold(), []).append(key)
    out = {}
    for key in keys:
        clash = len(by_case[key.casefold()]) > 1
        out[key] = f"{key}-{hashlib.sha256(key.encode()).hexdigest()[:8]}" if clash else key
    return out
