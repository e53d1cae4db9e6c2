"""The sandbox (what a run sees), the per-run cgroup (what a run may take from the others, and
that nothing of it outlives it) and in-kernel cheats, on small fixtures (the full hostile class
is in `python -m autograder selfcheck`). Where bubblewrap or cgroups are genuinely missing the
tests that need them skip, saying why; under LREACT_REQUIRE_SANDBOX=1 (CI) they fail instead."""
import os
import queue
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

from autograder.sandbox import launch as sandbox  # noqa: E402
from autograder.run.engine import grade_notebook, load, replace_cell  # noqa: E402

TINY = ROOT / "tests" / "fixtures" / "autograder" / "solutions" / "tiny" / "tiny.ipynb"

TRANSFORMER = ("get_ipython().input_transformers_cleanup.append(lambda lines: [])\n"
               "def double(x):\n    return 0\n")
PATCH = ("import lreact.checks, numpy\n"
         "lreact.checks.assert_close = lambda *a, **k: None\n"
         "numpy.allclose = lambda *a, **k: True\n"
         "def double(x):\n    return 0\n")


def _grade(source, **kw):
    return grade_notebook("tiny", replace_cell(load(TINY), "double", source), timeout=20,
                          source=TINY, **kw)


@pytest.mark.slow
@pytest.mark.parametrize("cheat", [TRANSFORMER, PATCH], ids=["transformer", "patch"])
def test_in_kernel_cheats_gain_nothing(cheat):
    # the tests run in the trusted process: what the answers' kernel patches cannot reach them
    assert _grade("def double(x):\n    return 2 * x\n").scores["test_double"] == (2.0, 2.0)
    assert _grade(cheat).scores["test_double"] == (0.0, 2.0)


# --- running a script in the sandbox, as the engine runs its runner ---------------------------

ENV_PATH = os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"])


def _need(problem: str, what: str) -> None:
    """Skip where ``what`` is genuinely unavailable; under LREACT_REQUIRE_SANDBOX=1 (CI) fail."""
    if problem:
        (pytest.fail if sandbox.required() else pytest.skip)(f"{what} not usable here: {problem}")


@pytest.fixture
def confined():
    """bubblewrap and a per-run cgroup, both real."""
    _need(sandbox.bwrap_problem(), "bubblewrap")
    _need(sandbox.cgroup_problem(), "a per-run cgroup")


@pytest.fixture
def cgroups():
    _need(sandbox.cgroup_problem(), "a per-run cgroup")


class Script:
    """One sandboxed run of ``text`` (as kit/runner.py), tagged so /proc finds its processes."""

    def __init__(self, tmp_path, text: str, *, mode="require", **limits):
        self.marker = f"lreact-test-{uuid.uuid4().hex}"
        kit = tmp_path / f"kit-{self.marker[-8:]}"
        kit.mkdir()
        (kit / "runner.py").write_text(text)
        self.run = sandbox.launch(kit, sys.executable, [self.marker], mode=mode,
                                  scratch_base=tmp_path / "scratch", **limits)
        scratch = self.run.scratch
        if self.run.host_scratch:
            scratch.mkdir(parents=True, exist_ok=True)
        self.proc = self.run.popen(stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, cwd=str(kit if
                                   self.run.host_scratch else "/"),
                                   env={"PATH": ENV_PATH, "HOME": str(scratch), "LANG": "C.UTF-8",
                                        "PYTHONUNBUFFERED": "1"})
        self.lines: "queue.Queue[str]" = queue.Queue()
        self.said: list = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for raw in self.proc.stdout:
            self.lines.put(raw.decode("utf-8", "replace").rstrip("\n"))
        self.lines.put(None)

    def wait_for(self, prefix: str, timeout: float = 60) -> str:
        """The first line of output that starts with ``prefix`` (fails if the run ends first)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                break
            if line is None:
                self.lines.put(None)
                break
            self.said.append(line)
            if line.startswith(prefix):
                return line
        pytest.fail(f"the run never printed {prefix!r}; it said: {self.said[-20:]}")

    def output(self, timeout: float = 60) -> list:
        """Everything the run printed until its end."""
        self.proc.wait(timeout=timeout)
        try:           # what it detached may hold the pipe open: read what came, then stop
            while (line := self.lines.get(timeout=1.0)) is not None:
                self.said.append(line)
            self.lines.put(None)
        except queue.Empty:
            pass
        return self.said

    def alive(self) -> list:
        return survivors(self.marker)

    def end(self):
        self.run.cleanup()
        self.proc.wait(timeout=30)
        return self.run.final_usage


def survivors(marker: str) -> list:
    """Pids of live (not zombie) processes whose command line holds ``marker``, from /proc."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state not in ("Z", "X"):
            found.append(int(entry))
    return found


