"""Selfcheck: every assignment in solutions/ is graded as promised.

For each assignment: the source scores full marks, the unchanged student version scores zero,
and every wrong answer of its catalogue (``autograder/proofs/wrong_answers/<id>/``) runs without error
in its own cell, loses marks on the tests of that cell, and on no other test cell: a mistake in
one function costs points in that function's tests only (its callers' tests pass the course's
version of it, through a ``..._fn`` parameter), unless the entry declares the exception with its
reason (``# CASCADE: <test>: <reason>``, ``autograder/proofs/catalogue.py``).  Every right answer
(``autograder/proofs/right_answers/<id>/``: a literal reading of a task that the model solution does not
take) scores full marks.  Each wrong answer is
graded on the whole notebook after its answer cell (``selfcheck.for_entry``).  Everything is
graded up front, in parallel (``selfcheck --jobs``), through the real engine and sandbox.
"""
from concurrent.futures import ThreadPoolExecutor

import nbformat
import pytest

from autograder import cells
from autograder.proofs import catalogue, selfcheck
from autograder.run import engine
from autograder.paths import ROOT, source_path
from autograder.run.pool import ProcessPool
from autograder.instructor.release import generate
import proof_support

pytestmark = [pytest.mark.selfcheck, pytest.mark.slow]
ASSIGNMENTS = selfcheck.assignments()


def _wrong_answers():
    params = []
    for aid in ASSIGNMENTS:
        try:
            found = catalogue.entries(aid)
        except catalogue.CatalogueError as e:
            params.append(pytest.param(aid, e, id=f"{aid}:unreadable-catalogue"))
            continue
        params += [pytest.param(aid, entry, id=f"{aid}:{entry.path.name}") for entry in found]
    return params


WRONG = _wrong_answers()


def _right_answers():
    params = []
    for aid in ASSIGNMENTS:
        try:
            found = catalogue.right_entries(aid)
        except catalogue.CatalogueError as e:
            params.append(pytest.param(aid, e, id=f"{aid}:unreadable-right-answers"))
            continue
        params += [pytest.param(aid, entry, id=f"{aid}:{entry.path.name}") for entry in found]
    return params


RIGHT = _right_answers()
WRONG_ANSWER_TESTS = ("test_wrong_answer_runs_and_is_caught",
                      "test_wrong_answer_costs_points_in_its_own_tests_only")


class Grading:
    """Every grading the tests below look at, submitted at once to a few workers."""

    def __init__(self, state, jobs):
        self.pool = ProcessPool(state, size=jobs)
        self.workers = ThreadPoolExecutor(jobs)
        self.futures = {}
        self.sources = {aid: cells.load(source_path(aid)) for aid in ASSIGNMENTS}

    def submit(self, key, aid, nb, source):
        self.futures[key] = self.workers.submit(
            engine.grade_notebook, aid, nb, proof_support.HONEST_TIMEOUT, source=source,
            pool=self.pool)

    def result(self, key):
        return self.futures[key].result()

    def close(self):
        self.workers.shutdown(wait=True, cancel_futures=True)
        self.pool.drain()


def _selected(request):
    """The (test name, aid, entry) of the tests this session runs (``-k`` selects fewer)."""
    for item in request.session.items:
        spec = getattr(item, "callspec", None)
        if spec is not None and item.module is request.module:
            yield item.originalname, spec.params.get("aid"), spec.params.get("entry")


@pytest.fixture(scope="module")
def grading(tmp_path_factory, request):
    g = Grading(proof_support.state_folder(tmp_path_factory.mktemp("selfcheck-state")),
                proof_support.jobs())
    wanted = list(_selected(request))
    for name, aid, entry in wanted:
        src = g.sources[aid]
        if name == "test_source_scores_full_marks":
            g.submit(("source", aid), aid, src, src)
        elif name == "test_student_version_scores_zero":
            g.submit(("student", aid), aid,
                     nbformat.reads(generate(source_path(aid)), as_version=4), src)
    for name, aid, entry in wanted:
        if name == "test_right_answer_scores_full_marks" and not isinstance(entry, Exception):
            src = g.sources[aid]
            g.submit(("right", entry.path), aid, engine.replace_cell(src, entry.grade_id, entry.source),
                     selfcheck.for_entry(src, entry.grade_id))
            continue
        if name not in WRONG_ANSWER_TESTS or isinstance(entry, Exception) \
                or ("wrong", entry.path) in g.futures:
            continue
        src = g.sources[aid]
        if selfcheck.tests_of(src, entry.grade_id):
            nb = engine.replace_cell(src, entry.grade_id, entry.source)
            g.submit(("wrong", entry.path), aid, nb, selfcheck.for_entry(src, entry.grade_id))
    yield g
    g.close()


