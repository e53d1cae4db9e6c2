# WRONG: eval with empty builtins (still not safe, and not only arithmetic)
import ast
import operator

def calculate(expression):
    """Evaluate an arithmetic expression safely with ``ast`` (never ``eval``); return the
    result as text, e.g. '(17 + 25) * 3' -> '126' (lecture: "Specific tools vs a code tool")."""
    result = eval(expression, {"__builtins__": {}}, {})
    if isinstance(result, float) and result.is_integer():
        result = int(result)
    return str(result)
