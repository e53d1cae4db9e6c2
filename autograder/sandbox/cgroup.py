"""One cgroup per grading run, so that no submission can slow, starve or outlive another.

Every process of a run (the sandbox, the kernel, and whatever the student's code forks,
detaches or puts in a new session) joins the run's cgroup before any student code executes,
and the run is bounded as a whole: one CPU quota (``cpu.max``; v1 ``cpu.cfs_quota_us``), one
memory limit for all its processes together, tmpfs and ``/dev/shm`` pages included, with no
swap (``memory.max`` + ``memory.swap.max``; v1 ``memory.limit_in_bytes`` +
``memory.memsw.limit_in_bytes``), and one process count (``pids.max``). At the end the whole
group is killed (``cgroup.kill``; else frozen and signalled until empty) and removed.

cgroup v2 is used when its cpu, memory and pids controllers can be enabled below the grader's
own cgroup; else the v1 hierarchies ``cpu``, ``memory`` and ``pids`` (and, when present, a v2
group only for its atomic ``cgroup.kill``, ``cpuacct`` for the CPU used, ``freezer``).
Groups are made inside the grader's OWN cgroup (``<own>/lreact-grader/run-<pid>-<start>-<n>``),
so the grader never escapes limits it runs under itself. The name carries the grader's pid and
start time: groups left by a grader that crashed are found by that and swept on the next start.
"""
from __future__ import annotations

import errno
import functools
import itertools
import os
import shlex
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path

PARENT = "lreact-grader"
PERIOD_US = 100_000
LIMITED = ("cpu", "memory", "pids")          # the controllers a run needs
V1_EXTRAS = ("cpuacct", "freezer")           # used when present, never required


class CgroupError(RuntimeError):
    pass


@dataclass(frozen=True)
class Limits:
    """What one run may use, all its processes together."""
    cpu_cores: float = 1.0
    memory_bytes: int = 2 * 1024**3
    pids: int = 256

    def __post_init__(self):
        if not self.cpu_cores > 0 or self.memory_bytes < 64 * 1024**2 or self.pids < 8:
            raise ValueError(f"unusable run limits {self}: cpu_cores must be > 0, "
                             "memory_bytes at least 64 MiB, pids at least 8")


@dataclass(frozen=True)
class Hierarchy:
    version: int              # 1 or 2
    controllers: frozenset    # what is used here ("cpu", "memory", "pids", "cpuacct", "freezer")
    base: Path                # <mount>/<the grader's own cgroup>/lreact-grader


@dataclass(frozen=True)
class Backend:
    """What this machine offers; ``problem`` says why nothing is usable."""
    name: str                 # "cgroup v2", "cgroup v1", or "" (unusable)
    hierarchies: tuple = ()
    problem: str = ""

    @property
    def usable(self) -> bool:
        return bool(self.hierarchies)


@dataclass(frozen=True)
class Usage:
    cpu_seconds: float | None
    memory_bytes: int | None        # now
    memory_peak_bytes: int | None
    oom_kills: int
    pids_refused: int               # forks refused by pids.max
    cpu_throttled: int = 0          # periods in which the CPU quota stopped the run


# --- what the machine offers ---------------------------------------------------------------

def _read(path) -> str:
    with open(path, encoding="ascii", errors="replace") as f:
        return f.read()


def _write(path, text: str) -> None:
    with open(path, "w", encoding="ascii") as f:
        f.write(text)


def _own_paths(proc: Path = Path("/proc/self")):
    """The grader's own cgroup: ({v1 controller: path}, v2 path or None)."""
    v1, v2 = {}, None
    for line in _read(proc / "cgroup").splitlines():
        hid, ctrls, path = line.split(":", 2)
        if hid == "0" and not ctrls:
            v2 = path
        for c in filter(None, ctrls.split(",")):
            v1[c] = path
    return v1, v2


def _mounts(proc: Path = Path("/proc/self")):
    """({v1 controller: (mount point, mount root, its controllers)}, (v2 mount, root) or None)."""
    v1, v2 = {}, None
    for line in _read(proc / "mountinfo").splitlines():
        left, _, right = line.partition(" - ")
        fields, rest = left.split(), right.split()
        if len(fields) < 5 or len(rest) < 3:
            continue
        fstype, opts = rest[0], set(rest[2].split(","))
        if fstype == "cgroup2" and v2 is None:
            v2 = (fields[4], fields[3])
        elif fstype == "cgroup":
            ctrls = frozenset(opts & set(LIMITED + V1_EXTRAS))
            for c in ctrls:
                v1.setdefault(c, (fields[4], fields[3], ctrls))
    return v1, v2


