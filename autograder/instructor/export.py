"""``python -m autograder export``: nbgrader's gradebook as a grade sheet an LMS imports.

Scores are read as ``grade`` reads them for ``grades.csv``: ``CourseGradebook.read`` and
``grade.sheet`` (a manual score takes precedence, as in nbgrader), so a student's score for an
assignment is the ``total`` of their row in ``grades.csv`` and the ``score`` of ``nbgrader
export``. One row per student with a graded submission of an exported assignment, one column
per assignment, in points. No score is ever written for work nobody graded: a student without
a submission of an assignment, or whose submission was not graded by the last ``grade`` run (a
duplicate upload, a bad zip, ...: its scores were withdrawn from the gradebook), gets an empty
cell, never 0 (``nbgrader export`` writes 0 there), and a student with nothing graded at all
gets no row, so the LMS keeps what it has. An empty cell is "no grade" to both LMSs: Canvas's
import leaves it alone where the student has no grade and shows it as removing one they have
(``ui/features/gradebook_uploads``), Moodle imports it as no grade (``load_data.php``); a
warning names every submission whose scores were withdrawn.

Formats, as each LMS's importer reads them (sources: autograder/README.md, "Grades into the
LMS"):

- ``canvas``: ``Student, ID, SIS User ID, SIS Login ID, Section, <assignment>...``, then a row
  ``Points Possible`` with each assignment's maximum, then one row per student.
- ``moodle``: ``First name, Last name, ID number, Email address, Username, <assignment>...``;
  on import the instructor maps one identifier column to Moodle's user field and each
  assignment column to a grade item.
- ``csv``: ``student, name, email, id, section, <assignment>..., total, max``.

Who is who (``--ids MAPPING.csv``): a CSV with a ``submission`` column (the student's name in
``grades.csv`` and the gradebook) and any of ``name``, ``first_name``, ``last_name``, ``id``,
``sis_user_id``, ``sis_login_id``, ``section``, ``email``, ``username``, ``idnumber`` (the
LMS's own export headers, e.g. "SIS Login ID" or "Email address", are read as these; other
columns are ignored). With a mapping, a student it does not name is left out of the sheet and
listed in a warning: a guessed identity could give the grade to someone else. Without one,
every student is written under their submission name (Canvas: SIS Login ID; Moodle: Username),
with what the gradebook holds (nbgrader's first and last name, email, and ``lms_user_id`` as
Canvas's ID).

Every text cell goes through ``safecsv`` (OWASP's CSV injection rule; scores stay numbers) and
every name printed goes through ``safetext.shown``.
"""
from __future__ import annotations

import csv
import io
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .. import paths
from .grade import sheet
from .gradebook import CourseGradebook
from .lms_columns import ALIASES, FIELDS, KEYS  # noqa: F401 (ALIASES: API)
from .lms_columns import field as _field
from .safecsv import write as write_safe_csv
from .safetext import shown

FORMATS = ("canvas", "moodle", "csv")
DEFAULT_OUT = {"canvas": "canvas-grades.csv", "moodle": "moodle-grades.csv",
               "csv": "plain-grades.csv"}
CANVAS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
MOODLE = (("First name", "first_name"), ("Last name", "last_name"), ("ID number", "idnumber"),
          ("Email address", "email"), ("Username", "username"))


@dataclass
class Sheet:
    """What the gradebook holds for the exported assignments."""
    assignments: list                              # gradebook ids, in column order
    maxima: dict                                   # {assignment: max points}
    scores: dict = field(default_factory=dict)     # {student: {assignment: points or None}}
    people: dict = field(default_factory=dict)     # {student: what nbgrader knows of them}
    todo: list = field(default_factory=list)       # [(student, assignment, [cells])]
    late: list = field(default_factory=list)       # [(student, assignment)] with a penalty
    ungraded: list = field(default_factory=list)   # [(student, assignment)] nobody graded


