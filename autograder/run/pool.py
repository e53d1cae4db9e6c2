"""The two sandboxed processes of one grading run, and a pool of them started ahead of time.

A ``Pair`` is a student process and a trusted process joined by the channel's two pipes, each in
its own sandbox run (``sandbox.launch``: its own user, cgroup and wall clock), both waiting for
their job with their imports done.  ``Pair.run(student_job, tester_job)`` gives them their jobs
and returns the trusted process's result: the parent only ever reads that.
``ProcessPool`` keeps a few student processes warm while a class is graded, and reuses the
trusted processes (``TrustedProcess``), one per worker: a student process serves one submission and
ends; a trusted process, which never runs student code, goes on to the next one, grading each
in a child forked from its untouched state (``processes.py``, ``inside/trusted.py``).
"""
from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import threading
import time

from .. import paths
from ..sandbox import kit as kits
from ..sandbox import launch as sandbox
from .code_runs import CodeRuns
from .processes import CPU_SECONDS, TrustedProcess, scratch_env, start  # noqa: F401 - scratch_env re-exported

RESULT_LIMIT = 256 * 1024 * 1024


class Pair:
    """A started student process and a trusted process, joined by the channel.

    The student process is new for every submission.  The trusted process comes from the pool
    (``attach``), a ``TrustedProcess`` that may have graded other submissions before."""

    def __init__(self, state: paths.State, mode: str):
        self.mode, self.state = mode, state
        self.kit = kits.build(state)
        t2s = os.pipe()
        s2t = os.pipe()
        stop = os.pipe()          # the tester interrupts a late answer (student.Interrupts)
        self.code_runs = CodeRuns(mode, state.scratch)   # the tests' code actions, run here
        # sent to the tester with its job: the channel's ends, the interrupt, the code replies
        self.tester_fds = (s2t[0], t2s[1], stop[1], self.code_runs.read_fd)
        self.tester, self.pool, self.result = None, None, None
        self.runs, self.procs = [], []
        try:
            answers = self.kit / "answers-lreact"
            s = sandbox.launch(self.kit, sys.executable,
                               ["student", str(t2s[0]), str(s2t[1]), str(stop[0])],
                               mode=mode, cpu_seconds=CPU_SECONDS, scratch_base=state.scratch,
                               overlays=[(answers / "lreact", kits.lreact_dir())])
            self.runs.append(s)
            inside = s.runner.parent / "answers-lreact"
            self.procs.append(start(s, (t2s[0], s2t[1], stop[0]),
                                          {"PYTHONPATH": os.pathsep.join(
                                              [str(inside), str(kits.lreact_dir().parent)])}))
        except BaseException:
            self._close_tester_fds()
            self.cleanup()
            raise
        finally:
            for fd in (t2s[0], s2t[1], stop[0]):
                os.close(fd)
        self.notes = list(s.notes)

    def attach(self, tester: TrustedProcess, pool=None) -> None:
        """The trusted process of this run (``pool``: where it goes back after a good job)."""
        self.tester, self.pool = tester, pool
        self.runs[1:] = [tester.run]
        self.procs[1:] = [tester.proc]
        for note in tester.run.notes:
            if note not in self.notes:
                self.notes.append(note)

    def _close_tester_fds(self) -> None:
        for fd in self.tester_fds[:3]:
            try:
                os.close(fd)
            except OSError:
                pass
        self.code_runs.close_read_end()
        self.tester_fds = ()

    def alive(self) -> bool:
        return all(p.poll() is None for p in self.procs)

    def run(self, student_job: dict, tester_job: dict, wall_seconds: float):
        """Give both processes their jobs; the trusted process's result (None: no result in
        time, or none at all)."""
        if self.tester is None:
            self.attach(TrustedProcess(self.state, self.mode, self.kit))
        student_run, tester = self.runs[0], self.tester
        student_run.wall_seconds = wall_seconds
        student_run.start_clock(self.procs[0])
        try:
            self.procs[0].stdin.write(json.dumps(student_job).encode("utf-8"))
            self.procs[0].stdin.close()
        except OSError:
            pass
        tester.run.restart_clock(wall_seconds, tester.proc)
        try:
            tester.send(tester_job, self.tester_fds)
        except OSError:
            tester.healthy = False
        finally:
            self._close_tester_fds()
        deadline = time.monotonic() + wall_seconds
        buffer, size, result = tester.buffer, 0, None
        sel = selectors.DefaultSelector()
        sel.register(tester.result_fd, selectors.EVENT_READ)
        try:
            while result is None and tester.healthy:
                while b"\n" in buffer and result is None:
                    line, buffer = buffer.split(b"\n", 1)
                    try:
                        event = json.loads(line)
                    except ValueError:
                        continue
                    if event.get("event") == "stop_student":
                        student_run.kill()
                    elif event.get("event") == "run_code":
                        self.code_runs.start(event)
                    elif "result" in event:
                        result = event["result"]
                if result is not None:
                    break
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(timeout=left):
                    break
                chunk = os.read(tester.result_fd, 1 << 20)
                if not chunk:
                    break
                size += len(chunk)
                if size > RESULT_LIMIT:
                    break
                buffer += chunk
        finally:
            sel.close()
        tester.run.stop_clock()
        tester.buffer = buffer
        self.result = result
        return result

    def cleanup(self) -> None:
        self._close_tester_fds()
        self.code_runs.close()
        if self.runs:
            self.runs[0].cleanup()
        if self.procs:
            try:
                self.procs[0].wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        tester, self.tester = self.tester, None
        if tester is None:
            return
        good = (self.result is not None and not self.result.get("failure")
                and not self.result.get("stopped") and self.pool is not None)
        if good and tester.ready() and tester.reusable():
            self.pool.give_back(tester)
        else:
            tester.cleanup()


