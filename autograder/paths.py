"""Where things live: the repository root, the two graded assignments and their notebooks."""
from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXERCISES = "lecture-ReAct-exercises"
LAB = "lecture-ReAct-lab"
LAB2 = "lecture-ReAct-lab2"
ASSIGNMENTS = (EXERCISES, LAB, LAB2)
SHORT = {EXERCISES: "exercises", LAB: "lab", LAB2: "lab"}

HOSTILE_DIR = ROOT / "autograder" / "proofs" / "hostile"
# Grader state (cache, scratch): outside everything a sandboxed submission can see.
STATE_DIR = Path(os.environ.get("LREACT_GRADING_STATE")
                 or os.environ.get("LREACT_GRADING_DIR") or ROOT / ".grading")


class State:
    """Every folder the grader writes, under one root (``--state``; default ``.grading/``,
    or ``LREACT_GRADING_STATE``).  Nothing under it is ever visible to a sandboxed run."""

    def __init__(self, root=None):
        self.root = Path(root) if root is not None else STATE_DIR

    @property
    def cache(self) -> Path:
        return self.root / "cache"        # graded results, keyed by what was graded

    @property
    def kit(self) -> Path:
        return self.root / "kit"          # what every run gets read-only (grade.py: kit.py)

    @property
    def scratch(self) -> Path:
        return self.root / "scratch"      # runs' scratch folders when there is no sandbox

    @property
    def unzipped(self) -> Path:
        return self.root / "unzipped"     # submissions that came as archives

    @property
    def mplcache(self) -> Path:
        return self.root / "mplcache"     # a prebuilt matplotlib font list

    def __repr__(self):
        return f"State({str(self.root)!r})"


def state(root=None) -> State:
    """``root`` as a State (a State passes through; None: the default folder)."""
    return root if isinstance(root, State) else State(root)


def source_path(assignment_id: str, root: Path = ROOT) -> Path:
    """Instructor source notebook: ``solutions/<id>/<id>.ipynb``."""
    return Path(root) / "solutions" / assignment_id / f"{assignment_id}.ipynb"


def student_path(assignment_id: str, root: Path = ROOT) -> Path:
    """Flat student version: ``exercises/<id>.ipynb`` or ``lab/<id>.ipynb``."""
    return Path(root) / SHORT[assignment_id] / f"{assignment_id}.ipynb"
