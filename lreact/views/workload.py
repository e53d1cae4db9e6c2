"""How long each notebook of the unit takes a median student, estimated from what is in it (the
overview, "Plan and time").

The rule, stated so that anyone can check or change it:

- **set-up**: `make lab` (or conda, or Binder), the first start of JupyterLab and
  `lreact.check_setup()`, with the download of the embedded model: ``SETUP_MINUTES``;
- **reading**: the words of the markdown cells at 120 to 140 words a minute (technical prose with
  formulas, read carefully);
- **a lecture's code cell**: run it and read its output, 1 to 2 minutes; a widget (a cell that
  builds an explorer or a stepper to play with), 3 to 5 minutes;
- **a task** (an answer cell: code to write, values to work out, a text to write): timed one by
  one in ``TASK_MINUTES``, for a student who has done the lecture before the exercises and the
  exercises before the lab; every answer cell of the unit has its entry (a test checks it);
- **every other code cell** of the exercises and labs (a test to run, a demo, set-up): 15 to 30
  seconds to run it and read its verdict;
- **model waiting**: a cell that asks a model for tokens or probabilities (``model_cells``, found
  in the code) waits for it; ``MODEL_WAIT`` gives the minutes on the default set-up, the embedded
  engine with Qwen2.5 0.5B on a laptop CPU (a 7B model behind a CPU-only server takes longer);
- sections headed "Optional ..." (or "... (optional ...)") are left out of the core path's
  estimate and counted apart.

These are estimates; they say where the hours go, not how long anyone must take. The median is the
middle of each range.
"""
from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

WORDS_PER_MINUTE = (140, 120)          # faster and slower careful reading
LECTURE_CELL_MINUTES = (1, 2)
WIDGET_MINUTES = (3, 5)
OTHER_CELL_MINUTES = (0.25, 0.5)
SETUP_MINUTES = (20, 40)
DEFAULT_TASK_MINUTES = {"exercises": (8, 12), "lab": (15, 25)}
DEFAULT_WAIT = (0.5, 2)

# every task, timed (minutes, faster and slower median student), by notebook and grade_id
TASK_MINUTES = {
    "lecture-ReAct-exercises": {
        # ex02: a proof guided in three short steps; ex06: the square roots given, no extra comparison
        "ex01_softmax": (8, 12), "ex02_softmax_proof": (3, 6), "ex03_temperature": (10, 15),
        "ex04_truncation": (10, 15), "ex05_nucleus_flat": (6, 10), "ex06_order": (6, 11),
        "ex07_constrained": (6, 10), "ex08_prompt_vs_mask": (5, 8), "ex09_cot_or_react": (4, 8),
        "ex10_trajectory": (8, 12), "ex11_code_action": (10, 15),
        "ex12_context_budget": (8, 12), "ex13_tool_schema": (10, 15), "ex14_validation": (8, 12),
        "ex15_tool_design": (8, 12),
    },
    "lecture-ReAct-lab": {
        "softmax": (5, 10), "temperature_softmax": (8, 15), "top_k_filter": (8, 15),
        "top_p_filter": (12, 20), "sample_token": (12, 20), "token_mask": (8, 15),
        "constrained_probs": (5, 10), "generate_constrained": (12, 20), "get_weather": (5, 10),
        "validate_tool_call": (12, 20), "execute_tool_call": (8, 15), "run_agent": (20, 35),
        # optional here (calculate, B.5, B.6), graded and timed in lab 2
        "calculate": (15, 25), "check_pairing": (20, 30), "render_chatml": (30, 50),
    },
    "lecture-ReAct-lab2": {
        "paste_validate_tool_call": (1, 3), "paste_execute_tool_call": (1, 3),
        "paste_run_agent": (1, 3), "check_pairing": (20, 30), "render_chatml": (30, 50),
        "format_error": (25, 40), "repeat_count": (15, 25), "run_agent_hardened": (45, 75),
        "compact_history": (30, 50), "split_reasoning": (10, 20), "parse_xml_call": (30, 45),
        "tool_schemas_from_mcp": (10, 20), "call_mcp_tool": (20, 30),
        "parse_react_step": (20, 30), "run_react_text": (30, 45), "calculate": (15, 25),
        "code_tool_schema": (10, 20),
        "run_code_action": (20, 35),
    },
}

