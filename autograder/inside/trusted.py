"""The trusted process's loop: one submission after another, each graded in a child forked for it.

A trusted process (``run.processes.TrustedProcess`` starts it; ``runner.py tester-reused``) imports the grading
code once, then serves jobs: for each, it forks a child that runs the job (``inside.trusted.run_job``) and
ends, and never runs a job itself, so every submission is graded by a fresh copy of the same
untouched process.  After each job it checks what the job could have left outside its child's
memory (``Leftovers``) and says whether it is ready for the next.  Lecture connection: none;
this is the grader's machinery (``autograder/README.md``, "How a submission is graded").
"""
from __future__ import annotations

import json
import os
import sys
import time

from .channel.pipe import Pipe
from .output import first_line
from .trusted_namespace import TrustedNamespace, names_read


def serve(control_fd: int, result_fd: int) -> int:
    """A trusted process that grades one submission after another (the grader's ``run.processes.TrustedProcess``), each
    in a child forked for that job: a job a line on stdin; with each, the four pipe ends of that
    submission (the channel's two, the interrupt, the code sandbox's replies) arrive over the
    control socket (``SCM_RIGHTS``), since every submission has a new student process.  This
    process imports the grading code once and never runs a job itself, so every job starts from the same untouched state, and nothing a
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


def run_job(job: dict, rfd: int, wfd: int, interrupt_fd, code_fd, events) -> None:
    """Every cell of ``job`` in notebook order; the result is the last event written.
    ``code_fd``: where the grader's replies to code actions arrive
    (``code_runs_in_a_sandbox_of_its_own``)."""
    cwd = job.get("cwd") or "."
    os.makedirs(cwd, exist_ok=True)
    os.chdir(cwd)
    tests = TrustedNamespace(Pipe(rfd, wfd), events, job.get("timeout", 60), interrupt_fd)
    code_runs_in_a_sandbox_of_its_own(events, code_fd)
    read_by_tests = names_read(c["source"] for c in job["cells"] if c["role"] in ("setup", "test"))
    results = {}
    failure = None
    started = time.monotonic()
    try:
        for cell in job["cells"]:
            index, role = int(cell["index"]), cell["role"]
            if role in ("student", "setup"):
                results[index] = tests.run_student(index)
            if role == "setup":
                here = tests.run_here(cell["source"], f"<setup cell {index}>")
                tests.protect_own_names()
                if not here["ok"]:
                    failure = failure or f"the setup cell {index} failed: {here['error']}"
            elif role == "test":
                tests.watch_names(read_by_tests)
                results[index] = tests.run_here(cell["source"],
                                                f"<test cell {cell.get('grade_id')}>")
                tests.link.on_names = None
                tests.protect_own_names()
            if index in results:
                results[index]["seconds"] = round(time.monotonic() - started, 3)
            started = time.monotonic()
    except BaseException as e:  # noqa: BLE001 - report, never end without a result
        failure = f"grader error: {type(e).__name__}: {first_line(str(e))}"
    try:
        tests.link.pipe.send({"k": "q", "op": "bye"})
    except BaseException:  # noqa: BLE001
        pass
    events({"result": {"cells": {str(k): v for k, v in results.items()},
                       "failure": failure, "stopped": tests.stopped}})


CODE_REPLY_MARGIN = 30.0   # seconds the grader may take beyond a code action's own time limit


def code_runs_in_a_sandbox_of_its_own(events, reply_fd) -> None:
    """Code that comes from an answer (Exercise 11's ``code_action`` string, the code a test runs
    to judge a student's code tool) runs in a sandbox of its own, started by the grader for that
    one run, never in this process's sandbox and never in the answers' process: here the course's
    code sandbox, ``lreact.actions.codeact.run_python`` (also ``lreact.run_python``), sends the request
    to the grader (an event on the result pipe) and reads the plain result from ``reply_fd``.
    The answers' process cannot reach either pipe, so it cannot decide what a test sees of a code
    action (an outside review had an answer cell replace ``run_python`` in its own process and
    pass a wrong ``code_action``).  Handed to an answer, ``run_python`` still crosses by name
    (``codec.SHARED_FUNCTIONS``): the answer runs its own copy.  Set in each job's own child."""
    import lreact
    import lreact.actions.codeact as codeact

    local = codeact.run_python
    replies = os.fdopen(reply_fd, "rb", buffering=0)

    def run_python(code, *, timeout, memory=codeact.DEFAULT_MEMORY,
                   max_output=codeact.DEFAULT_MAX_OUTPUT, prelude="", sandbox="auto"):
        code, timeout, memory, max_output, prelude, _ = codeact.checked_arguments(
            code, timeout, memory, max_output, prelude, sandbox)
        events({"event": "run_code", "code": code, "prelude": prelude, "timeout": timeout,
                "memory": memory, "max_output": max_output})
        return _code_reply(replies, timeout + CODE_REPLY_MARGIN)

    run_python.__doc__, run_python.lreact_local = local.__doc__, local
    codeact.run_python = lreact.run_python = run_python


def _code_reply(replies, seconds: float) -> dict:
    """The grader's reply to one code action: its result dict, or RuntimeError saying why not."""
    import select
    deadline, line = time.monotonic() + seconds, b""
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([replies], [], [], left)[0]:
            raise RuntimeError(f"the code sandbox gave no result within {seconds:g} s")
        chunk = replies.read(1 << 16)
        if not chunk:
            raise RuntimeError("the code sandbox is gone (the grader closed it)")
        line += chunk
    reply = json.loads(line)
    if "error" in reply:
        raise RuntimeError(f"the code sandbox could not run the code: {reply['error']}")
    return reply["result"]


class Leftovers:
    """What a job could leave outside its child's memory, checked after each job (``serve``).

    No test should start a process or write outside its working folder and ``TMPDIR``, and no
    answer code ever runs here (``inside.trusted.code_runs_in_a_sandbox_of_its_own``); this checks that it
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


def preload() -> None:
    """What every run needs, imported before the job arrives (a warm process)."""
    import jsonschema  # noqa: F401
    import matplotlib.pyplot  # noqa: F401 - the lab's setup cell imports it
    import numpy  # noqa: F401
    from IPython.core.inputtransformer2 import TransformerManager  # noqa: F401

    import lreact  # noqa: F401
    import lreact.checks  # noqa: F401
    import lreact.labchecks  # noqa: F401
    import lreact.reference  # noqa: F401
