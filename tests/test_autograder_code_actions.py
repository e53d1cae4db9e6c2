"""Code from an answer never runs beside the tests, and never where the answer decides its result.

Lab 2's hidden test of ``run_code_action`` hands it the course's code sandbox (``run_python``)
and lets it run code of its choosing.  As a handle, that code would run in the trusted process's
sandbox, as its user: it could read the reference implementations there, and leave a process that
kills the grading of the next submission the trusted process serves (found by an outside review:
the next honest submission scored 0/37, "kernel died").  It crosses by name instead
(``codec.SHARED_FUNCTIONS``), so the answer runs its own copy, in its own sandbox.

Exercise 11's test runs the student's ``code_action`` string itself, to judge it.  Beside the tests
it filled the folders the next submissions needed (a second review: 3 points lost by each); run by
the answers' process, an answer cell that replaced ``run_python`` there decided the result (a third
review: a wrong ``code_action`` scored 3/3).  Now ``run_python`` in the trusted process asks the
grader, which runs the code in a fresh sandbox of its own (``autograder/run/code_runs.py``,
``inside.trusted.code_runs_in_a_sandbox_of_its_own``)."""
from pathlib import Path

import pytest

from autograder import paths
from autograder.cells import grade_id
from autograder.run.engine import grade_notebook, load, replace_cell
from autograder.run.pool import ProcessPool

ROOT = Path(__file__).resolve().parent.parent
LAB2 = ROOT / "solutions" / "lecture-ReAct-lab2" / "lecture-ReAct-lab2.ipynb"
EXERCISES = ROOT / "solutions" / "lecture-ReAct-exercises" / "lecture-ReAct-exercises.ipynb"
pytestmark = pytest.mark.slow

# Run once, through the sandbox a test hands over: it says whether it ran beside the trusted
# process or could read a reference implementation (then the answer loses its own points), and
# beside the trusted process it leaves a process (out of its session) that kills every grading
# child that process starts later.
PAYLOAD = r'''
_PAYLOAD = """
import os, signal, time
def parent_of(p):
    try:
        return int(open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[1])
    except Exception:
        return None
def cmdline(p):
    try:
        return open(f"/proc/{p}/cmdline", "rb").read()
    except Exception:
        return b""
pids = lambda: {int(p) for p in os.listdir("/proc") if p.isdigit()}
trusted = [p for p in pids() if b"tester-reused" in cmdline(p) and cmdline(p).startswith(b"/")]
import inspect, lreact.sampling
readable = "ReferenceUnavailable" not in inspect.getsource(lreact.sampling.softmax)
print("ESCAPED" if trusted or readable else "contained")
if trusted and os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        seen = pids()
        for _ in range(2000):
            time.sleep(0.1)
            for p in pids() - seen:
                seen.add(p)
                if parent_of(p) == min(trusted):
                    os.kill(p, signal.SIGKILL)
    os._exit(0)
"""
_armed = []
_escaped = []
_honest = run_code_action


def run_code_action(code, run, **kw):
    if not _armed and not hasattr(run, "calls"):     # the hidden test's real sandbox
        _armed.append(1)
        try:
            _escaped.append("ESCAPED" in run(_PAYLOAD, timeout=5)["stdout"])
        except Exception:
            pass
    if any(_escaped):
        return "escaped"                              # visible in this answer's own score
    return _honest(code, run, **kw)
'''


def test_a_code_action_cannot_reach_the_next_submissions_grading(tmp_path):
    nb = load(LAB2)
    cell = next(c for c in nb.cells if grade_id(c) == "run_code_action")
    hostile = replace_cell(nb, "run_code_action", cell.source + "\n" + PAYLOAD)
    pool = ProcessPool(paths.State(tmp_path / "state"), size=1)
    try:
        first = grade_notebook("lecture-ReAct-lab2", hostile, timeout=60, source=LAB2, pool=pool,
                               state=pool.state)
        honest = grade_notebook("lecture-ReAct-lab2", LAB2, timeout=60, source=LAB2, pool=pool,
                                state=pool.state)
    finally:
        pool.drain()
    assert first.total == first.possible, first.errors          # it ran contained
    assert honest.total == honest.possible, (honest.failure, honest.errors)


# Exercise 11's code action, right, unless it runs beside either grading process or can read a
# reference implementation: then it answers wrong (so its own points show where it ran).
CODE_ACTION = '''code_action = """
import os, inspect
beside = any(b"tester-reused" in open(f"/proc/{p}/cmdline", "rb").read()
             or b"student" in open(f"/proc/{p}/cmdline", "rb").read()
             for p in os.listdir("/proc") if p.isdigit())
try:
    import lreact.sampling
    readable = "ReferenceUnavailable" not in inspect.getsource(lreact.sampling.softmax)
except ImportError:
    readable = False
temps = {}
for city in ["Berlin", "Paris", "Madrid"]:
    temps[city] = float(get_weather(city).split("°")[0])
answer = "escaped" if beside or readable else max(temps, key=temps.get)
"""
llm_calls_specific = 4
llm_calls_code = 2
'''


