"""``python -m autograder grade SUBMISSIONS``: a folder of submissions to a grade sheet.

1. Find every submission (``submissions.py``: nbgrader folders, LMS exports of Canvas, Moodle
   and Blackboard (``lms.py``), zips, loose notebooks); several uploads of one student and
   assignment are resolved by a stated rule or not at all, and listed.
2. Grade each one in parallel, in its own sandboxed run (``engine.grade_notebook``), or take
   its grade from the cache.
3. Record students, submissions and autograded scores in nbgrader's gradebook
   (``gradebook.py``), where the instructor grades the free-text answers in formgrader, and
   read every score back: hand grades and formgrader corrections included.
4. Write the CSV: ``student, assignment, <one column per graded cell>, total, max,
   needs_manual_grade, reason``; ``total`` and ``max`` count every point (autograded and by
   hand), ``needs_manual_grade`` lists the cells still to be graded (or checked again) in
   formgrader, ``reason`` says why a row lost points (timeout, kernel died, other) or was not
   graded at all (duplicate upload: none graded, ambiguous name, bad zip, not a notebook, no
   notebook, grader error (the grader's own fault only)), or that it was chosen among several
   uploads ("duplicate upload: graded the newest attempt" / "identical copies"). A row nobody
   graded (``reasons.graded``) has empty score cells and total, never 0, and nothing of it
   enters the gradebook (an earlier run's autograded scores of it are withdrawn); the summary
   lists it as not graded. Every cell goes through ``safecsv`` (OWASP's CSV injection rule);
   the summary prints every name through ``safetext.shown``.

The cache (``<state>/cache/``) is keyed by everything that can change a score: the
submission's bytes, the source notebook's bytes, every file of ``lreact/`` and
``autograder/`` (checks, engine, runner, ...), the Python and library versions, and the grading
options normalised (``--timeout 60`` and ``60.0`` are one key). Anything else changed, and the
submission is graded again.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
from pathlib import Path

import lreact

from .. import paths
from ..cells import grade_id, is_answer, is_autograded_test, is_manual, load, points
from ..run import engine
from ..run.pool import in_pool
from ..sandbox.launch import describe
from . import hidden_code
from .gradebook import CourseGradebook
from .reasons import duplicate_reason, reason_of
from .reasons import graded as was_graded
from .safecsv import write as write_safe_csv
from .safetext import shown
from .submissions import Submission, assignments, discover

LIBRARIES = ("numpy", "jsonschema", "ipykernel", "nbclient", "nbformat", "nbgrader", "lreact")
SKIP_DIRS = {"__pycache__", "wrong_answers", "hostile", ".ipynb_checkpoints"}
SKIP_SUFFIXES = {".pyc", ".pyo", ".md"}   # byte code and prose cannot change a score


# --- the cache key -----------------------------------------------------------------------

def code_dirs() -> list[Path]:
    """The code that decides a grade: the ``lreact`` package and the ``autograder`` package."""
    return [Path(lreact.__file__).resolve().parent, Path(__file__).resolve().parent.parent]


def code_digests(dirs=None) -> dict:
    """{``lreact/checks.py``: sha256 of its bytes} for every file under ``dirs`` (byte code,
    docs and the catalogues skipped), in a fixed order: what a cluster worker compares."""
    found = {}
    for d in sorted(Path(p) for p in (dirs or code_dirs())):
        for f in sorted(d.rglob("*")):
            rel = f.relative_to(d)
            if not f.is_file() or SKIP_DIRS & set(rel.parts) or f.suffix in SKIP_SUFFIXES:
                continue
            found[f"{d.name}/{rel.as_posix()}"] = hashlib.sha256(f.read_bytes()).hexdigest()
    return found


def code_fingerprint(dirs=None) -> str:
    """One hash of ``code_digests`` (names and bytes): part of the cache key."""
    h = hashlib.sha256()
    for name, digest in code_digests(dirs).items():
        h.update(f"{name}\0".encode())
        h.update(bytes.fromhex(digest))
    return h.hexdigest()


def versions() -> str:
    from importlib import metadata
    found = [f"python={sys.version.split()[0]}"]
    for name in LIBRARIES:
        try:
            found.append(f"{name}={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            found.append(f"{name}=absent")
    return ";".join(found)


def options_key(timeout: float, sandbox: str) -> str:
    """The grading options as one canonical string (60 and 60.0 are the same timeout)."""
    return json.dumps({"timeout": float(timeout), "sandbox": str(sandbox)}, sort_keys=True)


def cache_key(sub: Submission, source: Path, options: str, code: str) -> str:
    h = hashlib.sha256()
    body = sub.notebook.read_bytes() if sub.notebook else (sub.problem or "").encode()
    for part in (body, Path(source).read_bytes(), code.encode(), options.encode(),
                 versions().encode()):
        h.update(len(part).to_bytes(8, "big"))
        h.update(part)
    return h.hexdigest()


# --- one submission ----------------------------------------------------------------------

def annotate(record: dict, sub: Submission) -> dict:
    """What the folder says about ``sub`` (not its bytes, so never cached): the uploads it
    was chosen from, those set aside, the LMS's name; ``reason`` from both."""
    record.update(duplicates=list(sub.duplicates), rule=sub.rule,
                  set_aside=list(sub.set_aside), name=sub.name, renamed=sub.renamed)
    parts = [duplicate_reason(record), reason_of(record.get("failure"))]
    record["reason"] = "; ".join(p for p in parts if p)
    return record


