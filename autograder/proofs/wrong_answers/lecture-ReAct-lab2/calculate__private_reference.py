# WRONG: keeps the lab's private copy of the reference calculator from the answer cell
from lreact.labchecks import reference

_reference_calculate = reference("tools", "calculate")


def calculate(expression):
    """Evaluate an arithmetic expression safely, without eval (lecture: "Function Calling")."""
    return _reference_calculate(expression)
