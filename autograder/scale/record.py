"""A cluster worker's answer, checked on the instructor's machine before anything is kept.

A worker (``cluster.grade_remote``) answers every task with JSON text: ``{"record": ...}``, the
record ``grade.graded`` made, or ``{"refused": why}``.  ``reply`` reads it (never a pickle: the
Dask client of ``cluster.py`` takes plain msgpack values only) and ``record`` accepts a record
only if this machine could have produced it from the submission and the source notebook it sent:

- exactly the record's keys, plain JSON types, finite numbers, bounded sizes;
- ``student``, ``assignment`` and ``origin`` those of the task;
- ``scores``: exactly the source's autograded test cells, each ``[awarded, possible]`` with
  ``possible`` the cell's points and ``0 <= awarded <= possible``; ``total`` and ``possible``
  their sums; ``manual``: exactly the source's hand-graded cells with their points;
  ``errors`` and ``answers_ran`` about those cells only;
- an upload whose every answer is the released stub (nothing answered) scores nothing (the
  course's own rule: selfcheck proves every student version scores zero);
- ``executed`` (formgrader's copy) is the notebook this machine builds itself from the source
  and the submission (``cells.merge``, hidden tests cut), with only outputs added, and those
  only the text ``engine.score`` writes.

Anything else raises ``Rejected`` naming what was wrong.  These checks stop a broken worker and
any impossible record; a well-formed lie (5 points where 3 were earned) passes them, which is
why only machines the instructor controls may be workers (README.md, "Grading on a cluster").
"""
from __future__ import annotations

import json
import math

import nbformat

from ..cells import (
    grade_id,
    is_answer,
    is_autograded_test,
    is_manual,
    load,
    merge,
    points,
    stub,
    visible_source,
)
from ..instructor.reasons import reason_of

MAX_CHARS = 128 * 1024 * 1024   # one answer's JSON text
MAX_TEXT = 20_000               # one failure, note or error
MAX_OUTPUT = 200_000            # one field of one output (the sandbox keeps 100,000 characters)
MAX_ITEMS = 64                  # notes, outputs of a cell, lines of an error's traceback
KEYS = {"student", "assignment", "origin", "scores", "manual", "errors", "failure", "reason",
        "notes", "total", "possible", "executed"}
OPTIONAL = {"answers_ran"}
OUTPUT_KEYS = {"stream": {"output_type", "name", "text"},
               "error": {"output_type", "ename", "evalue", "traceback"}}


class Rejected(ValueError):
    """A worker's answer that is not one this machine could have produced."""


def _no_constant(name):
    raise Rejected(f"its JSON holds {name}, which no record has")


def reply(text) -> dict:
    """``{"record": dict}`` or ``{"refused": str}`` from a worker's JSON text."""
    if not isinstance(text, str):
        raise Rejected(f"it is not JSON text but a {type(text).__name__} value")
    if len(text) > MAX_CHARS:
        raise Rejected(f"it is {len(text)} characters long (at most {MAX_CHARS})")
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except Rejected:
        raise
    except (ValueError, RecursionError) as e:
        raise Rejected(f"it is not JSON ({type(e).__name__}: {str(e)[:200]})") from None
    if not (isinstance(value, dict) and len(value) == 1
            and (isinstance(value.get("record"), dict) or isinstance(value.get("refused"), str))):
        raise Rejected('it is neither {"record": {...}} nor {"refused": "..."}')
    return value


def _text(value, what: str, limit: int = MAX_TEXT, *, none: bool = False) -> None:
    if value is None and none:
        return
    if not isinstance(value, str):
        raise Rejected(f"{what} is a {type(value).__name__}, not text")
    if len(value) > limit:
        raise Rejected(f"{what} is {len(value)} characters long (at most {limit})")


