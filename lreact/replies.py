"""Reading a model's raw reply: the thinking span and the two tool-call grammars of Qwen
(lecture Part II, "Native reasoning models"; Part III, "Native tool calling").

An engine that runs the model itself (the embedded backend) gets the reply as one string and
must take it apart as Ollama, llama-server and vLLM do inside: thinking, calls, answer.

- ``split_reasoning(text)``: ``(reasoning, answer)``.  A thinking model opens its reply with
  ``<think>...</think>`` (Qwen3, Qwen3.5); a template that prefills ``<think>`` (Qwen3's
  "Thinking-2507" models) makes the reply start inside the span, so it has only ``</think>``.
- ``parse_xml_call(block, schema)``: one call in Qwen3.5's XML grammar
  (``<function=NAME>`` / ``<parameter=KEY>`` / value / ``</parameter>`` / ``</function>``) as
  ``(name, arguments)``; its values are untyped text, converted by the tool's JSON schema, and a
  value that does not convert is an error (``ValueError``), never a guess.
- ``parse_reply(text, tools=None)``: the whole reply as an ``AssistantMessage``: thinking into
  ``reasoning``; every ``<tool_call>`` block of the rest, in Qwen2.5/Qwen3's JSON grammar or
  Qwen3.5's XML grammar, into a ``ToolCall`` (arguments as a JSON string); the text outside the
  blocks into ``text``.  A call inside the thinking span is not a call.  If any block is not a
  readable call, nothing is parsed: the text comes back as the model wrote it (thinking still
  split off), and the runtime's format check reports it (second lab, C.1).

All three are the course's reference versions of what the second lab (C.6) asks students to
write, so they are marked ``@reference_implementation``.  Engine code calls the unguarded
originals (``original(parse_reply)``), so a backend keeps working after a lab's setup cell has
engaged the rule.
"""
from __future__ import annotations

import json
import re

from .messages import AssistantMessage, ToolCall, new_call_id
from .reference import reference_implementation

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
TOOL_CALL_OPEN, TOOL_CALL_CLOSE = "<tool_call>", "</tool_call>"
IM_END = "<|im_end|>"

_BLOCK = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.S)
_FUNCTION = re.compile(r"<function=([^>\n]*)>(.*)</function>", re.S)
_PARAMETER = re.compile(r"<parameter=([^>\n]*)>(.*?)</parameter>", re.S)
# JSON-schema type -> the Python types its JSON value may have
_TYPES = {"integer": (int,), "number": (int, float), "boolean": (bool,), "object": (dict,),
          "array": (list,)}


def original(fn):
    """The unguarded function behind a ``@reference_implementation`` (itself if it has none).
    Engine code calls parsing through it: a lab's setup cell engages the rule for answers, not
    for the engines the live cells run on."""
    return getattr(fn, "__wrapped__", fn)


# reference implementation
@reference_implementation
def split_reasoning(text):
    """``(reasoning, answer)`` of a raw reply.

    - a reply that starts (after whitespace) with ``<think>``: the reasoning runs to the first
      ``</think>``, the answer is what follows it; without ``</think>`` (a reply cut short while
      thinking) all of it is reasoning and the answer is ``""``;
    - otherwise a reply that holds ``</think>`` started inside a prefilled ``<think>``: the
      reasoning is what comes before the first ``</think>``, the answer what follows it;
    - otherwise there is no thinking: ``("", text)``.

    With a span, both parts are stripped of surrounding whitespace.
    """
    if not isinstance(text, str):
        raise TypeError(f"split_reasoning needs the reply's text (a str), got "
                        f"{type(text).__name__}")
    start = text.lstrip()
    if start.startswith(THINK_OPEN):
        reasoning, _, answer = start[len(THINK_OPEN):].partition(THINK_CLOSE)
        return reasoning.strip(), answer.strip()
    if THINK_CLOSE in text:
        reasoning, _, answer = text.partition(THINK_CLOSE)
        return reasoning.strip(), answer.strip()
    return "", text