class ProcessPool:
    """Student processes started ahead of time (``take`` hands one out and starts its
    replacement), and the trusted processes (``TrustedProcess``) that go back and forth between runs.
    With ``size`` 0 nothing is kept: every run starts both processes and ends them.
    ``runs``: how many runs at most will be asked for (None: not known); no process is
    started ahead for a run that will not come."""

    def __init__(self, state: paths.State | None = None, size: int = 0, runs: int | None = None):
        self.state = paths.state(state)
        self.size = max(0, int(size))
        self.runs_left = runs
        self._lock = threading.Lock()
        self._waiting: list = []
        self._testers: list = []      # idle trusted processes

    def resize(self, size: int) -> None:
        self.size = max(0, int(size))

    def take(self, mode: str) -> Pair:
        with self._lock:
            found = next((p for p in self._waiting if p.mode == mode and p.alive()), None)
            if found:
                self._waiting.remove(found)
            if self.runs_left is not None:
                self.runs_left -= 1
            refill = self.size > 0 and (self.runs_left is None or self.runs_left > len(
                [p for p in self._waiting if p.mode == mode]))
        if refill:
            threading.Thread(target=self._refill, args=(mode,), daemon=True).start()
        pair = found or Pair(self.state, mode)
        try:
            tester = self._idle_tester(mode) or TrustedProcess(self.state, mode, pair.kit)
            pair.attach(tester, self if self.size else None)
        except BaseException:
            pair.cleanup()
            raise
        return pair

    def _idle_tester(self, mode: str) -> TrustedProcess | None:
        with self._lock:
            for tester in list(self._testers):
                self._testers.remove(tester)
                if tester.mode == mode and tester.alive():
                    return tester
                threading.Thread(target=tester.cleanup, daemon=True).start()
        return None

    def give_back(self, tester: TrustedProcess) -> None:
        with self._lock:
            if self.size and len(self._testers) < self.size:
                self._testers.append(tester)
                return
        tester.cleanup()

    def _refill(self, mode: str) -> None:
        """Start a student process ahead for the next run.  Trusted processes are not started
        here: each worker's first run starts one (``take``) and every later run reuses it."""
        with self._lock:
            if sum(1 for p in self._waiting if p.mode == mode) >= self.size:
                return
        try:
            pair = Pair(self.state, mode)
        except Exception:  # noqa: BLE001 - the next run simply starts cold
            return
        with self._lock:
            if self.size and len(self._waiting) < self.size:
                self._waiting.append(pair)
                pair = None
        if pair is not None:
            pair.cleanup()

    def drain(self) -> None:
        with self._lock:
            self.size = 0
            waiting, self._waiting = self._waiting, []
            testers, self._testers = self._testers, []
        for pair in waiting:
            pair.cleanup()
        for tester in testers:
            tester.cleanup()


def in_pool(state, jobs: int, items: list, work, *, desc: str, progress: bool) -> list:
    """``[work(item, run) for item in items]`` on ``jobs`` threads that share one
    ``ProcessPool`` of warm sandboxed pairs (``run`` carries it), with a progress bar on
    stderr; the results in the order of ``items`` (grade and the feedback runs use it)."""
    from concurrent.futures import ThreadPoolExecutor

    if not items:
        return []
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=len(items), desc=desc, unit="submission", file=sys.stderr)
    pool = ProcessPool(state, size=min(jobs, len(items)), runs=len(items))
    run = {"pool": pool, "state": state}
    out = []
    try:
        with ThreadPoolExecutor(max_workers=jobs) as workers:
            for future in [workers.submit(work, item, run) for item in items]:
                out.append(future.result())
                if bar:
                    bar.update(1)
    finally:
        pool.drain()
        if bar:
            bar.close()
    return out