@pytest.mark.parametrize("aid", ASSIGNMENTS)
def test_source_scores_full_marks(grading, aid):
    r = grading.result(("source", aid))
    assert r.possible > 0 and r.total == r.possible, "\n".join(
        selfcheck.diagnose(r, cells.load(source_path(aid))))
    assert all(r.answers_ran.values()), r.answers_ran


@pytest.mark.parametrize("aid", ASSIGNMENTS)
def test_student_version_scores_zero(grading, aid):
    r = grading.result(("student", aid))
    earned = {g: a for g, (a, p) in r.scores.items() if a}
    assert r.total == 0, f"the student version earns {earned}"


@pytest.mark.parametrize("aid,entry", WRONG)
def test_wrong_answer_runs_and_is_caught(grading, aid, entry):
    assert not isinstance(entry, Exception), f"the catalogue does not load: {entry}"
    tests = selfcheck.tests_of(grading.sources[aid], entry.grade_id)
    assert tests, f"{entry.grade_id} has no test cells test_{entry.grade_id}*"
    r = grading.result(("wrong", entry.path))
    assert r.answers_ran.get(entry.grade_id), (
        f"{entry.path.name}: the wrong answer's own cell did not run "
        f"({r.failure or _cell_error(r, entry.grade_id)}): it must model a mistake in working "
        "code; an answer that attacks the grader belongs in autograder/proofs/hostile/")
    got = sum(r.scores[t][0] for t in tests)
    possible = sum(r.scores[t][1] for t in tests)
    assert got < possible, f"{entry.mistake!r} is NOT caught: {got:g}/{possible:g} on {tests}"


@pytest.mark.parametrize("aid,entry", WRONG)
def test_wrong_answer_costs_points_in_its_own_tests_only(grading, aid, entry):
    """No cascade: the cells that lose points are the entry's own function's (``test_<grade_id>*``)
    and the declared exceptions (``# CASCADE:``), which must still lose points."""
    assert not isinstance(entry, Exception), f"the catalogue does not load: {entry}"
    src = grading.sources[aid]
    known = {cells.grade_id(c) for c in src.cells if cells.is_autograded_test(c)}
    declared = dict(entry.cascades)
    assert set(declared) <= known, f"# CASCADE names no test cell of {aid}: {set(declared) - known}"
    r = grading.result(("wrong", entry.path))
    lost = selfcheck.lost_elsewhere(src, entry.grade_id, r.scores)
    undeclared = {t: p for t, p in lost.items() if t not in declared}
    assert not undeclared, (
        f"{entry.mistake!r} (a wrong {entry.grade_id}) also costs {undeclared} ({r.failure or ''}"
        f"{[r.errors.get(t, '')[:160] for t in undeclared]}): those tests use this student's "
        f"{entry.grade_id}; pass them the course's version instead (a ..._fn parameter), or "
        "declare the exception with its reason in the entry (# CASCADE: <test>: <reason>)")
    stale = sorted(set(declared) - set(lost))
    assert not stale, f"declared cascades that no longer lose points (remove them): {stale}"


@pytest.mark.parametrize("aid,entry", RIGHT)
def test_right_answer_scores_full_marks(grading, aid, entry):
    """Every correct literal reading of a task earns its points: a right answer (a reading the
    model solution does not take) loses nothing in any cell graded after its answer cell."""
    assert not isinstance(entry, Exception), f"the right answers do not load: {entry}"
    assert selfcheck.tests_of(grading.sources[aid], entry.grade_id), \
        f"{entry.grade_id} has no test cells test_{entry.grade_id}*"
    r = grading.result(("right", entry.path))
    assert r.answers_ran.get(entry.grade_id), f"the right answer's own cell did not run ({r.failure})"
    lost = {t: p - a for t, (a, p) in r.scores.items() if a < p}
    assert not lost, (f"{entry.mistake!r} (a right {entry.grade_id}) loses {lost}: "
                      f"{[r.errors.get(t, '')[:200] for t in lost]}; the task's text allows this "
                      "reading, so the tests must accept it (or the text must rule it out)")