# reference implementation
@reference_implementation
def parse_xml_call(block, schema):
    """One call in Qwen3.5's XML grammar as ``(name, arguments)``.

    ``block`` is the text between ``<tool_call>`` and ``</tool_call>``; ``schema`` the JSON schema
    of the tool's arguments (``tool["function"]["parameters"]``).  The block (stripped) is
    ``<function=NAME>``, then ``<parameter=KEY>VALUE</parameter>`` blocks with only whitespace
    between them, then ``</function>``.  One newline at each end of a VALUE is the grammar's,
    not the value's.  A KEY whose schema type is integer, number, boolean, object or array must
    hold a JSON value of that type; any other KEY keeps its text.  Raises ``ValueError`` naming
    what is wrong: no ``<function=NAME>`` ... ``</function>``, text outside the parameters (an
    unclosed ``<parameter=...>`` among it), a KEY given twice, a value that does not convert.
    """
    if not isinstance(block, str):
        raise TypeError(f"parse_xml_call needs the block's text (a str), got "
                        f"{type(block).__name__}")
    found = _FUNCTION.fullmatch(block.strip())
    if found is None or not found.group(1).strip():
        raise ValueError("not a call in the XML grammar: it must be <function=NAME> ... "
                         "</function>")
    name, inner = found.group(1).strip(), found.group(2)
    def convert(key, value, spec):     # the value as its parameter's schema type says
        kind = spec.get("type") if isinstance(spec, dict) else None
        if not isinstance(kind, str) or kind not in _TYPES:
            return value                 # a string, no type, a list of types, an unknown name
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = None
        if not isinstance(parsed, _TYPES[kind]) or (
                kind in ("integer", "number") and isinstance(parsed, bool)):
            raise ValueError(f"parameter {key!r} of {name!r}: {value!r} is not a JSON {kind}, "
                             "as the tool's schema requires")
        return parsed

    properties = schema.get("properties") if isinstance(schema, dict) else None
    properties = properties if isinstance(properties, dict) else {}
    arguments, pos = {}, 0
    for parameter in _PARAMETER.finditer(inner):
        if inner[pos:parameter.start()].strip():
            raise ValueError(f"text outside the parameters of {name!r}: "
                             f"{inner[pos:parameter.start()].strip()[:60]!r}")
        pos = parameter.end()
        key, value = parameter.group(1).strip(), parameter.group(2)
        if key in arguments:
            raise ValueError(f"parameter {key!r} of {name!r} is given twice")
        value = value[1:] if value.startswith("\n") else value
        value = value[:-1] if value.endswith("\n") else value
        arguments[key] = convert(key, value, properties.get(key))
    rest = inner[pos:].strip()
    if rest:
        what = "a <parameter=...> is not closed" if "<parameter=" in rest else "text outside the parameters"
        raise ValueError(f"{what} in the call of {name!r}: {rest[:60]!r}")
    return name, arguments


def _json_call(block):
    """``(name, arguments)`` of a block in the JSON grammar, or None when it is not one."""
    try:
        call = json.loads(block.strip())
    except ValueError:
        return None
    if not isinstance(call, dict):
        return None
    args = call.get("arguments", {})
    if isinstance(args, str):          # some models write the arguments as a JSON string
        try:
            args = json.loads(args)
        except ValueError:
            return None
    if not (isinstance(call.get("name"), str) and call["name"] and isinstance(args, dict)):
        return None
    return call["name"], args


def _parameters(tools) -> dict:
    out = {}
    for tool in tools or ():
        try:
            fn = tool["function"]
            out[fn["name"]] = fn.get("parameters") or {}
        except (KeyError, TypeError):
            raise ValueError(f"not a function-calling tool schema: {tool!r:.120}") from None
    return out


# reference implementation
@reference_implementation
def parse_reply(text, tools=None, *, new_id=None):
    """The raw reply ``text`` as an ``AssistantMessage`` (see the module's docstring).

    ``tools``: the advertised tool schemas, whose argument schemas convert the values of XML
    calls (without them every XML value stays text).  ``new_id()`` gives each call its id
    (default: ``lreact.messages.new_call_id``).
    """
    if not isinstance(text, str):
        raise TypeError(f"parse_reply needs the reply's text (a str), got {type(text).__name__}")
    new_id = new_id or new_call_id
    reasoning, answer = original(split_reasoning)(text.replace(IM_END, ""))
    answer = answer.strip()
    if TOOL_CALL_OPEN not in answer:
        return AssistantMessage(text=answer, reasoning=reasoning)
    schemas = _parameters(tools)
    calls = []
    for block in _BLOCK.findall(answer):
        if block.strip().startswith("{"):
            call = _json_call(block)
        else:
            try:
                name, _ = original(parse_xml_call)(block, {})
                call = original(parse_xml_call)(block, schemas.get(name, {}))
            except ValueError:
                call = None
        if call is None:               # the runtime's format check sees the text as written
            return AssistantMessage(text=answer, reasoning=reasoning)
        calls.append(ToolCall(new_id(), call[0], json.dumps(call[1], ensure_ascii=False)))
    return AssistantMessage(text=_BLOCK.sub("", answer).strip(), tool_calls=calls,
                            reasoning=reasoning)