def test_an_exercise_code_action_runs_in_a_sandbox_of_its_own(tmp_path):
    probe = replace_cell(load(EXERCISES), "ex11_code_action", CODE_ACTION)
    pool = ProcessPool(paths.State(tmp_path / "state"), size=1)
    try:
        graded = grade_notebook("lecture-ReAct-exercises", probe, timeout=60, source=EXERCISES,
                                pool=pool, state=pool.state)
    finally:
        pool.drain()
    ex11 = {k: v for k, v in graded.scores.items() if k.startswith("test_ex11")}
    assert ex11 and all(got == most for got, most in ex11.values()), (ex11, graded.errors)



# A wrong code action (it never asks get_weather) with the course's code sandbox replaced in the
# answers' process by one that prints the result line the test looks for.  The test's own runs
# never go there, so the forgery costs only the answer's own points.
FORGERY = (Path(__file__).resolve().parent.parent / "autograder" / "proofs" / "hostile"
           / "forge_code_action_run.py").read_text(encoding="utf-8")


def test_a_forged_code_sandbox_in_the_answers_process_decides_nothing(tmp_path):
    right = replace_cell(load(EXERCISES), "ex11_code_action",
                         FORGERY.replace("code_action = \"answer = 'Madrid'   # never asks "
                                         "get_weather\"", load_answer()))
    forged = replace_cell(load(EXERCISES), "ex11_code_action", FORGERY)
    pool = ProcessPool(paths.State(tmp_path / "state"), size=1)
    try:
        graded = [grade_notebook("lecture-ReAct-exercises", nb, timeout=60, source=EXERCISES,
                                 pool=pool, state=pool.state) for nb in (forged, right)]
    finally:
        pool.drain()
    forged_score, right_score = (g.scores["test_ex11_code_action"] for g in graded)
    assert forged_score == (0.0, 3.0), graded[0].errors
    # the same forger beside a right code action: the right answer keeps its points
    assert right_score == (3.0, 3.0), graded[1].errors


def load_answer() -> str:
    cell = next(c for c in load(EXERCISES).cells if grade_id(c) == "ex11_code_action")
    body = cell.source.split("### BEGIN SOLUTION")[1].split("### END SOLUTION")[0]
    return body.strip("\n").split("llm_calls_specific")[0].rstrip()


# --- a code action is a grading run of its own: its cgroup caps it, the submission's end ends it
# (an outside review: run unconfined by the grader, 17 processes took 2.5 GB and 1.8 cores and
# cost the honest submission graded beside it points, and outlived the job by 3 s)

def _event(code, timeout):
    return {"code": code, "prelude": "", "timeout": timeout, "memory": 512 * 1024**2,
            "max_output": 2000}


def test_a_code_actions_processes_share_one_memory_cap_and_one_core(tmp_path):
    from autograder.run.code_runs import MEMORY_BYTES, CodeRuns
    runs = CodeRuns("require", tmp_path)
    try:
        hog = ("import os, time\nfor _ in range(5):\n    if os.fork() == 0:\n"
               "        x = bytearray(300 * 1024**2)\n        time.sleep(3)\n        os._exit(0)\n"
               "x = bytearray(300 * 1024**2)\ntime.sleep(3)\n")
        runs.run(_event(hog, 10))
        spin = ("import os, time\nfor _ in range(4):\n    if os.fork() == 0:\n        os.setsid()\n"
                "        end = time.time() + 3\n        while time.time() < end: pass\n"
                "        os._exit(0)\ntime.sleep(3.5)\n")
        runs.run(_event(spin, 10))
    finally:
        runs.close()
    memory, cpu = runs.usages
    assert memory is not None and cpu is not None, "no cgroup for a code action"
    assert memory.memory_peak_bytes <= MEMORY_BYTES and memory.oom_kills > 0, memory
    assert cpu.cpu_seconds < 4.5 and cpu.cpu_throttled > 0, cpu   # 4 x 3 s asked, 1 core given


def test_a_code_action_under_way_ends_with_the_submissions_run(tmp_path):
    import time
    from autograder.run.code_runs import CodeRuns
    runs = CodeRuns("require", tmp_path)
    runs.start(_event("import os\nos.setsid()\nwhile True: pass", 60))
    deadline = time.monotonic() + 60
    while not runs._runs or next(iter(runs._runs.values())).proc is None:
        assert time.monotonic() < deadline, "the code action never started"
        time.sleep(0.05)
    run = next(iter(runs._runs.values()))
    runs.close()                                   # the submission's run is over
    assert run.proc.poll() is not None             # killed then and there, its cgroup with it