@pytest.mark.parametrize("aid", ASSIGNMENTS)
def test_every_test_cell_stands_alone(aid):
    """What makes ``selfcheck.for_entry`` sound: dropping the test cells before an answer cell
    changes no later test, because no test cell reads a name that only another one binds."""
    assert selfcheck.borrowed_names(cells.load(source_path(aid))) == {}


def test_the_cascade_proof_sees_a_cascade():
    """The proof can fail: a run_agent test that uses the student's execute_tool_call again loses
    its points to a wrong execute_tool_call (graded through the real engine)."""
    aid = "lecture-ReAct-lab"
    src = cells.load(source_path(aid))
    for cell in src.cells:
        if cells.grade_id(cell) == "test_run_agent":
            cell.source = cell.source.replace(", execute_fn=course_execute", "")
    entry = next(e for e in catalogue.entries(aid) if e.path.stem == "execute_tool_call__name_as_id")
    trimmed = selfcheck.for_entry(src, entry.grade_id)
    r = engine.grade_notebook(aid, engine.replace_cell(src, entry.grade_id, entry.source),
                              proof_support.HONEST_TIMEOUT, source=trimmed)
    assert set(selfcheck.lost_elsewhere(src, entry.grade_id, r.scores)) == {"test_run_agent"}


@pytest.mark.parametrize("aid", ASSIGNMENTS)
def test_every_graded_function_has_three_wrong_answers(aid):
    src = cells.load(source_path(aid))
    graded = [cells.grade_id(c) for c in src.cells if cells.is_answer(c) and c.cell_type == "code"
              and "def " in c.source
              and selfcheck.tests_of(src, cells.grade_id(c))]
    counts = {gid: 0 for gid in graded}
    for param in WRONG:
        a, entry = param.values
        if a == aid and not isinstance(entry, Exception) and entry.grade_id in counts:
            counts[entry.grade_id] += 1
    short = {gid: n for gid, n in counts.items() if n < 3}
    assert not short, f"fewer than 3 wrong answers: {short}"


def test_a_cascade_is_declared_with_its_reason(tmp_path):
    """``# CASCADE: <test>: <reason>`` lines after ``# WRONG:`` (catalogue.py): parsed, kept in the
    graded cell as comments, refused without a reason or for the function's own tests."""
    folder = tmp_path / "autograder" / "proofs" / "wrong_answers" / "tiny"
    folder.mkdir(parents=True)
    (tmp_path / "solutions" / "tiny").mkdir(parents=True)
    tiny = ROOT / "tests" / "fixtures" / "autograder" / "solutions" / "tiny" / "tiny.ipynb"
    (tmp_path / "solutions" / "tiny" / "tiny.ipynb").write_bytes(tiny.read_bytes())
    entry = folder / "double__adds.edit"
    entry.write_text("# WRONG: adds instead of multiplying\n"
                     "# CASCADE: test_other: the other test calls double on purpose\n"
                     "-    return 2 * x\n+    return 2 + x\n")
    [e] = catalogue.entries("tiny", root=tmp_path)
    assert e.cascades == (("test_other", "the other test calls double on purpose"),)
    assert e.source.splitlines()[:2] == ["# WRONG: adds instead of multiplying",
                                         "# CASCADE: test_other: the other test calls double on purpose"]
    for bad, words in [("# CASCADE: test_other\n", "the reason"),
                       ("# CASCADE: test_double__x: its own test, not a cascade\n", "itself")]:
        entry.write_text("# WRONG: adds instead of multiplying\n" + bad + "-    return 2 * x\n+    return 2 + x\n")
        with pytest.raises(catalogue.CatalogueError, match=words):
            catalogue.entries("tiny", root=tmp_path)


def _cell_error(r, grade_id: str) -> str:
    """The error the answer cell itself ended with, from the executed notebook."""
    executed = r.executed if isinstance(r.executed, dict) else {}
    for cell in executed.get("cells", []):
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == grade_id:
            for out in cell.get("outputs", []):
                if out.get("output_type") == "error":
                    return f"{out.get('ename')}: {str(out.get('evalue'))[:300]}"
    return "no error output"