def hostile(name: str, hold: float = 60) -> str:
    """A hostile catalogue entry as a script that then keeps its run alive (as a kernel does)."""
    text = (ROOT / "autograder" / "proofs" / "hostile" / f"{name}.py").read_text()
    return text + f"\nimport time as _t\n_t.sleep({hold})\n"


# --- what the sandbox hides ------------------------------------------------------------------

SECRET_PLACES = ("solutions", "autograder", "tests", ".git", ".grading")

PROBE = """\
import json, os, socket, sys
root = sys.argv[2]
places = {places!r}
listing = sorted(os.listdir(root)) if os.path.isdir(root) else []
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[3])), timeout=2)
    net = "open"
except OSError:
    net = "closed"
print("PROBE", json.dumps({{"listing": listing, "net": net, "uid": os.getuid(),
      "visible": [p for p in places if os.path.exists(os.path.join(root, p))]}}), flush=True)
"""


def _probe_the_sandbox(tmp_path) -> dict:
    import json
    import socket
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    kit = tmp_path / "probe-kit"
    kit.mkdir(exist_ok=True)
    (kit / "runner.py").write_text(PROBE.format(places=SECRET_PLACES))
    run = sandbox.launch(kit, sys.executable, ["probe", str(ROOT), str(port)], mode="require")
    try:
        done = subprocess.run(run.cmd, capture_output=True, timeout=60, cwd="/",
                              env={"PATH": ENV_PATH, "HOME": "/grading"})
    finally:
        run.cleanup()
        listener.close()
    line = next((ln for ln in done.stdout.decode().splitlines() if ln.startswith("PROBE ")), None)
    assert line, done.stderr.decode()[-2000:]
    return json.loads(line[len("PROBE "):])


def _leaks(seen: dict) -> list:
    """What the probe could see or do that a submission must not: [] for a good sandbox."""
    needed = {p.relative_to(ROOT).parts[0] for p in sandbox.read_only_paths()
              if p.is_relative_to(ROOT) and p != ROOT}
    out = [f"sees {ROOT}/{p}" for p in seen["visible"]]
    out += [f"lists {ROOT}/{p}" for p in seen["listing"] if p not in needed]
    if seen["net"] != "closed":
        out.append("reaches the host's loopback")
    if seen["uid"] == 0:
        out.append("runs as root")
    return out


@pytest.mark.slow
def test_sandbox_hides_the_repository_and_the_network(tmp_path, confined):
    # wherever the checkout lives: the submission sees only what it needs of it (.venv, lreact)
    seen = _probe_the_sandbox(tmp_path)
    assert _leaks(seen) == [], seen
    assert "lreact" in seen["listing"]          # ... and the probe did look in the right place


@pytest.mark.slow
def test_the_hidden_check_fails_on_a_leaky_sandbox(tmp_path, confined, monkeypatch):
    # the same check, against a broken sandbox that binds the whole checkout: it must go red
    real = sandbox.read_only_paths
    monkeypatch.setattr(sandbox, "read_only_paths", lambda: real() + [ROOT])
    if os.geteuid() == 0 and not os.stat(ROOT).st_mode & 0o001:
        # a checkout in a private folder (mktemp -d: 0700) is not readable by the run's own uid
        # even when bound: break the sandbox a second way, so that it keeps root
        monkeypatch.setattr(sandbox.GRADER_UIDS, "take", lambda: 0)
    leaks = _leaks(_probe_the_sandbox(tmp_path))
    assert f"sees {ROOT}/solutions" in leaks and f"sees {ROOT}/autograder" in leaks, leaks


