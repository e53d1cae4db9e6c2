"""Finding submissions: nbgrader folders, LMS zip exports, loose notebooks.

Accepted layouts inside SUBMISSIONS:
- ``<student>/<assignment>/<notebook>.ipynb`` (nbgrader's ``submitted/`` layout);
- ``<student>.zip`` or ``<student>_<anything>.zip`` holding the notebook(s) anywhere inside;
- ``<student>_<anything>.ipynb`` directly in the folder (some LMS export files loose).
A notebook belongs to the assignment whose id is in its file or folder name (with a single
assignment, any notebook does). Nothing is dropped silently: a broken or unusable upload (a bad
zip, a zip without a notebook of the assignment, a file that is neither a notebook nor a zip)
is ONE submission of its student, with ``notebook=None`` and the ``problem``; its assignment is
the one named in the file name, the only one there is, or '' when that cannot be told.
Zip files are extracted safely: no absolute paths, no ``..``, no links, size caps.
"""
from __future__ import annotations

import hashlib
import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

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


def _student_of(stem: str) -> str:
    return stem.split("_", 1)[0] or stem


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
                raise ValueError(f"{info.filename} is {info.file_size} bytes "
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
                        raise ValueError(f"{info.filename} is larger than it claims")
                    dst.write(chunk)
            out.append(target)
    return out


def discover(folder: Path, known, staging: Path) -> list[Submission]:
    """Every (student, assignment) submission found in ``folder``, sorted."""
    folder, known = Path(folder), list(known)
    subs: dict = {}

    def add(sub: Submission):
        key = (sub.student, sub.assignment)
        if key not in subs or (subs[key].notebook is None and sub.notebook is not None):
            subs[key] = sub

    for entry in sorted(folder.iterdir()):
        if entry.name.startswith("."):
            continue
        if entry.is_dir():
            for adir in sorted(p for p in entry.iterdir() if p.is_dir()):
                if adir.name not in known:
                    continue
                nbs = sorted(p for p in adir.glob("*.ipynb") if not p.name.startswith("."))
                preferred = [p for p in nbs if p.name == f"{adir.name}.ipynb"]
                nb = (preferred or nbs or [None])[0]
                add(Submission(entry.name, adir.name, nb, str(adir.relative_to(folder)),
                               None if nb else "no notebook in the assignment folder"))
        elif entry.suffix == ".zip":
            student = _student_of(entry.stem)
            digest = hashlib.sha256(entry.read_bytes()).hexdigest()[:16]
            dest = Path(staging) / f"{student}-{digest}"
            try:
                if not dest.exists():
                    tmp = dest.with_name(dest.name + ".part")
                    import shutil
                    shutil.rmtree(tmp, ignore_errors=True)
                    tmp.mkdir(parents=True)
                    extract_zip(entry, tmp)
                    tmp.rename(dest)
                nbs = sorted(p for p in dest.rglob("*.ipynb"))
            except (zipfile.BadZipFile, ValueError, OSError) as e:
                add(Submission(student, _guess(entry.name, known), None, entry.name,
                               f"bad zip file: {e}"))
                continue
            matched = False
            for nb in nbs:
                aid = _which(str(nb.relative_to(dest)), known)
                if aid:
                    matched = True
                    add(Submission(student, aid, nb, f"{entry.name}:{nb.relative_to(dest)}"))
            if not matched:
                if len(nbs) == 1 and len(known) == 1:
                    add(Submission(student, known[0], nbs[0], entry.name))
                else:
                    add(Submission(student, _guess(entry.name, known), None, entry.name,
                                   "no notebook named after an assignment in the zip "
                                   f"({', '.join(known)})"))
        elif entry.suffix == ".ipynb":
            aid = _guess(entry.name, known)
            if aid:
                add(Submission(_student_of(entry.stem), aid, entry, entry.name))
            else:
                add(Submission(_student_of(entry.stem), "", None, entry.name,
                               "no notebook: the file name names no assignment "
                               f"({', '.join(known)})"))
        elif entry.is_file():
            add(Submission(_student_of(entry.stem), _guess(entry.name, known), None,
                           entry.name, "not a notebook: upload a .ipynb file or a .zip"))
    return [subs[k] for k in sorted(subs)]
