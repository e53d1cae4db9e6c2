"""The two sandboxed processes of one grading run, and a pool of them started ahead of time.

A ``Pair`` is a student process and a trusted process joined by the channel's two pipes, each in
its own sandbox run (``sandbox.launch``: its own user, cgroup and wall clock), both waiting for
their job on stdin with their imports done.  ``Pair.run(student_job, tester_job)`` gives them
their jobs and returns the trusted process's result: the parent only ever reads that.
``ProcessPool`` keeps a few pairs warm while a class is graded; its state is its own.
"""
from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import threading
import time

from . import kit as kits
from . import paths, sandbox

CPU_SECONDS = 1200          # CPU-time backstop per process; the wall clocks act first
RESULT_LIMIT = 256 * 1024 * 1024


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
    for var in ("LREACT_MODEL", "LREACT_GRADER_DEBUG"):
        if var in os.environ:
            env[var] = os.environ[var]
    env.update(extra or {})
    return env


def _debug_stderr():
    """A grading process's own stderr: hidden unless LREACT_GRADER_DEBUG=1."""
    return None if os.environ.get("LREACT_GRADER_DEBUG") == "1" else subprocess.DEVNULL


class Pair:
    """A started student process and trusted process, joined by the channel."""

    def __init__(self, state: paths.State, mode: str):
        self.mode = mode
        kit = kits.build(state)
        t2s = os.pipe()
        s2t = os.pipe()
        res = os.pipe()
        stop = os.pipe()          # the tester interrupts a late answer (student.Interrupts)
        self.result_fd = res[0]
        self.runs, self.procs = [], []
        child_fds = [t2s[0], s2t[1], s2t[0], t2s[1], res[1], stop[0], stop[1]]
        try:
            answers = kit / "answers-lreact"
            s = sandbox.launch(kit, sys.executable,
                               ["student", str(t2s[0]), str(s2t[1]), str(stop[0])],
                               mode=mode, cpu_seconds=CPU_SECONDS, scratch_base=state.scratch,
                               overlays=[(answers / "lreact", kits.lreact_dir())])
            self.runs.append(s)
            inside = s.runner.parent / "answers-lreact"
            self.procs.append(self._start(s, (t2s[0], s2t[1], stop[0]),
                                          {"PYTHONPATH": str(inside)}))
            t = sandbox.launch(kit, sys.executable,
                               ["tester", str(s2t[0]), str(t2s[1]), str(res[1]), str(stop[1])],
                               mode=mode, cpu_seconds=CPU_SECONDS, scratch_base=state.scratch)
            self.runs.append(t)
            self.procs.append(self._start(t, (s2t[0], t2s[1], res[1], stop[1]), {}))
        except BaseException:
            os.close(self.result_fd)
            self.cleanup()
            raise
        finally:
            for fd in child_fds:
                os.close(fd)
        self.notes = []
        for run in self.runs:
            for note in run.notes:
                if note not in self.notes:
                    self.notes.append(note)

    @staticmethod
    def _start(run, fds, extra):
        return subprocess.Popen(
            run.cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=_debug_stderr(),
            pass_fds=fds, env=scratch_env(run.scratch, extra),
            cwd=str(run.runner.parent) if run.host_scratch else "/", start_new_session=True)

    def alive(self) -> bool:
        return all(p.poll() is None for p in self.procs)

    def run(self, student_job: dict, tester_job: dict, wall_seconds: float):
        """Give both processes their jobs; the trusted process's result (None: no result in
        time, or none at all)."""
        student_run, tester_run = self.runs
        for run, proc, job in ((student_run, self.procs[0], student_job),
                               (tester_run, self.procs[1], tester_job)):
            run.wall_seconds = wall_seconds
            run.start_clock(proc)
            try:
                proc.stdin.write(json.dumps(job).encode("utf-8"))
                proc.stdin.close()
            except OSError:
                pass
        deadline = time.monotonic() + wall_seconds
        buffer, size, result = b"", 0, None
        sel = selectors.DefaultSelector()
        sel.register(self.result_fd, selectors.EVENT_READ)
        try:
            while result is None:
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(timeout=left):
                    break
                chunk = os.read(self.result_fd, 1 << 20)
                if not chunk:
                    break
                size += len(chunk)
                if size > RESULT_LIMIT:
                    break
                buffer += chunk
                while b"\n" in buffer and result is None:
                    line, buffer = buffer.split(b"\n", 1)
                    try:
                        event = json.loads(line)
                    except ValueError:
                        continue
                    if event.get("event") == "stop_student":
                        student_run.kill()
                    elif "result" in event:
                        result = event["result"]
        finally:
            sel.close()
        return result

    def cleanup(self) -> None:
        for run in self.runs:
            run.cleanup()
        for proc in self.procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.close(self.result_fd)
        except OSError:
            pass


class ProcessPool:
    """Pairs started ahead of time: ``take`` hands one out and starts its replacement."""

    def __init__(self, state: paths.State | None = None, size: int = 0):
        self.state = paths.state(state)
        self.size = max(0, int(size))
        self._lock = threading.Lock()
        self._waiting: list = []

    def resize(self, size: int) -> None:
        self.size = max(0, int(size))

    def take(self, mode: str) -> Pair:
        with self._lock:
            found = next((p for p in self._waiting if p.mode == mode and p.alive()), None)
            if found:
                self._waiting.remove(found)
            refill = self.size > 0
        if refill:
            threading.Thread(target=self._refill, args=(mode,), daemon=True).start()
        return found or Pair(self.state, mode)

    def _refill(self, mode: str) -> None:
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
                return
        pair.cleanup()

    def drain(self) -> None:
        with self._lock:
            self.size = 0
            waiting, self._waiting = self._waiting, []
        for pair in waiting:
            pair.cleanup()


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
    pool = ProcessPool(state, size=min(jobs, len(items)))
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