def test_require_sandbox_env_turns_the_fallback_into_an_error(monkeypatch, tmp_path):
    monkeypatch.setattr(sandbox, "bwrap_works", lambda: False)
    monkeypatch.setenv("LREACT_REQUIRE_SANDBOX", "1")
    with pytest.raises(sandbox.SandboxUnavailable):
        sandbox.launch(tmp_path, sys.executable, [], mode="auto")
    monkeypatch.delenv("LREACT_REQUIRE_SANDBOX")
    run = sandbox.launch(tmp_path, sys.executable, [], mode="auto", scratch_base=tmp_path)
    try:
        assert run.notes and "CAN read solutions/" in run.notes[0]
    finally:
        run.cleanup()


def test_hostile_catalogue_is_complete_and_labelled():
    folder = ROOT / "autograder" / "proofs" / "hostile"
    names = {p.stem for p in folder.glob("*.py")}
    assert {"infinite_loop", "sys_exit", "os_exit", "memory_bomb", "fork_bomb", "huge_output",
            "always_equal", "input_transformer", "patch_checks", "read_solutions",
            "write_gradebook", "network", "detached_spinners", "tmpfs_fill"} <= names
    for p in folder.glob("*.py"):
        head = p.read_text().splitlines()[0]
        assert head.startswith("# HOSTILE: lecture-ReAct-"), p.name


# --- every run bounded as a whole: the per-run cgroup ----------------------------------------

WORK = """\
import sys, time
t = time.perf_counter()
x = 0
for i in range({n}):
    x += i * i
print("WORK", time.perf_counter() - t, flush=True)
"""


def _work_seconds(tmp_path, n: int) -> float:
    """How long fixed CPU work takes in a run of its own (as the run itself measures it)."""
    s = Script(tmp_path, WORK.format(n=n), wall_seconds=300)
    try:
        return float(s.wait_for("WORK", timeout=300).split()[1])
    finally:
        s.end()


@pytest.mark.slow
def test_detached_spinners_get_one_core_and_leave_the_neighbour_its_pace(tmp_path, confined):
    n = 3_000_000
    solo = [_work_seconds(tmp_path, n)]
    spin = Script(tmp_path, hostile("detached_spinners"), wall_seconds=120, cpu_cores=1.0)
    try:
        assert spin.wait_for("started").split()[1] == "100"
        time.sleep(0.5)
        u0, t0 = spin.run.usage().cpu_seconds, time.monotonic()
        beside = _work_seconds(tmp_path, n)              # a neighbour graded at the same time
        time.sleep(max(0.0, 2.0 - (time.monotonic() - t0)))
        share = (spin.run.usage().cpu_seconds - u0) / (time.monotonic() - t0)
        running = spin.alive()
    finally:
        spin.end()
    solo.append(_work_seconds(tmp_path, n))
    ratio = beside / (sum(solo) / len(solo))
    print(f"\nspinner run: {share:.2f} cores; neighbour {ratio:.2f}x its solo time")
    assert len(running) >= 100, "the spinners did not run (the test proves nothing)"
    assert share <= 1.15, f"100 detached spinners took {share:.2f} cores (quota 1.0)"
    # Fair shares give the neighbour at least half of what the grader's runs get together
    # (ratio <= 2 even on a loaded machine, about 1 on an idle one); without a cgroup it is
    # one process against 101 (measured: about 29x). 4 leaves room for a noisy machine.
    assert ratio < 4, f"the neighbour ran {ratio:.1f}x slower beside the spinners"
    assert spin.alive() == [], "spinners outlived their run"


SPINNERS = """\
import os, time
for _ in range(4):                 # detached spinners, bounded at 60 s
    if os.fork() == 0:
        os.setsid()
        stop = time.monotonic() + 60
        while time.monotonic() < stop:
            pass
        os._exit(0)
print("started", flush=True)
time.sleep(60)
"""


@pytest.mark.slow
def test_the_cpu_quota_holds_however_many_processes_a_run_has(tmp_path, confined):
    # a small quota, so that even a loaded machine leaves the spinners more than it
    spin = Script(tmp_path, SPINNERS, wall_seconds=120, cpu_cores=0.2)
    try:
        spin.wait_for("started")
        u0, t0 = spin.run.usage(), time.monotonic()
        for _ in range(20):        # a loaded machine may give the whole group little at first
            time.sleep(0.5)
            u1, t1 = spin.run.usage(), time.monotonic()
            if t1 - t0 >= 2 and u1.cpu_throttled > u0.cpu_throttled:
                break
    finally:
        spin.end()
    share = (u1.cpu_seconds - u0.cpu_seconds) / (t1 - t0)
    print(f"\nspinners under a 0.2-core quota: {share:.3f} cores")
    assert u1.cpu_throttled > u0.cpu_throttled, "the quota never stopped the spinners"
    assert share <= 0.2 * 1.25, f"100 spinners took {share:.2f} cores (quota 0.2)"
    assert spin.alive() == []


