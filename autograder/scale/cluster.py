"""``grade SUBMISSIONS --cluster tls://HOST:8786``: the gradings done by a Dask cluster's workers.

This machine (``Cluster``, the ``runner`` of ``grade.grade_all``) finds the submissions, takes
what it can from its own cache, and sends every other submission to the cluster as data: the
notebook's bytes, the source notebook's bytes (hidden tests included), the grading options and
the fingerprint of its grading code (``grade.code_digests`` file by file, ``grade.versions``).
A worker (``grade_remote``) first checks that its own grading code and libraries are those and
that it can sandbox as ``LREACT_REQUIRE_SANDBOX=1`` demands (a guard against a stale checkout,
no defence against a hostile worker: that check runs on the worker); then it grades with
``grade.graded``, as the local pool does, and answers with JSON text.

Who may take part: the cluster speaks mutual TLS only (``security``: the certificates of
``python -m autograder cluster-certs``, ``scale/certs.py``; a ``tcp://`` scheduler is
refused), so the scheduler turns away any worker or client without a certificate of the same
private CA.  Every holder of a certificate is trusted with every submission and the hidden
tests (README.md, "Grading on a cluster").  What comes back is plain data only: the Dask client
takes msgpack values and nothing that needs unpickling (``refuse_pickles``: Dask would
otherwise unpickle a result's type, a task's exception or a "warn" event from any worker), and
``record`` checks each record against the source notebook before it is cached or
recorded; a record it rejects stops the run, naming the worker.  This machine alone writes the
cache, the gradebook and the CSV.  A worker that dies mid-grading: the scheduler hands the task
to another worker (``distributed.scheduler.allowed-failures`` times); each task's result
arrives once.  How to run the workers: README.md, "Grading on a cluster".
"""
from __future__ import annotations

import functools
import io
import json
import os
import pickle
import sys
import tempfile
import threading
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from pathlib import Path

from .. import paths
from ..instructor import grade
from ..instructor.safetext import shown
from ..instructor.submissions import Submission
from ..run.engine import load, wall_limit
from ..run.pool import ProcessPool
from ..sandbox import launch as sandbox
from . import certs as cluster_certs
from . import record as cluster_record

SCHEDULER_VARIABLE = "LREACT_DASK_SCHEDULER"
CERTS_VARIABLE = "LREACT_DASK_CERTS"
CONNECT_SECONDS = 30        # reaching the scheduler, and every other call to it
WORKERS_SECONDS = 120       # waiting for the first worker, and for every worker's check
SHOWN_FILES = 12            # files named in a refusal before "and N more"
SHOWN_CHARS = 2000          # of a worker's own words (a refusal)
HOW = 'README.md, "Grading on a cluster"'


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


def grade_remote(task: dict) -> str:
    """On a worker: check, then grade one submission sent as data.  JSON text:
    ``{"record": ...}`` (``grade.graded``'s record) or ``{"refused": why}``."""
    mode = "require" if task["sandbox"] == "auto" else task["sandbox"]
    why = worker_problem(task["identity"], mode)
    if why:
        return json.dumps({"refused": why})
    pool = _pool()
    with tempfile.TemporaryDirectory(prefix="lreact-task-",
                                     dir=_worker().local_directory) as tmp:
        notebook, source = Path(tmp) / "submission.ipynb", Path(tmp) / "source.ipynb"
        notebook.write_bytes(task["notebook"])
        source.write_bytes(task["source"])
        sub = Submission(task["student"], task["assignment"], notebook, task["origin"])
        record = grade.graded(sub, source, timeout=task["timeout"], sandbox=mode,
                              run={"pool": pool, "state": pool.state})
    return json.dumps({"record": record}, default=grade._plain)


# --- this machine's side: who may take part, and what it reads from them ----------------

