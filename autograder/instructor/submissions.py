"""Finding submissions: nbgrader folders, LMS exports (Canvas, Moodle, Blackboard), zips.

Accepted inside SUBMISSIONS (autograder/README.md, "From a folder of zips to grades and
feedback"):
- ``<student>/<assignment>/<notebook>.ipynb`` (nbgrader's ``submitted/`` layout);
- a folder of one student: Moodle's ``<Full Name>_<id>_assignsubmission_file/``, or any other
  ``<student>/`` folder without assignment folders, holding notebooks or zips;
- loose files as an LMS exports them (``lms.owner`` reads whose they are): notebooks, or zips
  holding notebooks anywhere inside.
A notebook belongs to the assignment whose id is in its path (with a single assignment, any
notebook does). Nothing is dropped silently: an upload that cannot be graded (a bad zip, a zip
without a notebook of the assignment, a file that is neither a notebook nor a zip) is a
submission of its student with ``notebook=None`` and the ``problem``; its assignment is the one
named in the file name, the only one there is, or '' when that cannot be told. An upload whose
name reads as two students' (``lms.owners``) is a submission of nobody: its key is its own file
name, ``problem`` says "ambiguous name" and what to do.

Two uploads of one student and assignment are never resolved silently (``resolve``): an
upload holding no notebook at all (a PDF, a Blackboard receipt) is set aside next to one that
does; of several notebooks, identical copies are graded once, attempts of one Blackboard account
(the same title and username) by the newest attempt time; otherwise none is graded and the
submission says why. Every such case is listed (``duplicates``, ``set_aside``) for grade's
summary and its CSV.
Zip files are extracted safely: no absolute paths, no ``..``, no links, size caps.
"""
from __future__ import annotations

import hashlib
import shutil
import stat
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from . import lms

MAX_MEMBER_BYTES = 20 * 1024**2
MAX_ZIP_BYTES = 100 * 1024**2
MAX_MEMBERS = 500


@dataclass
class Submission:
    student: str
    assignment: str
    notebook: Path | None      # None when there is nothing gradable (see ``problem``)
    origin: str                # where it came from, for messages
    problem: str | None = None
    name: str = ""             # what the LMS calls the student, for messages
    stamp: str = ""            # Blackboard's attempt time, '' when the name carries none
    stray: bool = False        # holds no notebook at all: never competes with one that does
    duplicates: list = field(default_factory=list)   # every upload of this student/assignment
    rule: str = ""             # how one of several was chosen: "identical", "newest", ""
    set_aside: list = field(default_factory=list)    # uploads not graded, holding no notebook
    renamed: str = ""          # the student name the upload gave, when unsafe as a key
    account: str = ""          # Blackboard's <assignment>_<username> (lms.Owner.account)


def assignments(root: Path) -> dict:
    """{assignment id: source notebook} for every ``solutions/<id>/<id>.ipynb`` under root."""
    base = Path(root) / "solutions"
    found = {}
    if base.is_dir():
        for d in sorted(base.iterdir()):
            nb = d / f"{d.name}.ipynb"
            if nb.is_file():
                found[d.name] = nb
    return found


def _which(name: str, known) -> str | None:
    hits = [a for a in known if a in name]
    return max(hits, key=len) if hits else None


def _guess(name: str, known) -> str:
    """The assignment a file belongs to: named in it, the only one, or '' (cannot tell)."""
    return _which(name, known) or (known[0] if len(known) == 1 else "")


def _ignored(parts) -> bool:
    return any(p.startswith(".") or p == "__MACOSX" for p in parts)


