"""Whose upload is it: the student an LMS export names in a file or folder name.

How each LMS names a download, and which parts of the name are free text (checked against each
LMS's own source or documentation; the table is in autograder/README.md, "From a folder of zips
to grades and feedback"):

- Canvas, "Download Submissions" (instructure/canvas-lms ``lib/content_zipper.rb``, commit
  05e9653c: ``get_filename``, ``add_upload_submission``, ``sanitize_user_name``,
  ``sanitize_file_name``): ``<lastfirst>[_LATE]_<user id>_<file id>_<file>``, or
  ``[LATE_]anon_<anonymous id>_<file id>_<file>`` under anonymous grading. ``<lastfirst>`` is
  the student's sortable name, lowercased, with every character that is not a word character
  removed: free text that may hold ``_``, digits and non-ASCII letters and digits, but no
  uppercase ASCII, space, ``.`` or ``-`` (so never ``LATE``, and never another ``_LATE_``).
  Its ``_(\\d+)_`` runs are squeezed before punctuation is removed, so ``Mallory _101 _7`` still
  becomes ``mallory_101_7``. ``<file>`` is the student's own file name (only ``\\0 / \\ : * ? " <
  > |`` replaced by ``_``): anything. The ids are integers (ASCII digits, no leading 0); an
  anonymous id is 5 base58 characters (``lib/anonymity.rb``). Both ends are free text, so no
  end is fixed: the name is read at every ``_[LATE_]<id>_<id>_`` whose front could be a
  lastfirst, and when two readings name two users the upload is refused. Key: the user id
  (``anon_<id>``).
- Moodle, "Download all submissions" (moodle/moodle ``mod/assign/classes/downloader.php``,
  ``get_student_prefix`` and ``load_submissionplugin_filelist``; ``clean_filename`` removes
  characters, it adds none): ``<Full Name>_<participant id>_assignsubmission_<plugin>/<file>``
  (a folder per student, the default since Moodle 3.1; ``..._file_/`` before 4.1) or, flat,
  ``<Full Name>_<participant id>_assignsubmission_<plugin>_<file>``. Moodle turns every ``_``
  of the full name into a space, so the name ends at the first ``_``: the front is fixed. The
  participant id is Moodle's id of the user in that assignment (also under blind marking, where
  the name is "Participant"). Key: the participant id.
- Blackboard Learn, "Assignment File Download" (closed source; the name as instructors and
  tools describe it, e.g. github.com/terr-steak/bb-file-cleanup):
  ``<assignment>_<username>_attempt_<YYYY-MM-DD-HH-MM-SS>[_<file>]``, and a ``.txt`` per
  attempt. The assignment title is the instructor's text; a username holds no space, no control
  character and none of ``& # + < > % = / \\``, but may hold ``_ - . @``
  (help.blackboard.com, Learn Administrator, "Create Users", Username). The first
  ``_attempt_<time>`` is Blackboard's (the student's file name comes after it); where the title
  ends and the username begins is read from the whole download: every name of one download has
  the same title, so the title is the longest ``_``-prefix that all names beginning with the
  same word share. Key: the username; the attempt's time orders attempts of one account.
- Anything else is name first, without an id: the student is the name before the first ``_``
  (``dana_lab.ipynb`` is dana's). Two students called dana collide there; the collision is
  never resolved silently (``submissions.resolve``).

``owners`` reads a folder's names together: a download comes from one LMS (and one Canvas
assignment is anonymous or not), so a name that several layouts could have written is read in
the layouts that the folder's unambiguous names use. An upload whose readings still name two
students is refused (``Owner.problem``): it is graded for nobody, and the message says what
to do. An attacker controls only text inside their own name, and every name of their LMS also
reads as its true owner, so they can get their own upload refused, never graded as someone
else's.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, replace
from pathlib import PurePath

ID = r"[1-9][0-9]*"                                          # an LMS's integer id, ASCII only
CANVAS = re.compile(rf"(?=_(?:(LATE)_)?({ID})_({ID})_.)", re.S)    # every place, overlapping
CANVAS_ANON = re.compile(rf"(?:LATE_)?anon_([A-Za-z0-9]+)_({ID})_.+", re.S)
# What a Canvas lastfirst cannot hold: ASCII other than [a-z0-9_] (sanitize_file_name keeps
# word characters only, after downcase). Non-ASCII characters count as possible.
NOT_LASTFIRST = re.compile(r"[\x00-\x2f\x3a-\x5e\x60\x7b-\x7f]")
MOODLE = re.compile(r"([^_]*)_([0-9]+)_assignsubmission_([a-z]+)(?:_.*)?", re.S)
BLACKBOARD = re.compile(r"_attempt_([0-9]{4}(?:-[0-9]{2}){5})(?=[_.]|$)")   # YYYY-MM-DD-HH-MM-SS
NOT_USERNAME = re.compile(r"[\s\x00-\x1f\x7f&#+<>%=/\\]")   # help.blackboard.com, Create Users


@dataclass(frozen=True)
class Owner:
    key: str          # the student in the grade sheet and the gradebook
    name: str = ""    # what the LMS calls them, for messages ('' when the key is the name)
    lms: str = ""     # "moodle", "blackboard", "canvas", or "" (name first, no id)
    stamp: str = ""   # Blackboard's attempt time YYYY-MM-DD-HH-MM-SS, '' when none
    renamed: str = "" # the name the upload gave, when it was not safe as a key (``safe_key``)
    problem: str = "" # why the upload is graded for nobody ('' when it has an owner)
    account: str = "" # Blackboard's <assignment>_<username>: only its attempts compete by time

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
    """The owner of one file (or folder, ``folder=True``) called ``name``, read alone (see
    ``owners``: a name some other layout could also have written is refused alone)."""
    return owners(folders=[name])[name] if folder else owners([name])[name]


def owners(files=(), folders=()) -> dict:
    """{name: Owner} of the files and folders of one folder of an LMS export, read together
    (module docstring); every key is safe wherever it is shown (``safe_key``: the name the
    upload gave is kept in ``renamed`` and grade's summary lists it). Of the folders, only
    Moodle's are read for an id (the other LMSs export files); any other folder is nbgrader's
    ``<student>/``, the whole name."""
    files, folders = list(files), list(folders)
    found = {n: _readings(n) for n in files}
    found.update({n: {"moodle": r} for n in folders if (r := _moodle(n))})
    alone = {layout for r in found.values() if len(r) == 1 for layout in r}
    kept = {n: {k: v for k, v in r.items() if k in alone} or r for n, r in found.items()}
    accounts = _blackboard_accounts([r["blackboard"][0] for r in kept.values()
                                     if "blackboard" in r])
    out, only_folders = {}, set(folders) - set(files)
    for n in [*files, *folders]:
        readings = [o for layout, rs in kept.get(n, {}).items()
                    for o in (rs if layout != "blackboard" else [accounts[rs[0]]])]
        out[n] = _safe(_decide(n, readings, n in only_folders))
    return out


def _safe(found: Owner) -> Owner:
    key = safe_key(found.key)
    if found.problem or key == found.key:
        return replace(found, key=key)
    return replace(found, key=key, renamed=found.key)


def _decide(name: str, readings: list, folder: bool) -> Owner:
    """The one owner all readings agree on; no reading: the name itself (name first, or the
    nbgrader folder); readings that disagree: refused, saying what to do."""
    if not readings:
        if folder:
            return Owner(name)
        stem = PurePath(name).stem
        return Owner(stem.split("_", 1)[0] or stem)
    whose = list(dict.fromkeys(o.describe if isinstance(o, _Refusal) else _whose(o)
                               for o in readings))
    if len(whose) == 1 and not isinstance(readings[0], _Refusal):
        return readings[0]
    more = f" and {len(whose) - 4} more" if len(whose) > 4 else ""
    return Owner(name, lms="/".join(dict.fromkeys(o.lms for o in readings)), problem=(
        f"ambiguous name: it reads as {' or as '.join(whose[:4])}{more}; it was graded for "
        "nobody. Find whose upload it is in the LMS, rename the file so that it names that "
        "student only (the LMS's own form, e.g. <lastfirst>_<user id>_<file id>_<file> for "
        "Canvas), and run grade again; or grade it by hand"))


def _whose(o: Owner) -> str:
    return {"canvas": f"Canvas user {o.key}'s", "moodle": f"Moodle participant {o.key}'s",
            "blackboard": f"Blackboard user {o.key}'s"}.get(o.lms, f"{o.key}'s")


@dataclass(frozen=True)
class _Refusal:
    """A Blackboard name whose title and username cannot be told apart."""
    lms: str
    describe: str


# --- the layouts -------------------------------------------------------------------------

def _readings(name: str) -> dict:
    """{layout: [readings]} of one file name: every way each LMS could have written it."""
    found = {"moodle": _moodle(name), "blackboard": _blackboard(name),
             "canvas-anonymous": _canvas_anonymous(name), "canvas": _canvas(name)}
    return {k: v for k, v in found.items() if v}


def _moodle(name: str) -> list:
    """Moodle's reading: the full name ends at the first '_' (Moodle writes none in it)."""
    m = MOODLE.fullmatch(name)
    return [Owner(m[2], m[1], "moodle")] if m else []


def _canvas_anonymous(name: str) -> list:
    m = CANVAS_ANON.fullmatch(name)
    return [Owner(f"anon_{m[1]}", "", "canvas")] if m else []


def _canvas(name: str) -> list:
    """The readings ``<lastfirst>[_LATE]_<user id>_<file id>_<file>`` whose front can be a
    lastfirst (module docstring), one per user id (the first place it is read at), however
    many places the free text adds; the lastfirst kept for messages is cut at 100 characters."""
    bad = NOT_LASTFIRST.search(name)
    end = bad.start() if bad else len(name)
    found: dict = {}
    for m in CANVAS.finditer(name):
        if m.start() > end:
            break
        if m[2] not in found:
            found[m[2]] = Owner(m[2], name[:min(m.start(), 100)], "canvas")
    return list(found.values())


def _blackboard(name: str) -> list:
    """(the text before the first ``_attempt_<time>``, the time): the account's part, read by
    ``_blackboard_accounts``; [] when no split leaves a possible username."""
    m = BLACKBOARD.search(name)
    if not m or not _splits(name[:m.start()]):
        return []
    return [(name[:m.start()], m[1])]


def _splits(prefix: str) -> list:
    """Where ``<assignment>_<username>`` can be split: each '_' after which a username
    could stand (nothing after it that a username cannot hold), left to right."""
    bad = [m.start() for m in NOT_USERNAME.finditer(prefix)]
    last = bad[-1] if bad else -1
    return [i for i, ch in enumerate(prefix) if ch == "_" and 0 < i < len(prefix) - 1
            and i > last]


def _blackboard_accounts(readings: list) -> dict:
    """{(prefix, time): Owner}: the title of one download is the same in all its names, so the
    names that begin with the same word are split after the longest '_'-prefix they all share
    and all can be split at (a download of one account alone: its last '_'). Names of one
    word that share no such prefix are refused."""
    groups: dict = {}
    for prefix, stamp in readings:
        groups.setdefault(prefix.split("_", 1)[0], set()).add(prefix)
    cut = {}
    for prefixes in groups.values():
        common = _common_splits(sorted(prefixes))
        for p in prefixes:
            cut[p] = common[-1] if common else None
    out = {}
    for prefix, stamp in readings:
        i = cut[prefix]
        if i is None:
            users = [prefix[j + 1:j + 101] for j in _splits(prefix)[:5]]
            out[prefix, stamp] = _Refusal("blackboard", " or as ".join(
                f"Blackboard user {u}'s" for u in users[:4]) + (
                " (the assignment title and the username may both hold '_'; put each "
                "Blackboard assignment's download in a folder of its own)"))
        else:
            out[prefix, stamp] = Owner(prefix[i + 1:], "", "blackboard",
                                       stamp, account=prefix)
    return out


def _common_splits(prefixes: list) -> list:
    """The split places (``_splits``) shared by every prefix: inside their common start."""
    first, last = prefixes[0], prefixes[-1]          # sorted: their common start is everyone's
    n = 0
    while n < min(len(first), len(last)) and first[n] == last[n]:
        n += 1
    shared = set(_splits(first))
    for p in prefixes[1:]:
        shared &= set(_splits(p))
    return sorted(i for i in shared if i < n or len(prefixes) == 1)