def _dir(mount: str, root: str, own: str) -> Path | None:
    root = root.rstrip("/")
    if own != root and not own.startswith(root + "/"):
        return None
    return Path(mount) / own[len(root):].lstrip("/")


def _mkdir_shared(p: Path) -> None:
    """Make a folder that other graders make and remove too. ``Path.mkdir(exist_ok=True)``
    is not enough: it re-checks that the folder exists after EEXIST, and another grader's last
    run may have removed it in between (seen in CI: "File exists"); a folder removed after
    this call shows up as FileNotFoundError in the caller, which retries."""
    try:
        os.mkdir(p)
    except FileExistsError:
        pass


def _make_base(own: Path) -> Path:
    base = own / PARENT
    _mkdir_shared(base)
    return base


def _ensure_base(h: "Hierarchy") -> None:
    """The parent folder again (the last run of any grader removes it), with its controllers
    and its CPU weight: all the grader's runs together weigh as much as one busy process per
    core would without cgroups (each run alone weighs one process), so a busy machine does not
    squeeze the whole grading into one process's share."""
    _mkdir_shared(h.base)
    cores = os.cpu_count() or 1
    if h.version == 2 and h.controllers:
        enabled = set(_read(h.base / "cgroup.subtree_control").split())
        if set(h.controllers) - enabled:
            _write(h.base / "cgroup.subtree_control",
                   " ".join(f"+{c}" for c in LIMITED if c in h.controllers))
        if (h.base / "cpu.weight").exists():
            _write(h.base / "cpu.weight", str(min(10000, 100 * cores)))
    elif h.version == 1 and "cpu" in h.controllers:
        _write(h.base / "cpu.shares", str(1024 * cores))


def _try_v2(mount, own_path) -> tuple:
    """(hierarchy or None, why not)."""
    own = _dir(*mount, own_path)
    if own is None or not own.is_dir():
        return None, "the grader's own v2 cgroup is not visible"
    offered = set(_read(own / "cgroup.controllers").split())
    missing = set(LIMITED) - offered
    if missing:
        return None, (f"cgroup v2 at {own} offers {' '.join(sorted(offered)) or 'no controllers'}, "
                      f"not {' '.join(sorted(missing))}")
    try:
        enabled = set(_read(own / "cgroup.subtree_control").split())
        if set(LIMITED) - enabled:
            _write(own / "cgroup.subtree_control", " ".join(f"+{c}" for c in LIMITED))
        h = Hierarchy(2, frozenset(LIMITED), own / PARENT)
        _ensure_base(h)
    except OSError as e:
        return None, f"cannot delegate cpu, memory and pids below {own} ({e.strerror or e})"
    return h, ""


def _try_v1(mounts, own_paths, v2, own_v2) -> tuple:
    """(hierarchies or (), why not)."""
    by_mount: dict = {}
    for c in LIMITED + V1_EXTRAS:
        if c not in mounts or c not in own_paths:
            if c in LIMITED:
                return (), f"no cgroup v1 {c} hierarchy is mounted"
            continue
        mount, root, ctrls = mounts[c]
        by_mount.setdefault((mount, root, ctrls), set()).add(c)
    out = []
    try:
        for (mount, root, ctrls), wanted in by_mount.items():
            own = _dir(mount, root, own_paths[next(iter(wanted))])
            if own is None or not own.is_dir():
                return (), f"the grader's own v1 cgroup in {mount} is not visible"
            out.append(Hierarchy(1, frozenset(wanted), own / PARENT))
            _ensure_base(out[-1])
        if v2 is not None and own_v2 is not None:      # hybrid: a v2 group for cgroup.kill
            own = _dir(*v2, own_v2)
            if own is not None and own.is_dir() and os.access(own, os.W_OK):
                try:
                    out.append(Hierarchy(2, frozenset(), _make_base(own)))
                except OSError:
                    pass
    except OSError as e:
        for h in out:             # leave nothing behind on a machine that cannot be used
            try:
                h.base.rmdir()
            except OSError:
                pass
        return (), f"cannot create cgroups ({e.strerror or e})"
    return tuple(out), ""


