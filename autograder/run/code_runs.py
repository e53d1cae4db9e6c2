"""Code actions a test asks for, run by the grader, each in a sandbox run of its own.

A test that judges code an answer gave (Exercise 11's ``code_action`` string, lab 2's check of a
student's code tool) runs it with the course's code sandbox, ``lreact.actions.codeact.run_python``.
That run must be out of reach of both grading processes: beside the tests it could read the
reference implementations and leave processes or files behind; in the answers' process the
answer cell decides what comes back (an outside review replaced ``run_python`` there and a wrong
``code_action`` scored 3/3).  So the trusted process asks the grader (an event on the result
pipe: ``inside/trusted.py``, ``code_runs_in_a_sandbox_of_its_own``) and the grader runs the code
as a grading run of its own (``sandbox.launch``): bubblewrap with no network, its own process
namespace and user id, and ``lreact`` hidden; a cgroup of its own (one CPU core, a memory cap for
all its processes, ``MAX_PROCESSES``) and its own wall clock, all of it killed when the code
action ends, and at the latest when the submission's run ends (``close``).  The result goes to a
pipe that only the trusted process reads.  (A second review found the first version, which ran
``run_python`` in the grader's own process, unconfined by any cgroup: 17 processes, 2.5 GB and
1.8 cores slowed the submission graded beside it.)  Lecture connection: Part III, "Specific tools
vs a code tool"; the grader's side of it (``autograder/README.md``, "How a submission is
graded").
"""
from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from lreact.actions import codeact

from ..sandbox import launch as sandbox
from ..sandbox.kit import lreact_dir

MAX_RUNS = 200           # code actions one submission's tests may ask for
MAX_PROCESSES = 32       # processes (and threads) of one code action, all together
MEMORY_BYTES = 2 * sandbox.TMPFS_BYTES   # one code action's processes and tmpfs, together


class CodeRuns:
    """The grader's side of one submission's code actions: ``read_fd`` goes to the trusted
    process with its job; ``start(event)`` runs one request in a thread and writes its reply;
    ``close()`` ends every run still going."""

    def __init__(self, mode: str, scratch_base: Path):
        self.mode, self.scratch_base = mode, scratch_base
        self.read_fd, write_fd = os.pipe()
        self._out = os.fdopen(write_fd, "wb", buffering=0)
        self._lock = threading.Lock()
        self._runs: dict = {}            # id -> sandbox run under way
        self.count = 0
        self.usages: list = []           # each finished run's cgroup.Usage (None: no cgroup)

    def start(self, event: dict) -> None:
        self.count += 1
        threading.Thread(target=self._serve, args=(event, self.count), daemon=True).start()

    def _serve(self, event: dict, number: int) -> None:
        try:
            if number > MAX_RUNS:
                raise RuntimeError(f"more than {MAX_RUNS} code actions in one submission")
            reply = {"result": self.run(event)}
        except Exception as e:  # noqa: BLE001 - every failure is a reply the test sees
            reply = {"error": f"{type(e).__name__}: {e}"[:500]}
        with self._lock:
            if self._out is not None:
                try:
                    self._out.write(json.dumps(reply).encode("utf-8") + b"\n")
                except OSError:
                    pass

    def run(self, event: dict) -> dict:
        """One code action, as ``run_python`` runs it, in a grading run of its own."""
        code, timeout, memory, max_output, prelude, _ = codeact.checked_arguments(
            event.get("code"), event.get("timeout"), event.get("memory"),
            event.get("max_output"), event.get("prelude"))
        Path(self.scratch_base).mkdir(parents=True, exist_ok=True)
        kit = Path(tempfile.mkdtemp(prefix="code-kit-", dir=self.scratch_base))
        empty = kit / "empty"
        run = None
        try:
            empty.mkdir()
            codeact.write_program(kit, code, prelude)
            for p in (kit, empty):
                os.chmod(p, 0o755)
            limits = codeact.limits_for(timeout, memory, MAX_PROCESSES)
            confined = self.mode != "off" and sandbox.bwrap_works()
            where = sandbox.INSIDE / "kit" if confined else kit
            run = sandbox.launch(kit, sys.executable, codeact.program_args(where, limits)[1:],
                                 mode=self.mode,
                                 cpu_seconds=int(math.ceil(timeout)) + 1,
                                 scratch_base=self.scratch_base, wall_seconds=timeout + 5,
                                 cpu_cores=1.0, memory_bytes=MEMORY_BYTES,
                                 max_processes=MAX_PROCESSES, overlays=[(empty, lreact_dir())])
            with self._lock:
                if self._out is None:
                    raise RuntimeError("the submission's run is over")
                self._runs[id(run)] = run
            started = time.monotonic()
            home = str(kit) if run.host_scratch else str(sandbox.INSIDE)
            proc = run.popen(stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, cwd=str(kit) if run.host_scratch else "/",
                             env=codeact.code_env(home))
            done = codeact.watch(proc, timeout, max_output, run.kill)
            return {**done, "seconds": round(time.monotonic() - started, 3),
                    "isolation": "bubblewrap" if not run.host_scratch else "limits only"}
        finally:
            if run is not None:
                run.cleanup()
                with self._lock:
                    self._runs.pop(id(run), None)
                    self.usages.append(run.final_usage)
            shutil.rmtree(kit, ignore_errors=True)

    def close_read_end(self) -> None:
        """The trusted process holds its copy of ``read_fd`` (sent with the job)."""
        if self.read_fd is not None:
            os.close(self.read_fd)
            self.read_fd = None

    def close(self) -> None:
        """No more replies, and no code action outlives the submission's run: every run still
        going is killed (its cgroup, its user id's processes)."""
        self.close_read_end()
        with self._lock:
            out, self._out = self._out, None
            runs, self._runs = list(self._runs.values()), {}
        for run in runs:
            run.cleanup()
        if out is not None:
            out.close()
