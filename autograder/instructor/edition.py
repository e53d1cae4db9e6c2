"""``python -m autograder student-edition OUT``: the students' copy of the course, built from this
(the instructor's) repository.

What it writes to ``OUT`` (a new or empty folder):

- ``lectures/`` (the notebooks and their figures), ``exercises/`` and ``lab/`` (the released
  student versions, checked current first, as ``release --check`` does);
- ``lreact/``: the package the notebooks import; every module that holds a reference
  implementation (a function a graded task asks students to write, ``@reference_implementation``)
  or a near copy of a graded answer (``@near_copy_of``, ``lreact/reference.py``) is compiled for
  this Python and shipped without its source (``lreact/<module>.pyc``), so the lecture's views
  and the engines that need that code work and the code does not give the task away (the README
  of the edition says so, and why);
- the set-up: ``README.md``, ``Makefile``, ``tests/`` (the edition's own "does it run here"
  tests) from ``student_edition/``; ``requirements.txt``, ``environment.yml`` and ``binder/``
  without the grader's own dependencies; ``pyproject.toml``; ``jupyter-config/student/``.

Nothing else: no ``solutions/``, no ``autograder/``, no catalogues, no instructor tests.  Before
it returns, the edition is searched for every hidden-test line and string, every solution line
and the body of every reference implementation and model answer (``proofs/edition_leaks.py``):
an edition that holds one is deleted and the command fails, naming it.  Lecture connection:
none (``autograder/README.md``, "Two editions").
"""
from __future__ import annotations

import py_compile
import re
import shutil
import sys
from pathlib import Path

from .. import paths
from . import release

TEMPLATES = Path(__file__).resolve().parent / "student_edition"
GRADER_ONLY = ("distributed", "cryptography", "latex2mathml")   # what only the grader uses
COPIED = ("lectures", "exercises", "lab", "jupyter-config/student", "binder", "pyproject.toml")


class EditionError(RuntimeError):
    """The edition could not be built, or would give something away (the message says what)."""


def build(out: Path, root: Path = paths.ROOT) -> list[str]:
    """Write the student edition to ``out``; the relative paths written, sorted."""
    from ..proofs.edition_leaks import leaks
    root, out = Path(root), Path(out)
    if out.exists() and any(out.iterdir()):
        raise EditionError(f"{out} is not empty: give a new or empty folder")
    if sys.version_info[:2] != (3, 11):
        raise EditionError("build the student edition with Python 3.11: the compiled part of "
                           f"lreact is for the students' Python 3.11, this is {sys.version.split()[0]}")
    said = []
    if release.release(check=True, root=root, out=said.append) != 0:
        raise EditionError("the student versions are not current: run `python -m autograder "
                           "release` first (" + "; ".join(s for s in said if "up to date" not in s)
                           + ")")
    out.mkdir(parents=True, exist_ok=True)
    try:
        for name in COPIED:
            src = root / name
            if src.is_dir():
                shutil.copytree(src, out / name, ignore=shutil.ignore_patterns(
                    "__pycache__", ".ipynb_checkpoints"))
            elif src.is_file():
                (out / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(src, out / name)
        _package(root / "lreact", out / "lreact")
        shutil.copytree(TEMPLATES, out, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("__pycache__"))
        _requirements(root, out)
        found = leaks(out, root)
        if found:
            raise EditionError("the edition would give answers away:\n  "
                               + "\n  ".join(map(str, found[:20])))
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)
        raise
    return sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())


def _package(src: Path, dest: Path) -> None:
    """``lreact`` with every module that holds a reference implementation compiled, source-less."""
    for f in sorted(src.rglob("*")):
        if f.is_dir() or "__pycache__" in f.parts:
            continue
        target = dest / f.relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        if f.suffix == ".py" and ships_compiled(f):
            py_compile.compile(str(f), cfile=str(target.with_suffix(".pyc")), doraise=True,
                               dfile=f"lreact/{f.relative_to(src).as_posix()}",
                               invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
        else:
            shutil.copy(f, target)


COMPILED_MARKS = ("reference_implementation", "near_copy_of")


def ships_compiled(path: Path) -> bool:
    """Whether the module at ``path`` defines a function decorated ``@reference_implementation``
    or ``@near_copy_of(...)``: the edition ships it compiled, without source."""
    import ast

    from lreact.reference import marked
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(marked(n, *COMPILED_MARKS) for n in ast.walk(tree))


def _requirements(root: Path, out: Path) -> None:
    """The students' requirements and conda environments: the instructor's, less the grader's."""
    def keep(line: str) -> bool:
        name = re.split(r"[=<>\[ ]", line.strip().lstrip("- "), maxsplit=1)[0].lower()
        return name not in GRADER_ONLY
    text = (root / "requirements.txt").read_text(encoding="utf-8")
    (out / "requirements.txt").write_text(
        "\n".join(ln for ln in text.splitlines() if not ln.strip() or ln.startswith("#")
                  or keep(ln)) + "\n", encoding="utf-8")
    for env in ("environment.yml", "binder/environment.yml"):
        src = root / env
        if src.exists():
            lines = src.read_text(encoding="utf-8").splitlines()
            kept = [ln for ln in lines if not ln.strip().startswith("- ") or keep(ln)]
            kept = [ln for ln in kept if "grade --cluster" not in ln and "cluster-certs" not in ln]
            (out / env).parent.mkdir(parents=True, exist_ok=True)
            (out / env).write_text("\n".join(kept) + "\n", encoding="utf-8")


def command(out: Path, *, root: Path = paths.ROOT) -> int:
    try:
        written = build(out, root)
    except EditionError as e:
        print(f"student-edition: {e}", file=sys.stderr)
        return 1
    compiled = [p for p in written if p.endswith(".pyc")]
    print(f"student-edition: wrote {len(written)} files to {out} ({len(compiled)} lreact "
          f"module(s) compiled, no source: {', '.join(compiled)}); nothing of solutions/, "
          "the hidden tests, the mark schemes or the catalogues is in it. Publish that folder "
          "(a repository of its own, or a zip); keep this one private.")
    return 0
