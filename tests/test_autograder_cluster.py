"""`grade --cluster`: a real Dask scheduler and real workers on loopback (autograder/cluster.py).

The test starts `dask scheduler` and `dask worker` processes (one thread each) as the README
tells an instructor to, grades a class of 20 submissions of the fixture assignment (solutions,
released student versions, wrong answers, a broken file) through them, and compares
with the local pool: the same CSV and the same gradebook scores; a worker killed mid-run costs
nothing; a worker with other grading code, or without a sandbox, is refused.
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

from autograder import cluster
from autograder.engine import load, replace_cell
from autograder.release import generate

ROOT = Path(__file__).resolve().parent.parent
AID = "tiny"
FIX = ROOT / "tests" / "fixtures" / "autograder"
TINY = FIX / "solutions" / "tiny" / "tiny.ipynb"
BIN = Path(sys.executable).parent


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
    """`dask scheduler` and `dask worker` processes on 127.0.0.1, always torn down."""

    def __init__(self, tmp: Path, code: Path):
        self.tmp, self.code, self.procs, self.workers = tmp, code, [], []
        info = tmp / "scheduler.json"
        self._start(["scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                     "--scheduler-file", str(info)], {**os.environ, "PYTHONPATH": str(code)},
                    cwd=code)
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

    def worker(self, code: Path | None = None, **env) -> subprocess.Popen:
        """A worker run from the checkout ``code`` (PYTHONPATH; default the scheduler's),
        one thread."""
        code = code or self.code
        name = f"w{len(self.workers)}"
        environment = {**os.environ, "PYTHONPATH": str(code), **env}
        proc = self._start(["worker", self.address, "--nthreads", "1", "--host", "127.0.0.1",
                            "--no-dashboard", "--name", name,
                            "--local-directory", str(self.tmp / name)], environment, cwd=code)
        self.workers.append(proc)
        return proc

    def wait_for_workers(self, n: int) -> None:
        from distributed import Client
        with Client(self.address, timeout=30, set_as_default=False) as client:
            deadline = time.monotonic() + 120
            while len(client.nthreads()) < n:
                ended = [p.args for p in self.procs if p.poll() is not None]
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
def loopback(tmp_path):
    lb = Loopback(tmp_path, ROOT)
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
    done = subprocess.run([*cmd, "--cluster", loopback.address], capture_output=True,
                          text=True, timeout=900, **grading(loopback.code))
    assert done.returncode == 0, done.stderr
    assert f"grading on the Dask cluster at {loopback.address}: 2 worker(s)" in done.stderr
    assert "graded 20 submission(s) (0 from the cache)" in done.stdout
    assert out.read_text() == local_csv
    assert scores(course_dir) == local_scores and len(local_scores) == 20 * 4
    # the cache stays on this machine: a re-run (the scheduler from the environment) grades
    # nothing, and writes the same sheet
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=900,
                           **grading(loopback.code,
                                     **{cluster.SCHEDULER_VARIABLE: loopback.address}))
    assert again.returncode == 0, again.stderr
    assert "grading on the Dask cluster" in again.stderr
    assert "graded 20 submission(s) (20 from the cache)" in again.stdout
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
        [*grade_cmd(subs, course(tmp_path / "course"), state, out), "--cluster",
         loopback.address], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        **grading(loopback.code))
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
    assert "graded 20 submission(s) (0 from the cache)" in stdout
    assert out.read_text() == local_csv           # none lost, none twice, the same scores
    assert [r[0] for r in rows(out.read_text())[1:]] == [f"s{i:02d}" for i in range(20)]
    assert cache_entries(state) == 20             # each submission's bytes are their own


def worker_names(address: str) -> dict:
    from distributed import Client
    with Client(address, timeout=30, set_as_default=False) as client:
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
    names = worker_names(loopback.address)
    state, out = tmp_path / "state", tmp_path / "g.csv"
    done = subprocess.run([*grade_cmd(subs, course(tmp_path / "course"), state, out),
                           "--cluster", loopback.address], capture_output=True,
                          text=True, timeout=900, **grading(loopback.code))
    assert done.returncode != 0
    assert "2 worker(s) refused to grade; nothing was graded" in done.stderr
    said = {m.group(1): line for line in done.stderr.splitlines()
            for m in [re.search(r"worker (tcp://[0-9.]+:[0-9]+)", line)] if m}
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
    cmd = [*grade_cmd(subs, course(tmp_path / "course"), state, out), "--cluster",
           loopback.address]
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
    kept = cache_entries(state)
    assert 1 <= kept < 20
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
    del theirs["code"]["autograder/cluster.py"]
    theirs["versions"] = theirs["versions"].replace("numpy=", "numpy=0.0.0+")
    why = cluster.worker_problem(theirs, "off")
    for words in ("lreact/checks.py (changed)", "autograder/gone.py (missing on the worker)",
                  "autograder/cluster.py (only on the worker)", "numpy "):
        assert words in why, why
    assert cluster.worker_problem(mine, "off") == ""
