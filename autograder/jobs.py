"""The trusted process's loop: one submission after another, each graded in a child forked for it.

A trusted process (``trusted.Tester`` starts it; ``runner.py tester-reused``) imports the grading
code once, then serves jobs: for each, it forks a child that runs the job (``tester.run_job``) and
ends, and never runs a job itself, so every submission is graded by a fresh copy of the same
untouched process.  After each job it checks what the job could have left outside its child's
memory (``Leftovers``) and says whether it is ready for the next.  Lecture connection: none;
this is the grader's machinery (``autograder/README.md``, "How a submission is graded").
"""
from __future__ import annotations

import json
import os
import sys

from .tester import run_job


def serve(control_fd: int, result_fd: int) -> int:
    """A trusted process that grades one submission after another (``trusted.Tester``), each
    in a child forked for that job: a job a line on stdin; with each, the four pipe ends of that
    submission (the channel's two, the interrupt, the code sandbox's replies) arrive over the
    control socket (``SCM_RIGHTS``), since every submission has a new student process.  This process imports the grading code once and
    never runs a job itself, so every job starts from the same untouched state, and nothing a
    job changes in its memory (a module's object, the environment, numpy's state) outlives its
    child.  After each job it checks what the job could have left outside its memory
    (``Leftovers``) and writes ``{"ready": true}`` only when nothing is: then the grader may give
    it the next job; otherwise it writes ``{"ready": false}`` and ends.  A child that ends without
    finishing its job (killed, crashed) ends this process too, so that the grader sees the result
    pipe close, as it would for a process of its own.  Stdin closed: no more jobs."""
    import gc
    import socket
    out = os.fdopen(result_fd, "w", encoding="utf-8")
    events = _writer(out)
    control = socket.socket(fileno=control_fd)
    leftovers = Leftovers()
    gc.freeze()      # the imports stay shared with the children instead of copied by the GC
    for line in sys.stdin:
        job = json.loads(line)
        _, fds, _, _ = socket.recv_fds(control, 16, 4)
        if len(fds) != 4:
            for fd in fds:
                os.close(fd)
            break
        try:
            pid = os.fork()
        except OSError:
            pid = None
        if pid == 0:
            _job_child(control, job, fds, out)
        for fd in fds:
            os.close(fd)
        if pid is None:
            break
        _, status = os.waitpid(pid, 0)
        clean = leftovers.clear() and status == 0
        events({"ready": clean})
        if not clean:
            break
    out.close()
    return 0


def _job_child(control, job: dict, fds, out) -> None:
    """The forked child of ``serve``: one job, then ``os._exit`` (0 once its result is written)."""
    code = 1
    try:
        control.close()
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)     # the next jobs are not its to read
        np = sys.modules.get("numpy")
        if np is not None:
            np.random.seed()        # a fresh process's global state, not the parent's copy
        run_job(job, *fds, _writer(out))
        out.flush()
        code = 0
    finally:
        os._exit(code)


class Leftovers:
    """What a job could leave outside its child's memory, checked after each job (``serve``).

    No test should start a process or write outside its working folder and ``TMPDIR``, and no
    answer code ever runs here (``tester.code_runs_in_a_sandbox_of_its_own``); this checks that it
    stayed so.  Processes: this process is made a child subreaper, so a job's descendant that
    outlives it (a daemon that left its session) becomes a child of this one and is found, killed,
    and the process retires.  Files: in the folders only this run can write (its scratch folder; in
    the sandbox all of its private tmpfs folders, ``LREACT_PRIVATE_DIRS``, but the read-only kit)
    every file or folder that was not there before the first job is removed; the process retires
    when one cannot be removed, or when one that was there changed (its mode, inode or change time,
    which ``os.utime`` cannot set back; a folder's entries may change)."""

    def __init__(self):
        try:
            import ctypes
            ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
        except Exception:  # noqa: BLE001 - not Linux: descendants are not followed
            pass
        roots = [os.environ.get("LREACT_SCRATCH")]
        roots += (os.environ.get("LREACT_PRIVATE_DIRS") or "").split(os.pathsep)
        self.roots = sorted({os.path.realpath(r) for r in roots if r and os.path.isdir(r)})
        kit = os.environ.get("LREACT_KIT")
        self.skip = os.path.realpath(kit) if kit else None
        self.before = self.files()

    def files(self) -> dict:
        found = {}
        for root in self.roots:
            for folder, dirs, names in os.walk(root):
                if self.skip is not None:
                    dirs[:] = [d for d in dirs if os.path.join(folder, d) != self.skip]
                for name in dirs + names:
                    path = os.path.join(folder, name)
                    try:
                        st = os.lstat(path)
                    except OSError:
                        continue
                    found[path] = (st.st_mode, st.st_ino) + (
                        () if _is_folder(path) else (st.st_size, st.st_mtime_ns, st.st_ctime_ns))
        return found

    def clear(self) -> bool:
        """Remove what the job left; False when this process must not serve another job."""
        import shutil
        import signal as signals
        clean = True
        for pid in self.children():
            clean = False
            try:
                os.kill(pid, signals.SIGKILL)
            except OSError:
                pass
        for path, seen in self.files().items():
            if path not in self.before:
                if _is_folder(path):
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    try:
                        os.unlink(path)
                    except OSError:
                        pass
            elif seen != self.before[path]:
                clean = False
        return clean and self.files() == self.before

    @staticmethod
    def children() -> list:
        """This process's children still running or not yet reaped (reaped here)."""
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
        me, found = os.getpid(), []
        for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/stat", "rb") as f:
                        ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
                except (OSError, ValueError, IndexError):
                    continue
                if ppid == me:
                    found.append(int(entry))
        return found


def _is_folder(path: str) -> bool:
    return os.path.isdir(path) and not os.path.islink(path)


def _writer(out):
    def events(obj):
        out.write(json.dumps(obj) + "\n")
        out.flush()
    return events
