"""Example tools for the lab (Part III, "Function Calling"), on offline, deterministic data.

Each tool is a plain function plus its JSON schema in the envelope that Ollama (and the OpenAI
API) expect.  ``TOOLS`` is the list advertised to the model; ``REGISTRY`` maps names to functions.
"""
from __future__ import annotations

import ast
import math
import operator

from .reference import reference_implementation

# A fixed weather table: the lab's agent must give the same answers on every machine.
WEATHER = {
    "Berlin": {"temp_c": 12, "condition": "rainy"},
    "Paris": {"temp_c": 15, "condition": "cloudy"},
    "London": {"temp_c": 11, "condition": "foggy"},
    "Madrid": {"temp_c": 24, "condition": "sunny"},
    "Rome": {"temp_c": 21, "condition": "sunny"},
    "Vienna": {"temp_c": 9, "condition": "windy"},
    "Oslo": {"temp_c": -3, "condition": "snowy"},
    "Tokyo": {"temp_c": 18, "condition": "clear"},
    "New York": {"temp_c": 7, "condition": "windy"},
    "Cairo": {"temp_c": 31, "condition": "sunny"},
}

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather for a city. Returns temperature and conditions.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name, e.g. 'Berlin'"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"],
                         "description": "Temperature unit (default celsius)"},
            },
            "required": ["city"],
            "additionalProperties": False,
        },
    },
}

CALCULATOR_TOOL = {
    "type": "function",
    "function": {
        "name": "calculate",
        "description": ("Evaluate an arithmetic expression with numbers, + - * / // % ** and "
                        "parentheses, e.g. '(17 + 25) * 3'. Returns the result as text."),
        "parameters": {
            "type": "object",
            "properties": {
                "expression": {"type": "string", "description": "The arithmetic expression"},
            },
            "required": ["expression"],
            "additionalProperties": False,
        },
    },
}


class UnknownCityError(KeyError):
    """``get_weather`` was asked for a city that is not in the table (a KeyError whose text reads
    plainly: ``str(KeyError('x'))`` would wrap the message in quotes)."""

    def __str__(self):
        return str(self.args[0]) if self.args else ""


@reference_implementation
def get_weather(city: str, unit: str = "celsius") -> str:
    """The weather in ``city`` from the offline table, e.g. ``'12°C, rainy'``."""
    key = {name.lower(): name for name in WEATHER}.get(str(city).strip().lower())
    if key is None:
        raise UnknownCityError(
            f"unknown city {city!r}; known cities: {', '.join(sorted(WEATHER))}")
    row = WEATHER[key]
    if unit == "celsius":
        return f"{row['temp_c']}°C, {row['condition']}"
    if unit == "fahrenheit":
        return f"{round(row['temp_c'] * 9 / 5 + 32)}°F, {row['condition']}"
    raise ValueError(f"unit must be 'celsius' or 'fahrenheit', got {unit!r}")


_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
           ast.Pow: operator.pow}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}
MAX_EXPONENT = 100
MAX_EXPRESSION_LENGTH = 200
MAX_RESULT_BITS = 4096  # integers beyond about 1233 digits are refused (no runaway powers)


def _check_size(value):
    if isinstance(value, int) and value.bit_length() > MAX_RESULT_BITS:
        raise ValueError(f"result too large (more than {MAX_RESULT_BITS} bits)")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("result is not a finite number (overflow)")
    return value


@reference_implementation
def _evaluate(node):
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return _check_size(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow):
            if abs(right) > MAX_EXPONENT:
                raise ValueError(f"exponent {right} is too large (at most {MAX_EXPONENT})")
            if (isinstance(left, int) and isinstance(right, int)
                    and left.bit_length() * right > MAX_RESULT_BITS):
                raise ValueError(f"result too large (more than {MAX_RESULT_BITS} bits)")
        try:
            return _check_size(_BINARY[type(node.op)](left, right))
        except OverflowError:
            raise ValueError("result is not a finite number (overflow)") from None
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate(node.operand))
    raise ValueError(f"not allowed in an arithmetic expression: {type(node).__name__} "
                     f"{ast.unparse(node)[:40]!r} (only numbers, + - * / // % ** and "
                     "parentheses)")


@reference_implementation
def calculate(expression: str) -> str:
    """Evaluate arithmetic safely: the expression is parsed with ``ast`` and only numbers and
    arithmetic operators are evaluated (never ``eval``).  ``'(17 + 25) * 3'`` gives ``'126'``."""
    if not isinstance(expression, str):
        raise TypeError(f"expression must be a string, got {type(expression).__name__}")
    if len(expression) > MAX_EXPRESSION_LENGTH:
        raise ValueError(f"expression longer than {MAX_EXPRESSION_LENGTH} characters")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as e:
        raise ValueError(f"not a valid arithmetic expression: {expression!r} ({e.msg})") from None
    value = _evaluate(tree)
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        value = int(value)
    return str(value)


TOOLS = [WEATHER_TOOL, CALCULATOR_TOOL]
REGISTRY = {"get_weather": get_weather, "calculate": calculate}


@reference_implementation  # the lecture's demonstration; the lab's validate_tool_call is its own
def check_verdict(call, tools=None) -> str:
    """The three checks of a tool call, in their order (lecture: "Validating tool calls: parsing
    vs policy"), as one line: where the call ``call`` (a ToolCall) stops, and why."""
    import json

    import jsonschema

    schemas = {t["function"]["name"]: t["function"]["parameters"] for t in (tools or TOOLS)}
    try:
        args = json.loads(call.arguments)
    except json.JSONDecodeError as e:
        return f"not valid JSON ({e.msg})"
    if call.name not in schemas:
        return f"JSON ok; no tool named {call.name!r}"
    errors = [e.message for e in jsonschema.Draft202012Validator(
        schemas[call.name]).iter_errors(args)]
    return "JSON ok; schema: " + ("ok" if not errors else errors[0])
