"""The grading engine: merge a submission into the source notebook, execute it, score it.

    from autograder.engine import grade_notebook, replace_cell
    result = grade_notebook("lecture-ReAct-lab", "submission.ipynb", timeout=60)
    result.scores   # {grade_id: (awarded, possible)} for autograded test cells
    result.manual   # {grade_id: possible} for cells graded by hand
    result.errors   # {grade_id: first line of the failure}
    result.total, result.possible

Merging: the instructor source notebook is the skeleton; ONLY the submission's answer
cells (nbgrader ``solution: true``, matched by ``grade_id`` and cell type) are swapped in.
A missing or renamed answer cell keeps the released stub. Tests therefore always come
from the source, so a student cannot edit them away.

Scoring: a test cell gets its points iff it ran to its end (a per-run random sentinel is
printed after its last line), without error output and without stderr output.
"""
from __future__ import annotations

import copy
import hashlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from . import paths
from .sandbox import SandboxUnavailable  # noqa: F401 - re-exported for callers

ENGINE_VERSION = "1"
RUNNER = Path(__file__).with_name("runner.py")
MAX_OUTPUT = 100_000  # characters a cell may print before the grader truncates it


@dataclass
class GradeResult:
    assignment_id: str
    scores: dict = field(default_factory=dict)   # grade_id -> (awarded, possible)
    manual: dict = field(default_factory=dict)   # grade_id -> possible
    errors: dict = field(default_factory=dict)   # grade_id -> first line of the failure
    failure: str | None = None                   # timeout, kernel died, invalid notebook...
    notes: list = field(default_factory=list)    # e.g. what the sandbox could not protect
    executed: object = None                      # the executed merged notebook (NotebookNode)

    @property
    def total(self) -> float:
        return float(sum(a for a, _ in self.scores.values()))

    @property
    def possible(self) -> float:
        return float(sum(p for _, p in self.scores.values()))

    @property
    def needs_manual_grade(self) -> bool:
        return bool(self.manual)


# --- cells -----------------------------------------------------------------------------

def nbgrader_meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {}) or {}


def grade_id(cell) -> str | None:
    return nbgrader_meta(cell).get("grade_id")


def is_answer(cell) -> bool:
    return bool(nbgrader_meta(cell).get("solution"))


def is_autograded_test(cell) -> bool:
    m = nbgrader_meta(cell)
    return bool(m.get("grade")) and not m.get("solution") and cell.cell_type == "code"


def is_manual(cell) -> bool:
    """Graded by hand: a graded markdown cell, or an nbgrader task cell."""
    m = nbgrader_meta(cell)
    return bool(m.get("grade")) and (cell.cell_type == "markdown" or bool(m.get("task")))


def points(cell) -> float:
    return float(nbgrader_meta(cell).get("points", 0) or 0)


def load(nb_or_path) -> nbformat.NotebookNode:
    """A notebook from a path, a dict or a NotebookNode (always a fresh copy)."""
    if isinstance(nb_or_path, (str, Path)):
        with open(nb_or_path, encoding="utf-8") as f:
            return nbformat.read(f, as_version=4)
    return nbformat.from_dict(copy.deepcopy(dict(nb_or_path)))


def replace_cell(nb, grade_id_: str, new_source: str):
    """A copy of ``nb`` whose cell ``grade_id_`` has ``new_source`` (KeyError if absent)."""
    nb = load(nb)
    for cell in nb.cells:
        if grade_id(cell) == grade_id_:
            cell.source = new_source
            return nb
    raise KeyError(f"no cell with grade_id {grade_id_!r}")


def stub(cell):
    """The released version of one answer cell (nbgrader's ClearSolutions)."""
    from nbgrader.preprocessors import ClearSolutions
    cell = copy.deepcopy(cell)
    ClearSolutions().preprocess_cell(cell, {"language": "python"}, 0)
    return cell


