"""``python -m autograder release [--check]``: student versions generated from ``solutions/``.

nbgrader's ``generate_assignment`` runs in a throwaway course folder (so nothing is written
next to the sources: no gradebook, no log), then the released notebook is normalised
(no outputs, no execution counts, nbformat's JSON: indent 1, sorted keys) and copied to the
flat student path: ``exercises/lecture-ReAct-exercises.ipynb``, ``lab/lecture-ReAct-lab.ipynb``.
Running it twice changes nothing; ``--check`` writes nothing and exits 1 naming every
committed student version that differs from what it would generate.

Stubs: nbgrader's ClearSolutions writes the same ``raise NotImplementedError()`` into every answer
cell.  ``stub_source`` (applied to every released answer cell, and used by the grading engine for
a missing answer) makes that line say what to write: ``NotImplementedError("softmax: write this
function (see the task above)")``, or for an exercise the names of the variables to set.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat

from .. import paths
from ..cells import stub_source

CONFIG = Path(__file__).resolve().parent.parent / "nbgrader_config.py"


def restub(released, source):
    """``released`` (a notebook from generate_assignment) with every answer cell replaced by
    ``stub_source`` of the matching source cell (matched by grade_id)."""
    sources = {c.metadata.get("nbgrader", {}).get("grade_id"): c for c in source.cells
               if c.metadata.get("nbgrader", {}).get("solution")}
    for cell in released.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution") and meta.get("grade_id") in sources:
            cell.source = stub_source(sources[meta["grade_id"]])
    return released


def normalise(nb) -> str:
    """The bytes we commit: no outputs or execution counts, nbformat's own layout."""
    nb = nbformat.from_dict(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        cell.get("metadata", {}).pop("execution", None)
    nbformat.validate(nb)
    text = nbformat.writes(nb)
    return text if text.endswith("\n") else text + "\n"


def generate(source: Path) -> str:
    """The student version of one source notebook ``<dir>/<id>/<id>.ipynb``, as text."""
    source = Path(source)
    assignment_id = source.parent.name
    with tempfile.TemporaryDirectory(prefix="lreact-release-") as tmp:
        course = Path(tmp)
        shutil.copytree(source.parent, course / "solutions" / assignment_id,
                        ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
        shutil.copy(CONFIG, course / "nbgrader_config.py")
        cmd = [sys.executable, "-m", "nbgrader", "generate_assignment", assignment_id,
               "--force", "--no-db", f"--CourseDirectory.root={course}", "--log-level=ERROR"]
        done = subprocess.run(cmd, cwd=course, capture_output=True, text=True)
        released = course / "release" / assignment_id / source.name
        if done.returncode != 0 or not released.exists():
            raise RuntimeError(f"nbgrader generate_assignment failed for {source}:\n"
                               f"{done.stdout[-2000:]}{done.stderr[-2000:]}")
        return normalise(restub(nbformat.read(released, as_version=4),
                                nbformat.read(source, as_version=4)))


def targets(root: Path = paths.ROOT):
    """(source, student path) for every assignment whose source exists, and missing ids."""
    found, missing = [], []
    for aid in paths.ASSIGNMENTS:
        src = paths.source_path(aid, root)
        (found if src.exists() else missing).append(
            (src, paths.student_path(aid, root)) if src.exists() else aid)
    return found, missing


def release(check: bool = False, root: Path = paths.ROOT, out=print) -> int:
    """Write (or with ``check`` compare) every student version; the exit status."""
    found, missing = targets(root)
    for aid in missing:
        out(f"release: SKIPPED {aid}: no source notebook {paths.source_path(aid, root)}")
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max_workers=2) as pool:
        texts = list(pool.map(lambda t: generate(t[0]), found))
    status = 0
    for (src, dest), text in zip(found, texts):
        rel = dest.relative_to(root) if dest.is_relative_to(root) else dest
        current = dest.read_text(encoding="utf-8") if dest.exists() else None
        if check:
            if current != text:
                status = 1
                why = "is missing" if current is None else "differs from what release generates"
                out(f"release --check: {rel} {why}; run `python -m autograder release`")
            else:
                out(f"release --check: {rel} is up to date")
        elif current != text:
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(text, encoding="utf-8")
            out(f"release: wrote {rel}")
        else:
            out(f"release: {rel} unchanged")
    if check and missing and _ci():
        out("release --check: missing source notebooks in CI count as a failure")
        status = 1
    return status


def _ci() -> bool:
    import os
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")
