"""Predict first, then look (issue: "every live view asks first").

Before a live cell measures something, the cell above it asks for a prediction in one line of
code (``my_prediction = ...``), so the prediction is kept in the notebook with the rest of the
student's work; nothing grades it.  The live cell then prints it beside what was measured, with
one sentence on what to take from the comparison (``beside``).  A prediction left at ``...`` is
said to be missing, and the cell runs all the same.
"""
from __future__ import annotations


def written(prediction) -> bool:
    """Whether the student wrote a prediction (not ``...``, ``None`` or an empty string)."""
    return prediction is not Ellipsis and prediction is not None and str(prediction).strip() != ""


def beside(prediction, measured: str, lesson: str) -> str:
    """Three lines: the prediction, what was measured, what to take from it."""
    said = repr(prediction) if isinstance(prediction, str) else str(prediction)
    if not written(prediction):
        said = "(none: write one in the cell above before you run this one)"
    return (f"Your prediction: {said}\n"
            f"Measured:        {measured}\n"
            f"Take from it:    {lesson}")


def show(prediction, measured: str, lesson: str):
    print(beside(prediction, measured, lesson), flush=True)
