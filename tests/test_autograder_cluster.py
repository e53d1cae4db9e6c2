"""`grade --cluster`: a real Dask scheduler and real workers on loopback (autograder/scale/cluster.py).

The test makes certificates with `python -m autograder cluster-certs`, starts `dask scheduler`
and `dask worker` processes (one thread each) with them as the README tells an instructor to,
grades a class of 20 submissions of the fixture assignment (solutions, released student
versions, wrong answers, a broken file) through them over mutual TLS, and compares with the
local pool: the same CSV and the same gradebook scores; a worker killed mid-run costs nothing;
a worker with other grading code, or without a sandbox, is refused.  The scheduler refuses
workers and clients without the certificates; a worker holding them that forges its answers
(full marks for a blank upload, an extra cell, scores above the maximum, text that is not
JSON, pickles, an exception whose unpickling runs code, a pickled "warn" event) has nothing
recorded, and nothing it sends runs on the instructor's side.
"""
import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from autograder.scale import cluster, certs as cluster_certs
from autograder.run.engine import load, replace_cell
from autograder.instructor.release import generate

ROOT = Path(__file__).resolve().parent.parent
AID = "tiny"
FIX = ROOT / "tests" / "fixtures" / "autograder"
TINY = FIX / "solutions" / "tiny" / "tiny.ipynb"
BIN = Path(sys.executable).parent


