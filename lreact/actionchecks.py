"""Helpers for the graded tests of the second lab's Part D (MCP, text ReAct, code actions).

Test cells import these inside each cell.  They turn what a student's function returned into
plain JSON values before any comparison (never the object's own ``__eq__``), check the shape of
a function-calling schema, and build the test doubles: an in-process stand-in for the lab's MCP
server with the same tool listing (``fake_server``; ``tests/test_actionchecks.py`` keeps the
listing and the answers equal to the real server's) and a recording code runner
(``RecordingRunner``).  Nothing here computes an answer of the lab: the expected values live in
the test cells.
Nothing here prints.  Lecture: Part III, "Standardising tools: MCP (Model Context Protocol)",
"Specific tools vs a code tool"; Part II, "The core definition of ReAct".
"""
from __future__ import annotations

import json

from .actions.mcp_client import ScriptedMCPConnection
from .checks import fail

# What the lab's server (lreact.actions.mcp_server) lists: the SDK derives these from the signatures.
SERVER_TOOLS = [
    {"name": "get_weather",
     "description": "Get the current weather for a city: temperature and conditions.",
     "input_schema": {
         "properties": {
             "city": {"description": "City name, e.g. 'Berlin'", "title": "City", "type": "string"},
             "unit": {"default": "celsius", "enum": ["celsius", "fahrenheit"], "title": "Unit",
                      "type": "string"}},
         "required": ["city"], "title": "get_weatherArguments", "type": "object"}},
    {"name": "arithmetic",
     "description": ("Apply one arithmetic operation to two numbers: a + b, a - b, a * b or "
                     "a / b."),
     "input_schema": {
         "properties": {
             "operation": {"enum": ["add", "subtract", "multiply", "divide"],
                           "title": "Operation", "type": "string"},
             "a": {"description": "The first number", "title": "A", "type": "number"},
             "b": {"description": "The second number", "title": "B", "type": "number"}},
         "required": ["operation", "a", "b"], "title": "arithmeticArguments",
         "type": "object"}},
]


def plain_json(value, name="the result", hint=""):
    """``value`` rebuilt as plain JSON values (dicts, lists, str, numbers, bool, None)."""
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError) as e:
        fail(f"{name} must be made of plain JSON values (dict, list, str, number, bool, None): "
              f"{e}", hint)


def _arithmetic(operation, a, b):
    """The fake server's arithmetic tool: the same answers and error text as lreact.actions.mcp_server."""
    if operation == "divide" and b == 0:
        raise ValueError("division by zero: b must not be 0")
    value = {"add": a + b, "subtract": a - b, "multiply": a * b, "divide": a / b if b else 0}[operation]
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def fake_server(get_weather, handlers=None, failures=None, tools=None) -> ScriptedMCPConnection:
    """A ScriptedMCPConnection listing the lab server's tools (or ``tools``) and answering like
    it.  ``get_weather`` is the weather function behind the tool (a test passes the course's,
    from ``lreact.labchecks.reference``); ``handlers`` replace or add tools; ``failures`` make
    ``call_tool`` itself raise."""
    merged = {"get_weather": get_weather, "arithmetic": _arithmetic, **(handlers or {})}
    return ScriptedMCPConnection(SERVER_TOOLS if tools is None else tools, merged,
                                 failures=failures)


def assert_tool_schema(schema, name, hint=""):
    """``schema`` (plain JSON) has the function-calling envelope of ``lreact.tools.TOOLS``."""
    if not isinstance(schema, dict) or schema.get("type") != "function" \
            or not isinstance(schema.get("function"), dict):
        fail(f"a tool schema must look like {{'type': 'function', 'function': {{...}}}}, got "
              f"{str(schema)[:120]}", hint)
    fn = schema["function"]
    if fn.get("name") != name:
        fail(f"the tool must be named {name!r}, got {fn.get('name')!r}", hint)
    if not isinstance(fn.get("description"), str) or not fn["description"].strip():
        fail("the tool needs a description: it is all the model knows about it", hint)
    params = fn.get("parameters")
    if not isinstance(params, dict) or params.get("type") != "object":
        fail("'parameters' must be a JSON schema of type 'object'", hint)
    return fn


class RecordingRunner:
    """A stand-in for ``lreact.actions.codeact.run_python`` that returns a prepared result dict and
    records how it was called: ``.calls`` holds ``(code, keyword arguments)``, so a test can
    see whether a time limit was passed."""

    def __init__(self, stdout="", stderr="", exit_code=0, timed_out=False, raises=None):
        self.result = {"stdout": stdout, "stderr": stderr, "exit_code": exit_code,
                       "timed_out": timed_out, "truncated": False, "isolation": "test double"}
        self.raises = raises
        self.calls = []

    def __call__(self, code, **kwargs):
        self.calls.append((code, dict(kwargs)))
        if self.raises is not None:
            raise self.raises
        return dict(self.result)
