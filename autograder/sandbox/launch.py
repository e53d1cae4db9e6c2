"""Isolation for one grading run (see ``autograder/README.md``).

What a run is confined by, when the machine allows it:

- **bubblewrap**: the process sees read-only system folders, the Python installation, the
  course's ``.venv``, the ``lreact`` package and the grader's kit (``kit/runner.py``), plus
  private size-capped tmpfs folders (``/grading``, ``/tmp``, ``/dev/shm``), and nothing else:
  not ``solutions/``, not ``autograder/``, not other submissions, not the grade cache. No
  network, its own PID namespace, a read-only root. It runs as an unprivileged user of its
  own (a fresh uid per run when the grader is root, leased across processes by an flock in
  ``/run/lreact-uids``; ``nobody`` in a user namespace otherwise).
  Per-process limits (``prlimit``): address space, CPU seconds, processes, file size, no core.
- **a cgroup per run** (``autograder/sandbox/cgroup.py``): every process of the run, detached or not,
  shares one CPU quota (``cpu_cores``, one core by default), one memory limit for all its
  processes together with the tmpfs pages counted (``memory_bytes``, no swap) and one
  process count (``max_processes``); at the end the whole group is killed and removed.
- **a wall clock** (``wall_seconds``), started with the run, that kills the whole run.

Where bubblewrap or cgroups cannot be used (no user namespaces, not root, macOS, Windows) the
grader says plainly, once per process, what is then NOT protected, and goes on.
``LREACT_REQUIRE_SANDBOX=1`` (CI sets it) or ``mode="require"`` turns that into an error.

How the engine uses it::

    run = sandbox.launch(kit, sys.executable, ["--fd", "3"], wall_seconds=wall,
                         cpu_seconds=..., scratch_base=...)   # the cgroup exists from here
    proc = subprocess.Popen(run.cmd, ..., start_new_session=True)
    run.start_clock(proc)          # or proc = run.popen(...), which does both; a warm
                                   # process may set run.wall_seconds just before this
    ...                            # talk to proc; run.kill() ends the whole run early;
                                   # run.timed_out tells a wall-clock kill; run.usage() now
    run.cleanup()                  # on every path: kills every process of the run, removes
    run.final_usage                # its cgroup; Usage(cpu_seconds, memory_peak_bytes,
                                   # oom_kills, pids_refused, cpu_throttled) or None
"""
from __future__ import annotations

import functools
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

from lreact.actions.isolation import UidLeases, bwrap_command, drop

from . import cgroup

MEMORY_BYTES = 2 * 1024**3        # address space per process
RUN_MEMORY_BYTES = 2 * 1024**3    # all processes of a run together, tmpfs pages included
RUN_CPU_CORES = 1.0               # CPU share of one run (a quota: never more, however many procs)
MAX_PROCESSES = 256               # per run (threads count too)
MAX_FILE_BYTES = 64 * 1024**2     # largest file a submission may write
SCRATCH_BYTES = 256 * 1024**2     # size of the private scratch folder (tmpfs)
TMP_BYTES = 64 * 1024**2          # size of the private /tmp (tmpfs)
SHM_BYTES = 64 * 1024**2          # size of the private /dev/shm (tmpfs)
TMPFS_BYTES = SCRATCH_BYTES + TMP_BYTES + SHM_BYTES
INSIDE = Path("/grading")         # where the scratch folder appears inside the sandbox

NOT_PROTECTED = (
    "grading WITHOUT a sandbox ({why}): student code runs as "
    "this user and CAN read solutions/ and the hidden tests, other submissions and the grade "
    "cache, CAN write wherever this user can, and CAN open network connections. Only the "
    "time and output limits apply{limits}. Grade untrusted work on Linux with bubblewrap.")
NO_CGROUP = (
    "grading WITHOUT a per-run cgroup ({why}): a submission CAN slow down or starve the runs "
    "graded beside it (its CPU use is not capped as a whole), its memory is limited per "
    "process only (several processes, and files in tmpfs or /dev/shm, are not counted "
    "together), and {detached}. Grade untrusted work on Linux as root, or with a delegated "
    "cgroup v2 subtree.")


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


GRADER_UIDS = UidLeases(61000, 64999)   # leased across processes (lreact/actions/isolation.py)


