"""The pool's processes (autograder/run/pool.py, autograder/run/processes.py): a trusted process goes on
to the next submission, grading each in a forked child, with nothing of the last one left; a
student process never goes on."""
from pathlib import Path

import pytest

from autograder import paths
from autograder.run.engine import grade_notebook, load, replace_cell
from autograder.run.pool import ProcessPool

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "tests" / "fixtures" / "autograder" / "solutions" / "tiny" / "tiny.ipynb"
pytestmark = pytest.mark.slow

# A test cell that fails when a job before it left anything behind in the trusted process: a
# file in its working folder or its TMPDIR, an environment variable, a warning filter, numpy's
# error state, an attribute set on a module of lreact (the reason a trusted process must not
# simply run one job after another), a module imported.
LEAK_CHECK = """import os, sys, tempfile, warnings
import numpy as np
import lreact.checks
from lreact.checks import assert_close
assert not os.path.exists("left-by-the-last-job.txt"), "a file of the last job is still here"
assert not os.listdir(tempfile.gettempdir()), "a temporary file of the last job is still here"
for place in ("/tmp", "/dev/shm", os.path.expanduser("~/.cache")):
    assert not os.path.exists(os.path.join(place, "left")), f"a file of the last job in {place}"
    if os.access(os.path.dirname(place) if not os.path.isdir(place) else place, os.W_OK):
        os.makedirs(place, exist_ok=True)
        open(os.path.join(place, "left"), "w").write("x")
assert not hasattr(lreact.checks, "LEFT_BY_THE_LAST_JOB"), "the last job's module change"
assert "this" not in sys.modules, "the last job's import is still here"
open(os.path.join(tempfile.gettempdir(), "left.txt"), "w").write("x")
lreact.checks.LEFT_BY_THE_LAST_JOB = True
import this
assert "LEFT_BY_THE_LAST_JOB" not in os.environ, "the last job's environment is still here"
assert not any(f[0] == "error" and f[2] is UserWarning for f in warnings.filters), \\
    "the last job's warning filter is still here"
assert np.geterr()["divide"] == "warn", "the last job's numpy error state is still here"
open("left-by-the-last-job.txt", "w").write("x")
os.environ["LEFT_BY_THE_LAST_JOB"] = "1"
warnings.simplefilter("error", UserWarning)
np.seterr(divide="raise")
assert_close(halve(3), 1.5, name='halve(3)')
"""


@pytest.fixture()
def pool(tmp_path):
    p = ProcessPool(paths.State(tmp_path / "state"), size=1)
    yield p
    p.drain()


def leaky_source(tmp_path):
    nb = replace_cell(load(SRC), "test_halve", LEAK_CHECK)
    out = tmp_path / "tiny.ipynb"
    out.write_text(str(__import__("nbformat").writes(nb)), encoding="utf-8")
    return out


def graded_with_pids(pool, nb, source, timeout=20):
    """(GradeResult, student pid, trusted pid) of one submission graded from ``pool``."""
    seen = {}
    take = pool.take

    def spy(mode):
        pair = take(mode)
        seen.update(student=pair.procs[0].pid, tester=pair.tester.proc.pid)
        return pair

    pool.take = spy
    try:
        r = grade_notebook("tiny", nb, timeout=timeout, source=source, pool=pool,
                           state=pool.state)
    finally:
        pool.take = take
    return r, seen["student"], seen["tester"]


def test_the_trusted_process_goes_on_clean_and_the_student_process_never_does(pool, tmp_path):
    """One trusted process grades the class, each job in a forked child: nothing of one job is
    left for the next (LEAK_CHECK), and a wrong answer costs only its own submission."""
    source = leaky_source(tmp_path)
    wrong = replace_cell(load(source), "double", "def double(x):\n    return x + 2\n")
    runs = [graded_with_pids(pool, nb, source) for nb in (source, wrong, source, source)]
    totals = [r.total for r, _, _ in runs]
    assert totals == [4.0, 1.0, 4.0, 4.0], [r.errors for r, _, _ in runs]
    assert all(r.scores["test_halve"] == (1.0, 1.0) for r, _, _ in runs)   # nothing left over
    students = [s for _, s, _ in runs]
    testers = [t for _, _, t in runs]
    assert len(set(students)) == 4                  # a new student process for every submission
    assert testers[1] == testers[2] == testers[3]   # one trusted process served these three
    assert students[0] not in testers


def test_a_job_whose_child_dies_ends_its_trusted_process(pool, tmp_path):
    """A job that ends its child without a result (here the test cell itself exits) gets no
    result, as a process of its own would, and the next submission gets a new trusted process."""
    dying = replace_cell(load(SRC), "test_halve", "import os\nos._exit(3)\n")
    died = tmp_path / "tiny.ipynb"
    died.write_text(str(__import__("nbformat").writes(dying)), encoding="utf-8")
    first, _, t1 = graded_with_pids(pool, SRC, SRC)
    lost, _, t2 = graded_with_pids(pool, SRC, died)
    after, _, t3 = graded_with_pids(pool, SRC, SRC)
    assert first.total == after.total == 4.0
    assert lost.total == 0.0 and lost.failure, lost
    assert t3 != t2                                 # ended with its child: not used again


ASSERT_HALVE = """
from lreact.checks import assert_close
assert_close(halve(3), 1.5, name='halve(3)')
"""
LEAVING = {   # a test cell that leaves something behind, each in its own way
    "a process out of its session": """import os, time
if os.fork() == 0:
    os.setsid()                      # leaves the job's session: a process group kill misses it
    if os.fork() == 0:
        time.sleep(600)
    os._exit(0)
time.sleep(0.2)
""",
    "a folder it cannot remove": """import os, tempfile
keep = os.path.join(tempfile.gettempdir(), "keep")
os.makedirs(keep)
open(os.path.join(keep, "x"), "w").write("x")
os.chmod(keep, 0o555)
""",
    "a changed folder of the run": """import os, tempfile
os.chmod(tempfile.gettempdir(), 0o555)
""",
}


@pytest.mark.parametrize("how", sorted(LEAVING))
def test_a_job_that_leaves_something_behind_retires_its_trusted_process(pool, tmp_path, how):
    """No test should start a process that outlives it or change the run's folders; if one
    does, the trusted process finds it after the job (it is the job's subreaper, and it compares
    the run's private folders with how they were), and is not used again."""
    nb = replace_cell(load(SRC), "test_halve", LEAVING[how] + ASSERT_HALVE)
    source = tmp_path / "tiny.ipynb"
    source.write_text(str(__import__("nbformat").writes(nb)), encoding="utf-8")
    first, _, t1 = graded_with_pids(pool, SRC, source)
    after, _, t2 = graded_with_pids(pool, SRC, SRC)
    assert first.total == after.total == 4.0, (first.errors, after.errors)
    assert t2 != t1


def test_a_trusted_process_whose_student_was_stopped_is_not_used_again(pool):
    stuck = replace_cell(load(SRC), "halve",
                         "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                         "def halve(x):\n    while True:\n        pass\n")
    first, _, t1 = graded_with_pids(pool, SRC, SRC)
    hung, _, t2 = graded_with_pids(pool, stuck, SRC, timeout=2)
    after, _, t3 = graded_with_pids(pool, SRC, SRC)
    assert first.total == after.total == 4.0
    assert hung.scores["test_halve"] == (0.0, 1.0) and "timeout" in hung.errors["test_halve"]
    assert t3 != t2                                 # stopped once: retired, not reused