def tls_address(address: str) -> str:
    """``address`` if it is a TLS scheduler's; otherwise a refusal that says what to do."""
    if not address.startswith("tls://"):
        raise SystemExit(
            f"refusing to grade on the Dask scheduler {address!r}: grade --cluster speaks "
            "mutual TLS only (tls://HOST:PORT). Without it, anyone who reaches the scheduler "
            "can join as a worker (receiving every submission and the hidden tests, and "
            "sending grades of its own) or as a client (changing the workers). Make "
            "certificates with `python -m autograder cluster-certs DIR`, start the scheduler "
            "and the workers with them, and grade with --cluster tls://HOST:8786 "
            f"--cluster-certs DIR ({HOW})")
    return address


def security(certs: str | Path | None):
    """Dask's ``Security`` for this machine: TLS required, the client certificate of the
    folder ``cluster-certs`` wrote (``certs``, else ``$LREACT_DASK_CERTS``)."""
    import datetime

    from distributed.security import Security
    folder = certs or os.environ.get(CERTS_VARIABLE)
    if not folder:
        raise SystemExit("grading on a cluster needs this machine's certificate: give "
                         f"--cluster-certs DIR or set ${CERTS_VARIABLE} to the folder that "
                         "`python -m autograder cluster-certs DIR` wrote (make one with it if "
                         f"you have none; {HOW})")
    found = cluster_certs.files(Path(folder).expanduser(), "client")
    missing = [str(f) for f in found.values() if not f.is_file()]
    if missing:
        raise SystemExit(f"{folder} is not a folder that `python -m autograder cluster-certs` "
                         f"wrote: {', '.join(missing)} missing; give the folder it wrote "
                         f"(the one holding client/), or make a new one ({HOW})")
    try:
        until = cluster_certs.expiry(found["cert"])
    except ValueError as e:
        raise SystemExit(f"{found['cert']} is not a PEM certificate ({e}); make new "
                         "certificates with `python -m autograder cluster-certs DIR`") from None
    if until <= datetime.datetime.now(datetime.timezone.utc):
        raise SystemExit(f"the certificates in {folder} expired on {until:%Y-%m-%d}: make new "
                         "ones with `python -m autograder cluster-certs DIR` and give the "
                         "scheduler and the workers theirs")
    return Security(require_encryption=True, tls_ca_file=str(found["ca"]),
                    tls_client_cert=str(found["cert"]), tls_client_key=str(found["key"]))


class PickleRefused(pickle.UnpicklingError, TypeError):
    """Pickled data from the cluster naming code: this machine does not unpickle it."""


PLAIN_TYPES = frozenset({"bytes", "bytearray", "str", "int", "float", "complex", "bool",
                         "tuple", "list", "dict", "set", "frozenset"})


class _PlainUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if module == "builtins" and name in PLAIN_TYPES:
            return super().find_class(module, name)
        raise PickleRefused(f"refused to unpickle {module}.{name} sent by the cluster")


def plain_loads(data, *, buffers=()):
    """``pickle.loads`` that builds plain values only: anything naming another class or a
    function (what a ``__reduce__`` needs to run code) raises ``PickleRefused``."""
    return _PlainUnpickler(io.BytesIO(data), buffers=buffers).load()


def refuse_pickles() -> None:
    """Make this process's Dask client unpickle nothing but plain values.

    ``Client(deserializers=["msgpack"])`` covers a task's result only.  distributed (2026.8)
    also unpickles, on the client, whatever a worker sends as a result's type
    (``Client._handle_key_in_memory``), a task's exception and traceback (``clean_exception``,
    as soon as the task fails), a ``__Pickled__`` frame in any message (``protocol.core.loads``)
    and a Dask-serialized value's type; all of them go through
    ``distributed.protocol.pickle.loads`` or the client's ``loads``, replaced here.  A
    worker's error then reads as unreadable bytes (its log says what it was).  The "warn"
    event, unpickled with the standard ``pickle``, is never subscribed (``_client``)."""
    import distributed.client
    import distributed.protocol.pickle
    distributed.protocol.pickle.loads = plain_loads
    distributed.client.loads = plain_loads


