"""The grader's kit: what every sandboxed run gets read-only (built once per content).

    kit/runner.py                  the entry point (``autograder/inside/runner.py``)
    kit/autograder/inside/         ``autograder/inside/`` copied whole: exactly the grader's code
                                   that runs beside student code (nothing secret in it)
    kit/answers-lreact/lreact/     a copy of lreact whose ``@reference_implementation``
                                   functions have no body (``lreact.reference``): the student
                                   process sees it at the real package's path
    kit/fontlist-*.json            a prebuilt matplotlib font list (about 1 s per run saved)
    kit/**/__pycache__/            byte code of both packages, compiled once per kit: the runs
                                   cannot write any (read-only kit, PYTHONDONTWRITEBYTECODE), so
                                   without it every process compiled them again
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

from lreact.reference import strip_references

from .. import paths

INSIDE = Path(__file__).resolve().parent.parent / "inside"   # copied whole into every kit


def lreact_dir() -> Path:
    return Path(importlib.util.find_spec("lreact").origin).resolve().parent


def code_files() -> list[Path]:
    """Every file whose content decides how a run goes (part of the grade cache key)."""
    return [*sorted(INSIDE.rglob("*.py")), *sorted(lreact_dir().rglob("*.py"))]


KIT_FORMAT = b"kit 2: byte code compiled once"   # a kit built another way gets a new folder
# One build at a time in a process: the pool's threads all ask for the kit when a class starts,
# and building it parses the package with ``ast``, whose C state CPython 3.11 shares between
# threads (two parses interleaved raise "SystemError: AST constructor recursion depth mismatch",
# python/cpython#106905), which cost one submission its grade in CI.
_BUILDING = threading.Lock()


def _label(f: Path) -> str:
    """A code file's name within its package (``inside/trusted.py``, ``lreact/views/lens.py``)."""
    for root in (INSIDE.parent, lreact_dir().parent):
        if f.is_relative_to(root):
            return f.relative_to(root).as_posix()
    return f.name


def digest() -> str:
    h = hashlib.sha256(KIT_FORMAT)
    for f in code_files():
        h.update(_label(f).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def answers_lreact(dest: Path) -> None:
    """``dest/lreact``: the package with every reference implementation's body removed."""
    pkg = lreact_dir()
    for f in sorted(pkg.rglob("*")):
        if "__pycache__" in f.parts or f.is_dir():
            continue
        out = dest / "lreact" / f.relative_to(pkg)
        out.parent.mkdir(parents=True, exist_ok=True)
        if f.suffix != ".py":
            shutil.copy(f, out)
            continue
        text = f.read_text(encoding="utf-8")
        if "reference_implementation" in text and f.name != "reference.py":
            text = strip_references(text, f.stem)
        out.write_text(text, encoding="utf-8")


def build(state: paths.State) -> Path:
    """The kit for the current code (built on first use, then reused)."""
    kit = state.kit / digest()
    if (kit / "runner.py").exists():
        return kit
    with _BUILDING:
        return kit if (kit / "runner.py").exists() else _build(state, kit)


def _build(state: paths.State, kit: Path) -> Path:
    tmp = state.kit / f".{kit.name}.{os.getpid()}.{threading.get_ident()}"
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "autograder").mkdir(parents=True)
    shutil.copy(INSIDE / "runner.py", tmp / "runner.py")
    (tmp / "autograder" / "__init__.py").write_text('"""The grader\'s kit (see kit.py)."""\n')
    shutil.copytree(INSIDE, tmp / "autograder" / "inside",
                    ignore=shutil.ignore_patterns("__pycache__"))
    answers_lreact(tmp / "answers-lreact")
    fonts = mpl_font_cache(state)
    if fonts:
        shutil.copy(fonts, tmp / fonts.name)
    compile_byte_code(tmp)
    for p in [tmp, *tmp.rglob("*")]:
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    try:
        tmp.rename(kit)
    except OSError:            # built meanwhile by another thread or process
        shutil.rmtree(tmp, ignore_errors=True)
    return kit


def compile_byte_code(folder: Path) -> None:
    """Byte code for every module under ``folder``, checked against its source's hash when
    imported (not its time stamp), so a copy whose source differs is compiled afresh, never
    run stale.  A module that does not compile is left to fail at import, as it would."""
    import compileall
    import py_compile
    compileall.compile_dir(str(folder), quiet=2, workers=1,
                           invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)


def mpl_font_cache(state: paths.State) -> Path | None:
    d = state.mplcache
    found = sorted(d.glob("fontlist-*.json")) if d.exists() else []
    if found:
        return found[-1]
    try:
        d.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-c", "import matplotlib.font_manager"],
                       env={**os.environ, "MPLCONFIGDIR": str(d)}, timeout=120,
                       capture_output=True)
    except (OSError, subprocess.SubprocessError):
        return None
    found = sorted(d.glob("fontlist-*.json"))
    return found[-1] if found else None