def _available() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no MemAvailable in /proc/meminfo")


@pytest.mark.slow
def test_tmpfs_and_shared_memory_count_toward_the_run_limit(tmp_path, confined):
    limit = 1024**3
    before, low, stop = _available(), [], threading.Event()

    def watch():
        while not stop.is_set():
            low.append(_available())
            time.sleep(0.05)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    fill = Script(tmp_path, hostile("tmpfs_fill"), wall_seconds=120, memory_bytes=limit)
    try:
        said = fill.output(timeout=120)
    finally:
        used = fill.end()
        stop.set()
        watcher.join()
    in_tmpfs = sum(int(ln.split()[2]) for ln in said if ln.startswith("FILLED")) * 1024**2
    drop = before - min(low)
    print(f"\ntmpfs attack: peak {used.memory_peak_bytes / 1024**2:.0f} MiB of the run "
          f"(limit {limit / 1024**2:.0f}), {in_tmpfs / 1024**2:.0f} MiB of it in tmpfs, "
          f"OOM kills {used.oom_kills}; machine's available memory fell "
          f"{drop / 1024**2:.0f} MiB")
    assert in_tmpfs >= 300 * 1024**2, said        # it did fill the tmpfs folders
    assert used.memory_peak_bytes >= in_tmpfs     # ... and those pages were counted
    assert used.memory_peak_bytes <= limit
    stopped = used.oom_kills > 0 or any("Cannot allocate" in ln for ln in said)
    assert stopped and not any(ln.startswith("MEMFD 1080") for ln in said), said
    assert drop < 3 * 1024**3, "the machine lost far more memory than one run may hold"
    assert fill.alive() == []


@pytest.mark.slow
def test_a_fork_bomb_stops_at_the_run_process_limit(tmp_path, confined):
    bomb = Script(tmp_path, hostile("fork_bomb"), wall_seconds=120, max_processes=64)
    try:
        forked = int(bomb.wait_for("forked").split()[1])
        refused = bomb.run.usage().pids_refused
    finally:
        bomb.end()
    assert forked < 64 and refused > 0, (forked, refused)
    assert bomb.alive() == []


DAEMON = """\
import os, signal, sys, time
if os.fork() == 0:                 # a daemon: new session, double fork, ignores SIGTERM/HUP
    os.setsid()
    if os.fork() == 0:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        time.sleep(120)
    os._exit(0)
print("DAEMONISED", flush=True)
"""


def test_the_end_of_a_run_kills_what_it_detached_even_without_a_pid_namespace(tmp_path,
                                                                               cgroups):
    # "off": no bubblewrap, so no PID namespace ends the daemon; only the cgroup can
    s = Script(tmp_path, DAEMON, mode="off")
    try:
        s.output(timeout=60)                      # the run's own process has ended ...
        time.sleep(0.2)
        outlived = s.alive()
    finally:
        s.end()
    assert outlived, "the daemon did not outlive its parent (the test proves nothing)"
    assert s.alive() == []                        # ... and cleanup() found the daemon


def test_the_wall_clock_kills_the_whole_run(tmp_path, cgroups):
    s = Script(tmp_path, DAEMON + "time.sleep(120)\n", mode="off", wall_seconds=1)
    try:
        s.wait_for("DAEMONISED")
        s.proc.wait(timeout=30)                   # ended by the clock, long before 120 s
        timed_out, left = s.run.timed_out, s.alive()
    finally:
        s.end()
    assert timed_out and left == []


CRASHING_GRADER = """\
import subprocess, sys
from autograder.sandbox import launch as sandbox
run = sandbox.launch(sandbox.Path({kit!r}), sys.executable, [{marker!r}], mode="off")
run.popen(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).wait()
print(run.group.name, flush=True)
import os
os._exit(0)                                        # the grader dies without cleanup()
"""


