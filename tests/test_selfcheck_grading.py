"""Selfcheck: every assignment in solutions/ is graded as promised.

For each assignment: the source scores full marks, the unchanged student version scores zero,
and every wrong answer of its catalogue (``autograder/wrong_answers/<id>/``) runs without error
in its own cell and loses marks on the tests of that cell.  Everything is graded up front, in
parallel (``selfcheck --jobs``), through the real engine and sandbox.
"""
from concurrent.futures import ThreadPoolExecutor

import nbformat
import pytest

from autograder import catalogue, cells, engine, selfcheck
from autograder.paths import source_path
from autograder.pool import ProcessPool
from autograder.release import generate

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


class Grading:
    """Every grading the tests below look at, submitted at once to a few workers."""

    def __init__(self, state, jobs):
        self.pool = ProcessPool(state, size=jobs)
        self.workers = ThreadPoolExecutor(jobs)
        self.futures = {}
        self.sources = {aid: cells.load(source_path(aid)) for aid in ASSIGNMENTS}

    def submit(self, key, aid, nb, source):
        self.futures[key] = self.workers.submit(
            engine.grade_notebook, aid, nb, selfcheck.HONEST_TIMEOUT, source=source,
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
    g = Grading(selfcheck.state_folder(tmp_path_factory.mktemp("selfcheck-state")),
                selfcheck.jobs())
    wanted = list(_selected(request))
    for name, aid, entry in wanted:
        src = g.sources[aid]
        if name == "test_source_scores_full_marks":
            g.submit(("source", aid), aid, src, src)
        elif name == "test_student_version_scores_zero":
            g.submit(("student", aid), aid,
                     nbformat.reads(generate(source_path(aid)), as_version=4), src)
    for name, aid, entry in wanted:
        if name != "test_wrong_answer_runs_and_is_caught" or isinstance(entry, Exception):
            continue
        src = g.sources[aid]
        tests = selfcheck.tests_of(src, entry.grade_id)
        if tests:
            nb = engine.replace_cell(src, entry.grade_id, entry.source)
            g.submit(("wrong", entry.path), aid, selfcheck.cut_after(nb, tests),
                     selfcheck.cut_after(src, tests))
    yield g
    g.close()


@pytest.mark.parametrize("aid", ASSIGNMENTS)
def test_source_scores_full_marks(grading, aid):
    r = grading.result(("source", aid))
    assert r.possible > 0 and r.total == r.possible, (r.failure, r.errors)
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
        f"the wrong answer's own cell did not run ({r.failure}): it must model a mistake "
        "in working code")
    got = sum(r.scores[t][0] for t in tests)
    possible = sum(r.scores[t][1] for t in tests)
    assert got < possible, f"{entry.mistake!r} is NOT caught: {got:g}/{possible:g} on {tests}"


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