def _bwrap(kit: Path, uid: int | None, overlays=()) -> list[str]:
    """The run's bubblewrap command (``lreact.actions.isolation.bwrap_command``): the read-only
    paths, private ``/dev/shm``, ``/tmp`` and scratch folders, the kit read-only inside the
    scratch folder, and ``overlays`` (e.g. the answers' copy of lreact over the real one)."""
    return bwrap_command(hostname="grader", visible=read_only_paths(),
                         private=[("/dev/shm", SHM_BYTES), ("/tmp", TMP_BYTES),
                                  (INSIDE, SCRATCH_BYTES)],
                         binds=[*overlays, (kit, INSIDE / "kit")], chdir=INSIDE)


def _limits(cpu_seconds: int) -> list[str]:
    """Per-process backstops; the run as a whole is bounded by its cgroup."""
    if not shutil.which("prlimit"):
        return []
    return ["prlimit", f"--as={MEMORY_BYTES}", f"--cpu={int(cpu_seconds)}",
            f"--nproc={MAX_PROCESSES}", f"--fsize={MAX_FILE_BYTES}", "--core=0", "--"]


def _trim(text: str, limit: int = 300) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    said = " / ".join(lines[-3:])
    return said if len(said) <= limit else "..." + said[-limit:]


def _probe_command(kit: Path, uid: int | None) -> list[str]:
    return _bwrap(kit, uid) + _limits(10) + drop(uid) + [
        sys.executable, "-c", "import lreact, nbclient, ipykernel"]


def _prerequisites() -> str:
    if not sys.platform.startswith("linux"):
        return f"bubblewrap needs Linux, this is {sys.platform}"
    if not shutil.which("bwrap"):
        return "bwrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    if os.geteuid() == 0 and not shutil.which("setpriv"):
        return "setpriv (util-linux) is missing, needed to drop root inside the sandbox"
    return ""


@functools.lru_cache(maxsize=None)
def bwrap_problem() -> str:
    """Why bubblewrap cannot confine a run here ("" when it can): the probe's own words."""
    missing = _prerequisites()
    if missing:
        return missing
    with tempfile.TemporaryDirectory() as kit:
        uid = GRADER_UIDS.take() if os.geteuid() == 0 else None
        try:
            done = subprocess.run(_probe_command(Path(kit), uid), capture_output=True,
                                  timeout=60, env={**os.environ,
                                                   "PYTHONPATH": str(_lreact_dir().parent)})
        except subprocess.TimeoutExpired:
            return "the bubblewrap probe did not finish within 60 s"
        except OSError as e:
            return f"the bubblewrap probe could not start: {e}"
        finally:
            GRADER_UIDS.give(uid)
    if done.returncode == 0:
        return ""
    said = _trim(done.stderr.decode("utf-8", "replace")) or "no error text"
    return f"the probe exited with status {done.returncode}: {said}"


def bwrap_works() -> bool:
    return not bwrap_problem()


def cgroup_problem() -> str:
    """Why runs cannot get a cgroup of their own here ("" when they can)."""
    b = cgroup.backend()
    return "" if b.usable else b.problem


def _not_sandboxed(mode: str) -> str:
    limits = (" (plus prlimit: memory, CPU seconds, processes, file size, per process)"
              if shutil.which("prlimit") else "")
    why = ("turned off by the caller" if mode == "off" else
           "bubblewrap is not usable here: " + (bwrap_problem() or "its probe failed"))
    return NOT_PROTECTED.format(why=why, limits=limits)


def _no_cgroup(why: str, sandboxed: bool) -> str:
    detached = ("processes it detaches live until the run's end (its PID namespace ends them)"
                if sandboxed else "processes it detaches CAN outlive the run")
    return NO_CGROUP.format(why=why, detached=detached)


def describe(mode: str = "auto") -> str:
    """A few sentences: what grading runs on this machine are protected by."""
    sandboxed = mode != "off" and bwrap_works()
    cg = cgroup_problem()
    if sandboxed:
        out = ("sandbox: bubblewrap (no network; sees only the Python installation, .venv, "
               "lreact and private scratch folders; runs as its own user; per-process limits "
               "on memory, CPU, processes and file size)")
    else:
        out = ("sandbox: OFF (asked for). " if mode == "off" else "") + _not_sandboxed(mode)
    if not cg:
        b = cgroup.backend()
        out += (f"; per-run {b.name} group: all its processes together get at most "
                f"{RUN_CPU_CORES:g} CPU core, {RUN_MEMORY_BYTES / 1024**3:g} GiB of memory "
                f"(tmpfs included, no swap) and {MAX_PROCESSES} processes, and are killed at "
                "its end")
    else:
        out += ". " + _no_cgroup(cg, sandboxed)
    return out