def collect(root: Path = paths.ROOT, wanted=None) -> Sheet:
    """Every score of the assignments ``wanted`` (default: all) in the course's gradebook."""
    book = CourseGradebook(root)
    if book.db_path is not None and not book.db_path.exists():
        raise SystemExit(f"no gradebook at {book.db_path}: grade the class first "
                         f"(python -m autograder grade SUBMISSIONS --root {root})")
    with book.open() as gb:
        known = [a.name for a in gb.assignments]
        maxima = {a.name: float(a.max_score) for a in gb.assignments}
        absent = [a for a in wanted or () if a not in known]
        if absent:
            raise SystemExit(f"the gradebook {book.db_url} has no assignment "
                             f"{', '.join(map(shown, absent))}; it has: "
                             f"{', '.join(known) or 'none'}")
        names = list(dict.fromkeys(wanted)) if wanted else known
        people = {s.id: {"first_name": s.first_name or "", "last_name": s.last_name or "",
                         "email": s.email or "", "id": s.lms_user_id or ""}
                  for s in gb.students}
        subs = [(s.student_id, aid, s.late_submission_penalty)
                for aid in names for s in gb.assignment_submissions(aid)]
    for aid in names:      # what grade does before it reads: the gradebook knows the notebook
        source = paths.source_path(aid, root)
        if not source.exists():
            raise SystemExit(f"{aid} is in the gradebook but its source notebook {source} is "
                             "missing; export the other assignments with --assignment")
        book.sync_assignment(aid, source)
    out = Sheet(names, {a: maxima[a] for a in names}, people=people)
    for student, aid, penalty in sorted(subs):
        grades = book.read(aid, student)
        if not grades:
            continue
        _, total, _, pending = sheet({"grades": grades})
        out.scores.setdefault(student, {})[aid] = total      # None: not graded (withdrawn)
        if total is None:
            out.ungraded.append((student, aid))
        if pending:
            out.todo.append((student, aid, pending))
        if penalty:
            out.late.append((student, aid))
    return out


# --- who is who ----------------------------------------------------------------------------

