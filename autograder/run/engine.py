"""The grading engine: one submission in, a GradeResult out.

    from autograder.run.engine import grade_notebook
    result = grade_notebook("lecture-ReAct-lab", "submission.ipynb", timeout=60)
    result.scores       # {grade_id: (awarded, possible)} for autograded test cells
    result.manual       # {grade_id: possible} for cells graded by hand
    result.errors       # {grade_id: first line of the failure}
    result.answers_ran  # {answer grade_id: True iff the answer cell ran without raising}
    result.total, result.possible, result.failure, result.notes
    result.executed     # the graded notebook (formgrader's copy): answer cells, visible test
                        # source, outputs; never a hidden test, and no answer output produced
                        # after a hidden test had run (``score``)

How (``autograder/README.md`` says why): the submission's answer cells are merged into the
source notebook (``cells.py``); a student process runs them, and nothing else, with a copy of
lreact that has no reference code (``inside/student.py``); a trusted process runs the setup and test
cells and calls the student's functions over a plain-data channel (``inside.trusted_namespace.py``,
``inside/channel/link.py``); both are sandboxed (``pool.py``, ``sandbox.py``).  A test cell scores its
points iff it ran to its end in the trusted process: the only thing this module reads.

The student process sees every argument a hidden test passes, so whatever it prints or raises
after a hidden test has run may carry that test's data: ``score`` keeps no answer output from
then on, and the feedback's outputs and errors come from ``feedback_run`` instead, a run of the
same answers with the hidden tests removed (README, "Feedback").
"""
from __future__ import annotations

from dataclasses import dataclass, field

import nbformat

from .. import cells, paths
from ..cells import (  # noqa: F401
    grade_id,
    is_answer,
    is_autograded_test,
    is_manual,
    load,
    merge,
    points,
    replace_cell,
    stub,
)
from ..sandbox.launch import SandboxUnavailable  # noqa: F401 - re-exported for callers
from .pool import ProcessPool


@dataclass
class GradeResult:
    assignment_id: str
    scores: dict = field(default_factory=dict)   # grade_id -> (awarded, possible)
    manual: dict = field(default_factory=dict)   # grade_id -> possible
    errors: dict = field(default_factory=dict)   # grade_id -> first line of the failure
    failure: str | None = None                   # timeout, process ended, invalid notebook...
    notes: list = field(default_factory=list)    # e.g. what the sandbox could not protect
    executed: object = None                      # the graded notebook (NotebookNode)
    answers_ran: dict = field(default_factory=dict)  # answer grade_id -> ran without raising

    @property
    def total(self) -> float:
        return float(sum(a for a, _ in self.scores.values()))

    @property
    def possible(self) -> float:
        return float(sum(p for _, p in self.scores.values()))

    @property
    def needs_manual_grade(self) -> bool:
        return bool(self.manual)


def wall_limit(timeout: float, code_cells: int) -> float:
    """The whole run's wall clock: follows the per-cell ``timeout`` and the notebook's size."""
    return 60 + (float(timeout) + 10) * min(code_cells, 6) + 3 * code_cells


def jobs(merged, timeout: float, scratch) -> tuple[dict, dict]:
    """The student process's job (its cells only) and the trusted process's job."""
    student_cells, tester_cells = {}, []
    for index, role in cells.roles(merged):
        cell = merged.cells[index]
        entry = {"index": index, "role": role, "grade_id": grade_id(cell)}
        if role in ("student", "setup"):
            student_cells[str(index)] = cell.source
        if role in ("setup", "test"):
            entry["source"] = cell.source
        tester_cells.append(entry)
    return ({"cells": student_cells, "cwd": f"{scratch}/work"},
            {"cells": tester_cells, "timeout": timeout, "cwd": f"{scratch}/work"})


def execute(merged, *, timeout: float = 60, sandbox: str = "auto", pool: ProcessPool | None = None,
            state=None):
    """Run the merged notebook in a student process and a trusted process; (result, notes)."""
    pool = pool or ProcessPool(state)
    pair = pool.take(sandbox)
    try:
        code_cells = sum(1 for c in merged.cells if c.cell_type == "code")
        student_job, tester_job = jobs(merged, timeout, pair.runs[0].scratch)
        tester_job["cwd"] = f"{pair.runs[1].scratch}/work"
        result = pair.run(student_job, tester_job, wall_limit(timeout, code_cells))
        timed_out = any(run.timed_out for run in pair.runs)
    finally:
        pair.cleanup()
    if result is None:
        result = {"cells": {}, "failure": ("timeout: the whole notebook took too long"
                                           if timed_out else
                                           "the grading process ended without a result")}
    return result, pair.notes