def merge(source, submission):
    """The source notebook with only the submission's answer cells swapped in."""
    merged = load(source)
    answers = {}
    for cell in getattr(submission, "cells", []) or []:
        gid = grade_id(cell) if isinstance(cell, dict) else None
        if gid and is_answer(cell) and gid not in answers:
            answers[gid] = cell
    for i, cell in enumerate(merged.cells):
        if not is_answer(cell):
            continue
        theirs = answers.get(grade_id(cell))
        if theirs is not None and theirs.get("cell_type") == cell.cell_type \
                and isinstance(theirs.get("source"), str):
            cell.source = theirs["source"]
        else:
            cell.source = stub(cell).source
    for cell in merged.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return merged


# --- execution ---------------------------------------------------------------------------

def _scratch_env(scratch: Path) -> dict:
    """The environment of a grading run: everything writable lives in its scratch folder."""
    env = {
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin",
                                 "/bin"]),
        "HOME": str(scratch), "TMPDIR": str(scratch / "tmp"), "LANG": "C.UTF-8",
        "MPLBACKEND": "Agg", "MPLCONFIGDIR": str(scratch / ".mpl"),
        "IPYTHONDIR": str(scratch / ".ipython"), "JUPYTER_RUNTIME_DIR": str(scratch / ".rt"),
        "JUPYTER_DATA_DIR": str(scratch / ".jd"), "JUPYTER_CONFIG_DIR": str(scratch / ".jc"),
        "XDG_CACHE_HOME": str(scratch / ".cache"), "PYTHONDONTWRITEBYTECODE": "1",
        "PYDEVD_DISABLE_FILE_VALIDATION": "1", "JUPYTER_PLATFORM_DIRS": "1",
        "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
        "LREACT_GRADING": "1", "LREACT_SCRATCH": str(scratch),
    }
    if "LREACT_MODEL" in os.environ:
        env["LREACT_MODEL"] = os.environ["LREACT_MODEL"]
    return env


def kit_dir() -> Path:
    """What every grading run gets read-only: runner.py and a prebuilt matplotlib font list."""
    runner = RUNNER.read_bytes()
    kit = paths.STATE_DIR / "kit" / hashlib.sha256(runner).hexdigest()[:12]
    if not (kit / "runner.py").exists():
        kit.mkdir(parents=True, exist_ok=True)
        os.chmod(kit, 0o755)
        fonts = _mpl_font_cache()
        if fonts:
            shutil.copy(fonts, kit / fonts.name)
        tmp = kit / f"runner.py.{os.getpid()}"
        tmp.write_bytes(runner)
        tmp.replace(kit / "runner.py")
    return kit


def _mpl_font_cache() -> Path | None:
    """A prebuilt matplotlib font list, so each kernel does not rebuild it (about 1 s)."""
    d = paths.STATE_DIR / "mplcache"
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


CPU_SECONDS = 1200  # CPU-time backstop per run; the wall-clock limits below act first