_CLIENT_LOCK = threading.Lock()


def _client(address: str, security_):
    """A Dask client that reads plain data only (``refuse_pickles``), without Dask's default
    "print" and "warn" event handlers (a worker's text for this terminal; an unpickled
    warning)."""
    from distributed import Client
    refuse_pickles()
    with _CLIENT_LOCK:
        handlers, Client._default_event_handlers = Client._default_event_handlers, {}
        try:
            return Client(address, security=security_, timeout=CONNECT_SECONDS,
                          set_as_default=False, deserializers=["msgpack"],
                          direct_to_workers=False)
        finally:
            Client._default_event_handlers = handlers


def _within(seconds: float, call, default=None):
    """``call()``, or ``default`` if it raised or took longer than ``seconds``."""
    box = []

    def run():
        try:
            box.append(call())
        except Exception:  # noqa: BLE001 - the cluster may be gone already
            pass
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    return box[0] if box else default


@functools.lru_cache(maxsize=64)
def patience(source: str, timeout: float) -> float:
    """How long one grading task may take before the run stops: the engine's wall clock for
    the source notebook, for each try the scheduler may give it and one task queued ahead."""
    import dask

    cells = sum(1 for c in load(source).cells if c.cell_type == "code")
    tries = 1 + int(dask.config.get("distributed.scheduler.allowed-failures"))
    return (tries + 1) * wall_limit(timeout, cells) + WORKERS_SECONDS


