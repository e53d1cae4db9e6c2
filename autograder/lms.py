"""Whose upload is it: the student an LMS export names in a file or folder name.

``owner(name)`` reads the name as each LMS writes it, the first that matches winning (the
layouts, with their sources, are in autograder/README.md, "From a folder of zips to grades and
feedback"):

- Moodle, "Download all submissions" (moodle/moodle ``mod/assign/classes/downloader.php``):
  ``<Full Name>_<participant id>_assignsubmission_file/<file>`` (a folder per student, the
  default since Moodle 3.1; ``..._file_/`` before 4.1) or, flat,
  ``<Full Name>_<participant id>_assignsubmission_file_<file>``. Moodle turns ``_`` in the
  name into spaces; the participant id is its unique id of the user in that assignment (also
  under blind marking, where the name is "Participant"). Key: the participant id.
- Blackboard Learn, "Assignment File Download":
  ``<assignment>_<username>_attempt_<YYYY-MM-DD-HH-MM-SS>[_<file>]`` (and a ``.txt`` per
  attempt). Key: the username; the attempt's time orders two attempts of one student.
- Canvas, "Download Submissions" (instructure/canvas-lms ``lib/content_zipper.rb``):
  ``<lastfirst>[_LATE]_<user id>_<file id>_<file>``, or ``[LATE_]anon_<anonymous id>_<file
  id>_<file>`` under anonymous grading. Key: the user id (``anon_<id>``).
- Anything else is name first, without an id: the student is the name before the first ``_``
  (``dana_lab.ipynb`` is dana's). Two students called dana collide there; the collision is
  never resolved silently (``submissions.resolve``).

The LMS writes the part of the name that carries the id; what follows it (the student's own
file name) is never read for the owner: the patterns match from the left and stop there.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, replace
from pathlib import PurePath

STAMP = re.compile(r"\d{4}(?:-\d\d){5}")     # Blackboard's attempt time, sortable as text
MOODLE = re.compile(r"(?P<name>[^_/]+?)_(?P<id>\d+)_assignsubmission_(?P<plugin>[a-z]+)"
                    r"(?:_.*)?", re.S)
BLACKBOARD = re.compile(r"(?P<assignment>.+?)_(?P<id>[^_]+)_attempt_(?P<stamp>[^_.]+)"
                        r"(?:[_.].*)?", re.S)
CANVAS_ANON = re.compile(r"(?:LATE_)?anon_(?P<id>[A-Za-z0-9]+)_(?P<file>\d+)_.+", re.S)
CANVAS = re.compile(r"(?P<name>\w+?)_(?:LATE_)?(?P<id>\d+)_(?P<file>\d+)_.+", re.S)


@dataclass(frozen=True)
class Owner:
    key: str          # the student in the grade sheet and the gradebook
    name: str = ""    # what the LMS calls them, for messages ('' when the key is the name)
    lms: str = ""     # "moodle", "blackboard", "canvas", or "" (name first, no id)
    stamp: str = ""   # Blackboard's attempt time YYYY-MM-DD-HH-MM-SS, '' when none
    renamed: str = "" # the name the upload gave, when it was not safe as a key (``safe_key``)

    def label(self) -> str:
        """The key, with the LMS's name for the student when it has one."""
        return f"{self.key} ({self.name})" if self.name and self.name != self.key \
            else self.key


# A student key goes into the gradebook, formgrader's pages (some of which print it unescaped,
# even inside a script), folder names and the grade sheet: only these characters are kept.
SAFE_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,99}")


def safe_key(key: str) -> str:
    """``key`` itself when it is made of letters, digits and ``. _ @ + -`` (starting with a
    letter or digit, at most 100 characters); otherwise those characters of it, every other one
    as ``-``, and a short digest of the whole name, so that two unsafe names never meet."""
    if SAFE_KEY.fullmatch(key):
        return key
    kept = re.sub(r"[^A-Za-z0-9._@+-]", "-", key)[:80].strip("-._@+") or "student"
    return f"{kept}-{hashlib.sha256(key.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"


def owner(name: str, *, folder: bool = False) -> Owner:
    """The owner of a file (or folder, ``folder=True``) called ``name`` in an LMS export, with
    a key that is safe everywhere it is shown (``safe_key``; the name the upload gave is kept in
    ``renamed`` and grade's summary lists it)."""
    found = _owner(name, folder=folder)
    key = safe_key(found.key)
    return found if key == found.key else replace(found, key=key, renamed=found.key)


def _owner(name: str, *, folder: bool = False) -> Owner:
    """The owner of a file (or folder, ``folder=True``) called ``name`` in an LMS export.

    Where several layouts match, the one whose owner part ends first wins: that part lies
    wholly in what the LMS wrote, so a student's own file name (after it) cannot move the
    upload to another student. Of the folders, only Moodle's are read for an id (the other
    LMSs export files); any other folder is nbgrader's ``<student>/``, the whole name."""
    found = []
    for pattern, end, make in _LAYOUTS[:1] if folder else _LAYOUTS:
        m = pattern.fullmatch(name)
        if m:
            found.append((m.end(end), make(m)))
    if found:
        return min(found, key=lambda f: f[0])[1]
    if folder:                      # nbgrader's <student>/ folder: the whole name
        return Owner(name)
    stem = PurePath(name).stem
    return Owner(stem.split("_", 1)[0] or stem)


_LAYOUTS = (
    (MOODLE, "plugin", lambda m: Owner(m["id"], m["name"], "moodle")),
    (BLACKBOARD, "stamp", lambda m: Owner(m["id"], "", "blackboard",
                                          m["stamp"] if STAMP.fullmatch(m["stamp"]) else "")),
    (CANVAS_ANON, "file", lambda m: Owner(f"anon_{m['id']}", "", "canvas")),
    (CANVAS, "file", lambda m: Owner(m["id"], m["name"], "canvas")),
)