def test_groups_left_by_a_crashed_grader_are_swept(tmp_path, cgroups):
    from autograder.sandbox import cgroup
    marker = f"lreact-test-{uuid.uuid4().hex}"
    kit = tmp_path / "kit"
    kit.mkdir()
    (kit / "runner.py").write_text(DAEMON)
    crashed = subprocess.run([sys.executable, "-c", CRASHING_GRADER.format(
        kit=str(kit), marker=marker)], capture_output=True, timeout=60, cwd=str(ROOT))
    name = crashed.stdout.decode().split()[-1]
    b = cgroup.backend()
    mine = cgroup.RunGroup(b, cgroup.Limits())     # a live grader's group must survive
    try:
        assert survivors(marker), "nothing was left behind (the test proves nothing)"
        assert all((h.base / name).is_dir() for h in b.hierarchies)
        swept = cgroup.sweep_stale(b)
        assert name in swept and mine.name not in swept
        assert all((d.is_dir() for _, d in mine.dirs))
    finally:
        mine.close()
    assert not any((h.base / name).exists() for h in b.hierarchies)
    assert survivors(marker) == []


@pytest.mark.slow
def test_two_workers_at_once_get_groups_of_their_own(tmp_path, confined):
    from concurrent.futures import ThreadPoolExecutor
    text = "import os\nprint('GROUP', open('/proc/self/cgroup').read().count(':'), flush=True)\n"

    def one(i):
        s = Script(tmp_path / f"w{i}", text, wall_seconds=60)
        try:
            s.output(timeout=60)
            return s.run.group.name, [d for _, d in s.run.group.dirs], s.marker
        finally:
            s.end()

    for i in range(4):
        (tmp_path / f"w{i}").mkdir()
    with ThreadPoolExecutor(2) as pool:
        done = list(pool.map(one, range(4)))
    assert len({name for name, _, _ in done}) == 4
    assert not any(d.exists() for _, dirs, _ in done for d in dirs)
    assert not any(survivors(m) for _, _, m in done)


def test_groups_made_and_removed_by_many_runs_at_once_never_collide(cgroups):
    # the last run of any grader removes the shared parent folder while another run makes it
    # again: CI once saw "File exists" there (Path.mkdir(exist_ok=True) re-checks after EEXIST)
    from concurrent.futures import ThreadPoolExecutor
    from autograder.sandbox import cgroup
    backend, limits = cgroup.backend(), cgroup.Limits(1.0, 256 << 20, 64)

    def one(_):
        group = cgroup.RunGroup(backend, limits)
        dirs = [d for _, d in group.dirs]
        group.close()
        return dirs

    with ThreadPoolExecutor(8) as pool:
        made = list(pool.map(one, range(3000)))
    assert all(len(dirs) == len(backend.hierarchies) for dirs in made)
    assert not any(d.exists() for dirs in made for d in dirs)