def zero_record(sub: Submission, source: Path | None, reason: str) -> dict:
    """A submission that could not be graded, and why. Its numbers (0 on every cell) are the
    record's shape only: ``reason`` puts it among the rows nobody graded (``reasons.graded``),
    whose scores are never written (``sheet`` gives None)."""
    scores, manual = {}, {}
    if source is not None:
        for cell in load(source).cells:
            if is_autograded_test(cell):
                scores[grade_id(cell)] = [0.0, points(cell)]
            elif is_manual(cell):
                manual[grade_id(cell)] = points(cell)
    return {"student": sub.student, "assignment": sub.assignment, "origin": sub.origin,
            "scores": scores, "manual": manual, "errors": {}, "failure": reason,
            "reason": reason_of(reason), "notes": [], "executed": None,
            "total": 0.0, "possible": float(sum(p for _, p in scores.values()))}


def grade_one(sub: Submission, source: Path | None, options: str, cache_dir: Path | None,
              code: str, *, timeout: float = 60, sandbox: str = "auto", run=None) -> dict:
    """Grade (or fetch from the cache) one submission; a plain dict, JSON-ready.
    ``run``: extra keyword arguments for ``engine.grade_notebook`` (the pool, the state), or
    ``{"remote": grade}`` to have ``grade(sub, source, timeout=, sandbox=)`` return the fresh
    record instead (``cluster.py``: a Dask worker grades it with ``graded``)."""
    if source is None:
        return annotate({**zero_record(sub, None, sub.problem or "no notebook"),
                         "cached": False, "submitted": None}, sub)
    key = cache_key(sub, source, options, code)
    cached = cache_dir / f"{key}.json" if cache_dir else None
    if cached and cached.exists():
        try:
            record = json.loads(cached.read_text(encoding="utf-8"))
            # identical bytes from two students share one grading; the names are theirs
            record.update(student=sub.student, assignment=sub.assignment, origin=sub.origin,
                          submitted=_path(sub), cached=True)
            return flag_copies(annotate(record, sub), sub, source)
        except ValueError:
            pass
    run = dict(run or {})
    remote = run.pop("remote", None)
    if remote is not None and sub.notebook is not None:
        record = remote(sub, source, timeout=timeout, sandbox=sandbox)
    else:
        record = graded(sub, source, timeout=timeout, sandbox=sandbox, run=run)
    if cached:
        cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_name(f"{cached.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps(record, default=_plain), encoding="utf-8")
        tmp.replace(cached)
        record = json.loads(cached.read_text(encoding="utf-8"))
    record["cached"] = False
    record["submitted"] = _path(sub)
    return flag_copies(annotate(record, sub), sub, source)


def flag_copies(record: dict, sub: Submission, source: Path | None) -> dict:
    """``record["copied"]``: answers that hold a reference implementation's or the model
    answer's code, variables renamed or not (``proofs.edition_leaks.copied_answers``), and
    ``record["hidden_code"]``: answers that bring code they do not show (``hidden_code``): flags
    for the instructor in ``reason`` and the summary; the scores stay what the tests gave."""
    from ..proofs.edition_leaks import copied_answers
    if source is None or sub.notebook is None or not was_graded(record):
        return record
    try:
        nb = load(sub.notebook)
    except Exception:  # noqa: BLE001 - graded as not a notebook already
        return record
    answers = {grade_id(c): c.source for c in nb.cells
               if is_answer(c) and c.cell_type == "code" and grade_id(c)}
    try:
        found = copied_answers(answers, Path(source).parent.parent.parent)
    except Exception:  # noqa: BLE001 - a flag, never a reason to stop grading
        found = {}
    hidden = {gid: what for gid, what in ((g, hidden_code.findings(s))
                                          for g, s in answers.items()) if what}
    notes = []
    if found:
        record["copied"] = found
        notes.append("looks copied: " + ", ".join(sorted(found)))
    if hidden:
        record["hidden_code"] = hidden
        notes.append("brings code it does not show: " + ", ".join(sorted(hidden)))
    if notes:
        record["reason"] = "; ".join(p for p in (record.get("reason"), *notes) if p)
    return record


def graded(sub: Submission, source: Path, *, timeout: float = 60, sandbox: str = "auto",
           run=None) -> dict:
    """The fresh record of one submission (no cache, no folder notes): plain data."""
    if sub.notebook is None:
        return zero_record(sub, source, sub.problem or "no notebook")
    try:
        r = engine.grade_notebook(sub.assignment, sub.notebook, timeout, source=source,
                                  sandbox=sandbox, **(run or {}))
    except getattr(engine, "SandboxUnavailable", ()):
        raise
    except Exception as e:  # noqa: BLE001 - one submission never stops the class
        return zero_record(sub, source, f"grader error: {type(e).__name__}: {e}")
    executed = getattr(r, "executed", None)
    record = {
        "student": sub.student, "assignment": sub.assignment, "origin": sub.origin,
        "scores": {k: list(v) for k, v in r.scores.items()}, "manual": dict(r.manual),
        "errors": dict(r.errors), "failure": r.failure, "reason": reason_of(r.failure),
        "notes": list(r.notes), "total": r.total, "possible": r.possible,
        "executed": executed if executed is None or isinstance(executed, dict)
        else dict(executed),
    }
    if hasattr(r, "answers_ran"):
        record["answers_ran"] = r.answers_ran
    return record


def _flagged(lines: list, records: list, key: str, what: str) -> None:
    """The summary's lines for the submissions a flag (``record[key]``: {grade id: [found]})
    marks for the instructor; their scores stay what the tests gave."""
    flagged = [r for r in records if r.get(key)]
    if flagged:
        lines.append(f"{len(flagged)} submission(s) {what}; their scores are what the tests "
                     "gave, the judgement is yours:")
        for r in flagged:
            for gid, found in sorted(r[key].items()):
                lines.append(f"  {_who(r)}: {shown(gid)} holds {shown('; '.join(found))}")


def _path(sub: Submission) -> str | None:
    return str(sub.notebook) if sub.notebook is not None else None


def _plain(value):
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)


