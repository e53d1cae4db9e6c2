"""A GBNF grammar that lets a reply be only a well-formed tool call or plain prose (lecture
Part I, "Constrained decoding"; Part III, "Native tool calling").

``tool_call_gbnf(tools)`` is the grammar the embedded engine applies when ``EmbeddedLLM`` is made
with ``tool_grammar=True``.  A reply under it is exactly one of:

- a call: ``<tool_call>\\n{"name": <a given tool>, "arguments": {...}}\\n</tool_call>``, the
  arguments shaped by that tool's JSON schema (llama.cpp's own schema converter,
  ``llama_cpp.llama_grammar.json_schema_to_gbnf``, writes that part);
- prose: text with none of the characters ``< > { } [ ] `` ` ``, so it can hold no
  ``<tool_call>`` tag, no JSON object, no ``[TOOL_CALLS]`` and no code fence: nothing a format
  check could take for a call written as text.

String arguments without a ``maxLength`` get one (``MAX_STRING`` characters), so a hot sampler
rarely runs a call past the reply's token cap (it still can: a character may take several tokens,
and the converter allows some whitespace between the parts; such a cut call is a format error).  The grammar says what the reply may look like; whether the
arguments are *right* (a known city, a sensible expression) stays the runtime's check.
"""
from __future__ import annotations

import copy
import json

MAX_STRING = 40          # characters: the longest string argument the grammar lets through
PROSE_FORBIDDEN = "<>{}[]`"


def _bounded(schema):
    """A copy of a JSON schema whose strings all have a ``maxLength``."""
    schema = copy.deepcopy(schema)

    def visit(node):
        if isinstance(node, dict):
            if node.get("type") == "string" and "enum" not in node and "const" not in node:
                node.setdefault("maxLength", MAX_STRING)
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    visit(schema)
    return schema


def call_schema(tools) -> dict:
    """The JSON schema of one call ``{"name": ..., "arguments": ...}`` to one of ``tools``
    (function-calling schemas, as in ``lreact.tools.TOOLS``)."""
    if not tools:
        raise ValueError("tool_call_gbnf needs at least one tool schema; without tools there is "
                         "no call to constrain (call the model without the grammar)")
    alternatives = []
    for tool in tools:
        try:
            fn = tool["function"]
            name = fn["name"]
        except (KeyError, TypeError):
            raise ValueError(f"not a function-calling tool schema (want {{'type': 'function', "
                             f"'function': {{'name': ..., 'parameters': ...}}}}): {tool!r:.120}"
                             ) from None
        params = _bounded(fn.get("parameters") or {"type": "object", "properties": {}})
        alternatives.append({"type": "object", "additionalProperties": False,
                             "required": ["name", "arguments"],
                             "properties": {"name": {"const": name}, "arguments": params}})
    return alternatives[0] if len(alternatives) == 1 else {"anyOf": alternatives}


def tool_call_gbnf(tools) -> str:
    """The GBNF text: ``root ::= tool-call | prose`` (see the module's docstring)."""
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    schema = json.dumps(call_schema(tools))
    try:
        json_rules = json_schema_to_gbnf(schema, prop_order=["name", "arguments"])
    except Exception as e:  # noqa: BLE001 - the converter raises plain Exceptions
        raise ValueError(f"llama.cpp cannot turn these tool schemas into a grammar "
                         f"({type(e).__name__}: {e}); use the model without tool_grammar") from None
    # the converter names its top rule "root"; here it is the JSON inside the call
    json_rules = json_rules.replace("root ::=", "call-json ::=", 1)
    forbidden = "".join("\\" + c if c in "[]\\^-" else c for c in PROSE_FORBIDDEN)
    return "\n".join([
        "root ::= tool-call | prose",
        'tool-call ::= "<tool_call>\\n" call-json "\\n</tool_call>"',
        f"prose ::= [^{forbidden}]+",
        json_rules,
    ])
