"""Isolation for one grading run (see ``shared/notes/nbgrader.md``).

One sandboxed process runs the whole notebook (nbclient client and kernel together); the
scoring happens outside. With bubblewrap the process sees read-only system folders, the
Python installation, the course's ``.venv``, the ``lreact`` package and the grader's kit
(``runner.py``), plus a private size-capped scratch folder, and nothing else: not
``solutions/``, not ``autograder/``, not other submissions, not the grade cache. No network,
its own PID namespace (every process dies with the run), a read-only root. It runs as an
unprivileged user of its own (a fresh uid per run when the grader is root, ``nobody`` in a
user namespace otherwise) so the process limit counts only its own processes.
Limits (``prlimit``): address space, CPU seconds, processes, file size, no core dumps.

Where bubblewrap cannot run (no user namespaces, macOS, Windows) the grader falls back to
limits only (or nothing) and says plainly, once per run, what is then NOT protected.
``LREACT_REQUIRE_SANDBOX=1`` turns that fallback into an error (CI sets it).
"""
from __future__ import annotations

import functools
import os
import random
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

MEMORY_BYTES = 2 * 1024**3        # address space per process
MAX_PROCESSES = 256               # per run (threads count too)
MAX_FILE_BYTES = 64 * 1024**2     # largest file a submission may write
SCRATCH_BYTES = 256 * 1024**2     # size of the private scratch folder (tmpfs)
INSIDE = Path("/grading")         # where the scratch folder appears inside the sandbox

NOT_PROTECTED = (
    "grading WITHOUT a sandbox (bubblewrap is not usable here): student code runs as this "
    "user and CAN read solutions/ and the hidden tests, other submissions and the grade "
    "cache, CAN write wherever this user can, and CAN open network connections. Only the "
    "time and output limits apply{limits}. Grade untrusted work on Linux with bubblewrap.")


class SandboxUnavailable(RuntimeError):
    pass


def required() -> bool:
    return os.environ.get("LREACT_REQUIRE_SANDBOX", "") not in ("", "0", "false", "no")


def _lreact_dir() -> Path:
    """Where ``import lreact`` resolves (an editable install maps it to the source folder)."""
    import importlib.util
    spec = importlib.util.find_spec("lreact")
    return Path(spec.origin).resolve().parent


def read_only_paths() -> list[Path]:
    """Everything the sandbox needs to see, read-only."""
    wanted = [Path(p) for p in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")]
    wanted += [Path(p) for p in ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
                                 "/etc/localtime", "/etc/passwd", "/etc/group",
                                 "/etc/nsswitch.conf", "/etc/fonts", "/etc/mime.types")]
    wanted += [Path(sys.base_prefix), Path(sys.prefix), _lreact_dir()]
    wanted += [Path(sysconfig.get_paths()["purelib"]), Path(sysconfig.get_paths()["platlib"])]
    seen, out = set(), []
    for p in wanted:
        if p.exists() and p not in seen and not any(p.is_relative_to(s) for s in seen):
            seen.add(p)
            out.append(p)
    return out


_uids_lock = threading.Lock()
_uids_used: set = set()


def _take_uid() -> int:
    with _uids_lock:
        while True:
            uid = random.randint(61000, 64999)
            if uid not in _uids_used:
                _uids_used.add(uid)
                return uid


def _give_uid(uid) -> None:
    with _uids_lock:
        _uids_used.discard(uid)


def _bwrap(kit: Path, uid: int | None) -> list[str]:
    args = ["bwrap", "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
            "--unshare-cgroup-try", "--die-with-parent", "--new-session",
            "--hostname", "grader", "--proc", "/proc", "--dev", "/dev",
            "--perms", "1777", "--size", str(64 * 1024**2), "--tmpfs", "/tmp"]
    made_binds: list = []
    if os.geteuid() != 0:
        args += ["--unshare-user", "--uid", "65534", "--gid", "65534", "--cap-drop", "ALL"]
    made = set()
    for p in read_only_paths():
        # bwrap would create missing parents (e.g. /root, /work/main) readable by root only
        for parent in reversed(p.parents[:-1]):
            if parent not in made and not any(parent.is_relative_to(q) for q in made_binds):
                made.add(parent)
                args += ["--perms", "0755", "--dir", str(parent)]
        args += ["--ro-bind", str(p), str(p)]
        made_binds.append(p)
    args += ["--perms", "1777", "--size", str(SCRATCH_BYTES), "--tmpfs", str(INSIDE),
             "--ro-bind", str(kit), str(INSIDE / "kit"),
             "--remount-ro", "/", "--chdir", str(INSIDE)]
    return args