# --- the class ---------------------------------------------------------------------------

def grade_all(folder: Path, *, root: Path = paths.ROOT, out: Path | None = None,
              jobs: int | None = None, timeout: float = 60, state: Path | None = None,
              sandbox: str = "auto", progress: bool = True, cache: bool = True,
              gradebook: bool = False, code=None, runner=None) -> tuple[list, list]:
    """Grade a folder of submissions; returns (records, failures) and writes the CSV.

    ``gradebook``: record every submission in the nbgrader gradebook of the course folder
    ``root`` and read the hand grades back (what the ``grade`` command does; selfcheck and
    the benchmark leave it off). ``code``: the code fingerprint (tests pass their own).
    ``runner(subs, work, desc=, progress=)``: who calls ``work(sub, run)`` for every
    submission, results in order (default: ``pool.in_pool`` on ``jobs`` threads here;
    ``cluster.Cluster``: the workers of a Dask cluster). This machine writes the cache, the
    gradebook and the CSV either way.
    """
    state = paths.state(state)
    known = assignments(root)
    if not known:
        raise SystemExit(f"no source notebooks under {Path(root) / 'solutions'}")
    subs = discover(Path(folder), known, state.unzipped)
    jobs = max(1, jobs or os.cpu_count() or 1)
    options = options_key(timeout, sandbox)
    code = code or code_fingerprint()
    print(getattr(runner, "description", None) or describe(sandbox), file=sys.stderr)
    cache_dir = state.cache if cache else None
    runner = runner or (lambda items, work, **kw: in_pool(state, jobs, items, work, **kw))
    records = runner(subs, lambda s, run: grade_one(
        s, known.get(s.assignment), options, cache_dir, code, timeout=timeout,
        sandbox=sandbox, run=run), desc="grading", progress=progress)
    records.sort(key=lambda r: (r["student"], r["assignment"]))
    if gradebook:
        record_in_gradebook(records, known, root)
    failures = [r for r in records if r["failure"]]
    if out:
        write_csv(records, known, Path(out))
    return records, failures


