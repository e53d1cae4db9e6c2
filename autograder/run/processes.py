"""How a grading process is started, and the grader's handle on a trusted process.

``start`` starts either process of a run (``sandbox.launch``) waiting for its job on stdin, with
an environment in which everything writable is its own scratch folder (``scratch_env``).

``TrustedProcess`` is the grader's side of the trusted process (``autograder/inside/trusted.py``
is the process itself): started ahead, it grades submission after submission, each in a child
forked from its untouched state, so nothing one submission changes in its memory reaches the
next.  It never runs student code: it runs the instructor's cells and calls the student process
over the channel, and code a test judges runs in a sandbox run of its own (``code_runs.py``).
What its children share is the run (sandbox, cgroup, limits): after each job the process removes
what the job added and retires if the job left a process or changed a file
(``inside.trusted.Leftovers``), and the grader reuses it only once it says so
(``TrustedProcess.ready``).
"""
from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import sys
import time

from .. import paths
from ..sandbox import launch as sandbox
from ..sandbox.kit import lreact_dir

CPU_SECONDS = 1200          # CPU-time backstop per process; the wall clocks act first
READY_SECONDS = 10          # after a result, to say that nothing was left behind


def scratch_env(scratch, extra=None) -> dict:
    """The environment of a grading process: everything writable lives in its scratch folder."""
    scratch = str(scratch)
    env = {
        "PATH": os.pathsep.join([os.path.dirname(sys.executable), "/usr/local/bin", "/usr/bin",
                                 "/bin"]),
        "HOME": scratch, "TMPDIR": os.path.join(scratch, "tmp"), "LANG": "C.UTF-8",
        "MPLBACKEND": "Agg", "MPLCONFIGDIR": os.path.join(scratch, ".mpl"),
        "IPYTHONDIR": os.path.join(scratch, ".ipython"),
        "XDG_CACHE_HOME": os.path.join(scratch, ".cache"), "PYTHONDONTWRITEBYTECODE": "1",
        "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
        "LREACT_GRADING": "1", "LREACT_SCRATCH": scratch,
    }
    # the lreact the grader imports, however it is installed (editable or not, a checkout of
    # its own): the sandbox shows only that folder (the answers' process gets its copy first)
    env["PYTHONPATH"] = str(lreact_dir().parent)
    for var in ("LREACT_MODEL", "LREACT_GRADER_DEBUG"):
        if var in os.environ:
            env[var] = os.environ[var]
    env.update(extra or {})
    return env


def debug_stderr():
    """A grading process's own stderr: hidden unless LREACT_GRADER_DEBUG=1."""
    return None if os.environ.get("LREACT_GRADER_DEBUG") == "1" else subprocess.DEVNULL


def start(run, fds, extra) -> subprocess.Popen:
    """Start a grading process of ``run`` (``sandbox.launch``) waiting for its job on stdin."""
    return subprocess.Popen(
        run.cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=debug_stderr(),
        pass_fds=fds, env=scratch_env(run.scratch, extra),
        cwd=str(run.runner.parent) if run.host_scratch else "/", start_new_session=True)


class TrustedProcess:
    """A trusted process that serves its jobs one after another, each in a forked child
    (``inside.trusted.serve``; see the module docstring).

    It runs the instructor's cells and calls the student process over the channel.  Each job
    brings the ends of a new student process's channel over a control socket and gets a wall
    clock of its own.  It is used again only after a job that gave its result in time with
    nothing stopped or failed and after which it said it was ready (nothing left behind:
    ``inside.trusted.Leftovers``), and retired after ``MAX_JOBS`` jobs or once its run has used half of
    its CPU backstop or memory."""

    MAX_JOBS = 100

    def __init__(self, state: paths.State, mode: str, kit):
        self.mode, self.jobs, self.buffer, self.healthy = mode, 0, b"", True
        res = os.pipe()
        control, inside = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.result_fd, self.control = res[0], control
        try:
            self.run = sandbox.launch(kit, sys.executable,
                                      ["tester-reused", str(inside.fileno()), str(res[1])],
                                      mode=mode, cpu_seconds=CPU_SECONDS,
                                      scratch_base=state.scratch)
            private = {} if self.run.host_scratch else {   # what only this run sees and writes
                "LREACT_PRIVATE_DIRS": os.pathsep.join([str(sandbox.INSIDE), "/tmp", "/dev/shm"]),
                "LREACT_KIT": str(self.run.runner.parent)}
            try:
                self.proc = start(self.run, (inside.fileno(), res[1]), private)
            except BaseException:
                self.run.cleanup()
                raise
        except BaseException:
            os.close(res[0])
            control.close()
            raise
        finally:
            os.close(res[1])
            inside.close()

    def alive(self) -> bool:
        return self.healthy and self.proc.poll() is None

    def reusable(self) -> bool:
        if not self.alive() or self.jobs >= self.MAX_JOBS or self.run.timed_out:
            return False
        used = self.run.usage()
        if used is None:
            return True
        return ((used.cpu_seconds or 0) < CPU_SECONDS / 2
                and (used.memory_bytes or 0) < sandbox.RUN_MEMORY_BYTES / 2)

    def ready(self, seconds: float = READY_SECONDS) -> bool:
        """After a job's result: whether the process says it found nothing left behind and can
        take the next job (``inside.trusted.serve`` writes ``{"ready": ...}``); anything else, or nothing
        within ``seconds``: no."""
        deadline = time.monotonic() + seconds
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.result_fd], [], [], left)[0]:
                return False
            chunk = os.read(self.result_fd, 4096)
            if not chunk:
                return False
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        try:
            said = json.loads(line)
        except ValueError:
            return False
        return said == {"ready": True} and not self.buffer

    def send(self, job: dict, fds) -> None:
        """Give the process its next job and that job's three channel ends."""
        self.jobs += 1
        socket.send_fds(self.control, [b"j"], list(fds))
        self.proc.stdin.write(json.dumps(job).encode("utf-8") + b"\n")
        self.proc.stdin.flush()

    def cleanup(self) -> None:
        self.healthy = False
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        self.run.cleanup()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        self.control.close()
        try:
            os.close(self.result_fd)
        except OSError:
            pass