def _output(out: dict):
    """One output of the graded notebook, as inert text (``cells.clean_text``)."""
    get = {k: cells.clean_text(str(out.get(k, ""))) for k in ("ename", "evalue", "name", "text")}
    if out.get("output_type") == "error":
        return nbformat.v4.new_output("error", ename=get["ename"], evalue=get["evalue"],
                                      traceback=[f"{get['ename']}: {get['evalue']}"])
    return nbformat.v4.new_output("stream", name=get["name"] or "stdout", text=get["text"])


AFTER_HIDDEN = ("[not kept by the grader: printed after hidden tests had run, so it may "
                "hold their data; the feedback shows this cell's output from a run without "
                "the hidden tests]\n")


def score(merged, result: dict, assignment_id: str = "") -> GradeResult:
    """Scores from the trusted process's result; the graded notebook, in which an answer (or
    other student-process) cell that ran after a test cell with hidden tests keeps no output."""
    ran = result.get("cells") or {}
    failure = cells.clean_text(result.get("stopped") or result.get("failure"))
    graded = GradeResult(assignment_id, failure=failure)
    executed = load(merged)
    count = 0
    hidden_ran = False
    for index, cell in enumerate(executed.cells):
        gid = grade_id(cell)
        if gid and is_manual(cell):
            graded.manual[gid] = points(cell)
        if cell.cell_type != "code":
            continue
        r = ran.get(str(index))
        test = is_autograded_test(cell)
        if test:
            visible = cells.visible_source(cell)
            hidden_here = visible != cell.source
            cell.source = visible
        if r is not None:
            if r.get("ran"):
                count += 1
                cell.execution_count = count
            cell.outputs = [_output(o) for o in r.get("outputs", []) if isinstance(o, dict)]
            if hidden_ran and not test and cell.outputs:
                cell.outputs = [nbformat.v4.new_output("stream", name="stdout",
                                                       text=AFTER_HIDDEN)]
            if test and hidden_here:
                hidden_ran = True
        if is_autograded_test(cell) and gid:
            possible = points(cell)
            if r is None:
                error = f"did not run ({failure})" if failure else "did not run"
            else:
                error = None if (r.get("ran") and r.get("ok")) else (r.get("error") or "failed")
            graded.scores[gid] = (0.0 if error else possible, possible)
            if error:
                graded.errors[gid] = cells.first_line(error)
        elif is_answer(cell) and gid:
            graded.answers_ran[gid] = bool(r and r.get("ran") and r.get("ok"))
    graded.executed = executed
    return graded


def grade_notebook(assignment_id: str, nb_or_path, timeout: float = 60, *, source=None,
                   sandbox: str = "auto", pool: ProcessPool | None = None,
                   state=None) -> GradeResult:
    """Grade one submission of ``assignment_id`` (see the module docstring).

    ``source`` overrides the instructor notebook (default ``solutions/<id>/<id>.ipynb``);
    ``state`` is the grader's state folder (``paths.State``); ``pool`` a ``ProcessPool`` of
    warm processes.  A notebook that cannot be read scores zero with ``failure`` saying why.
    """
    source_nb = load(source or paths.source_path(assignment_id))
    try:
        submission = load(nb_or_path)
    except Exception as e:  # noqa: BLE001 - malformed submission: zeros and a reason
        reason = f"invalid notebook: {type(e).__name__}: {cells.first_line(e)}"
        return zero_result(assignment_id, reason, source=source_nb)
    merged = merge(source_nb, submission)
    result, notes = execute(merged, timeout=timeout, sandbox=sandbox, pool=pool, state=state)
    graded = score(merged, result, assignment_id)
    graded.notes = list(notes)
    return graded


def without_hidden_tests(source_nb):
    """The source notebook with every test cell cut to its visible part (nbgrader's
    ``ClearHiddenTests``, as in the released student version); solutions stay (the answer
    cells are replaced by the submission's anyway)."""
    nb = load(source_nb)
    for cell in nb.cells:
        if is_autograded_test(cell):
            cell.source = cells.visible_source(cell)
    return nb


def feedback_run(assignment_id: str, nb_or_path, timeout: float = 60, *, source=None,
                 sandbox: str = "auto", pool: ProcessPool | None = None,
                 state=None) -> GradeResult:
    """The submission run with only the visible tests (hidden tests removed): where the
    feedback takes every answer output and test error from, since no hidden test ran before
    them.  Its scores are not grades (the grades are ``grade_notebook``'s)."""
    source_nb = without_hidden_tests(load(source or paths.source_path(assignment_id)))
    return grade_notebook(assignment_id, nb_or_path, timeout, source=source_nb,
                          sandbox=sandbox, pool=pool, state=state)


def zero_result(assignment_id: str, reason: str, *, source=None) -> GradeResult:
    """Zeros on every test of the assignment, with ``reason`` (nothing is executed)."""
    merged = merge(load(source or paths.source_path(assignment_id)), nbformat.v4.new_notebook())
    return score(merged, {"cells": {}, "failure": reason}, assignment_id)
