"""What crosses back to the tests, graded end to end (issue 16, points 3 and 4).

Honest work the channel cannot carry whole must cost only the test that needs it: a large
variable no test reads costs nothing, a number of any numpy dtype arrives as it is (and compares
as in the student's own kernel), a reply too large or that JSON cannot write fails its one test.
A failed test's error is written from plain data, without asking the student process (which may
have stopped answering).  The attacks on ``repeat`` are hostile entries
(``autograder/proofs/hostile/repeat_*.py``); the channel's own checks are in test_autograder_channel.py.
"""
from pathlib import Path

import pytest

from autograder import cells, paths
from autograder.run.engine import grade_notebook, load, replace_cell

ROOT = Path(__file__).resolve().parent.parent
TINY = ROOT / "tests" / "fixtures" / "autograder" / "solutions" / "tiny" / "tiny.ipynb"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def state(tmp_path_factory):
    return paths.State(tmp_path_factory.mktemp("state"))


def tiny(double_cell, state):
    return grade_notebook("tiny", replace_cell(load(TINY), "double", double_cell), timeout=20,
                          source=TINY, state=state)


def test_a_large_variable_no_test_reads_costs_nothing(state):
    r = tiny("import numpy as np\nbig = np.random.default_rng(0).random(20_000_000)\n"
             "def double(x):\n    return 2 * x\n", state)
    assert (r.total, r.possible) == (4.0, 4.0) and r.failure is None


@pytest.mark.parametrize("returned, why", [
    ("np.zeros(20_000_000)", "too large to pass"),
    ("10 ** 5000", "JSON cannot write"),
])
def test_a_reply_the_channel_cannot_carry_fails_only_its_test(state, returned, why):
    r = tiny(f"import numpy as np\ndef double(x):\n    return {returned}\n", state)
    assert r.scores["test_double"] == (0.0, 2.0)
    assert why in r.errors["test_double"] and "cannot receive" in r.errors["test_double"]
    assert r.scores["test_halve"] == (1.0, 1.0) and r.failure is None    # the process lives on


def test_a_longdouble_answer_scores_as_in_the_students_kernel(state):
    r = tiny("import numpy as np\ndef double(x):\n"
             "    return np.longdouble(2) * np.asarray(x, dtype=np.longdouble)\n", state)
    assert (r.total, r.possible) == (4.0, 4.0)


def test_a_failed_tests_error_never_asks_the_student_process(state):
    # the error holds the student's function; the student process ends when asked anything but
    # a call: writing the error must not ask it (before: "grader error", no later test graded)
    cell = ('import os, sys\n'
            '_link = sys.modules.get("autograder.inside.student")\n'
            'if _link is not None:\n'
            '    _serve = _link.StudentLink.serve\n'
            '    def _serve_calls_only(self, m):\n'
            '        if m.get("op") not in ("run", "call", "bye"):\n'
            '            os._exit(0)\n'
            '        return _serve(self, m)\n'
            '    _link.StudentLink.serve = _serve_calls_only\n'
            'def double(x):\n'
            '    raise ValueError(double)\n')
    r = tiny(cell, state)
    assert r.errors["test_double"].startswith("ValueError: <the student's")
    assert r.scores["test_halve"] == (1.0, 1.0) and r.failure is None


def test_an_honest_lab_with_a_20_million_float_array_scores_full_marks(state):
    aid = "lecture-ReAct-lab"
    nb = load(paths.source_path(aid))
    cell = next(c for c in nb.cells if cells.grade_id(c) == "softmax")
    nb = replace_cell(nb, "softmax", cell.source + "\n\nsamples = np.random.default_rng(0)"
                                                   ".standard_normal(20_000_000)\n")
    r = grade_notebook(aid, nb, timeout=60, state=state)
    assert r.total == r.possible and r.failure is None, r.errors


def test_honest_exercises_with_numpy_typed_answers_score_full_marks(state):
    # the same values as the solution, as longdouble, float16, int16 and complex (the tests of
    # ex05 and ex07 pass on exactly these in one kernel)
    aid = "lecture-ReAct-exercises"
    nb = replace_cell(load(paths.source_path(aid)), "ex05_nucleus_flat", (
        "import numpy as np\n"
        "flat_nucleus_size = np.int16(6)\n"
        "flat_topp_probs = np.array([0.232, 0.211, 0.189, 0.158, 0.126, 0.084, 0.0],"
        " dtype=np.longdouble)\n"
        "flat_topk_mass = np.longdouble(22) / 100 + np.longdouble(20) / 100\n"))
    nb = replace_cell(nb, "ex07_constrained", (
        "import numpy as np\n"
        "allowed_tokens = ['\"get_weather\"', '\"calculate\"']\n"
        "p_constrained = np.array([0.75, 0.25, 0, 0, 0, 0, 0, 0], dtype=np.float16)\n"
        "p_invalid = np.complex128(0.6)\n"))
    r = grade_notebook(aid, nb, timeout=60, state=state)
    assert r.total == r.possible and r.failure is None, r.errors


def test_honest_exercises_with_fraction_and_decimal_answers_score_full_marks(state):
    # a correct number is a correct number: the visible check accepts Fractions and Decimals
    # (numpy converts them), so they cross to the tests as floats (before: "a Fraction object is
    # not plain data", 0 points for a right answer)
    aid = "lecture-ReAct-exercises"
    nb = replace_cell(load(paths.source_path(aid)), "ex01_softmax", (
        "from fractions import Fraction\n"
        "from decimal import Decimal\n"
        "softmax_answer = [Fraction(609, 1000), Fraction(224, 1000), Fraction(136, 1000),"
        " Fraction(30, 1000)]\n"
        "softmax_shifted = [Decimal('0.609'), Decimal('0.224'), Decimal('0.136'),"
        " Decimal('0.030')]\n"))
    nb = replace_cell(nb, "ex05_nucleus_flat", (
        "from fractions import Fraction\n"
        "from decimal import Decimal\n"
        "flat_nucleus_size = Decimal(6)\n"
        "flat_topp_probs = (Decimal('0.232'), Fraction(211, 1000), 0.189, 0.158, 0.126, 0.084,"
        " Decimal(0))\n"
        "flat_topk_mass = Fraction(42, 100)\n"))
    r = grade_notebook(aid, nb, timeout=60, state=state)
    assert r.total == r.possible and r.failure is None, r.errors