def make_certs(folder: Path) -> Path:
    """``python -m autograder cluster-certs folder``, as an instructor runs it."""
    done = subprocess.run([sys.executable, "-m", "autograder", "cluster-certs", str(folder)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    return folder


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp("certs") / "cluster")


def tls_flags(certs: Path, role: str) -> list:
    """`--tls-ca-file`, `--tls-cert`, `--tls-key` of one role's folder, as the README says."""
    found = cluster_certs.files(certs, role)
    return ["--tls-ca-file", str(found["ca"]), "--tls-cert", str(found["cert"]),
            "--tls-key", str(found["key"])]


def client_security(certs: Path):
    from distributed.security import Security
    found = cluster_certs.files(certs, "client")
    return Security(require_encryption=True, tls_ca_file=str(found["ca"]),
                    tls_client_cert=str(found["cert"]), tls_client_key=str(found["key"]))


def course(folder: Path) -> Path:
    """A course folder holding the fixture assignment ``tiny`` (tests/fixtures/autograder)."""
    shutil.copytree(FIX / "solutions", folder / "solutions")
    return folder


def klass(folder: Path, size: int = 20) -> Path:
    """``size`` submissions of ``tiny`` in nbgrader's layout, as test_autograder_grade.py
    builds its class: solutions, released student versions, wrong answers (each mistake in
    one function), and one file that is not a notebook; each with its own bytes."""
    solution, stub = load(TINY), nbformat.reads(generate(TINY), as_version=4)
    wrong = {"halve": "def halve(x):\n    return x // 2\n",
             "double": "def double(x):\n    return x + x if x > 0 else 0\n"}
    for i in range(size):
        student = f"s{i:02d}"
        (folder / student / "tiny").mkdir(parents=True)
        path = folder / student / "tiny" / "tiny.ipynb"
        if i == size - 1:
            path.write_text("{ not a notebook")
            continue
        kind = i % 4
        nb = (load(solution) if kind == 0 else load(stub) if kind == 1 else
              replace_cell(load(solution), *list(wrong.items())[kind - 2]))
        nb.cells[0].source += f"\n<!-- {student} -->"
        nbformat.write(nb, path)
    return folder


def checkout(dest: Path) -> Path:
    """A copy of this repository's grading code (``lreact/``, ``autograder/``): another
    machine's clone, for a worker to run from (``PYTHONPATH``)."""
    for pkg in ("lreact", "autograder"):
        shutil.copytree(ROOT / pkg, dest / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def grade_cmd(subs, course_dir, state, out, *more):
    return [sys.executable, "-m", "autograder", "grade", str(subs), "--out", str(out),
            "--timeout", "30", "--root", str(course_dir), "--state", str(state), *more]


def on_cluster(loopback) -> list:
    """The options that grade on ``loopback`` (its address, this machine's certificates)."""
    return ["--cluster", loopback.address, "--cluster-certs", str(loopback.certs)]


def grading(code: Path, **more) -> dict:
    """``subprocess`` arguments that run ``python -m autograder`` from the checkout ``code``."""
    return {"cwd": code, "env": {**os.environ, "PYTHONPATH": str(code), **more}}


def scores(course_dir: Path) -> dict:
    """{(student, cell): (auto score, manual score)} from the course's gradebook."""
    from nbgrader.api import Gradebook
    found = {}
    with Gradebook(f"sqlite:///{course_dir / 'gradebook.db'}") as gb:
        for sub in gb.assignment_submissions(AID):
            for nb in sub.notebooks:
                for g in nb.grades:
                    found[(sub.student.id, g.name)] = (g.auto_score, g.manual_score)
    return found


# --- a loopback cluster --------------------------------------------------------------------

class Loopback:
    """`dask scheduler` and `dask worker` processes on 127.0.0.1 with the certificates of
    ``certs`` (mutual TLS), always torn down."""

    def __init__(self, tmp: Path, code: Path, certs: Path):
        self.tmp, self.code, self.certs, self.procs, self.workers = tmp, code, certs, [], []
        info = tmp / "scheduler.json"
        self._start(["scheduler", "--host", "127.0.0.1", "--protocol", "tls", "--port", "0",
                     "--no-dashboard", "--scheduler-file", str(info),
                     *tls_flags(certs, "scheduler")],
                    {**os.environ, "PYTHONPATH": str(code)}, cwd=code)
        deadline = time.monotonic() + 60
        while not (info.exists() and info.read_text().strip()):
            assert time.monotonic() < deadline, "the scheduler never wrote its address"
            time.sleep(0.2)
        self.address = json.loads(info.read_text())["address"]

    def _start(self, args, env, cwd):
        log = open(self.tmp / f"dask-{len(self.procs)}.log", "wb")
        proc = subprocess.Popen([str(BIN / "dask"), *args], cwd=cwd, env=dict(env),
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        self.procs.append(proc)
        return proc

    def worker(self, code: Path | None = None, *, certs: Path | None = None,
               address: str | None = None, **env) -> subprocess.Popen:
        """A worker run from the checkout ``code`` (PYTHONPATH; default the scheduler's),
        one thread, with the worker certificate of ``certs`` (default the cluster's; False:
        none) at ``address`` (default the scheduler's)."""
        code, certs = code or self.code, self.certs if certs is None else certs
        name = f"w{len(self.workers)}"
        environment = {**os.environ, "PYTHONPATH": str(code), **env}
        proc = self._start(["worker", address or self.address, "--nthreads", "1",
                            "--host", "127.0.0.1", "--no-dashboard", "--name", name,
                            "--local-directory", str(self.tmp / name),
                            *(tls_flags(certs, "worker") if certs else [])],
                           environment, cwd=code)
        self.workers.append(proc)
        return proc

    def client(self):
        """A Dask client with the instructor's certificate."""
        from distributed import Client
        return Client(self.address, timeout=30, set_as_default=False,
                      security=client_security(self.certs))

    def wait_for_workers(self, n: int, refused=()) -> None:
        """Until ``n`` workers joined; every process but the ``refused`` ones still runs."""
        with self.client() as client:
            deadline = time.monotonic() + 120
            while len(client.nthreads()) < n:
                ended = [p.args for p in self.procs if p.poll() is not None and p not in refused]
                assert not ended, f"a dask process ended: {ended} (logs in {self.tmp})"
                assert time.monotonic() < deadline, f"only {len(client.nthreads())} worker(s)"
                time.sleep(0.5)

    def close(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=20)


@pytest.fixture
def loopback(tmp_path, certs):
    lb = Loopback(tmp_path, ROOT, certs)
    try:
        yield lb
    finally:
        lb.close()


@pytest.fixture(scope="module")
def local(tmp_path_factory):
    """The class graded by the local pool: (submissions, CSV text, gradebook scores)."""
    tmp = tmp_path_factory.mktemp("local")
    subs, out = klass(tmp / "subs"), tmp / "grades.csv"
    done = subprocess.run(grade_cmd(subs, course(tmp / "course"), tmp / "state", out,
                                    "--jobs", "2"),
                          capture_output=True, text=True, timeout=900, **grading(ROOT))
    assert done.returncode == 0, done.stderr
    return subs, out.read_text(), scores(tmp / "course")


def cache_entries(state: Path) -> int:
    return len(list((state / "cache").glob("*.json"))) if (state / "cache").is_dir() else 0


def graded_cache_entries(state: Path) -> int:
    """Cached records of work that was graded (a file that is not a notebook is cached too)."""
    from autograder.instructor.reasons import graded
    return sum(1 for f in (state / "cache").glob("*.json")
               if graded(json.loads(f.read_text(encoding="utf-8"))))


def rows(text: str) -> list:
    return list(csv.reader(text.splitlines()))


# --- the tests -----------------------------------------------------------------------------

@pytest.mark.slow
def test_the_cluster_grades_the_class_as_the_local_pool_does(local, loopback, tmp_path):
    subs, local_csv, local_scores = local
    loopback.worker()
    loopback.worker()
    loopback.wait_for_workers(2)
    course_dir, state, out = course(tmp_path / "course"), tmp_path / "state", tmp_path / "g.csv"
    cmd = grade_cmd(subs, course_dir, state, out)
    done = subprocess.run([*cmd, *on_cluster(loopback)], capture_output=True,
                          text=True, timeout=900, **grading(loopback.code))
    assert done.returncode == 0, done.stderr
    assert f"grading on the Dask cluster at {loopback.address}: 2 worker(s)" in done.stderr
    assert "graded 19 submission(s) (0 from the cache), 1 not graded" in done.stdout
    assert out.read_text() == local_csv
    assert scores(course_dir) == local_scores and len(local_scores) == 19 * 4   # not graded: no row
    # the cache stays on this machine: a re-run (the scheduler and the certificates from the
    # environment) grades nothing, and writes the same sheet
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=900,
                           **grading(loopback.code,
                                     **{cluster.SCHEDULER_VARIABLE: loopback.address,
                                        cluster.CERTS_VARIABLE: str(loopback.certs)}))
    assert again.returncode == 0, again.stderr
    assert "grading on the Dask cluster" in again.stderr
    assert "graded 19 submission(s) (19 from the cache), 1 not graded" in again.stdout
    assert out.read_text() == local_csv


def sandboxed_children(proc: subprocess.Popen) -> list:
    import psutil
    try:
        return [c for c in psutil.Process(proc.pid).children(recursive=True)
                if "runner.py" in " ".join(c.cmdline())]
    except psutil.Error:
        return []


@pytest.mark.slow
def test_a_worker_killed_mid_run_costs_nothing(local, loopback, tmp_path):
    subs, local_csv, _ = local
    workers = [loopback.worker(), loopback.worker()]
    loopback.wait_for_workers(2)
    state, out = tmp_path / "state", tmp_path / "g.csv"
    run = subprocess.Popen(
        [*grade_cmd(subs, course(tmp_path / "course"), state, out), *on_cluster(loopback)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **grading(loopback.code))
    try:
        victim, deadline = None, time.monotonic() + 600
        while victim is None:
            assert run.poll() is None, run.communicate()
            assert time.monotonic() < deadline, "no worker was ever seen grading"
            if cache_entries(state) >= 2:
                victim = next((w for w in workers if sandboxed_children(w)), None)
            time.sleep(0.1)
        os.killpg(victim.pid, signal.SIGKILL)       # the machine is gone, mid-grading
        assert cache_entries(state) < 20
        stdout, stderr = run.communicate(timeout=900)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 0, stderr
    assert "graded 19 submission(s) (0 from the cache), 1 not graded" in stdout
    assert out.read_text() == local_csv           # none lost, none twice, the same scores
    assert [r[0] for r in rows(out.read_text())[1:]] == [f"s{i:02d}" for i in range(20)]
    assert cache_entries(state) == 20             # each submission's bytes are their own


def worker_names(loopback) -> dict:
    with loopback.client() as client:
        return {w["name"]: a for a, w in client.scheduler_info()["workers"].items()}


@pytest.mark.slow
def test_a_worker_with_other_code_or_no_sandbox_is_refused(loopback, tmp_path):
    subs = klass(tmp_path / "subs", size=3)
    other = checkout(tmp_path / "other-clone")
    checks = other / "lreact" / "checks.py"
    text = checks.read_text()
    first = text.splitlines()[0]
    checks.write_text(text.replace(first, first + "  # one line changed on this worker", 1))
    loopback.worker()                                  # w0: this checkout
    loopback.worker(other)                             # w1: lreact/checks.py differs
    loopback.worker(PATH=str(BIN))                     # w2: no bwrap on its PATH
    loopback.wait_for_workers(3)
    names = worker_names(loopback)
    state, out = tmp_path / "state", tmp_path / "g.csv"
    done = subprocess.run([*grade_cmd(subs, course(tmp_path / "course"), state, out),
                           *on_cluster(loopback)], capture_output=True,
                          text=True, timeout=900, **grading(loopback.code))
    assert done.returncode != 0
    assert "2 worker(s) refused to grade; nothing was graded" in done.stderr
    said = {m.group(1): line for line in done.stderr.splitlines()
            for m in [re.search(r"worker (tls://[0-9.]+:[0-9]+)", line)] if m}
    assert set(said) == {names["w1"], names["w2"]}, done.stderr
    assert "its grading code differs" in said[names["w1"]]
    assert "lreact/checks.py (changed)" in said[names["w1"]]
    assert "(changed)" not in said[names["w1"]].replace("lreact/checks.py (changed)", "")
    assert "cannot sandbox" in said[names["w2"]]
    assert "bwrap is not installed" in said[names["w2"]]
    assert not out.exists() and cache_entries(state) == 0


@pytest.mark.slow
def test_ctrl_c_cancels_the_clusters_tasks_and_keeps_what_was_graded(local, loopback, tmp_path):
    subs, local_csv, _ = local
    loopback.worker()
    loopback.worker()
    loopback.wait_for_workers(2)
    state, out = tmp_path / "state", tmp_path / "g.csv"
    cmd = [*grade_cmd(subs, course(tmp_path / "course"), state, out), *on_cluster(loopback)]
    run = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, **grading(loopback.code))
    try:
        deadline = time.monotonic() + 600
        while cache_entries(state) < 1:
            assert run.poll() is None, run.communicate()
            assert time.monotonic() < deadline, "nothing was graded"
            time.sleep(0.1)
        run.send_signal(signal.SIGINT)
        _, stderr = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 130, stderr
    cancelled = int(stderr.split("interrupted: ")[1].split()[0])
    assert cancelled > 0 and not out.exists()
    kept = graded_cache_entries(state)
    assert kept < 19                              # the rest was cancelled
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=900,
                           **grading(loopback.code))
    assert again.returncode == 0, again.stderr
    assert f"({kept} from the cache)" in again.stdout
    assert out.read_text() == local_csv


def test_a_worker_names_every_file_and_library_that_differs():
    mine = cluster.identity()
    theirs = {"code": dict(mine["code"]), "versions": mine["versions"]}
    theirs["code"]["lreact/checks.py"] = "0" * 64
    theirs["code"]["autograder/gone.py"] = "1" * 64
    del theirs["code"]["autograder/scale/cluster.py"]
    theirs["versions"] = theirs["versions"].replace("numpy=", "numpy=0.0.0+")
    why = cluster.worker_problem(theirs, "off")
    for words in ("lreact/checks.py (changed)", "autograder/gone.py (missing on the worker)",
                  "autograder/scale/cluster.py (only on the worker)", "numpy "):
        assert words in why, why
    assert cluster.worker_problem(mine, "off") == ""


# --- who may take part, and what is taken from them ---------------------------------------

def test_cluster_certs_writes_a_ca_and_one_key_per_role_that_only_its_owner_reads(tmp_path):
    from cryptography import x509
    folder = tmp_path / "certs"
    done = subprocess.run([sys.executable, "-m", "autograder", "cluster-certs", str(folder)],
                          capture_output=True, text=True, timeout=120, **grading(ROOT))
    assert done.returncode == 0, done.stderr
    assert oct((folder / "ca-key.pem").stat().st_mode & 0o777) == "0o600"
    assert "KEEP IT HERE, never copy it" in done.stdout
    ca = x509.load_pem_x509_certificate((folder / "scheduler" / "ca.pem").read_bytes())
    for role, machine in (("scheduler", "the scheduler's machine"),
                          ("worker", "every worker machine"), ("client", "this machine")):
        found = cluster_certs.files(folder, role)
        assert f"{found['ca'].parent}/  -> " in done.stdout and machine in done.stdout
        assert oct(found["key"].stat().st_mode & 0o777) == "0o600"
        assert found["ca"].read_bytes() == (folder / "scheduler" / "ca.pem").read_bytes()
        cert = x509.load_pem_x509_certificate(found["cert"].read_bytes())
        cert.verify_directly_issued_by(ca)                    # signed by the private CA
        assert not (found["ca"].parent / "ca-key.pem").exists()
    assert " ".join(tls_flags(folder, "worker")) in done.stdout  # the worker's command
    again = subprocess.run([sys.executable, "-m", "autograder", "cluster-certs", str(folder)],
                           capture_output=True, text=True, timeout=120, **grading(ROOT))
    assert again.returncode != 0 and "never overwrites" in again.stderr


def test_grade_refuses_a_scheduler_without_tls_and_a_missing_certificate(tmp_path, certs):
    for plain in ("tcp://127.0.0.1:8786", "127.0.0.1:8786"):
        with pytest.raises(SystemExit) as refused:
            cluster.Cluster(plain, certs=certs)
        assert "mutual TLS only" in str(refused.value)
        assert "python -m autograder cluster-certs DIR" in str(refused.value)
    with pytest.raises(SystemExit) as refused:
        cluster.Cluster("tls://127.0.0.1:8786", certs=None)
    assert "--cluster-certs DIR" in str(refused.value) and "cluster-certs" in str(refused.value)
    with pytest.raises(SystemExit) as refused:
        cluster.Cluster("tls://127.0.0.1:8786", certs=tmp_path)
    assert "client/client-key.pem" in str(refused.value) and "missing" in str(refused.value)


def test_a_pickle_from_the_cluster_builds_plain_values_only():
    import pickle

    class Runs:
        def __reduce__(self):
            return (exec, ("raise SystemExit('ran')",))
    plain = (b"bytes", "text", 1, 2.5, [1], {"a": {1, 2}}, frozenset({3}))
    assert cluster.plain_loads(pickle.dumps(plain)) == plain
    for hostile in (Runs(), ValueError("an exception names its class")):
        with pytest.raises(cluster.PickleRefused):
            cluster.plain_loads(pickle.dumps(hostile))


@pytest.mark.slow
def test_the_scheduler_refuses_workers_and_clients_without_the_certificates(loopback, tmp_path):
    import socket
    import ssl

    from distributed import Client
    other = make_certs(tmp_path / "other-ca")          # someone's own CA: not the cluster's
    plain = loopback.address.replace("tls://", "tcp://")
    refused = [loopback.worker(certs=False, address=plain),   # w0: the old README's worker
               loopback.worker(certs=other)]                   # w1: another CA's certificate
    loopback.worker()                                          # w2: the cluster's certificate
    loopback.wait_for_workers(1, refused)
    deadline = time.monotonic() + 120
    while any(w.poll() is None for w in refused):      # each gives up: the scheduler refused it
        assert time.monotonic() < deadline, "a worker without the certificates kept trying"
        time.sleep(0.2)
    assert all(w.returncode != 0 for w in refused)
    assert set(worker_names(loopback)) == {"w2"}
    # clients: plain TCP (the red team's `Client()`), another CA's certificate, and TLS
    # without a certificate: none gets a connection, so none can Client.run anything
    for address, security in ((plain, None), (loopback.address, client_security(other))):
        with pytest.raises((OSError, TimeoutError)):
            with Client(address, timeout=5, set_as_default=False, security=security) as c:
                c.run(os.getpid)
    host, port = loopback.address.removeprefix("tls://").rsplit(":", 1)
    context = ssl.create_default_context(cafile=str(cluster_certs.files(
        loopback.certs, "client")["ca"]))
    context.check_hostname = False
    with socket.create_connection((host, int(port)), timeout=10) as raw:
        with pytest.raises((ssl.SSLError, ConnectionError)):
            with context.wrap_socket(raw) as tls:           # the handshake, then its alert
                tls.sendall(b"\0" * 8)
                assert tls.recv(1) == b""
    log = (loopback.tmp / "dask-0.log").read_text(errors="replace")   # the scheduler's
    for refusal in ("WRONG_VERSION_NUMBER", "TLSV1_ALERT_UNKNOWN_CA",
                    "PEER_DID_NOT_RETURN_A_CERTIFICATE"):
        assert refusal in log, log[-3000:]


HOSTILE = '''

# --- a hostile worker (tests/test_autograder_cluster.py): it holds the cluster's certificate,
# says its code is the instructor's, and forges what it sends back ---------------------------
RUNS = ("import os\\nif os.environ.get('LREACT_TEST_SIDE') == 'instructor':\\n"
        "    open(os.environ['LREACT_TEST_MARKER'], 'a').write('ran on the instructor\\\\n')")


class _Runs:
    def __reduce__(self):
        return (exec, (RUNS,))


class _RunsError(Exception):
    def __reduce__(self):     # unpickled, it runs RUNS and is an exception (so that Dask's
        return (eval, ("exec(RUNS) or ValueError('forged')", {"RUNS": RUNS}))  # check passes)


def worker_problem(expected, mode="auto"):
    return ""


def grade_remote(task):
    from distributed.protocol.serialize import Serialized
    flavor = task["student"]
    if flavor == "raises":
        raise _RunsError("unpickle me")
    if flavor == "pickled":
        return Serialized({"serializer": "pickle", "writeable": ()}, [pickle.dumps(_Runs())])
    if flavor == "not-json":
        return "{'record': not JSON"
    if flavor == "warns":     # a "warn" event: Dask's default handler unpickles its message
        import time
        from distributed import get_worker
        get_worker().log_event("warn", {"message": pickle.dumps(_Runs())})
        time.sleep(2)
        return "{'record': not JSON"
    source = Path(tempfile.mkdtemp()) / "source.ipynb"
    source.write_bytes(task["source"])
    sub = Submission(task["student"], task["assignment"], None, task["origin"])
    record = dict(grade.zero_record(sub, source, None), failure=None, reason="")
    for pair in record["scores"].values():
        pair[0] = pair[1] + (10 if flavor == "above-max" else 0)
    if flavor == "extra-cell":
        record["scores"]["bonus"] = [5.0, 5.0]
    record["total"] = sum(p[0] for p in record["scores"].values())
    return json.dumps({"record": record})
'''

FORGERIES = {"full-marks": "to an upload whose every answer is the released stub",
             "extra-cell": "not in the source: 'bonus'",
             "above-max": "outside 0..",
             "not-json": "it is not JSON",
             "pickled": "it is not plain data",
             "raises": "the cluster could not grade raises / tiny",
             "warns": "it is not JSON"}


@pytest.mark.slow
def test_a_forging_worker_has_nothing_recorded_and_nothing_it_sends_runs_here(loopback,
                                                                               tmp_path):
    hostile = checkout(tmp_path / "hostile-clone")
    with open(hostile / "autograder" / "scale" / "cluster.py", "a") as f:
        f.write(HOSTILE)
    loopback.worker(hostile)                       # it holds the cluster's worker certificate
    loopback.wait_for_workers(1)
    stub = nbformat.reads(generate(TINY), as_version=4)
    marker = tmp_path / "ran-on-the-instructor"
    for flavor, words in FORGERIES.items():       # one class of one blank upload each
        base = tmp_path / flavor
        (base / "subs" / flavor / AID).mkdir(parents=True)
        nbformat.write(stub, base / "subs" / flavor / AID / f"{AID}.ipynb")
        done = subprocess.run(
            [*grade_cmd(base / "subs", course(base / "course"), base / "state",
                        base / "g.csv"), *on_cluster(loopback)],
            capture_output=True, text=True, timeout=600,
            **grading(loopback.code, LREACT_TEST_SIDE="instructor",
                      LREACT_TEST_MARKER=str(marker)))
        assert done.returncode != 0, (flavor, done.stderr)
        assert words in done.stderr, (flavor, done.stderr)
        if flavor != "raises":
            assert "Nothing of it was recorded, and the run stopped" in done.stderr
            assert f"worker {worker_names(loopback)['w0']} sent an answer" in done.stderr
        assert not (base / "g.csv").exists() and cache_entries(base / "state") == 0
        assert not (base / "course" / "gradebook.db").exists() or not scores(base / "course")
    assert not marker.exists(), marker.read_text()
