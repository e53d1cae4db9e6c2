"""CSV files that no spreadsheet evaluates: OWASP's rule against CSV (formula) injection.

OWASP, "CSV Injection" (https://owasp.org/www-community/attacks/CSV_Injection): a cell that
begins with ``=``, ``+``, ``-``, ``@``, a tab (0x09) or a carriage return (0x0D) is opened by
Excel, LibreOffice Calc or Google Sheets as a formula (``=HYPERLINK(...)``, DDE's
``=cmd|' /C calc'!A0``); the field separator and quotes must not let a value start a new cell.
A student chooses their file name, hence their student id in our CSVs, so every CSV the grader
writes goes through ``Writer``:

- a text cell whose first character, after any leading whitespace, is one of ``= + - @``, tab,
  CR, LF or NUL (OWASP ASVS 5.0, 1.2.10, adds NUL) gets a leading single quote, which the
  spreadsheet shows as text;
- every text cell is written in double quotes, inner quotes doubled (RFC 4180); and since a
  spreadsheet opened with another separator than ``,`` (``;`` in German or French locales,
  tab) splits a quoted cell there anyway, and any separator but ``,`` splits it at its line
  breaks into rows, a trigger that follows a ``,``, ``;``, tab, CR or LF inside a text (spaces
  and quotes between them) gets a single quote too: ``x;=1+1`` is written ``x;'=1+1`` (an
  outside review had LibreOffice evaluate ``x;=1+1;y`` from an LMS mapping's name, opened with
  ``;``, and, in the class server's key handout, ``x\n=SUM(A1:A3)`` from a roster's name: a
  formula on a row of its own that read another student's key);
- numbers (``int``, ``float``) are written bare and never quoted: scores are numbers the grader
  computes, never student text, so a score of -1 stays the number -1.

``SafeCsvExportPlugin`` is nbgrader's ``CsvExportPlugin`` (``nbgrader export``) through the
same writer (set ``c.ExportApp.plugin_class`` to it in nbgrader_config.py). A submission whose
autograded scores were withdrawn (not graded by the last ``grade`` run:
``gradebook.CourseGradebook.withdraw``) gets empty score cells there, as in ``export``, not
nbgrader's total of what is left.
"""
from __future__ import annotations

import csv
import re
from pathlib import Path

from nbgrader.api import MissingEntry
from nbgrader.plugins import CsvExportPlugin

TRIGGERS = ("=", "+", "-", "@", "\t", "\r", "\n", "\0")
AFTER_SEPARATOR = re.compile(r"""([,;\t\r\n][ "']*)(?=[=+\-@\t\0])""")


def cell(value):
    """One cell: an ``int``/``float`` as it is, anything else as inert text."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    text = "" if value is None else str(value)
    text = AFTER_SEPARATOR.sub(r"\1'", text)
    return "'" + text if text.lstrip(" ").startswith(TRIGGERS) else text


class Writer:
    """``csv.writer`` whose every row goes through ``cell``; text quoted, numbers bare."""

    def __init__(self, f):
        self._w = csv.writer(f, quoting=csv.QUOTE_NONNUMERIC)

    def writerow(self, row) -> None:
        self._w.writerow([cell(v) for v in row])

    def writerows(self, rows) -> None:
        for row in rows:
            self.writerow(row)


def write(path: Path, header, rows) -> None:
    """Write ``header`` and ``rows`` to the CSV file ``path`` (parents created)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = Writer(f)
        w.writerow(header)
        w.writerows(rows)


class SafeCsvExportPlugin(CsvExportPlugin):
    """``nbgrader export`` with the columns of nbgrader's CSV exporter, written by ``Writer``
    (nbgrader's own joins the raw values with commas: a student id ``=2+3`` is a formula)."""

    KEYS = ("assignment", "duedate", "timestamp", "student_id", "last_name", "first_name",
            "email", "raw_score", "late_submission_penalty", "score", "max_score")

    def export(self, gradebook) -> None:
        dest = self.to or "grades.csv"
        students = [str(s) for s in self.student]
        wanted = [str(a) for a in self.assignment]
        self.log.info("Exporting grades to %s", dest)
        rows = []
        for assignment in gradebook.assignments:
            if wanted and assignment.name not in wanted:
                continue
            for student in gradebook.students:
                if students and student.id not in students:
                    continue
                try:
                    sub = gradebook.find_submission(assignment.name, student.id)
                except MissingEntry:
                    stamp, raw, penalty = None, 0.0, 0.0
                else:
                    stamp, raw, penalty = (sub.timestamp, sub.score,
                                           sub.late_submission_penalty)
                score = max(0.0, raw - penalty)
                if stamp is not None and withdrawn(sub):      # nobody graded it now
                    raw = penalty = score = ""
                rows.append([assignment.name, assignment.duedate, stamp, student.id,
                             student.last_name, student.first_name, student.email, raw,
                             penalty, score, assignment.max_score])
        write(Path(dest), self.KEYS, rows)


def withdrawn(submission) -> bool:
    """No autograded test cell of an nbgrader submission has an automatic score: every run
    that grades it sets them all, so its scores were withdrawn (``grade`` did not grade it)."""
    tests = [g for nb in submission.notebooks for g in nb.grades
             if g.cell_type == "code"
             and g.name not in {c.name for c in nb.notebook.solution_cells}]
    return bool(tests) and all(g.auto_score is None for g in tests)