class _Once:
    """Prints each distinct warning once per process."""

    def __init__(self):
        self.said: set = set()
        self.lock = threading.Lock()

    def warn(self, key: str, text: str) -> None:
        with self.lock:
            if key in self.said:
                return
            self.said.add(key)
        print("WARNING: " + text, file=sys.stderr)


_once = _Once()


class CpuTally:
    """CPU seconds used by the runs of this process that have ended (their cgroups' own
    accounting, every process of each run counted): what the benchmark divides by."""

    def __init__(self):
        self.seconds, self.runs = 0.0, 0
        self._lock = threading.Lock()

    def add(self, usage) -> None:
        if usage is not None and usage.cpu_seconds is not None:
            with self._lock:
                self.seconds += usage.cpu_seconds
                self.runs += 1


RUNS_CPU = CpuTally()


@dataclass
class Launch:
    cmd: list            # the full command line
    scratch: Path        # the run's scratch folder as the runner sees it
    runner: Path         # runner.py as the runner sees it
    notes: list = field(default_factory=list)
    host_scratch: Path | None = None
    uid: int | None = None
    group: cgroup.RunGroup | None = None      # None: no cgroup here (a note says so)
    wall_seconds: float | None = None         # the whole run's wall-clock limit
    timed_out: bool = False                   # the wall clock killed the run
    final_usage: cgroup.Usage | None = None   # set by cleanup() when there was a cgroup
    proc: subprocess.Popen | None = field(default=None, repr=False)
    _timer: threading.Timer | None = field(default=None, repr=False)
    _done: bool = field(default=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def popen(self, **kwargs) -> subprocess.Popen:
        """Start ``cmd`` (``subprocess.Popen`` keywords; a new session unless said otherwise)
        and its wall clock."""
        kwargs.setdefault("start_new_session", True)
        proc = subprocess.Popen(self.cmd, **kwargs)
        self.start_clock(proc)
        return proc

    def start_clock(self, proc: subprocess.Popen | None = None) -> None:
        """Start the wall clock now (once): at ``wall_seconds`` the whole run is killed."""
        with self._lock:
            if proc is not None:
                self.proc = proc
            if self._timer is not None or self._done or not self.wall_seconds:
                return
            self._timer = threading.Timer(self.wall_seconds, self._expire)
            self._timer.daemon = True
            self._timer.start()

    def restart_clock(self, seconds: float, proc: subprocess.Popen | None = None) -> None:
        """A run that serves one job after another (``pool.TrustedProcess``): a new wall clock of
        ``seconds`` for the next job, in place of the last one."""
        self.stop_clock()
        self.wall_seconds = seconds
        self.start_clock(proc)

    def stop_clock(self) -> None:
        """The job is over in time: its clock no longer runs (``restart_clock`` starts one)."""
        with self._lock:
            timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()

    def _expire(self) -> None:
        self.timed_out = True
        self.kill()

    def kill(self) -> None:
        """Kill every process of the run now (the cgroup; without one, the process group)."""
        group = self.group
        if group is not None:
            group.kill(wait=5.0)
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                try:
                    self.proc.kill()
                except ProcessLookupError:
                    pass

    def usage(self) -> cgroup.Usage | None:
        """CPU seconds, memory now and at its peak, OOM kills, refused forks (None: no cgroup)."""
        return self.group.usage() if self.group is not None else self.final_usage

    def cleanup(self) -> None:
        """End the run: stop the clock, kill all its processes, remove its cgroup and scratch."""
        with self._lock:
            if self._done:
                return
            self._done = True
            timer = self._timer
        if timer is not None:
            timer.cancel()
        if self.group is not None:
            self.final_usage = self.group.close()
            self.group = None
            RUNS_CPU.add(self.final_usage)
        self.kill()
        if self.host_scratch:
            shutil.rmtree(self.host_scratch, ignore_errors=True)
        GRADER_UIDS.give(self.uid)


def launch(kit: Path, python: str, args: list, *, mode: str = "auto", cpu_seconds: int = 600,
           scratch_base: Path | None = None, wall_seconds: float | None = None,
           cpu_cores: float = RUN_CPU_CORES, memory_bytes: int = RUN_MEMORY_BYTES,
           max_processes: int = MAX_PROCESSES, overlays=()) -> Launch:
    """How to run ``python kit/runner.py *args`` confined; ``kit`` holds runner.py.

    ``mode``: "auto" (bubblewrap and a cgroup when usable, else said plainly once), "require"
    (an error without both), "off" (no bubblewrap; the cgroup still applies when possible).
    ``cpu_seconds``: CPU time per process (prlimit). ``wall_seconds``: the whole run's wall
    limit, counted from ``start_clock()``/``popen()``; None: the caller keeps time.
    ``cpu_cores``, ``memory_bytes``, ``max_processes``: the run's share, all its processes
    together (the cgroup); ``memory_bytes`` counts the private tmpfs folders too, so it must
    be at least twice their size (``TMPFS_BYTES``).
    ``overlays``: (host folder, path) pairs bound read-only over what the sandbox shows at
    that path (the grader shows the answers' process a copy of ``lreact`` without reference
    code at the real package's path; without bubblewrap they do nothing).
    The run's cgroup exists from this call on: call ``cleanup()`` on every path.
    """
    if mode not in ("auto", "require", "off"):
        raise ValueError(f"sandbox mode must be auto, require or off, not {mode!r}")
    if memory_bytes < 2 * TMPFS_BYTES:
        raise ValueError(f"memory_bytes={memory_bytes} leaves no room: the run's tmpfs folders "
                         f"alone may hold {TMPFS_BYTES} bytes and count toward it; give at "
                         f"least {2 * TMPFS_BYTES}")
    limits = cgroup.Limits(cpu_cores, memory_bytes, max_processes)
    strict = mode == "require" or (mode == "auto" and required())
    sandboxed = mode != "off" and bwrap_works()
    backend = cgroup.backend()
    missing = []
    if mode != "off" and not sandboxed:
        missing.append("bubblewrap (bwrap) is not usable here: "
                       + (bwrap_problem() or "its probe failed"))
    if not backend.usable:
        missing.append("no per-run cgroup can be made here: " + backend.problem)
    if strict and missing:
        why = "mode='require'" if mode == "require" else "LREACT_REQUIRE_SANDBOX=1"
        raise SandboxUnavailable("; ".join(missing) + f"; and a full sandbox is required ({why})")
    group, notes, keys = None, [], []
    if backend.usable:
        try:
            group = cgroup.RunGroup(backend, limits)
        except cgroup.CgroupError as e:
            if strict:
                raise SandboxUnavailable(str(e)) from e
            notes.append(_no_cgroup(str(e), sandboxed))
            keys.append("cgroup")
    else:
        notes.append(_no_cgroup(backend.problem, sandboxed))
        keys.append("cgroup")
    try:
        if sandboxed:
            uid = GRADER_UIDS.take() if os.geteuid() == 0 else None
            runner = INSIDE / "kit" / "runner.py"
            cmd = (_bwrap(kit, uid, overlays) + _limits(cpu_seconds) + drop(uid)
                   + [python, str(runner), *args])
            run = Launch(cmd, INSIDE / "run", runner, notes, uid=uid)
        else:
            notes.insert(0, ("sandbox: OFF (asked for). " if mode == "off" else "")
                         + _not_sandboxed(mode))
            keys.insert(0, f"bwrap-{mode}")
            base = Path(scratch_base or tempfile.gettempdir())
            base.mkdir(parents=True, exist_ok=True)
            host = Path(tempfile.mkdtemp(prefix="run-", dir=base))
            runner = kit / "runner.py"
            run = Launch(_limits(cpu_seconds) + [python, str(runner), *args],
                         host / "run", runner, notes, host_scratch=host)
    except BaseException:
        if group is not None:
            group.close()
        raise
    for key, note in zip(keys, notes):
        _once.warn(key, note)
    if group is not None:
        run.cmd = group.wrap(run.cmd)
    run.group, run.wall_seconds = group, wall_seconds
    return run
