# WRONG: keeps the lab's private copy of the reference repeat_count from the answer cell
from lreact.labchecks import reference

_reference_repeat_count = reference("harness", "repeat_count")


def repeat_count(history):
    """How many assistant turns in a row requested the same calls."""
    return _reference_repeat_count(history)