def test_cgroup_v2_is_found_and_limits_written_as_the_kernel_expects(tmp_path):
    # a pure cgroup v2 machine, faked: /proc/self/{cgroup,mountinfo} and the cgroup folder
    from autograder.sandbox import cgroup
    proc, mount = tmp_path / "proc", tmp_path / "cg"
    (mount / "grader.slice").mkdir(parents=True)
    proc.mkdir()
    (proc / "cgroup").write_text("0::/grader.slice\n")
    (proc / "mountinfo").write_text(
        f"30 25 0:26 / {mount} rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n")
    own = mount / "grader.slice"
    (own / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    (own / "cgroup.subtree_control").write_text("\n")
    (own / cgroup.PARENT).mkdir()                     # the kernel would add these files itself
    (own / cgroup.PARENT / "cgroup.subtree_control").write_text("\n")
    b = cgroup.detect(proc)
    assert b.name == "cgroup v2" and b.hierarchies[0].base == own / cgroup.PARENT
    assert (own / "cgroup.subtree_control").read_text() == "+cpu +memory +pids"
    assert (own / cgroup.PARENT / "cgroup.subtree_control").read_text() == "+cpu +memory +pids"
    g = cgroup.RunGroup(b, cgroup.Limits(cpu_cores=0.5, memory_bytes=1024**3, pids=99))
    d = g.dirs[0][1]
    assert (d / "cpu.max").read_text() == "50000 100000"
    assert (d / "memory.max").read_text() == str(1024**3)
    assert (d / "pids.max").read_text() == "99"
    assert f"echo $$ > {d / 'cgroup.procs'}" in g.wrap(["true"])[2]
    # only some controllers offered (as on a hybrid machine): v2 is not used for limits
    (own / "cgroup.controllers").write_text("hugetlb\n")
    assert cgroup.detect(proc).problem.startswith("cgroup v2 at")


def test_the_cgroup_wrapper_fails_closed(tmp_path):
    # if the move into the group fails, the command must not run at all
    from autograder.sandbox import cgroup
    b = cgroup.Backend("cgroup v2", (cgroup.Hierarchy(2, frozenset(), tmp_path / "none"),))
    g = cgroup.RunGroup.__new__(cgroup.RunGroup)
    g.dirs = [(b.hierarchies[0], tmp_path / "none" / "run-x")]
    done = subprocess.run(g.wrap(["sh", "-c", "echo RAN"]), capture_output=True)
    assert done.returncode == 125 and b"RAN" not in done.stdout


# --- saying plainly what is not protected ----------------------------------------------------

def test_without_cgroups_the_grader_says_once_what_is_unprotected(monkeypatch, tmp_path, capsys):
    from autograder.sandbox import cgroup
    monkeypatch.setattr(cgroup, "backend", lambda: cgroup.Backend("", problem="TEST: no cgroups"))
    monkeypatch.setattr(sandbox, "_once", sandbox._Once())
    monkeypatch.delenv("LREACT_REQUIRE_SANDBOX", raising=False)
    runs = [sandbox.launch(tmp_path, sys.executable, [], mode="off", scratch_base=tmp_path)
            for _ in range(2)]
    for run in runs:
        run.cleanup()
    err = capsys.readouterr().err
    assert err.count("WITHOUT a per-run cgroup (TEST: no cgroups)") == 1, err
    note = next(n for n in runs[1].notes if "per-run cgroup" in n)
    for said in ("CAN slow down or starve", "per process only", "tmpfs or /dev/shm",
                 "CAN outlive the run"):
        assert said in note
    monkeypatch.setenv("LREACT_REQUIRE_SANDBOX", "1")
    with pytest.raises(sandbox.SandboxUnavailable, match="TEST: no cgroups"):
        sandbox.launch(tmp_path, sys.executable, [], mode="auto")


def test_the_bubblewrap_warning_gives_the_probe_error_once(monkeypatch, tmp_path, capsys):
    error = "bwrap: setting up uid map: Permission denied"
    monkeypatch.setattr(sandbox, "_prerequisites", lambda: "")
    monkeypatch.setattr(sandbox, "_probe_command", lambda kit, uid: [
        "sh", "-c", f"echo 'some noise' >&2; echo '{error}' >&2; exit 1"])
    monkeypatch.setattr(sandbox, "_once", sandbox._Once())
    monkeypatch.delenv("LREACT_REQUIRE_SANDBOX", raising=False)
    sandbox.bwrap_problem.cache_clear()
    try:
        runs = [sandbox.launch(tmp_path, sys.executable, [], scratch_base=tmp_path)
                for _ in range(3)]
        for run in runs:
            run.cleanup()
        err = capsys.readouterr().err
        assert err.count("WITHOUT a sandbox") == 1 and err.count(error) == 1, err
        assert "exited with status 1" in runs[2].notes[0] and error in runs[2].notes[0]
    finally:
        sandbox.bwrap_problem.cache_clear()


def test_the_memory_limit_leaves_room_beyond_the_tmpfs_folders(tmp_path):
    with pytest.raises(ValueError, match="tmpfs"):
        sandbox.launch(tmp_path, sys.executable, [], memory_bytes=sandbox.TMPFS_BYTES)


# --- the guard against borrowed answers: shadowed builtins, patched test helpers, references ---

def _mini_source(tmp_path):
    """A small assignment whose tests use a builtin inline, lreact.labchecks, and a reference."""
    import nbformat

    def answer(gid, source):
        return nbformat.v4.new_code_cell(source, id=gid, metadata={"nbgrader": {
            "solution": True, "grade": False, "locked": False, "grade_id": gid,
            "schema_version": 3}})

    def test(gid, source, points=1):
        return nbformat.v4.new_code_cell(source, id=gid, metadata={"nbgrader": {
            "solution": False, "grade": True, "locked": True, "grade_id": gid, "points": points,
            "schema_version": 3}})

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("import numpy as np", id="setup"),
        answer("double", "def double(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n"
                         "    ### END SOLUTION\n"),
        test("test_double", 'from lreact.labchecks import text\nassert text(double("ab")) == "abab"\n'),
        test("test_double__len", 'assert len(double("ab")) == 4 and sum([double(1)]) == 2\n'),
        answer("softmax", "def softmax(z):\n    ### BEGIN SOLUTION\n    e = np.exp(np.asarray(z, "
                          "dtype=float) - np.max(z))\n    return e / e.sum()\n"
                          "    ### END SOLUTION\n"),
        test("test_softmax", "from lreact.checks import assert_close\n"
                             "from lreact.labchecks import reference\n"
                             "oracle = reference('sampling', 'softmax')\n"
                             "assert_close(softmax([1.0, 2.0, 0.5]), oracle([1.0, 2.0, 0.5]), "
                             "tol=1e-12)\n", points=2),
    ]
    path = tmp_path / "mini.ipynb"
    nbformat.write(nb, str(path))
    return path