def read_ids(path: Path) -> dict:
    """{submission name: {field: value}} from a mapping file (see the module docstring)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (FileNotFoundError, IsADirectoryError):
        raise SystemExit(f"--ids: no file {path}") from None
    except UnicodeDecodeError:
        raise SystemExit(f"--ids: {path} is not UTF-8 text; save it as CSV (UTF-8)") from None
    rows = list(csv.reader(io.StringIO(text, newline="")))
    header = [_field(h) for h in (rows[0] if rows else [])]
    if "submission" not in header or not set(FIELDS) & set(header):
        raise SystemExit(
            f"--ids: {path} needs a header with a 'submission' column (the student's name in "
            f"grades.csv) and at least one of {', '.join(FIELDS)}; found: "
            f"{', '.join(rows[0]) if rows else 'an empty file'}")
    ids, owner = {}, {}
    for line, row in enumerate(rows[1:], start=2):
        got = {k: v.strip() for k, v in zip(header, row) if k in FIELDS or k == "submission"}
        who = got.pop("submission", "")
        if not who or not any(got.values()):
            continue                 # e.g. a "Points Possible" row, or no identity at all
        if who in ids:
            raise SystemExit(f"--ids: {path} line {line}: {shown(who)} is mapped twice")
        for key in KEYS:
            if got.get(key):
                other = owner.setdefault((key, got[key]), who)
                if other != who:
                    raise SystemExit(f"--ids: {path} line {line}: {shown(who)} and "
                                     f"{shown(other)} have the same {key} {shown(got[key])}; "
                                     "one LMS user would get two grades")
        ids[who] = got
    return ids


def _identity(student: str, sheet: Sheet, ids) -> dict | None:
    if ids is not None:
        return ids.get(student)
    return {**sheet.people.get(student, {}), "sis_login_id": student, "username": student}


def _name(who: dict, student: str) -> str:
    return who.get("name") or ", ".join(
        x for x in (who.get("last_name"), who.get("first_name")) if x) or student


# --- the formats ---------------------------------------------------------------------------

def _num(x: float) -> int | float:
    return int(x) if float(x).is_integer() else float(x)


def table(fmt: str, sheet: Sheet, ids=None, titles=None) -> tuple[list, list, list]:
    """(header, rows, warnings) of the sheet in format ``fmt``."""
    if fmt not in FORMATS:
        raise SystemExit(f"unknown format {fmt!r}: use one of {', '.join(FORMATS)}")
    titles = [(titles or {}).get(a, a) for a in sheet.assignments]
    rows, left_out, warnings = [], [], []
    for student in sorted(sheet.scores):
        got = {a: v for a, v in sheet.scores[student].items() if v is not None}
        if not got:
            continue         # nothing graded: no row, the LMS keeps what it has (warned)
        who = _identity(student, sheet, ids)
        if who is None:
            left_out.append(student)
            continue
        points = [_num(got[a]) if a in got else "" for a in sheet.assignments]
        if fmt == "canvas":
            rows.append([_name(who, student), who.get("id", ""), who.get("sis_user_id", ""),
                         who.get("sis_login_id", ""), who.get("section", ""), *points])
        elif fmt == "moodle":
            rows.append([who.get(k, "") for _, k in MOODLE] + points)
        else:
            rows.append([student, _name(who, student), who.get("email", ""),
                         who.get("id", ""), who.get("section", ""), *points,
                         _num(sum(got.values())), _num(sum(sheet.maxima.values()))])
    if fmt == "canvas":
        header = [*CANVAS, *titles]
        by_name = [r[0] for r in rows if not any(r[1:4])]
        if by_name:
            warnings.append(f"{len(by_name)} row(s) have no ID, SIS User ID or SIS Login ID; "
                            f"Canvas can match them by name only: {_few(by_name)}")
        rows.insert(0, ["Points Possible", "", "", "", "",
                        *[_num(sheet.maxima[a]) for a in sheet.assignments]])
    elif fmt == "moodle":
        header = [h for h, _ in MOODLE] + titles
        for i, (h, _) in enumerate(MOODLE[2:], start=2):
            empty = [r for r in rows if not r[i]]
            if empty and len(empty) < len(rows):
                warnings.append(f"{len(empty)} of {len(rows)} row(s) have no {h}: Moodle "
                                "stops the whole import at a row whose mapped identifier is "
                                "empty or unknown, so map a column that every row has")
    else:
        header = ["student", "name", "email", "id", "section", *titles, "total", "max"]
    if left_out:
        warnings.insert(0, f"{len(left_out)} student(s) have no row in the --ids mapping and "
                           f"are LEFT OUT of the sheet: {_few(left_out)} (add a row for each "
                           "to the mapping and export again)")
    return header, rows, warnings


def not_graded_warning(sheet: Sheet) -> str:
    """What the sheet says of the submissions of the gradebook that the last grade run did
    not grade (their scores were withdrawn: the LMS may still hold the old grade)."""
    graded = {s for s, got in sheet.scores.items() if any(v is not None for v in got.values())}
    nothing = sorted({s for s, _ in sheet.ungraded} - graded)
    text = (f"{len(sheet.ungraded)} submission(s) graded before were not graded by the last "
            "grade run (grades.csv's reason column says why) and have no score here, never 0: "
            + _few(f"{s} / {a}" for s, a in sheet.ungraded))
    if nothing:
        text += (f"; {len(nothing)} student(s) with nothing graded have no row, so the LMS keeps "
                 f"what it has: {_few(nothing)}")
    if graded & {s for s, _ in sheet.ungraded}:
        text += ("; the others' cells are empty, which Canvas's import shows as removing a grade "
                 "the student has and Moodle's imports as no grade: fix the upload and run grade "
                 "again, or export the other assignments only (--assignment)")
    return text


def _few(names, n: int = 10) -> str:
    names = [shown(x) for x in names]
    return ", ".join(names[:n]) + (f", and {len(names) - n} more" if len(names) > n else "")


def export(fmt: str, out: Path | None = None, *, root: Path = paths.ROOT,
           ids: Path | None = None, assignments=None) -> tuple[Path, list]:
    """Write the sheet; returns (the file written, warnings for the instructor).
    ``assignments``: ``["ID", "ID=TITLE", ...]`` (default: every assignment of the gradebook,
    titled by its id)."""
    if fmt not in FORMATS:
        raise SystemExit(f"unknown format {fmt!r}: use one of {', '.join(FORMATS)}")
    titles = {}
    for spec in assignments or ():
        aid, sep, title = spec.partition("=")
        if not aid.strip() or (sep and not title.strip()):
            raise SystemExit(f"--assignment {spec!r}: write ID or ID=TITLE")
        titles[aid.strip()] = title.strip() or aid.strip()
    mapping = read_ids(ids) if ids else None
    sheet = collect(root, list(titles) or None)
    header, rows, warnings = table(fmt, sheet, mapping, titles)
    if mapping is not None:
        stray = sorted(set(mapping) - set(sheet.people))
        if stray:
            warnings.append(f"{len(stray)} row(s) of {ids} name no student of the gradebook "
                            f"(a typo?): {_few(stray)}")
    if sheet.todo:
        warnings.append(f"{len(sheet.todo)} submission(s) still have cells to grade by hand "
                        "in formgrader; their scores leave those cells out: " + _few(
                            f"{s} / {a}: {' '.join(c)}" for s, a, c in sheet.todo))
    if sheet.ungraded:
        warnings.append(not_graded_warning(sheet))
    if sheet.late:
        warnings.append("nbgrader recorded a late penalty for " + _few(
            f"{s} / {a}" for s, a in sheet.late) + "; the sheet has the scores before it, as "
            "grades.csv does")
    if not sheet.scores:
        warnings.append("the gradebook holds no submission of these assignments")
    out = Path(out or DEFAULT_OUT[fmt])
    write_safe_csv(out, header, rows)
    return out, warnings


def command(fmt: str, out=None, *, root=paths.ROOT, ids=None, assignments=None) -> int:
    """The ``export`` command: write the sheet, print the warnings and what was written."""
    path, warnings = export(fmt, out, root=root, ids=ids, assignments=assignments)
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)
    print(f"wrote {path}")
    return 0
