"""The notebook side of grading: what each cell is, its released stub, and the merged notebook.

Cell kinds, the one definition release, grading, the gradebook and the feedback use (nbgrader's
own, ``nbgrader.utils``):
- an answer (``is_answer``): an nbgrader ``solution`` cell, code or markdown;
- an autograded test (``is_autograded_test``): a graded code cell that is not an answer;
- graded by hand (``is_manual``): a graded answer (a written answer, or code graded by hand) or
  a task cell;
- its released stub (``stub_source``): nbgrader's ``ClearSolutions``, whose
  ``raise NotImplementedError()`` then says what to write.

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

import ast
import copy
import re
from pathlib import Path

import nbformat
from nbgrader.utils import is_grade, is_solution, is_task

MARK_SCHEME_BEGIN = "<!-- BEGIN MARK SCHEME -->"
MARK_SCHEME_END = "<!-- END MARK SCHEME -->"


def nbgrader_meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {}) or {}


def grade_id(cell) -> str | None:
    return nbgrader_meta(cell).get("grade_id")


def is_answer(cell) -> bool:
    return bool(is_solution(cell))


def is_autograded_test(cell) -> bool:
    return bool(is_grade(cell)) and not is_solution(cell) and cell.cell_type == "code"


def is_manual(cell) -> bool:
    """Graded by hand: a graded answer (markdown, or code graded by hand), or a task cell."""
    return bool(is_task(cell)) or (bool(is_grade(cell)) and bool(is_solution(cell)))


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


STUB_LINE = "raise NotImplementedError()"


def _defined_names(cell_source: str):
    """(kind, names) that an answer cell asks for: ("function", [name]) when the solution sits
    inside a given ``def``, or when it defines functions; ("variables", [...]) for the names an
    exercise's solution assigns; (None, []) when nothing can be told."""
    lines = cell_source.splitlines()
    begin = next((i for i, ln in enumerate(lines) if ln.strip() == "### BEGIN SOLUTION"), None)
    end = next((i for i, ln in enumerate(lines) if ln.strip() == "### END SOLUTION"), None)
    if begin is None or end is None or end < begin:
        return None, []
    indent = len(lines[begin]) - len(lines[begin].lstrip())
    if indent:  # the solution is the body of the nearest given def above it
        for ln in reversed(lines[:begin]):
            m = re.match(r"(\s*)def\s+([A-Za-z_]\w*)\s*\(", ln)
            if m and len(m.group(1)) < indent:
                return "function", [m.group(2)]
        return None, []
    try:
        tree = ast.parse("\n".join(lines[begin + 1:end]))
    except SyntaxError:
        return None, []
    functions = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if functions:
        return "function", functions
    names = []
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else [])
        for target in targets:
            for n in ast.walk(target):
                if isinstance(n, ast.Name) and n.id not in names:
                    names.append(n.id)
    return ("variables", names) if names else (None, [])


def stub_message(cell_source: str) -> str:
    """What the stub of this (source) answer cell says when it runs."""
    kind, names = _defined_names(cell_source)
    if kind == "function":
        return f"{', '.join(names)}: write this function (see the task above)"
    if kind == "variables":
        return f"set {', '.join(names)} (see the exercise above)"
    return "write your answer here (see the task above)"


def stub_source(cell) -> str:
    """The released source of one answer cell: nbgrader's ClearSolutions, whose
    ``raise NotImplementedError()`` then names what to write.  ``cell`` is the SOURCE cell
    (with its solution); a markdown cell gets nbgrader's text stub unchanged."""
    from nbgrader.preprocessors import ClearSolutions

    cleared = copy.deepcopy(nbformat.from_dict(dict(cell)))
    # nbgrader's defaults, which the course's nbgrader configuration restates
    ClearSolutions().preprocess_cell(cleared, {"language": "python"}, 0)
    if cleared.cell_type != "code":
        return cleared.source
    message = stub_message(cell["source"] if isinstance(cell, dict) else cell.source)
    return cleared.source.replace(STUB_LINE, f"raise NotImplementedError({message!r})")


def stub(cell):
    """The released version of one answer cell (``stub_source``)."""
    cell = copy.deepcopy(cell)
    cell.source = stub_source(cell)
    return cell


def mark_scheme_text(gid: str, scheme: str) -> str:
    """The instructor-only markdown cell under hand-graded answer ``gid``."""
    return (f"{MARK_SCHEME_BEGIN}\n**Mark scheme for `{gid}`** (instructor only; the model "
            f"answer of the source notebook)\n\n{scheme}\n{MARK_SCHEME_END}")


LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(text: str) -> str:
    """Student text as text every writer can write: a lone surrogate (``"\\ud800"`` in a
    notebook's JSON, or printed by an answer), which no UTF-8 file can hold, becomes U+FFFD.
    (An outside review stopped ``grade`` for a whole class with one.)"""
    return LONE_SURROGATE.sub("\ufffd", text) if isinstance(text, str) else text


def first_line(text) -> str:
    """An error as the grade sheet and the feedback show it: its first non-empty line, at most
    300 characters, ``clean_text``.  (The processes inside the sandbox have their own copy,
    ``inside/output.py``: that folder is a program of its own and imports nothing from here.)"""
    for line in clean_text(str(text)).splitlines():
        if line.strip():
            return line.strip()[:300]
    return ""


def merge(source, submission):
    """The source notebook with only the submission's answer cells swapped in (their text
    ``clean_text``)."""
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
            cell.source = clean_text(theirs["source"])
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