def detect(proc: Path = Path("/proc/self")) -> Backend:
    """What this machine offers for per-run cgroups (no side effect but the parent folders)."""
    try:
        own_v1, own_v2 = _own_paths(proc)
        mounts_v1, mount_v2 = _mounts(proc)
    except OSError:
        return Backend("", problem="no /proc/self/cgroup (not Linux)")
    whys = []
    if mount_v2 is not None and own_v2 is not None:
        h, why = _try_v2(mount_v2, own_v2)
        if h:
            return Backend("cgroup v2", (h,))
        whys.append(why)
    else:
        whys.append("no cgroup v2 mount")
    hs, why = _try_v1(mounts_v1, own_v1, mount_v2, own_v2)
    if hs:
        return Backend("cgroup v1", hs)
    whys.append(why)
    if os.geteuid() != 0:
        whys.append("the grader is not root and has no delegated cgroup")
    return Backend("", problem="; ".join(whys))


@functools.lru_cache(maxsize=None)
def backend() -> Backend:
    """This process's backend, found once; stale groups of crashed graders are swept first."""
    b = detect()
    if b.usable:
        sweep_stale(b)
    return b


# --- one run's group -----------------------------------------------------------------------

def _start_time(pid: int) -> str | None:
    try:
        return _read(f"/proc/{pid}/stat").rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


_seq = itertools.count(1)


def _procs(d: Path) -> set:
    try:
        return {int(p) for p in _read(d / "cgroup.procs").split()}
    except (OSError, ValueError):
        return set()


def _stat(path: Path, key: str) -> int | None:
    try:
        for line in _read(path).splitlines():
            k, _, v = line.partition(" ")
            if k == key:
                return int(v)
    except (OSError, ValueError):
        pass
    return None


def _int(path: Path) -> int | None:
    try:
        return int(_read(path).split()[0])
    except (OSError, ValueError, IndexError):
        return None