def record_in_gradebook(records, known: dict, root: Path) -> None:
    """Store every record in the course's gradebook and attach what it holds now:
    ``record["grades"]`` (every cell's score and comment) and ``record["flagged"]``."""
    book = CourseGradebook(root)
    for r in records:
        source = known.get(r["assignment"])
        if source is None:
            continue
        if not was_graded(r):         # nothing recorded; an earlier run's scores withdrawn
            r["withdrawn"] = book.withdraw(r["assignment"], r["student"], source)
            continue
        executed = load(r["executed"]) if r.get("executed") else None
        r["flagged"] = book.record(r, source, executed)
        r["grades"] = book.read(r["assignment"], r["student"])
    for r in records:
        r.setdefault("flagged", [])


def graded_columns(source: Path) -> list[str]:
    """Every graded cell of a source notebook, autograded and by hand, in notebook order."""
    return [grade_id(c) for c in load(source).cells if is_autograded_test(c) or is_manual(c)]


def sheet(record) -> tuple[dict, float | None, float, list]:
    """({cell: score or None}, total, max, cells still to grade by hand) of one record: a
    record, or ``{"grades": CourseGradebook.read(...)}``. Nobody graded it (``reasons.graded``;
    in the gradebook: no autograded cell has a score): every cell and the total are None."""
    grades = record.get("grades")
    cells, todo = {}, []
    if not was_graded(record) or (grades and _withdrawn(grades)):
        if grades:
            top = sum(g["max"] for g in grades.values() if "max" in g)
            return {g: None for g, v in grades.items() if "max" in v}, None, float(top), []
        cells = {gid: None for gid in [*record["scores"], *record.get("manual", {})]}
        top = float(record["possible"]) + float(sum(record.get("manual", {}).values()))
        return cells, None, top, []
    if grades:
        for gid, g in grades.items():
            if "max" not in g:
                continue
            graded = g["manual"] is not None or g["auto"] is not None
            cells[gid] = g["score"] if graded else None
            if g["needs_manual_grade"]:
                todo.append(gid)
        total = sum(v for v in cells.values() if v is not None)
        top = sum(g["max"] for g in grades.values() if "max" in g)
    else:
        cells = {gid: float(s[0]) for gid, s in record["scores"].items()}
        cells.update({gid: None for gid in record.get("manual", {})})
        todo = [] if record.get("failure") else list(record.get("manual", {}))
        total = float(record["total"])
        top = float(record["possible"]) + float(sum(record.get("manual", {}).values()))
    return cells, float(total), float(top), todo


def _withdrawn(grades: dict) -> bool:
    """A submission of the gradebook whose autograded cells all lack an automatic score (every
    run that grades one sets them all): its scores were withdrawn
    (``CourseGradebook.withdraw``), nobody graded it in the last run."""
    auto = [g for g in grades.values() if "max" in g and not g.get("by_hand")]
    return bool(auto) and all(g["auto"] is None for g in auto)


def write_csv(records, known: dict, out: Path) -> None:
    columns = []
    for aid in sorted({r["assignment"] for r in records if r["assignment"] in known}
                      or known):
        for gid in graded_columns(known[aid]):
            if gid not in columns:
                columns.append(gid)
    order = {gid: i for i, gid in enumerate(columns)}
    rows = []
    for r in records:
        cells, total, top, todo = sheet(r)
        if total is None and r["assignment"] in known:      # not graded: the assignment's max
            top = sum(points(c) for c in load(known[r["assignment"]]).cells
                      if is_autograded_test(c) or is_manual(c))
        rows.append([r["student"], r["assignment"],
                     *["" if cells.get(c) is None else _num(cells[c]) for c in columns],
                     "" if total is None else _num(total),
                     _num(top) if r["assignment"] in known else "",
                     " ".join(sorted(todo, key=lambda g: order.get(g, 0))),
                     r.get("reason") or reason_of(r.get("failure"))])
    # text neutralised, numbers written as numbers: safecsv (OWASP's CSV injection rule)
    write_safe_csv(out, ["student", "assignment", *columns, "total", "max",
                         "needs_manual_grade", "reason"], rows)


