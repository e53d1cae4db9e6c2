"""How long each notebook of the unit takes, estimated from what is in it (the overview,
"This week's work").

The rule, stated so that anyone can check or change it:

- reading: the words of the markdown cells at 100 to 150 words a minute (technical prose with
  formulas, read carefully);
- a lecture's code cell (run it, read its output, try the widget): 1 to 3 minutes;
- an answer cell (an nbgrader ``solution`` cell: code to write, or a written answer): 8 to 12
  minutes in the exercises, 18 to 30 minutes in a lab;
- every other code cell of the exercises and labs (tests, set-up, live demos): 1 to 2 minutes.

These are estimates for a student who has done the lecture before the exercises and the
exercises before the lab; they say where the hours go, not how long anyone must take.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

WORDS_PER_MINUTE = (150, 100)          # fast and slow careful reading
LECTURE_CELL_MINUTES = (1, 3)
ANSWER_MINUTES = {"exercises": (8, 12), "lab": (18, 30)}
OTHER_CELL_MINUTES = (1, 2)


def notebook_counts(path) -> dict:
    """Words in markdown cells, code cells, and answer cells (nbgrader ``solution``) of a
    notebook file."""
    nb = json.loads(Path(path).read_text(encoding="utf-8"))
    words = code = answers = 0
    for cell in nb["cells"]:
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        answer = bool(cell.get("metadata", {}).get("nbgrader", {}).get("solution"))
        answers += answer
        if cell["cell_type"] == "markdown" and not answer:
            words += len(re.findall(r"\S+", source))
        elif cell["cell_type"] == "code" and not answer:
            code += 1
    return {"words": words, "code_cells": code, "answer_cells": answers}


def estimate_minutes(path, kind: str) -> tuple:
    """``(low, high)`` minutes for a notebook; ``kind`` is ``"lecture"``, ``"exercises"`` or
    ``"lab"`` (module docstring)."""
    if kind not in ("lecture", "exercises", "lab"):
        raise ValueError(f"kind must be 'lecture', 'exercises' or 'lab', not {kind!r}")
    n = notebook_counts(path)
    low = n["words"] / WORDS_PER_MINUTE[0]
    high = n["words"] / WORDS_PER_MINUTE[1]
    if kind == "lecture":
        low += n["code_cells"] * LECTURE_CELL_MINUTES[0]
        high += n["code_cells"] * LECTURE_CELL_MINUTES[1]
    else:
        low += n["answer_cells"] * ANSWER_MINUTES[kind][0] + n["code_cells"] * OTHER_CELL_MINUTES[0]
        high += n["answer_cells"] * ANSWER_MINUTES[kind][1] + n["code_cells"] * OTHER_CELL_MINUTES[1]
    return round(low), round(high)


def hours(minutes: tuple) -> str:
    """``(75, 130)`` as ``"1.2-2.2 h"``."""
    return f"{minutes[0] / 60:.1f}-{minutes[1] / 60:.1f} h"
