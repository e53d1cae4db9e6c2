# WRONG: ast.literal_eval, which does not evaluate arithmetic
import ast
import operator

def calculate(expression):
    """Evaluate an arithmetic expression safely with ``ast`` (never ``eval``); return the
    result as text, e.g. '(17 + 25) * 3' -> '126' (lecture: "Specific tools vs a code tool")."""
    return str(ast.literal_eval(expression))
