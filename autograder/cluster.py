"""``grade SUBMISSIONS --cluster tcp://HOST:8786``: the gradings done by a Dask cluster's workers.

This machine (``Cluster``, the ``runner`` of ``grade.grade_all``) finds the submissions, takes
what it can from its own cache, and sends every other submission to the cluster as data: the
notebook's bytes, the source notebook's bytes, the grading options and the fingerprint of its
grading code (``grade.code_digests`` file by file, ``grade.versions``): the inputs of the cache
key.  A worker (``grade_remote``) first checks that its own grading code and libraries are
those (else it refuses, naming the files that differ) and that it can sandbox as
``LREACT_REQUIRE_SANDBOX=1`` demands; then it grades with ``grade.graded``, as the local pool
does (the same two sandboxed processes, from a ``pool.ProcessPool`` of its own, the same
limits), and returns the record as plain data.  This machine alone writes the cache, the
gradebook and the CSV.  A worker that dies mid-grading: the scheduler hands the task to another
worker (``distributed.scheduler.allowed-failures`` times); each task's result arrives once.
How to run the workers: README.md, "Grading on a cluster".
"""
from __future__ import annotations

import os
import sys
import tempfile
import threading
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from pathlib import Path

from . import grade, paths, sandbox
from .safetext import shown
from .submissions import Submission

SCHEDULER_VARIABLE = "LREACT_DASK_SCHEDULER"
CONNECT_SECONDS = 30        # reaching the scheduler
WORKERS_SECONDS = 120       # waiting for the first worker, and for every worker's check
SHOWN_FILES = 12            # files named in a refusal before "and N more"


class Refused(RuntimeError):
    """A worker that must not grade for this machine: other code, or no sandbox."""


# --- what both sides compare -------------------------------------------------------------

def identity() -> dict:
    """This machine's grading code file by file, and its library versions."""
    return {"code": grade.code_digests(), "versions": grade.versions()}


def differences(expected: dict, own: dict) -> list:
    """What differs between the instructor's ``identity()`` and this worker's, in words."""
    out = []
    theirs, mine = expected["code"], own["code"]
    for name in sorted(set(theirs) | set(mine)):
        if name not in mine:
            out.append(f"{name} (missing on the worker)")
        elif name not in theirs:
            out.append(f"{name} (only on the worker)")
        elif theirs[name] != mine[name]:
            out.append(f"{name} (changed)")
    want = dict(v.split("=", 1) for v in expected["versions"].split(";"))
    have = dict(v.split("=", 1) for v in own["versions"].split(";"))
    for lib in sorted(set(want) | set(have)):
        if want.get(lib) != have.get(lib):
            out.append(f"{lib} {have.get(lib, 'absent')} (the instructor has "
                       f"{want.get(lib, 'absent')})")
    return out


def worker_problem(expected: dict, mode: str = "auto") -> str:
    """Why this process must not grade for the instructor whose ``identity()`` is
    ``expected`` ("" when it may): its code or libraries differ, or it cannot sandbox."""
    found = differences(expected, identity())
    if found:
        more = f" and {len(found) - SHOWN_FILES} more" if len(found) > SHOWN_FILES else ""
        return ("its grading code differs from the instructor's: "
                + ", ".join(found[:SHOWN_FILES]) + more
                + "; run the worker from the instructor's commit of the repository, with "
                "`make setup` done there")
    if mode != "off":
        missing = [p for p in (sandbox.bwrap_problem(), sandbox.cgroup_problem()) if p]
        if missing:
            return ("it cannot sandbox a run, and a cluster worker must (as with "
                    "LREACT_REQUIRE_SANDBOX=1): " + "; ".join(missing))
    return ""


# --- the worker's side -------------------------------------------------------------------

_POOL: dict = {}
_POOL_LOCK = threading.Lock()


def _worker():
    from distributed import get_worker
    return get_worker()


def _pool():
    """This worker process's ``ProcessPool``: warm sandboxed pairs, one per worker thread."""
    from .pool import ProcessPool
    with _POOL_LOCK:
        if "pool" not in _POOL:
            worker = _worker()
            root = (os.environ.get("LREACT_GRADING_DIR")
                    or Path(worker.local_directory) / "lreact-grading")
            _POOL["pool"] = ProcessPool(paths.State(root), size=worker.state.nthreads)
        return _POOL["pool"]


def drain() -> None:
    """Stop this worker's warm pairs (the instructor calls it when the class is done)."""
    with _POOL_LOCK:
        pool = _POOL.pop("pool", None)
    if pool is not None:
        pool.drain()


def grade_remote(task: dict) -> dict:
    """On a worker: check, then grade one submission sent as data; its record, plain data."""
    mode = "require" if task["sandbox"] == "auto" else task["sandbox"]
    why = worker_problem(task["identity"], mode)
    if why:
        raise Refused(f"worker {_worker().address} refused to grade: {why}")
    pool = _pool()
    with tempfile.TemporaryDirectory(prefix="lreact-task-",
                                     dir=_worker().local_directory) as tmp:
        notebook, source = Path(tmp) / "submission.ipynb", Path(tmp) / "source.ipynb"
        notebook.write_bytes(task["notebook"])
        source.write_bytes(task["source"])
        sub = Submission(task["student"], task["assignment"], notebook, task["origin"])
        return grade.graded(sub, source, timeout=task["timeout"], sandbox=mode,
                            run={"pool": pool, "state": pool.state})


# --- this machine's side -----------------------------------------------------------------