def _limits(cpu_seconds: int) -> list[str]:
    if not shutil.which("prlimit"):
        return []
    return ["prlimit", f"--as={MEMORY_BYTES}", f"--cpu={cpu_seconds}",
            f"--nproc={MAX_PROCESSES}", f"--fsize={MAX_FILE_BYTES}", "--core=0", "--"]


def _drop(uid: int | None) -> list[str]:
    if uid is None:
        return []
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
            "--inh-caps=-all", "--bounding-set=-all", "--"]


@functools.lru_cache(maxsize=None)
def bwrap_works() -> bool:
    if not sys.platform.startswith("linux") or not shutil.which("bwrap"):
        return False
    if os.geteuid() == 0 and not shutil.which("setpriv"):
        return False
    with tempfile.TemporaryDirectory() as kit:
        uid = _take_uid() if os.geteuid() == 0 else None
        try:
            cmd = _bwrap(Path(kit), uid) + _limits(10) + _drop(uid) + [
                sys.executable, "-c", "import lreact, nbclient, ipykernel"]
            return subprocess.run(cmd, capture_output=True, timeout=60).returncode == 0
        except (OSError, subprocess.SubprocessError):
            return False
        finally:
            _give_uid(uid)


def describe(mode: str = "auto") -> str:
    """One sentence: what grading runs on this machine are protected by."""
    if mode != "off" and bwrap_works():
        return ("sandbox: bubblewrap (no network; sees only the Python installation, .venv, "
                "lreact and a private scratch folder; runs as its own user; limits on memory, "
                "CPU, processes and file size)")
    limits = (" (plus prlimit: memory, CPU seconds, processes, file size)"
              if shutil.which("prlimit") else "")
    head = "sandbox: OFF (asked for). " if mode == "off" else ""
    return head + NOT_PROTECTED.format(limits=limits)


@dataclass
class Launch:
    cmd: list            # the full command line
    scratch: Path        # the run's scratch folder as the runner sees it
    runner: Path         # runner.py as the runner sees it
    notes: list = field(default_factory=list)
    host_scratch: Path | None = None
    uid: int | None = None

    def cleanup(self) -> None:
        if self.host_scratch:
            shutil.rmtree(self.host_scratch, ignore_errors=True)
        _give_uid(self.uid)


_warned = False


def launch(kit: Path, python: str, args: list, *, mode: str = "auto", cpu_seconds: int = 600,
           scratch_base: Path | None = None) -> Launch:
    """How to run ``python kit/runner.py *args`` confined; ``kit`` holds runner.py."""
    global _warned
    if mode not in ("auto", "require", "off"):
        raise ValueError(f"sandbox mode must be auto, require or off, not {mode!r}")
    if mode != "off" and bwrap_works():
        uid = _take_uid() if os.geteuid() == 0 else None
        runner = INSIDE / "kit" / "runner.py"
        cmd = _bwrap(kit, uid) + _limits(cpu_seconds) + _drop(uid) + [python, str(runner), *args]
        return Launch(cmd, INSIDE / "run", runner, uid=uid)
    if mode == "require" or (mode == "auto" and required()):
        raise SandboxUnavailable("bubblewrap (bwrap) is not usable here and a sandbox is "
                                 "required (LREACT_REQUIRE_SANDBOX=1)")
    note = describe(mode)
    if not _warned:
        _warned = True
        print("WARNING: " + note, file=sys.stderr)
    base = Path(scratch_base or tempfile.gettempdir())
    base.mkdir(parents=True, exist_ok=True)
    host = Path(tempfile.mkdtemp(prefix="run-", dir=base))
    runner = kit / "runner.py"
    return Launch(_limits(cpu_seconds) + [python, str(runner), *args], host / "run", runner,
                  [note], host_scratch=host)