class _Warm:
    """A started grading process (sandbox, runner, kernel) waiting for its job on stdin."""

    def __init__(self, sandbox_mode: str):
        from . import sandbox as sb
        self.mode = sandbox_mode
        kit = kit_dir()
        self.rfd, wfd = os.pipe()
        self.run = None
        try:
            self.run = sb.launch(kit, sys.executable, ["--fd", str(wfd)], mode=sandbox_mode,
                                 cpu_seconds=CPU_SECONDS,
                                 scratch_base=paths.STATE_DIR / "scratch")
            self.proc = subprocess.Popen(
                self.run.cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                stderr=_debug_stderr(), pass_fds=(wfd,), env=_scratch_env(self.run.scratch),
                cwd=str(self.run.runner.parent) if self.run.host_scratch else "/",
                start_new_session=True)
        except BaseException:
            os.close(self.rfd)
            if self.run:
                self.run.cleanup()
            raise
        finally:
            os.close(wfd)

    def discard(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()
        os.close(self.rfd)
        self.run.cleanup()


_pool_lock = threading.Lock()
_pool: list = []
_pool_size = 0


def warm_pool(size: int) -> None:
    """Keep ``size`` grading processes started ahead of time (``grade`` uses one per worker)."""
    global _pool_size
    _pool_size = max(0, int(size))


def drain_pool() -> None:
    """Stop every waiting grading process (call when a batch is done)."""
    global _pool_size
    with _pool_lock:
        _pool_size = 0
        waiting = _pool[:]
        _pool.clear()
    for w in waiting:
        w.discard()


def _refill(mode: str) -> None:
    with _pool_lock:
        if sum(1 for w in _pool if w.mode == mode) >= _pool_size:
            return
    try:
        w = _Warm(mode)
    except Exception:  # noqa: BLE001 - the next run simply starts cold
        return
    with _pool_lock:
        if _pool_size:
            _pool.append(w)
            return
    w.discard()


def _take(mode: str) -> _Warm:
    with _pool_lock:
        for w in _pool:
            if w.mode == mode and w.proc.poll() is None:
                _pool.remove(w)
                break
        else:
            w = None
        refill = _pool_size > 0
    if refill:
        threading.Thread(target=_refill, args=(mode,), daemon=True).start()
    return w or _Warm(mode)


def execute(nb, *, timeout: float = 60, test_cells=(), sentinel=None, token=None,
            sandbox: str = "auto", wall_timeout: float | None = None):
    """Run ``nb`` in a fresh kernel; return (executed nb, status dict, notes).

    ``sandbox``: "auto" (bubblewrap when usable, else limits only, said plainly),
    "require" (error without bubblewrap), or "off".
    """
    code_cells = sum(1 for c in nb.cells if c.cell_type == "code")
    if wall_timeout is None:
        wall_timeout = 60 + (timeout + 10) * min(code_cells, 6) + 3 * code_cells
    w = _take(sandbox)
    job = json.dumps({"notebook": nb, "timeout": timeout, "test_cells": sorted(test_cells),
                      "sentinel": sentinel, "token": token, "max_output": MAX_OUTPUT})
    try:
        data = _communicate(w.proc, job.encode(), w.rfd, wall_timeout)
    finally:
        w.run.cleanup()
    status = {"failure": None, "guard_failed": [], "truncated": []}
    if data is None:
        status["failure"] = "timeout: the whole notebook took too long"
        return load(nb), status, w.run.notes
    try:
        payload = json.loads(data)
        out_nb = nbformat.from_dict(payload["notebook"])
        status.update(payload.get("status") or {})
    except (ValueError, KeyError, TypeError):
        status["failure"] = "kernel died (the grading process ended without an answer)"
        out_nb = load(nb)
    return out_nb, status, w.run.notes


def _debug_stderr():
    """The grading process's own stderr: hidden unless LREACT_GRADER_DEBUG=1."""
    return None if os.environ.get("LREACT_GRADER_DEBUG") == "1" else subprocess.DEVNULL


def _communicate(proc, job: bytes, rfd: int, wall_timeout: float):
    """Send the job, read fd 3 until EOF; kill the whole process group on timeout."""
    import selectors
    import time
    try:
        proc.stdin.write(job)
        proc.stdin.close()
    except OSError:
        pass
    chunks, limit = [], 512 * 1024 * 1024
    deadline = time.monotonic() + wall_timeout
    sel = selectors.DefaultSelector()
    sel.register(rfd, selectors.EVENT_READ)
    size, ok = 0, True
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not sel.select(timeout=left):
                ok = False
                break
            chunk = os.read(rfd, 1 << 20)
            if not chunk:
                break
            size += len(chunk)
            if size > limit:
                ok = False
                break
            chunks.append(chunk)
    finally:
        sel.close()
        os.close(rfd)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        proc.wait()
    return b"".join(chunks) if ok else None


# --- scoring -----------------------------------------------------------------------------

def _first_line(text: str) -> str:
    for line in str(text).splitlines():
        if line.strip():
            return line.strip()[:300]
    return ""


def score(executed, *, sentinel=None, status=None, assignment_id="") -> GradeResult:
    """Scores of an executed merged notebook (and the sentinel lines removed from it)."""
    status = status or {}
    result = GradeResult(assignment_id, failure=status.get("failure"), executed=executed)
    guard_failed = set(status.get("guard_failed", []))
    # the cell in which the kernel died or hung did not finish, whatever it printed
    stopped_at = status.get("stopped_at")
    for index, cell in enumerate(executed.cells):
        gid = grade_id(cell)
        if not gid:
            continue
        if is_manual(cell):
            result.manual[gid] = points(cell)
            continue
        if not is_autograded_test(cell):
            continue
        possible = points(cell)
        outputs = cell.get("outputs", [])
        error = None
        if index in guard_failed:
            error = "the grader could not restore a clean state before this test"
        elif stopped_at is not None and index >= stopped_at:
            error = f"did not finish ({result.failure})"
        elif cell.get("execution_count") is None:
            error = f"did not run ({result.failure})" if result.failure else "did not run"
        else:
            for out in outputs:
                if out.get("output_type") == "error":
                    error = _first_line(f"{out.get('ename')}: {out.get('evalue')}")
                    break
            if error is None:
                for out in outputs:
                    if out.get("output_type") == "stream" and out.get("name") == "stderr":
                        error = "wrote to stderr: " + _first_line(out.get("text", ""))
                        break
            if error is None and sentinel:
                if not any(out.get("output_type") == "stream" and out.get("name") == "stdout"
                           and sentinel in out.get("text", "") for out in outputs):
                    error = "the test did not run to its end"
        result.scores[gid] = (0.0 if error else possible, possible)
        if error:
            result.errors[gid] = error
    if sentinel:
        _strip_sentinel(executed, sentinel)
    return result


def _strip_sentinel(nb, sentinel: str) -> None:
    for cell in nb.cells:
        keep = []
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream" and sentinel in out.get("text", ""):
                out["text"] = "".join(line for line in out["text"].splitlines(True)
                                      if sentinel not in line)
                if not out["text"]:
                    continue
            keep.append(out)
        if cell.cell_type == "code":
            cell.outputs = keep


# --- the one call ------------------------------------------------------------------------

def grade_notebook(assignment_id: str, nb_or_path, timeout: float = 60, *, source=None,
                   sandbox: str = "auto", guard: bool = True) -> GradeResult:
    """Grade one submission of ``assignment_id`` (see the module docstring).

    ``source`` overrides the instructor notebook (default ``solutions/<id>/<id>.ipynb``).
    A notebook that cannot be read scores zero with ``failure`` saying why.
    """
    source_nb = load(source or paths.source_path(assignment_id))
    try:
        submission = load(nb_or_path)
    except Exception as e:  # noqa: BLE001 - malformed submission: zeros and a reason
        submission = None
        reason = f"invalid notebook: {type(e).__name__}: {_first_line(e)}"
    merged = merge(source_nb, submission or nbformat.v4.new_notebook())
    tests = [i for i, c in enumerate(merged.cells) if is_autograded_test(c)]
    if submission is None:
        return score(merged, status={"failure": reason}, assignment_id=assignment_id)
    sentinel = "LREACT-DONE-" + secrets.token_hex(16) if guard else None
    token = "LREACT-GUARD-" + secrets.token_hex(16) if guard else None
    executed, status, notes = execute(merged, timeout=timeout, test_cells=tests,
                                      sentinel=sentinel, token=token, sandbox=sandbox)
    result = score(executed, sentinel=sentinel, status=status, assignment_id=assignment_id)
    result.notes = list(notes)
    return result


def zero_result(assignment_id: str, reason: str, *, source=None) -> GradeResult:
    """Zeros on every test of the assignment, with ``reason`` (nothing is executed)."""
    merged = merge(load(source or paths.source_path(assignment_id)), nbformat.v4.new_notebook())
    return score(merged, status={"failure": reason}, assignment_id=assignment_id)


def file_hash(*parts) -> str:
    """Cache key material: bytes/str/paths hashed together with the engine version."""
    h = hashlib.sha256(ENGINE_VERSION.encode())
    for p in parts:
        if isinstance(p, Path):
            p = p.read_bytes()
        if isinstance(p, str):
            p = p.encode()
        h.update(len(p).to_bytes(8, "big"))
        h.update(p)
    return h.hexdigest()