def _number(value, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise Rejected(f"{what} is {str(value)[:40]!s}, not a finite number")
    return float(value)


def _cells(what: str, found, wanted) -> None:
    """``found`` (a record's dict) must name exactly the cells ``wanted``."""
    if not isinstance(found, dict):
        raise Rejected(f"{what} is a {type(found).__name__}, not an object")
    extra, missing = sorted(set(found) - set(wanted)), sorted(set(wanted) - set(found))
    if extra or missing:
        raise Rejected(f"{what} names other cells than the source notebook's: "
                       + "; ".join(p for p in (
                           extra and "not in the source: " + ", ".join(map(repr, extra[:5])),
                           missing and "missing: " + ", ".join(map(repr, missing[:5]))) if p))


def skeleton(source_nb, notebook):
    """The graded notebook without outputs, as ``engine.score`` builds it: the source with the
    submission's answers merged in (an unreadable submission: no answers) and every test cell
    cut to its visible part."""
    try:
        submission = load(notebook)
    except Exception:  # noqa: BLE001 - the engine grades an unreadable file as no answers
        submission = nbformat.v4.new_notebook()
    merged = merge(source_nb, submission)
    for cell in merged.cells:
        if is_autograded_test(cell):
            cell.source = visible_source(cell)
    return merged


def _bare(nb):
    """``nb`` as plain JSON values, code cells without outputs or execution counts."""
    nb = json.loads(json.dumps(nb))
    for cell in nb.get("cells", []) if isinstance(nb, dict) else []:
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            cell["outputs"], cell["execution_count"] = [], None
    return nb


def _outputs(cell, where: str) -> None:
    count = cell.get("execution_count")
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
        raise Rejected(f"{where} has execution count {str(count)[:40]}")
    outputs = cell.get("outputs")
    if not isinstance(outputs, list) or len(outputs) > MAX_ITEMS:
        raise Rejected(f"{where} has outputs that are not a short list")
    for out in outputs:
        kind = out.get("output_type") if isinstance(out, dict) else None
        if kind not in OUTPUT_KEYS or set(out) != OUTPUT_KEYS[kind]:
            raise Rejected(f"{where} has an output that is not plain text (a stream or an "
                           "error with exactly the grader's fields)")
        if kind == "stream":
            if out["name"] not in ("stdout", "stderr"):
                raise Rejected(f"{where} has a stream named {str(out['name'])[:40]!r}")
            _text(out["text"], f"{where}'s output", MAX_OUTPUT)
        else:
            _text(out["ename"], f"{where}'s error name", MAX_OUTPUT)
            _text(out["evalue"], f"{where}'s error value", MAX_OUTPUT)
            lines = out["traceback"]
            if not isinstance(lines, list) or len(lines) > MAX_ITEMS:
                raise Rejected(f"{where}'s traceback is not a short list")
            for line in lines:
                _text(line, f"{where}'s traceback", MAX_OUTPUT)


def _executed(executed, expected) -> None:
    if executed is None:
        return
    if not isinstance(executed, dict) or _bare(executed) != _bare(expected):
        raise Rejected("its graded notebook is not the source with this submission's answers "
                       "(cells, sources or metadata differ from what this machine builds)")
    for index, cell in enumerate(executed["cells"]):
        if cell.get("cell_type") == "code":
            _outputs(cell, f"cell {index} of its graded notebook")


def record(value: dict, sub, source) -> dict:
    """The worker's record of ``sub`` (graded against the source notebook at ``source``),
    checked as the module docstring says; ``Rejected`` names the first thing wrong."""
    found = set(value)
    if not KEYS <= found <= KEYS | OPTIONAL:
        raise Rejected("its keys are not a record's: "
                       + "; ".join(p for p in (
                           found - KEYS - OPTIONAL and "unknown " + ", ".join(
                               sorted(repr(k)[:40] for k in found - KEYS - OPTIONAL)[:5]),
                           KEYS - found and "missing " + ", ".join(sorted(KEYS - found)))
                                   if p))
    for key in ("student", "assignment", "origin"):
        if value[key] != getattr(sub, key):
            raise Rejected(f"its {key} is not the task's")
    source_nb = load(source)
    tests = {grade_id(c): points(c) for c in source_nb.cells
             if is_autograded_test(c) and grade_id(c)}
    manual = {grade_id(c): points(c) for c in source_nb.cells if grade_id(c) and is_manual(c)}
    answers = {grade_id(c) for c in source_nb.cells if is_answer(c) and grade_id(c)}

    _cells("scores", value["scores"], tests)
    awarded = 0.0
    for gid, pair in value["scores"].items():
        if not (isinstance(pair, list) and len(pair) == 2):
            raise Rejected(f"the score of {gid!r} is not [awarded, possible]")
        got, top = (_number(x, f"the score of {gid!r}") for x in pair)
        if top != tests[gid]:
            raise Rejected(f"the score of {gid!r} is out of {top:g}, but the source gives the "
                           f"cell {tests[gid]:g} point(s)")
        if not 0 <= got <= top:
            raise Rejected(f"the score of {gid!r} is {got:g}, outside 0..{top:g}")
        awarded += got
    if not isinstance(value["manual"], dict) or value["manual"] != manual:
        _cells("manual", value["manual"], manual)
        raise Rejected("manual gives a hand-graded cell other points than the source")
    for gid, top in value["manual"].items():
        _number(top, f"the points of {gid!r}")
    if abs(_number(value["total"], "total") - awarded) > 1e-6:
        raise Rejected(f"its total {value['total']:g} is not the sum of its scores "
                       f"({awarded:g})")
    if abs(_number(value["possible"], "possible") - sum(tests.values())) > 1e-6:
        raise Rejected(f"its possible {value['possible']:g} is not the source's "
                       f"{sum(tests.values()):g}")
    if not isinstance(value["errors"], dict) or not set(value["errors"]) <= set(tests):
        raise Rejected("errors names cells that are not the source's tests")
    for gid, error in value["errors"].items():
        _text(error, f"the error of {gid!r}")
    _text(value["failure"], "failure", none=True)
    _text(value["reason"], "reason", none=True)
    if not isinstance(value["notes"], list) or len(value["notes"]) > MAX_ITEMS:
        raise Rejected("notes is not a short list")
    for note in value["notes"]:
        _text(note, "a note")
    ran = value.get("answers_ran", {})
    if not isinstance(ran, dict) or not set(ran) <= answers \
            or not all(isinstance(v, bool) for v in ran.values()):
        raise Rejected("answers_ran is not true/false for the source's answer cells")

    expected = skeleton(source_nb, sub.notebook)
    stubs = {grade_id(c): stub(c).source for c in source_nb.cells if is_answer(c)}
    if awarded > 0 and all(c.source == stubs.get(grade_id(c)) for c in expected.cells
                           if is_answer(c)):
        raise Rejected(f"it gives {awarded:g} point(s) to an upload whose every answer is the "
                       "released stub (nothing answered scores nothing)")
    _executed(value["executed"], expected)
    return {**value, "reason": reason_of(value["failure"])}
