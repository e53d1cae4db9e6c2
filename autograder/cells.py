"""The notebook side of grading: what each cell is, and the merged notebook of a submission.

Merging: the instructor source notebook is the skeleton; ONLY the submission's answer cells
(nbgrader ``solution: true``, matched by ``grade_id`` and cell type) are swapped in.  A missing or
renamed answer cell keeps the released stub.  Tests therefore always come from the source.

Roles (``roles``): which process runs a code cell.
- ``test``: an autograded test cell: the trusted process only, never the student process;
- ``setup``: an instructor cell before the first answer cell (imports, the rule): both;
- ``student``: an answer cell, or any other instructor cell (demos, given helpers): the student
  process only.
"""
from __future__ import annotations

import copy
from pathlib import Path

import nbformat
from nbgrader.utils import is_grade, is_solution, is_task


def nbgrader_meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {}) or {}


def grade_id(cell) -> str | None:
    return nbgrader_meta(cell).get("grade_id")


def is_answer(cell) -> bool:
    return bool(is_solution(cell))


def is_autograded_test(cell) -> bool:
    return bool(is_grade(cell)) and not is_solution(cell) and cell.cell_type == "code"


def is_manual(cell) -> bool:
    """Graded by hand: a graded markdown cell, or an nbgrader task cell."""
    return bool(is_grade(cell)) and (cell.cell_type == "markdown" or bool(is_task(cell)))


def points(cell) -> float:
    return float(nbgrader_meta(cell).get("points", 0) or 0)


def load(nb_or_path) -> nbformat.NotebookNode:
    """A notebook from a path, a dict or a NotebookNode (always a fresh copy)."""
    if isinstance(nb_or_path, (str, Path)):
        with open(nb_or_path, encoding="utf-8") as f:
            return nbformat.read(f, as_version=4)
    return nbformat.from_dict(copy.deepcopy(dict(nb_or_path)))


def replace_cell(nb, grade_id_: str, new_source: str):
    """A copy of ``nb`` whose cell ``grade_id_`` has ``new_source`` (KeyError if absent)."""
    nb = load(nb)
    for cell in nb.cells:
        if grade_id(cell) == grade_id_:
            cell.source = new_source
            return nb
    raise KeyError(f"no cell with grade_id {grade_id_!r}")


def stub(cell):
    """The released version of one answer cell (``release.stub_source``)."""
    from .release import stub_source
    cell = copy.deepcopy(cell)
    cell.source = stub_source(cell)
    return cell


def merge(source, submission):
    """The source notebook with only the submission's answer cells swapped in."""
    merged = load(source)
    answers = {}
    for cell in getattr(submission, "cells", []) or []:
        gid = grade_id(cell) if isinstance(cell, dict) else None
        if gid and is_answer(cell) and gid not in answers:
            answers[gid] = cell
    for cell in merged.cells:
        if not is_answer(cell):
            continue
        theirs = answers.get(grade_id(cell))
        if theirs is not None and theirs.get("cell_type") == cell.cell_type \
                and isinstance(theirs.get("source"), str):
            cell.source = theirs["source"]
        else:
            cell.source = stub(cell).source
    for cell in merged.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return merged


def roles(nb) -> list:
    """(index, role) for every code cell, in order (see the module docstring)."""
    out, seen_answer = [], False
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        if is_autograded_test(cell):
            out.append((i, "test"))
        elif is_answer(cell):
            seen_answer = True
            out.append((i, "student"))
        else:
            out.append((i, "student" if seen_answer else "setup"))
    return out


def visible_source(cell) -> str:
    """A test cell as the student version shows it: hidden tests removed (nbgrader's rule)."""
    from nbgrader.preprocessors import ClearHiddenTests
    try:
        c, _ = ClearHiddenTests().preprocess_cell(copy.deepcopy(cell), {}, 0)
    except Exception:  # noqa: BLE001 - an unbalanced marker: show nothing rather than leak
        return "# (this test cell's source is not shown)"
    return c.source