# names whose use at a cell's top level (not inside a def) asks a model for tokens or
# probabilities when one can run
MODEL_NAMES = {"configured_llm", "make_llm", "full_logits_model", "real_llm", "first_llm",
               "sweep_llm", "qwen_logprobs_explorer", "probability_lens", "budget_lines",
               "reuse_lines", "check_drift", "tool_call_rates", "configured_models", "run_grid",
               "CountingCompletion"}

# minutes a model cell waits on the default set-up (estimates; DEFAULT_WAIT for the others)
MODEL_WAIT = {
    "lecture-ReAct-1-sampling": {"qwen-widget": (0.2, 0.5), "lens-widget": (0.5, 1)},
    "lecture-ReAct-2-cot-react": {"native-reasoning-split": (0, 0.5)},   # only a thinking model
    "lecture-ReAct-4-messages": {"budget-engine-count": (0.2, 0.5), "kv-reuse": (0.5, 2)},
    "lecture-ReAct-lab": {"sweep": (0.5, 2), "first-token": (0.1, 0.5), "real-sampler": (0.3, 1),
                          "real-mask": (2, 6), "round-trip": (0.2, 1), "full-loop": (0.5, 2)},
    "lecture-ReAct-lab2": {"c-live-run": (1, 3), "c-rates-grid": (5, 20), "c-structured": (1, 3),
                           "c-think-live": (0.5, 2), "d-mcp-live": (0.5, 2), "d-compare": (1, 3),
                           "d-methods": (3, 10), "d-ex11-live": (0.5, 2)},
}

WIDGET = re.compile(r"widgets\.\w+_(explorer|stepper)\(")
HEADING = re.compile(r"^(#+)\s+(.*)$", re.M)
OPTIONAL = re.compile(r"^optional\b|\(optional\b", re.I)


def _source(cell) -> str:
    s = cell["source"]
    return "".join(s) if isinstance(s, list) else s