class RunGroup:
    """The cgroup of one run: made with its limits, entered by ``wrap(cmd)``, ended by ``close``."""

    def __init__(self, b: Backend, limits: Limits, *, name: str | None = None, adopt=False):
        if not b.usable:
            raise CgroupError("no usable cgroup here: " + b.problem)
        self.limits = limits
        self.name = name or f"run-{os.getpid()}-{_start_time(os.getpid())}-{next(_seq)}"
        self.dirs: list = []
        self._lock = threading.Lock()
        self.closed = False
        if adopt:
            self.dirs = [(h, h.base / self.name) for h in b.hierarchies
                         if (h.base / self.name).is_dir()]
            return
        try:
            for h in b.hierarchies:
                d = h.base / self.name
                for _ in range(50):      # another grader may remove an empty parent meanwhile
                    try:
                        _ensure_base(h)
                        d.mkdir()
                        break
                    except OSError as e:  # ENOENT: gone; ENODEV: being removed as we wrote
                        if e.errno not in (errno.ENOENT, errno.ENODEV):
                            raise
                        time.sleep(0.01)
                else:
                    d.mkdir()
                self.dirs.append((h, d))
                self._apply(h, d)
        except OSError as e:
            self.close()
            raise CgroupError(f"could not set up the run's cgroup {self.name}: {e}") from e

    def _apply(self, h: Hierarchy, d: Path) -> None:
        lim, quota = self.limits, max(1000, int(self.limits.cpu_cores * PERIOD_US))
        if h.version == 2:
            if "cpu" in h.controllers:
                _write(d / "cpu.max", f"{quota} {PERIOD_US}")
            if "memory" in h.controllers:
                _write(d / "memory.max", str(lim.memory_bytes))
                for f, v in (("memory.swap.max", "0"), ("memory.oom.group", "1")):
                    if (d / f).exists():
                        _write(d / f, v)
            if "pids" in h.controllers:
                _write(d / "pids.max", str(lim.pids))
            return
        if "cpu" in h.controllers:
            _write(d / "cpu.cfs_period_us", str(PERIOD_US))
            _write(d / "cpu.cfs_quota_us", str(quota))
        if "memory" in h.controllers:
            _write(d / "memory.limit_in_bytes", str(lim.memory_bytes))
            if (d / "memory.memsw.limit_in_bytes").exists():
                _write(d / "memory.memsw.limit_in_bytes", str(lim.memory_bytes))
        if "pids" in h.controllers:
            _write(d / "pids.max", str(lim.pids))

    def wrap(self, cmd: list) -> list:
        """``cmd`` preceded by a tiny shell that moves itself into the group, then execs it."""
        joins = "".join(f"echo $$ > {shlex.quote(str(d / 'cgroup.procs'))} || exit 125\n"
                        for _, d in self.dirs)
        return ["/bin/sh", "-c", joins + 'exec "$@"', "lreact-run", *cmd]

    def pids(self) -> set:
        out = set()
        for _, d in self.dirs:
            out |= _procs(d)
        return out

    def kill(self, wait: float = 10.0) -> bool:
        """Kill every process of the run; True when the group is empty afterwards."""
        for h, d in self.dirs:
            if h.version == 2 and (d / "cgroup.kill").exists():
                try:
                    _write(d / "cgroup.kill", "1")
                except OSError:
                    pass
        freezer = next((d for h, d in self.dirs if "freezer" in h.controllers), None)
        deadline = time.monotonic() + wait
        while True:
            left = self.pids()
            if not left:
                return True
            if time.monotonic() > deadline:
                return False
            if freezer is not None:
                self._freeze(freezer, "FROZEN")
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            if freezer is not None:
                self._freeze(freezer, "THAWED")
            time.sleep(0.02)

    @staticmethod
    def _freeze(d: Path, state: str) -> None:
        try:
            _write(d / "freezer.state", state)
        except OSError:
            pass

    def usage(self) -> Usage:
        cpu = mem = peak = None
        ooms = refused = throttled = 0
        for h, d in self.dirs:
            if h.version == 2:
                usec = _stat(d / "cpu.stat", "usage_usec")
                if cpu is None and usec is not None:
                    cpu = usec / 1e6
                if "cpu" in h.controllers:
                    throttled = _stat(d / "cpu.stat", "nr_throttled") or 0
                if "memory" in h.controllers:
                    mem, peak = _int(d / "memory.current"), _int(d / "memory.peak")
                    ooms = _stat(d / "memory.events", "oom_kill") or 0
                if "pids" in h.controllers:
                    refused = _stat(d / "pids.events", "max") or 0
                continue
            if "cpu" in h.controllers:
                throttled = _stat(d / "cpu.stat", "nr_throttled") or 0
            if "cpuacct" in h.controllers:
                ns = _int(d / "cpuacct.usage")
                cpu = ns / 1e9 if ns is not None else cpu
            if "memory" in h.controllers:
                mem = _int(d / "memory.usage_in_bytes")
                peak = _int(d / "memory.max_usage_in_bytes")
                ooms = _stat(d / "memory.oom_control", "oom_kill") or 0
            if "pids" in h.controllers:
                refused = _stat(d / "pids.events", "max") or 0
        return Usage(cpu, mem, peak, ooms, refused, throttled)

    def close(self) -> Usage | None:
        """Kill everything in the group, remove it; the usage just before (None if closed)."""
        with self._lock:
            if self.closed:
                return None
            self.closed = True
        self.kill()
        used = self.usage()
        for h, d in reversed(self.dirs):
            for _ in range(250):       # dying tasks keep a group busy for a moment
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    self.kill(wait=0.1)
                    time.sleep(0.02)
            try:
                h.base.rmdir()          # the parent too, once no run of any grader is left
            except OSError:
                pass
        return used


def sweep_stale(b: Backend) -> list:
    """Kill and remove groups left by graders that are gone; the names removed."""
    names = set()
    for h in b.hierarchies:
        try:
            names |= {p.name for p in h.base.iterdir() if p.is_dir() and p.name.startswith("run-")}
        except OSError:
            pass
    gone = []
    for name in sorted(names):
        parts = name.split("-")
        if len(parts) == 4 and parts[1].isdigit() and _start_time(int(parts[1])) == parts[2]:
            continue                  # its grader is alive
        RunGroup(b, Limits(), name=name, adopt=True).close()
        gone.append(name)
    return gone
