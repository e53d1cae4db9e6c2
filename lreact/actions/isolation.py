"""Isolation for code the course does not trust: one primitive shared by the code actions
(``codeact.run_python``, lecture Part III, "Specific tools vs a code tool") and the grader's
sandbox (``autograder/sandbox/launch.py``).

- ``bwrap_command``: bubblewrap (Linux): no network, its own PID, IPC and UTS namespaces, a
  read-only view of the folders it is given, private size-capped tmpfs folders, a read-only
  root, the process killed with its parent, and (not root) an unprivileged user namespace.
- ``UidLeases``: when the caller is root, a fresh user id per run, leased across every process
  of the machine, so a process limit counts only that run's processes and nothing of it
  outlives the run (``kill_uid``); ``drop`` switches to it with ``setpriv``.

Where bubblewrap cannot run (macOS, Windows, no user namespaces), each user says plainly what is
not protected (``codeact.isolation()``, ``autograder.sandbox.launch.describe()``).
"""
from __future__ import annotations

import os
import random
import signal
import threading
import time
from pathlib import Path


def bwrap_command(*, hostname: str, visible, private, binds=(), hidden=(), chdir: str) -> list:
    """The bubblewrap command line (without the program to run): ``visible`` paths bound
    read-only at the same place (missing parents made 0755, since bwrap would make them
    readable by root only); ``private``: ``(folder, bytes)`` tmpfs folders, writable by all
    (mode 1777); ``binds``: ``(source, target)`` read-only binds made after those (a kit inside
    a private folder, a copy over a visible folder); ``hidden``: folders inside a visible one
    covered by an empty tmpfs; ``chdir``: the working folder."""
    args = ["bwrap", "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
            "--unshare-cgroup-try", "--die-with-parent", "--new-session",
            "--hostname", hostname, "--proc", "/proc", "--dev", "/dev"]
    for folder, size in private:
        args += ["--perms", "1777", "--size", str(int(size)), "--tmpfs", str(folder)]
    if os.geteuid() != 0:
        args += ["--unshare-user", "--uid", "65534", "--gid", "65534", "--cap-drop", "ALL"]
    made, bound = set(), []
    for p in map(Path, visible):
        for parent in reversed(p.parents[:-1]):
            if parent not in made and not any(parent.is_relative_to(q) for q in bound):
                made.add(parent)
                args += ["--perms", "0755", "--dir", str(parent)]
        args += ["--ro-bind", str(p), str(p)]
        bound.append(p)
    for source, target in binds:
        args += ["--ro-bind", str(source), str(target)]
    for folder in map(Path, hidden):
        if any(folder.is_relative_to(q) for q in bound):
            args += ["--tmpfs", str(folder)]
    return args + ["--remount-ro", "/", "--chdir", str(chdir)]


def drop(uid) -> list:
    """The ``setpriv`` prefix that runs a command as ``uid`` (no groups, no capabilities)."""
    if uid is None:
        return []
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
            "--inh-caps=-all", "--bounding-set=-all", "--"]


class UidLeases:
    """User ids in ``lo..hi`` for sandboxed runs, leased across every process on the machine.

    A lease is an exclusive ``flock`` on the file ``<folder>/<uid>``, held until ``give``
    (or until the leasing process ends, when the kernel drops it), so two graders, or a
    grader and a notebook, never hand one uid to two runs at once.  A uid that still has
    live processes (left by a run that was killed) is skipped.
    """

    def __init__(self, lo: int, hi: int, folder=None):
        self.lo, self.hi = lo, hi
        self.folder = Path(folder or os.environ.get("LREACT_UID_LEASES") or "/run/lreact-uids")
        self._held: dict = {}
        self._lock = threading.Lock()

    def take(self) -> int:
        import fcntl
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        for _ in range(20 * (self.hi - self.lo + 1)):
            uid = random.randint(self.lo, self.hi)
            with self._lock:
                if uid in self._held:
                    continue
            fd = os.open(self.folder / str(uid), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            if uid_processes(uid):
                os.close(fd)
                continue
            with self._lock:
                self._held[uid] = fd
            return uid
        raise RuntimeError(f"no free user id in {self.lo}..{self.hi}: too many runs at once")

    def give(self, uid) -> None:
        with self._lock:
            fd = self._held.pop(uid, None)
        if fd is not None:
            os.close(fd)


def uid_processes(uid) -> list:
    """Live (not zombie) processes whose real user id is ``uid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if fields.get("Uid", "").split()[:1] == [str(uid)] and \
                not fields.get("State", "").strip().startswith("Z"):
            found.append(int(entry.name))
    return found


def kill_uid(uid) -> None:
    """Stop, then SIGKILL, every process left running as this run's own user id (root only):
    stopping first keeps a fork bomb from refilling the slots that the kills free."""
    if uid is None:
        return
    for _ in range(100):
        pids = uid_processes(uid)
        if not pids:
            return
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            for pid in pids:
                try:
                    os.kill(pid, sig)
                except (ProcessLookupError, PermissionError):
                    pass
        time.sleep(0.02)