def _num(x: float) -> int | float:
    """A score as a number (a whole one without '.0'): never student text."""
    return int(x) if float(x).is_integer() else float(x)


def _who(r) -> str:
    """``student / assignment`` of a record, escaped (every name here is a student's)."""
    name = f" ({shown(r['name'])})" if r.get("name") and r["name"] != r["student"] else ""
    return f"{shown(r['student'])}{name} / {shown(r['assignment'] or '?')}"


def summary(records, failures) -> str:
    """What grade prints at the end. Every name and message from a submission goes through
    ``safetext.shown``: its escape sequences are shown, never obeyed by the terminal."""
    ungraded = [r for r in records if not was_graded(r)]
    lines = [f"graded {len(records) - len(ungraded)} submission(s) "
             f"({sum(1 for r in records if r.get('cached') and was_graded(r))} from the cache)"
             + (f", {len(ungraded)} not graded" if ungraded else "")]
    if ungraded:
        lines.append(f"{len(ungraded)} submission(s) not graded: their score cells are blank in "
                     "grades.csv, nothing is recorded in the gradebook and no export gives "
                     "them a score (never 0); the reason column says why:")
        for r in ungraded:
            lines.append(f"  {_who(r)} ({shown(r.get('reason') or reason_of(r['failure']))})")
            if r.get("withdrawn"):
                lines.append(f"  {_who(r)}: its grade from an earlier run was withdrawn "
                             "(its autograded scores; hand grades are kept for when it is "
                             "graded again)")
    _flagged(lines, records, "copied", "whose answers hold code of a reference "
             "implementation or of the model answer (variables renamed or not)")
    _flagged(lines, records, "hidden_code", "whose answers bring code they do not show "
             "(compiled code as data, code objects, ctypes, other programs, encoded payloads: "
             "the student edition's compiled modules can be read back); while grading, the "
             "plain routes were refused")
    several = [r for r in records if r.get("duplicates")]
    if several:
        lines.append(f"{len(several)} student(s) with more than one upload of one assignment "
                     "(the file names decide whose they are: check them):")
        for r in several:
            how = {"newest": f"graded the newest attempt, {shown(r['origin'])}",
                   "identical": f"identical copies, graded once ({shown(r['origin'])})"
                   }.get(r.get("rule"), "none graded (blank): keep one and run grade again")
            lines.append(f"  {_who(r)}: {how}")
            lines.extend(f"      {shown(o)}" for o in r["duplicates"])
    renamed = [r for r in records if r.get("renamed")]
    if renamed:
        lines.append(f"{len(renamed)} upload(s) named a student with characters that are not "
                     "safe in the gradebook and formgrader; graded under a safe name:")
        lines.extend(f"  {shown(r['renamed'])} -> {shown(r['student'])} "
                     f"({shown(r['origin'])})" for r in renamed)
    if failures:
        lines.append(f"{len(failures)} submission(s) had problems:")
        for r in failures:
            lines.append(f"  {_who(r)} ({shown(r['origin'])}): {shown(r['failure'])}")
    else:
        lines.append("no failures")
    aside = [o for r in records for o in r.get("set_aside", [])]
    if aside:
        more = f", and {len(aside) - 5} more" if len(aside) > 5 else ""
        lines.append(f"{len(aside)} upload(s) set aside, not graded (each holds no notebook, "
                     "or another notebook of an upload whose <assignment>.ipynb was graded): "
                     f"{', '.join(shown(o) for o in aside[:5])}{more}")
    todo = [(r, sheet(r)[3]) for r in records if r.get("grades") is not None]
    waiting = sum(len(t) for _, t in todo)
    if waiting:
        lines.append(f"{waiting} cell(s) to grade by hand in formgrader "
                     f"(column needs_manual_grade)")
    for r in records:
        for gid in r.get("flagged", []):
            lines.append(f"  {_who(r)}: the answers changed since {shown(gid)} was graded "
                         "by hand; its score is kept, check it in formgrader")
    return "\n".join(lines)

