"""The CSV's ``reason`` column: why a row is not graded or lost points, in a few words
(autograder/README.md, "From a folder of zips to grades and feedback").

``reason_of`` reads the failure texts the grader itself writes (submissions.py, lms.py,
run/engine.py, inside/trusted_namespace.py). "grader error" means the grader's own fault and nothing else: a student's
answer that ran out of time is "timeout", one whose process ended "kernel died"; a text none of
the rules describe is "other", never blamed on the grader.

``graded`` tells the two kinds of rows apart. A row whose answers were run and scored keeps its
scores, zeros included (the released notebook, a timeout, a kernel that died: the work scored
0). A row nobody graded (``NOT_GRADED``: the upload could not be read, could not be told whose
it is, or the grader failed) has no score at all: grades.csv and every export leave its score
cells blank, and the gradebook records nothing for it, so no LMS import turns it into a 0.
"""
from __future__ import annotations

import re

REASONS = (  # (how a failure the grader writes starts, reason); first match wins
    ("grader error", "grader error"),          # grade_one, inside.trusted.run_job: the grader's fault
    ("duplicate upload", "duplicate upload: none graded"),      # submissions.resolve
    ("ambiguous name", "ambiguous name"),                       # lms.owners: whose, unknown
    ("bad zip", "bad zip"),
    ("invalid notebook", "not a notebook"),
    ("not a notebook", "not a notebook"),
    ("no notebook", "no notebook"),
    ("timeout", "timeout"),
    ("kernel died", "kernel died"),
)
PHRASES = (  # (words of inside/trusted_namespace.py's and run/engine.py's ``stopped``/failure texts, reason)
    (("did not finish within", "did not reply within", " ran past ", "took too long",
      "timed out"), "timeout"),
    (("the process running the answers ended", "the answers cannot be reached",
      "ended without a result", "died"), "kernel died"),
)
NOT_GRADED = frozenset({  # reasons of rows that were never graded: blank, never 0
    "duplicate upload: none graded", "ambiguous name", "bad zip", "not a notebook",
    "no notebook", "grader error"})
SETUP = re.compile(r"the setup cell \d+ failed: (?P<error>.*)", re.S)


def reason_of(failure: str | None) -> str:
    """The short reason of a failure, for the CSV's ``reason`` column ('' when none).

    The start of the text decides first (the file names and errors after it cannot); then
    the words of the trusted process's own messages; "grader error" only for the grader's own fault
    (an exception in the grader, or an instructor setup cell that failed before any answer
    ran), "other" for a text none of these describe."""
    if not failure:
        return ""
    text = " ".join(str(failure).split()).lower()
    for start, reason in REASONS:
        if text.startswith(start):
            return reason
    setup = SETUP.match(text)
    if setup:
        inner = reason_of(setup["error"])
        return inner if inner in ("timeout", "kernel died") else "grader error"
    for words, reason in PHRASES:
        if any(w in text for w in words):
            return reason
    return "other"


def duplicate_reason(record: dict) -> str:
    """``reason`` of a record whose student has several uploads of the assignment."""
    if not record.get("duplicates") or not record.get("rule"):
        return ""
    return ("duplicate upload: graded the newest attempt" if record["rule"] == "newest"
            else "duplicate upload: identical copies, graded once")


def graded(record: dict) -> bool:
    """False for a record nobody graded (its reason is in ``NOT_GRADED``): its scores are not
    the work's and are never written, only its reason."""
    return reason_of(record.get("failure")) not in NOT_GRADED
