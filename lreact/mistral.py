"""Mistral's tool template as text, beside Qwen's ChatML (``lreact.chatml``).

Lecture: Part IV, "System prompt, chat template and statelessness": other model families use other
delimiters.  Mistral 7B v0.3, as Ollama's ``mistral`` template renders it:

- the tool schemas go in ``[AVAILABLE_TOOLS] [...][/AVAILABLE_TOOLS]``, once, just before the
  **last** user turn, and the system text goes inside that turn: ``[INST] <system>\\n\\n<user>[/INST]``;
- earlier user turns are ``[INST] <user>[/INST]``;
- an assistant call is ``[TOOL_CALLS] [{"name": ..., "arguments": {...}}]</s>`` (the calls of one
  turn are written one after the other, as the template does), a text turn `` <text></s>``;
- a result is ``[TOOL_RESULTS] {"content": <result>}[/TOOL_RESULTS]``, the result text inserted
  as it is.  There are no ids: as in ChatML, order is all that pairs a result with its call.

JSON is written the way Ollama's Go server prints it: compact, ``<``, ``>`` and ``&`` escaped,
arguments with sorted keys, schemas in the fixed field order of its structs.  No ``<s>``: the
tokenizer adds it.
"""
from __future__ import annotations

import json

from .messages import AssistantMessage, SystemMessage, ToolResultMessage, UserMessage

# the field order of Ollama's Go structs for a tool (api.Tool, ToolFunction, its parameters)
_TOOL_ORDER = ("type", "function")
_FUNCTION_ORDER = ("name", "description", "parameters")
_PARAMETERS_ORDER = ("type", "$defs", "items", "required", "properties")
_PROPERTY_ORDER = ("type", "items", "description", "enum")


def _go_json(value) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _ordered(d: dict, order) -> dict:
    return {k: d[k] for k in order if k in d}


def tool_json(tool: dict) -> dict:
    """A tool schema with its fields in the order Ollama's server writes them (properties sorted
    by name, as a Go map is printed; fields the server does not know are left out)."""
    fn = tool.get("function", {})
    params = dict(fn.get("parameters", {}))
    if "properties" in params:
        params["properties"] = {name: _ordered(prop, _PROPERTY_ORDER)
                                for name, prop in sorted(params["properties"].items())}
    out_fn = _ordered({**fn, "parameters": _ordered(params, _PARAMETERS_ORDER)}, _FUNCTION_ORDER)
    return _ordered({**tool, "function": out_fn}, _TOOL_ORDER)


def _arguments(arguments: str) -> str:
    try:
        value = json.loads(arguments)
    except ValueError:
        return arguments          # a malformed call is shown as the model wrote it
    if isinstance(value, dict):
        value = dict(sorted(value.items()))
    return _go_json(value)


def render_mistral(messages, tools=None) -> str:
    """The text Mistral reads for ``messages`` (and ``tools``), as Ollama's ``mistral`` template
    renders it; the model continues right after the last ``[/INST]`` or ``[/TOOL_RESULTS]``."""
    system = "\n\n".join(m.content for m in messages if isinstance(m, SystemMessage))
    users = [i for i, m in enumerate(messages) if isinstance(m, UserMessage)]
    last_user = users[-1] if users else None
    parts = []
    for i, m in enumerate(messages):
        if isinstance(m, SystemMessage):
            continue
        if isinstance(m, UserMessage):
            if i == last_user:
                if tools:
                    parts.append("[AVAILABLE_TOOLS] "
                                 + _go_json([tool_json(t) for t in tools])
                                 + "[/AVAILABLE_TOOLS]")
                prefix = system + "\n\n" if system else ""
                parts.append(f"[INST] {prefix}{m.content}[/INST]")
            else:
                parts.append(f"[INST] {m.content}[/INST]")
        elif isinstance(m, AssistantMessage):
            if m.text:
                parts.append(f" {m.text}</s>")
            elif m.tool_calls:
                calls = "".join(f'{{"name": "{c.name}", "arguments": {_arguments(c.arguments)}}}'
                                for c in m.tool_calls)
                parts.append(f"[TOOL_CALLS] [{calls}]</s>")
        elif isinstance(m, ToolResultMessage):
            parts.append(f'[TOOL_RESULTS] {{"content": {m.content}}}[/TOOL_RESULTS]')
        else:
            raise TypeError(f"message {i} is a {type(m).__name__}, not a lecture message type")
    return "".join(parts)