class Cluster:
    """``grade_all``'s runner on the Dask scheduler at ``address`` (a ``tcp://`` address)."""

    def __init__(self, address: str, *, sandbox: str = "auto"):
        from distributed import Client
        self.address, self.sandbox = address, sandbox
        try:
            self.client = Client(address, timeout=CONNECT_SECONDS, set_as_default=False)
        except (OSError, TimeoutError, ValueError) as e:
            raise SystemExit(f"cannot reach the Dask scheduler at {address!r} within "
                             f"{CONNECT_SECONDS} s ({type(e).__name__}: {e}); start it with "
                             "`dask scheduler` and give its address (README.md, \"Grading on "
                             "a cluster\")") from None
        try:
            self.client.wait_for_workers(1, timeout=WORKERS_SECONDS)
        except (TimeoutError, OSError):
            self.close()
            raise SystemExit(f"no worker joined the Dask scheduler at {address} within "
                             f"{WORKERS_SECONDS} s; start some with `dask worker {address}` "
                             "(README.md, \"Grading on a cluster\")") from None
        self.identity = identity()
        threads = self.client.nthreads()
        self.description = (f"grading on the Dask cluster at {address}: {len(threads)} "
                            f"worker(s), {sum(threads.values())} thread(s); every worker must "
                            "have this machine's grading code and sandbox each run "
                            "(bubblewrap and a cgroup), or it refuses")

    def close(self) -> None:
        """Stop the workers' warm pairs (waiting at most CONNECT_SECONDS), then disconnect."""
        def stop():
            try:
                self.client.run(drain, on_error="ignore")
            except Exception:  # noqa: BLE001 - the cluster may be gone already
                pass
        stopping = threading.Thread(target=stop, daemon=True)
        stopping.start()
        stopping.join(CONNECT_SECONDS)
        self.client.close(timeout=CONNECT_SECONDS)

    def check_workers(self) -> None:
        """Every worker checks itself before any grading: a refusal names each bad worker."""
        import time
        checks = {addr: self.client.submit(worker_problem, self.identity, self.sandbox,
                                           workers=[addr], pure=False)
                  for addr in self.client.nthreads()}
        deadline = time.monotonic() + WORKERS_SECONDS
        while not all(f.done() for f in checks.values()) and time.monotonic() < deadline:
            time.sleep(0.1)
        bad = {}
        for addr, f in checks.items():
            if not f.done():
                bad[addr] = f"did not answer its check within {WORKERS_SECONDS} s"
                f.cancel()
            elif f.status == "error":
                error = " ".join(str(f.exception()).split())[:300]
                bad[addr] = (f"could not run its check ({type(f.exception()).__name__}: "
                             f"{error}); the scheduler and every worker must import this "
                             "repository's autograder: start them with PYTHONPATH set to "
                             "the repository (README.md, \"Grading on a cluster\")")
            elif f.result():
                bad[addr] = f.result()
        if bad:
            raise SystemExit(f"{len(bad)} worker(s) refused to grade; nothing was graded:\n"
                             + "\n".join(f"  worker {addr}: {why}" for addr, why in bad.items()))

    def __call__(self, items: list, work, *, desc: str, progress: bool) -> list:
        if not items:
            return []
        self.check_workers()
        bar = None
        if progress:
            from tqdm import tqdm
            bar = tqdm(total=len(items), desc=desc, unit="submission", file=sys.stderr)
        inflight, lock, stopping = set(), threading.Lock(), threading.Event()

        def remote(sub, source, *, timeout, sandbox):
            if stopping.is_set():
                raise Refused("stopped")
            task = {"student": sub.student, "assignment": sub.assignment,
                    "origin": sub.origin, "notebook": Path(sub.notebook).read_bytes(),
                    "source": Path(source).read_bytes(), "timeout": timeout,
                    "sandbox": sandbox, "identity": self.identity}
            future = self.client.submit(grade_remote, task, pure=False)
            with lock:
                inflight.add(future)
                if stopping.is_set():
                    self.client.cancel([future])
            try:
                return future.result()
            except Refused:
                raise
            except Exception as e:  # noqa: BLE001 - said with the submission's name
                raise SystemExit(f"the cluster could not grade {shown(sub.student)} / "
                                 f"{shown(sub.assignment)} ({type(e).__name__}: {e}); grade "
                                 "it on this machine (without --cluster)") from None
            finally:
                with lock:
                    inflight.discard(future)

        threads = max(4, min(256, 2 * sum(self.client.nthreads().values())))
        run = {"remote": remote}
        out = [None] * len(items)
        executor = ThreadPoolExecutor(max_workers=threads)
        jobs = {executor.submit(work, item, run): i for i, item in enumerate(items)}
        try:
            waiting = set(jobs)
            while waiting:
                done, waiting = wait(waiting, return_when=FIRST_COMPLETED)
                for job in done:
                    out[jobs[job]] = job.result()
                    if bar:
                        bar.update(1)
        except BaseException as e:
            for job in jobs:
                job.cancel()
            with lock:
                stopping.set()
                pending = list(inflight)
            if pending:
                self.client.cancel(pending)
            executor.shutdown(wait=True, cancel_futures=True)
            if isinstance(e, KeyboardInterrupt):
                print(f"\ninterrupted: {len(pending)} grading task(s) cancelled on the "
                      "cluster; what was graded is in the cache, and the next run grades "
                      "only the rest", file=sys.stderr)
                raise SystemExit(130) from None
            if isinstance(e, Refused):
                raise SystemExit(f"refused: {e}") from None
            raise
        finally:
            executor.shutdown(wait=True)
            if bar:
                bar.close()
        return out


def address(given: str | None) -> str | None:
    """The scheduler to use: ``--cluster`` or ``$LREACT_DASK_SCHEDULER`` (None: this machine)."""
    return given or os.environ.get(SCHEDULER_VARIABLE) or None
