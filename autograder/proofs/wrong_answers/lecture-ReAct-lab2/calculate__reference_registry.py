# WRONG: runs the course's reference calculator from lreact.tools.REGISTRY
from lreact.tools import REGISTRY as _REGISTRY

def calculate(expression):
    """Evaluate an arithmetic expression safely, without eval (lecture: "Function Calling")."""
    return _REGISTRY["calculate"](expression)