class Cluster:
    """``grade_all``'s runner on the Dask scheduler at ``address`` (``tls://`` only), with
    this machine's certificate from the folder ``certs`` (``security``)."""

    def __init__(self, address: str, *, certs=None, sandbox: str = "auto"):
        self.address, self.sandbox = tls_address(address), sandbox
        secure = security(certs)
        try:
            self.client = _client(address, secure)
        except (OSError, TimeoutError, ValueError, TypeError) as e:
            raise SystemExit(f"cannot reach the Dask scheduler at {address!r} within "
                             f"{CONNECT_SECONDS} s ({type(e).__name__}: {e}); is it running, "
                             "started with the certificates of the same cluster-certs folder? "
                             "(a scheduler without them, or with another folder's, refuses "
                             f"this machine; {HOW})") from None
        try:
            self.client.wait_for_workers(1, timeout=WORKERS_SECONDS)
        except (TimeoutError, OSError):
            self.close()
            raise SystemExit(f"no worker joined the Dask scheduler at {address} within "
                             f"{WORKERS_SECONDS} s; start some with `dask worker {address} "
                             "--tls-ca-file ... --tls-cert ... --tls-key ...` and the "
                             f"worker/ certificates ({HOW})") from None
        self.identity = identity()
        threads = self.threads()
        self.description = (f"grading on the Dask cluster at {address}: {len(threads)} "
                            f"worker(s), {sum(threads.values())} thread(s), over mutual TLS; "
                            "every worker must have this machine's grading code and sandbox "
                            "each run (bubblewrap and a cgroup), or it refuses")

    def close(self) -> None:
        """Stop the workers' warm pairs (waiting at most CONNECT_SECONDS), then disconnect."""
        _within(CONNECT_SECONDS, lambda: self.client.run(drain, on_error="ignore"))
        self.client.close(timeout=CONNECT_SECONDS)

    def threads(self) -> dict:
        """{worker: threads} as the scheduler says, within CONNECT_SECONDS."""
        found = _within(CONNECT_SECONDS, self.client.nthreads)
        if found is None:
            raise SystemExit(f"the Dask scheduler at {self.address} did not answer within "
                             f"{CONNECT_SECONDS} s; is it still running (its log says)?")
        return found

    def holder(self, future) -> str:
        """The worker holding ``future``'s result, as the scheduler says (a worker's own word
        about itself is not taken)."""
        held = _within(CONNECT_SECONDS, lambda: self.client.who_has([future]), {})
        names = sorted(str(a) for a in (held.get(future.key) or ()))
        return shown(", ".join(names)) if names else "(the scheduler no longer knows which)"

    def check_workers(self) -> None:
        """Every worker checks itself before any grading: a refusal names each bad worker."""
        import time
        checks = {addr: self.client.submit(worker_problem, self.identity, self.sandbox,
                                           workers=[addr], pure=False)
                  for addr in self.threads()}
        deadline = time.monotonic() + WORKERS_SECONDS
        while not all(f.done() for f in checks.values()) and time.monotonic() < deadline:
            time.sleep(0.1)
        bad = {}
        for addr, f in checks.items():
            said = None
            if f.done() and f.status == "finished":
                said = _within(CONNECT_SECONDS, lambda f=f: f.result(timeout=CONNECT_SECONDS))
            if not f.done():
                bad[addr] = f"did not answer its check within {WORKERS_SECONDS} s"
                f.cancel()
            elif f.status != "finished":
                bad[addr] = ("could not run its check (its error is in the worker's log: this "
                             "machine unpickles no error from the cluster); the scheduler and "
                             "every worker must import this repository's autograder: start "
                             f"them with PYTHONPATH set to the repository ({HOW})")
            elif not isinstance(said, str):
                bad[addr] = "answered its check with something other than text"
            elif said:
                bad[addr] = shown(said[:SHOWN_CHARS])
        if bad:
            raise SystemExit(f"{len(bad)} worker(s) refused to grade; nothing was graded:\n"
                             + "\n".join(f"  worker {addr}: {why}" for addr, why in bad.items()))

    def answer(self, future, sub, source) -> dict:
        """The checked record of ``sub`` from its finished task (``record``), or the
        run's end: the task failed, the worker refused, or its answer is rejected."""
        who = f"{shown(sub.student)} / {shown(sub.assignment)}"
        if future.status != "finished":
            raise SystemExit(f"the cluster could not grade {who} (its task {future.status}; "
                             "the worker's log says why: this machine unpickles no error from "
                             "the cluster); grade it on this machine (without --cluster)")
        try:
            text = future.result(timeout=CONNECT_SECONDS)
        except Exception as e:  # noqa: BLE001 - whatever it was, it was not plain data
            text = e
        try:
            if isinstance(text, Exception):
                raise cluster_record.Rejected(f"it is not plain data ({type(text).__name__}: "
                                              f"{str(text)[:200]})")
            said = cluster_record.reply(text)
            if "refused" in said:
                raise Refused(f"worker {self.holder(future)} refused to grade: "
                              f"{shown(said['refused'][:SHOWN_CHARS])}")
            return cluster_record.record(said["record"], sub, source)
        except cluster_record.Rejected as e:
            raise SystemExit(
                f"worker {self.holder(future)} sent an answer for {who} that this machine "
                f"rejects: {shown(str(e))}. Nothing of it was recorded, and the run stopped. "
                "A worker that sends this is broken or not one of yours: stop it and check "
                "its machine. What the other workers graded is in the cache; if that worker "
                "may have graded anything else (now or in earlier runs), delete the cache "
                "(cache/ in the --state folder, .grading/cache by default) and grade again "
                f"with machines you control only ({HOW})") from None

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
                seconds, finished = patience(str(source), float(timeout)), threading.Event()
                future.add_done_callback(lambda _: finished.set())
                if not finished.wait(seconds):
                    raise SystemExit(f"no answer from the cluster for {shown(sub.student)} / "
                                     f"{shown(sub.assignment)} within {seconds:.0f} s: is the "
                                     "scheduler still up (its log says)? What was graded is in "
                                     "the cache; the next run grades only the rest")
                return self.answer(future, sub, source)
            finally:
                with lock:
                    inflight.discard(future)

        threads = max(4, min(256, 2 * sum(self.threads().values())))
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
                _within(CONNECT_SECONDS, lambda: self.client.cancel(pending))
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