def _grade_mini(source, gid, answer, **kw):
    return grade_notebook("mini", replace_cell(load(source), gid, answer), timeout=30,
                          source=source, **kw)


@pytest.mark.slow
def test_mini_source_scores_full_marks(tmp_path):
    source = _mini_source(tmp_path)
    r = grade_notebook("mini", source, timeout=30, source=source)
    assert (r.total, r.possible) == (4.0, 4.0), r.errors


SHADOW = ("def double(x):\n    return x\n"
          "len = lambda x: 4\n"
          "sum = lambda *a, **k: 2\n")
PATCH_LABCHECKS = ("import lreact.labchecks\n"
                   "lreact.labchecks.text = lambda *a, **k: 'abab'\n"
                   "def double(x):\n    return x\n")


@pytest.mark.slow
def test_shadowed_builtins_gain_nothing(tmp_path):
    source = _mini_source(tmp_path)
    r = _grade_mini(source, "double", SHADOW)
    assert r.scores["test_double__len"] == (0.0, 1.0)
    # a plain value that happens to share a builtin's name is left alone
    r = _grade_mini(source, "double", "max = 10\ndef double(x):\n    return x * (max - 8)\n")
    assert (r.scores["test_double"], r.scores["test_double__len"]) == ((1.0, 1.0), (1.0, 1.0))


@pytest.mark.slow
def test_patched_labchecks_gain_nothing(tmp_path):
    source = _mini_source(tmp_path)       # (the honest answer: test_mini_source_scores_full_marks)
    assert _grade_mini(source, "double", PATCH_LABCHECKS).scores["test_double"] == (0.0, 1.0)


BORROWED = {
    "import": "from lreact.sampling import softmax\n",
    "wrapper": "import lreact.sampling\ndef softmax(z):\n    return lreact.sampling.softmax(z)\n",
    "restored code": ("import lreact.sampling\n_code = lreact.sampling.softmax.__code__\n"
                      "def softmax(z):\n    raise NotImplementedError\n"
                      "softmax.__code__ = _code\n"
                      "softmax.__globals__['_as_1d'] = lreact.sampling._as_1d\n"),
    "private copy at the top": ("from lreact.labchecks import reference\n"
                                "softmax = reference('sampling', 'softmax')\n"),
    "private copy": ("from lreact.labchecks import reference\n"
                     "def softmax(z):\n    return reference('sampling', 'softmax')(z)\n"),
}


@pytest.mark.slow
@pytest.mark.parametrize("answer", list(BORROWED.values()), ids=list(BORROWED))
def test_the_course_reference_is_no_answer_while_grading(tmp_path, answer):
    source = _mini_source(tmp_path)
    r = _grade_mini(source, "softmax", answer)
    assert r.scores["test_softmax"] == (0.0, 2.0)
    said = r.errors["test_softmax"] + "".join(
        str(o.get("evalue", "")) for c in r.executed.cells if c.get("id") == "softmax"
        for o in c.get("outputs", []))
    assert ("reference" in said and "write your own" in said) or \
        "only code an answer shows" in said                      # the student is told why


