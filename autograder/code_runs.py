"""Code actions a test asks for, run by the grader, each in a sandbox of its own.

A test that judges code an answer gave (Exercise 11's ``code_action`` string, lab 2's check of a
student's code tool) runs it with the course's code sandbox, ``lreact.codeact.run_python``.
That run must be out of reach of both grading processes: beside the tests it could read the
reference implementations and leave processes or files behind; in the answers' process the
answer cell decides what comes back (an outside review replaced ``run_python`` there and a wrong
``code_action`` scored 3/3).  So the trusted process asks the grader (``tester.
code_runs_in_a_sandbox_of_its_own``: an event on the result pipe) and the grader runs the code
here, in a fresh ``run_python`` sandbox (bubblewrap: no network, its own process namespace and
user id, no course files; with the grader's sandbox mode), and writes the plain result to a pipe
that only the trusted process reads.  Lecture connection: Part III, "Specific tools vs a code
tool"; the grader's side of it (``autograder/README.md``, "How a submission is graded").
"""
from __future__ import annotations

import json
import os
import threading

MAX_RUNS = 200           # code actions one submission's tests may ask for


class CodeRuns:
    """The grader's side of one submission's code actions: ``read_fd`` goes to the trusted
    process with its job; ``start(event)`` runs one request in a thread and writes its reply."""

    def __init__(self, mode: str):
        self.sandbox = {"require": "require", "off": "off"}.get(mode, "auto")
        self.read_fd, write_fd = os.pipe()
        self._out = os.fdopen(write_fd, "wb", buffering=0)
        self._lock = threading.Lock()
        self.count = 0

    def start(self, event: dict) -> None:
        self.count += 1
        threading.Thread(target=self._run, args=(event, self.count), daemon=True).start()

    def _run(self, event: dict, number: int) -> None:
        from lreact.codeact import run_python
        try:
            if number > MAX_RUNS:
                raise RuntimeError(f"more than {MAX_RUNS} code actions in one submission")
            result = run_python(event.get("code"), timeout=event.get("timeout"),
                                memory=event.get("memory"), max_output=event.get("max_output"),
                                prelude=event.get("prelude"), sandbox=self.sandbox)
            reply = {"result": result}
        except Exception as e:  # noqa: BLE001 - every failure is a reply the test sees
            reply = {"error": f"{type(e).__name__}: {e}"[:500]}
        with self._lock:
            if self._out is not None:
                try:
                    self._out.write(json.dumps(reply).encode("utf-8") + b"\n")
                except OSError:
                    pass

    def close_read_end(self) -> None:
        """The trusted process holds its copy of ``read_fd`` (sent with the job)."""
        if self.read_fd is not None:
            os.close(self.read_fd)
            self.read_fd = None

    def close(self) -> None:
        """No more replies: a run still under way writes nothing (its fd is not reused)."""
        self.close_read_end()
        with self._lock:
            out, self._out = self._out, None
        if out is not None:
            out.close()