def extract_zip(zpath: Path, dest: Path) -> list[Path]:
    """Extract the notebooks of ``zpath`` under ``dest``; refuse anything unsafe (ValueError)."""
    out = []
    with zipfile.ZipFile(zpath) as zf:
        infos = zf.infolist()
        if len(infos) > MAX_MEMBERS:
            raise ValueError(f"zip has {len(infos)} entries (limit {MAX_MEMBERS})")
        total = 0
        for info in infos:
            name = PurePosixPath(info.filename.replace("\\", "/"))
            if name.is_absolute() or ".." in name.parts or ":" in info.filename:
                raise ValueError(f"unsafe path in zip: {info.filename!r}")
            if info.is_dir() or not name.name.endswith(".ipynb") or _ignored(name.parts):
                continue
            if stat.S_ISLNK(info.external_attr >> 16):
                raise ValueError(f"symbolic link in zip: {info.filename!r}")
            if info.file_size > MAX_MEMBER_BYTES:
                raise ValueError(f"{info.filename!r} is {info.file_size} bytes "
                                 f"(limit {MAX_MEMBER_BYTES})")
            total += info.file_size
            if total > MAX_ZIP_BYTES:
                raise ValueError(f"zip expands to more than {MAX_ZIP_BYTES} bytes")
            target = dest.joinpath(*name.parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, open(target, "wb") as dst:
                left = MAX_MEMBER_BYTES + 1
                while chunk := src.read(1 << 20):
                    left -= len(chunk)
                    if left < 0:
                        raise ValueError(f"{info.filename!r} is larger than it claims")
                    dst.write(chunk)
            out.append(target)
    return out


def _unzip(zpath: Path, staging: Path) -> Path:
    """The folder holding ``zpath``'s notebooks, extracted once per distinct content."""
    dest = Path(staging) / hashlib.sha256(zpath.read_bytes()).hexdigest()[:32]
    if not dest.exists():
        tmp = dest.with_name(dest.name + ".part")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        extract_zip(zpath, tmp)
        tmp.rename(dest)
    return dest


class _Finder:
    """Every upload of ``folder`` as Submissions, before ``resolve``."""

    def __init__(self, folder: Path, known, staging: Path):
        self.folder, self.known, self.staging = Path(folder), list(known), Path(staging)
        self.found: list[Submission] = []

    def add(self, who: lms.Owner, aid: str, nb, origin: str, problem=None, stray=False):
        self.found.append(Submission(who.key, aid, nb, origin, problem, who.name, who.stamp,
                                     stray, renamed=who.renamed, account=who.account))

    def run(self) -> list[Submission]:
        entries = [e for e in sorted(self.folder.iterdir()) if not _ignored([e.name])]
        # one folder is one LMS export: its names are read together (lms.owners)
        whose = lms.owners([e.name for e in entries if not e.is_dir()],
                           [e.name for e in entries if e.is_dir()])
        for entry in entries:
            who = whose[entry.name]
            if who.problem:          # whose it is cannot be told: graded for nobody
                self.add(who, _guess(entry.name, self.known), None, entry.name, who.problem)
            elif entry.is_dir():
                self.directory(entry, who)
            else:
                self.file(entry, who, entry.name)
        return self.found

    def directory(self, entry: Path, who: lms.Owner):
        """A folder: Moodle's per student (``who`` has its id), or nbgrader's ``<student>/``."""
        adirs = [] if who.lms else sorted(p for p in entry.iterdir()
                                          if p.is_dir() and p.name in self.known)
        if not adirs:           # Moodle's folder per student, or a folder of one student
            notebooks = []
            for f in sorted(p for p in entry.rglob("*") if p.is_file()):
                rel = f.relative_to(entry)
                if _ignored(rel.parts):
                    continue
                if f.suffix == ".ipynb":
                    notebooks.append((f, f"{entry.name}/{rel.as_posix()}", rel.as_posix()))
                elif f.suffix == ".zip":
                    notebooks += self.unzipped(f, who, f"{entry.name}/{rel.as_posix()}") or []
            self.container(who, notebooks, entry.name)
            return
        for adir in adirs:      # nbgrader: <student>/<assignment>/<notebook>.ipynb
            nbs = [(p, f"{entry.name}/{adir.name}/{p.name}", p.name)
                   for p in sorted(adir.glob("*.ipynb")) if not p.name.startswith(".")]
            if nbs:
                self.pick(who, adir.name, nbs)
            else:
                self.add(who, adir.name, None, f"{entry.name}/{adir.name}",
                         "no notebook in the assignment folder", stray=True)

    def file(self, entry: Path, who: lms.Owner, origin: str):
        if entry.suffix == ".zip":
            notebooks = self.unzipped(entry, who, origin)
            if notebooks is not None:
                self.container(who, notebooks, origin)
        elif entry.suffix == ".ipynb":
            aid = _guess(entry.name, self.known)
            if aid:
                self.add(who, aid, entry, origin)
            else:
                self.add(who, "", None, origin, "no notebook: the file name names no "
                         f"assignment ({', '.join(self.known)})")
        elif entry.is_file():
            self.add(who, _guess(entry.name, self.known), None, origin,
                     "not a notebook: upload a .ipynb file or a .zip", stray=True)

    def unzipped(self, zpath: Path, who: lms.Owner, origin: str) -> list | None:
        """[(notebook, origin, path in the zip)] of a zip; a bad zip is added as a problem
        and gives None."""
        try:
            dest = _unzip(zpath, self.staging)
        except (zipfile.BadZipFile, ValueError, OSError) as e:
            self.add(who, _guess(zpath.name, self.known), None, origin, f"bad zip file: {e}")
            return None
        rels = [nb.relative_to(dest).as_posix() for nb in sorted(dest.rglob("*.ipynb"))]
        return [(dest / rel, f"{origin}:{rel}", rel) for rel in rels]

    def container(self, who: lms.Owner, notebooks: list, name: str):
        """The notebooks of one upload (a zip, a student's folder), by assignment."""
        by: dict = {}
        for nb, origin, rel in notebooks:
            aid = _which(rel, self.known)
            if aid:
                by.setdefault(aid, []).append((nb, origin, rel))
        for aid, nbs in by.items():
            self.pick(who, aid, nbs)
        if by:
            return
        if notebooks and len(notebooks) == 1 and _guess(name, self.known):
            self.pick(who, _guess(name, self.known), notebooks)
        elif notebooks:
            self.add(who, _guess(name, self.known), None, name, "no notebook named after an "
                     f"assignment in it ({', '.join(self.known)})")
        else:
            self.add(who, _guess(name, self.known), None, name, "no notebook in it",
                     stray=True)

    def pick(self, who: lms.Owner, aid: str, nbs: list):
        """Within ONE upload, nbgrader's rule: the notebook named ``<assignment>.ipynb``;
        the others of that upload are set aside (listed).  Several candidates compete."""
        exact = [x for x in nbs if x[0].name == f"{aid}.ipynb"]
        chosen = exact if len(exact) == 1 else nbs
        for nb, origin, _ in chosen:
            self.add(who, aid, nb, origin)
            if len(chosen) == 1:
                self.found[-1].set_aside = [o for n, o, _ in nbs if n != nb]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def resolve(uploads: list[Submission]) -> list[Submission]:
    """One submission per (student, assignment), by the rule in the module docstring."""
    groups: dict = {}
    for u in uploads:
        groups.setdefault((u.student, u.assignment), []).append(u)
    out = []
    for (student, aid), group in sorted(groups.items()):
        real = [u for u in group if not u.stray] or group[:1]
        aside = [u.origin for u in group if not any(u is r for r in real)]
        if len(real) == 1:
            chosen = real[0]
            chosen.set_aside = chosen.set_aside + aside
            out.append(chosen)
            continue
        origins = [u.origin for u in real]
        stamps = [u.stamp for u in real]
        one_account = len({u.account for u in real}) == 1    # attempts of one Blackboard user
        if all(u.notebook for u in real) and len({_digest(u.notebook) for u in real}) == 1:
            chosen, rule = real[0], "identical"
        elif one_account and all(stamps) and stamps.count(max(stamps)) == 1:
            chosen, rule = real[stamps.index(max(stamps))], "newest"
        else:
            chosen = Submission(student, aid, None, ", ".join(origins),
                                f"duplicate upload: {len(real)} uploads of this student and "
                                f"assignment ({'; '.join(origins)}), none was graded: keep "
                                "the right one and run grade again", real[0].name,
                                renamed=real[0].renamed)
            rule = ""
        chosen.duplicates, chosen.rule = origins, rule
        chosen.set_aside = chosen.set_aside + aside
        out.append(chosen)
    return out


def discover(folder: Path, known, staging: Path) -> list[Submission]:
    """Every (student, assignment) submission found in ``folder``, sorted."""
    return resolve(_Finder(folder, known, staging).run())
