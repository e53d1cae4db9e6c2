# WRONG: forgets unary operators
import ast
import operator

def calculate(expression):
    """Evaluate an arithmetic expression safely with ``ast`` (never ``eval``); return the
    result as text, e.g. '(17 + 25) * 3' -> '126' (lecture: "Specific Tools vs. a Code Tool")."""
    binary = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
              ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
              ast.Pow: operator.pow}
    unary = {ast.UAdd: operator.pos, ast.USub: operator.neg}

    def value(node):
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in binary:
            left, right = value(node.left), value(node.right)
            if isinstance(node.op, ast.Pow) and abs(right) > 100:
                raise ValueError("exponent too large")
            return binary[type(node.op)](left, right)
        raise ValueError(f"not allowed in arithmetic: {type(node).__name__}")

    if not isinstance(expression, str):
        raise ValueError("the expression must be a string")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as e:
        raise ValueError(f"not an arithmetic expression: {expression!r}") from e
    result = value(tree.body)
    if isinstance(result, float) and result.is_integer():
        result = int(result)
    return str(result)