def _blob() -> str:
    """A right softmax's compiled code as base64: what a student can read back from the student
    edition's compiled modules (outside red team, issue 28)."""
    import base64
    import marshal
    source = ("def softmax(z):\n    import numpy as np\n"
              "    e = np.exp(np.asarray(z, dtype=float) - np.max(z))\n    return e / e.sum()\n")
    code = next(c for c in compile(source, "x", "exec").co_consts if hasattr(c, "co_code"))
    return base64.b64encode(marshal.dumps(code)).decode()


HIDDEN_CODE = {
    "marshal": ("import base64, marshal, types\n"
                "softmax = types.FunctionType(marshal.loads(base64.b64decode(BLOB)), globals())\n"),
    "code object": ("import base64, marshal, types\n"
                    "def softmax(z):\n    raise NotImplementedError\n"
                    "softmax.__code__ = marshal.loads(base64.b64decode(BLOB))\n"),
    "a .pyc file": ("import base64, importlib.util, sys, pathlib\n"
                    "p = pathlib.Path('m.pyc')\n"
                    "p.write_bytes(importlib.util.MAGIC_NUMBER + bytes(12) + base64.b64decode(BLOB))\n"
                    "spec = importlib.util.spec_from_file_location('m', p)\n"
                    "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
                    "softmax = m.softmax\n"),
    "another python": ("import json, subprocess, sys\n"
                       "def softmax(z):\n"
                       "    prog = ('import base64, marshal, json, sys, types; '\n"
                       "            'f = types.FunctionType(marshal.loads(base64.b64decode(sys.argv[1])), {}); '\n"
                       "            'print(json.dumps(list(f(json.loads(sys.argv[2])))))')\n"
                       "    return json.loads(subprocess.check_output([sys.executable, '-c', prog, BLOB, json.dumps(list(z))]))\n"),
}


@pytest.mark.slow
@pytest.mark.parametrize("answer", list(HIDDEN_CODE.values()), ids=list(HIDDEN_CODE))
def test_code_an_answer_does_not_show_never_runs_while_grading(tmp_path, answer):
    """The plain routes from a blob of compiled code to a running function are refused in the
    student process (autograder/inside/guard.py), saying why; the instructor's side flags the
    answer (tests/test_hidden_code.py)."""
    source = _mini_source(tmp_path)
    answer = f"BLOB = {_blob()!r}\n" + answer
    r = _grade_mini(source, "softmax", answer)
    assert r.scores["test_softmax"] == (0.0, 2.0)
    said = r.errors["test_softmax"] + "".join(
        str(o.get("evalue", "")) + str(o.get("text", "")) for c in r.executed.cells
        if c.get("id") == "softmax" for o in c.get("outputs", []))
    assert "only code an answer shows" in said, said


@pytest.mark.slow
def test_the_blob_route_is_real_without_the_guard():
    """Control: the same blob gives a right softmax in a plain Python (the guard is what
    refuses it, not a broken blob)."""
    import base64
    import marshal
    import types
    import builtins
    f = types.FunctionType(marshal.loads(base64.b64decode(_blob())), {"__builtins__": builtins})
    assert abs(sum(f([1.0, 2.0, 0.5])) - 1.0) < 1e-12


def test_reference_is_a_private_copy_that_works_outside_a_kernel():
    import lreact.chatml
    import lreact.sampling
    import lreact.tools
    from lreact import UserMessage
    from lreact.labchecks import reference

    soft = reference("sampling", "softmax")
    assert soft is not lreact.sampling.softmax
    assert [float(x) for x in soft([0.0, 0.0])] == [0.5, 0.5]
    registry = reference("tools", "REGISTRY")
    assert registry["calculate"] is not lreact.tools.calculate
    assert registry["calculate"]("(17 + 25) * 3") == "126"
    render = reference("chatml", "render_chatml")
    assert render is not lreact.chatml.render_chatml
    assert render([UserMessage("Hi")]) == lreact.chatml.render_chatml([UserMessage("Hi")])
    with pytest.raises(ValueError):
        reference("../autograder/runner", "main")
