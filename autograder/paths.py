"""Where things live: the repository root, the two graded assignments and their notebooks."""
from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXERCISES = "lecture-ReAct-exercises"
LAB = "lecture-ReAct-lab"
ASSIGNMENTS = (EXERCISES, LAB)
SHORT = {EXERCISES: "exercises", LAB: "lab"}

SOURCE_DIR = ROOT / "solutions"
WRONG_ANSWERS_DIR = ROOT / "autograder" / "wrong_answers"
HOSTILE_DIR = ROOT / "autograder" / "hostile"
# Grader state (cache, scratch): outside everything a sandboxed submission can see.
STATE_DIR = Path(os.environ.get("LREACT_GRADING_DIR", ROOT / ".grading"))


def source_path(assignment_id: str, root: Path = ROOT) -> Path:
    """Instructor source notebook: ``solutions/<id>/<id>.ipynb``."""
    return Path(root) / "solutions" / assignment_id / f"{assignment_id}.ipynb"


def student_path(assignment_id: str, root: Path = ROOT) -> Path:
    """Flat student version: ``exercises/<id>.ipynb`` or ``lab/<id>.ipynb``."""
    return Path(root) / SHORT[assignment_id] / f"{assignment_id}.ipynb"