def _load(path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def _is_answer(cell) -> bool:
    return bool(cell.get("metadata", {}).get("nbgrader", {}).get("solution"))


def _grade_id(cell):
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def _words(text: str) -> int:
    return len(re.findall(r"\S+", text))


def _optional_flags(cells) -> list:
    """For each cell, whether it lies in a section whose heading says it is optional."""
    flags, level = [], None          # level: the heading depth of the open optional section
    for cell in cells:
        if cell["cell_type"] == "markdown":
            text = re.sub(r"```.*?```", "", _source(cell), flags=re.S)
            for hashes, title in HEADING.findall(text):
                depth = len(hashes)
                if level is not None and depth <= level:
                    level = None
                if level is None and OPTIONAL.search(re.sub(r"^[A-Z]\.\d+\s+", "", title)):
                    level = depth
        flags.append(level is not None)
    return flags


def uses_a_model(source: str) -> bool:
    """Whether a code cell's top-level code (not a function it defines) names one of
    ``MODEL_NAMES``: it asks a model for tokens or probabilities when one can run."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False

    def walk(node):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                continue
            if isinstance(child, ast.Name) and child.id in MODEL_NAMES:
                return True
            if isinstance(child, ast.Attribute) and child.attr in MODEL_NAMES:
                return True
            if walk(child):
                return True
        return False
    return walk(tree)


def model_cells(path) -> list:
    """The ids of a notebook's code cells that use a model when one can run (``uses_a_model``)."""
    return [c.get("id") for c in _load(path)["cells"]
            if c["cell_type"] == "code" and uses_a_model(_source(c))]


TASK_HEADING = re.compile(r"^#{3,}\s+(Exercise\s+\d+|[A-Z]\.\d+)\b", re.M)


def words_before_first_task(path) -> int:
    """Words of prose a student reads before the first task: up to the first answer cell or the
    first numbered task heading (``### Exercise 1``, ``### A.1 ...``), whichever comes first;
    the notebook's title line is left out."""
    words = 0
    for cell in _load(path)["cells"]:
        text = _source(cell)
        if _is_answer(cell) or (cell["cell_type"] == "markdown" and TASK_HEADING.search(text)):
            break
        if cell["cell_type"] == "markdown":
            if words == 0 and text.lstrip().startswith("# "):
                text = text.split("\n", 1)[1] if "\n" in text else ""
            words += _words(text)
    return words


def notebook_counts(path) -> dict:
    """Words in markdown cells, code cells, and answer cells (nbgrader ``solution``) of a
    notebook file, all sections included."""
    words = code = answers = 0
    for cell in _load(path)["cells"]:
        answer = _is_answer(cell)
        answers += answer
        if cell["cell_type"] == "markdown" and not answer:
            words += _words(_source(cell))
        elif cell["cell_type"] == "code" and not answer:
            code += 1
    return {"words": words, "code_cells": code, "answer_cells": answers}


@dataclass
class Estimate:
    """Minutes ``(faster, slower)`` for one notebook, by where they go; ``optional`` is what the
    sections marked optional would add."""
    reading: list = field(default_factory=lambda: [0.0, 0.0])
    cells: list = field(default_factory=lambda: [0.0, 0.0])
    tasks: list = field(default_factory=lambda: [0.0, 0.0])
    waiting: list = field(default_factory=lambda: [0.0, 0.0])
    optional: list = field(default_factory=lambda: [0.0, 0.0])

    @property
    def total(self) -> tuple:
        return tuple(self.reading[i] + self.cells[i] + self.tasks[i] + self.waiting[i]
                     for i in (0, 1))


def estimate(path, kind: str) -> Estimate:
    """Where the minutes of a notebook go (module docstring); ``kind`` is ``"lecture"``,
    ``"exercises"`` or ``"lab"``."""
    if kind not in ("lecture", "exercises", "lab"):
        raise ValueError(f"kind must be 'lecture', 'exercises' or 'lab', not {kind!r}")
    nb = _load(path)
    stem = Path(path).stem
    tasks, waits = TASK_MINUTES.get(stem, {}), MODEL_WAIT.get(stem, {})
    est = Estimate()
    for cell, optional in zip(nb["cells"], _optional_flags(nb["cells"])):
        source = _source(cell)
        if _is_answer(cell):
            add, where = tasks.get(_grade_id(cell), DEFAULT_TASK_MINUTES.get(kind, (0, 0))), "tasks"
        elif cell["cell_type"] == "markdown":
            add, where = (_words(source) / WORDS_PER_MINUTE[0], _words(source) / WORDS_PER_MINUTE[1]), "reading"
        elif kind == "lecture":
            add, where = (WIDGET_MINUTES if WIDGET.search(source) else LECTURE_CELL_MINUTES), "cells"
        else:
            add, where = OTHER_CELL_MINUTES, "cells"
        wait = (waits.get(cell.get("id"), DEFAULT_WAIT)
                if cell["cell_type"] == "code" and uses_a_model(source) else (0, 0))
        for i in (0, 1):
            if optional:
                est.optional[i] += add[i] + wait[i]
            else:
                getattr(est, where)[i] += add[i]
                est.waiting[i] += wait[i]
    return est


def estimate_minutes(path, kind: str) -> tuple:
    """``(faster, slower)`` whole minutes for a notebook's core (optional sections left out)."""
    low, high = estimate(path, kind).total
    return round(low), round(high)


CORE_PATH = [("lectures/lecture-ReAct.ipynb", "lecture"),
             ("lectures/lecture-ReAct-1-sampling.ipynb", "lecture"),
             ("lectures/lecture-ReAct-2-cot-react.ipynb", "lecture"),
             ("lectures/lecture-ReAct-3-tools.ipynb", "lecture"),
             ("lectures/lecture-ReAct-4-messages.ipynb", "lecture"),
             ("exercises/lecture-ReAct-exercises.ipynb", "exercises"),
             ("lab/lecture-ReAct-lab.ipynb", "lab")]
EXTENSION = [("lab/lecture-ReAct-lab2.ipynb", "lab")]


def path_minutes(root, notebooks=CORE_PATH, *, setup=True) -> tuple:
    """``(faster, slower)`` whole minutes for a list of notebooks under the course folder
    ``root``, set-up included when ``setup``."""
    low = SETUP_MINUTES[0] if setup else 0
    high = SETUP_MINUTES[1] if setup else 0
    for name, kind in notebooks:
        a, b = estimate(Path(root) / name, kind).total
        low, high = low + a, high + b
    return round(low), round(high)


def median_hours(minutes: tuple) -> float:
    """The middle of a range of minutes, in hours to one decimal."""
    return round((minutes[0] + minutes[1]) / 120, 1)


def hours(minutes: tuple) -> str:
    """``(75, 130)`` as ``"1.2-2.2 h"``."""
    return f"{minutes[0] / 60:.1f}-{minutes[1] / 60:.1f} h"
