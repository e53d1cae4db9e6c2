"""The chat template as text (Part IV, "System prompt, chat template and statelessness").

``render_chatml(messages, tools)`` (graded in lab 2, C.0; optional in the first lab, B.6) applies one template: the Go
template of Ollama's ``qwen2.5`` model (Ollama library blob eb4402837c78), to the messages and the
tool dicts exactly as the runtime holds them.  It is not byte for byte what Ollama's server sends:
the server first re-encodes each tool through its Go structs (fields in the order ``type, $defs,
items, required, properties``, properties sorted, unknown fields such as ``additionalProperties``
dropped) and, when the first message is not a system message, puts the model's default system
prompt first; ``lreact.engines.ollama_text.ollama_qwen_text`` adds both, and the lecture prints the
difference.  Qwen's own Hugging Face template (used by llama-server and vLLM) differs again, e.g.
in the quirk below.  The layout:

- an optional system turn holding the system prompt and, when tools are given, a ``# Tools``
  section with one ``{"type": "function", "function": {...}}`` JSON object per line inside
  ``<tools></tools>`` and the instruction to answer with ``<tool_call>`` blocks;
- user turns as they are; assistant turns with their text, or (text-less) their calls inside
  ``<tool_call>``; each tool result as a ``<tool_response>`` block in a *user* turn;
- after a last non-assistant message, the open ``<|im_start|>assistant`` turn the model continues.

Several system messages are joined by a blank line, as Ollama does.  Like the template, it
drops a call's id and the tool name of a result: the model sees order only.
Like Ollama's Go template, JSON is compact and argument keys are sorted.  One quirk of that
template is kept: an assistant turn with both text and calls shows only the text, so the model
never sees the calls of such a turn (a ReAct thought followed by a call): on its next call it
reads its thought and then the ``<tool_response>``, with nothing saying which tool it asked for
or with which arguments.  Qwen's Hugging Face template writes the text and then the calls.
"""
from __future__ import annotations

import json

from .messages import AssistantMessage, SystemMessage, ToolResultMessage, UserMessage
from .reference import reference_implementation

TOOLS_PREAMBLE = (
    "# Tools\n\n"
    "You may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n"
    "<tools>"
)
TOOLS_POSTAMBLE = (
    "</tools>\n\n"
    "For each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\n"
    "<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n'
    "</tool_call>"
)


def _compact(obj, sort_keys=False) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), sort_keys=sort_keys)


def _arguments_text(arguments: str) -> str:
    try:
        return _compact(json.loads(arguments), sort_keys=True)
    except ValueError:
        return arguments  # a malformed call is shown as the model wrote it


@reference_implementation
def render_chatml(messages, tools=None) -> str:
    """The ChatML text of ``messages`` (and ``tools``) as the model reads it."""
    messages = list(messages)
    system = [m.content for m in messages if isinstance(m, SystemMessage)]
    rest = [m for m in messages if not isinstance(m, SystemMessage)]
    out = []
    if system or tools:
        out.append("<|im_start|>system")
        if system:
            out.append("\n" + "\n\n".join(system))  # Ollama joins system messages
        if tools:
            out.append("\n\n" + TOOLS_PREAMBLE)
            for tool in tools:
                out.append('\n{"type": "function", "function": ' + _compact(tool["function"]) + "}")
            out.append("\n" + TOOLS_POSTAMBLE)
        out.append("<|im_end|>\n")
    for i, m in enumerate(rest):
        last = i == len(rest) - 1
        if isinstance(m, UserMessage):
            out.append(f"<|im_start|>user\n{m.content}<|im_end|>\n")
        elif isinstance(m, AssistantMessage):
            out.append("<|im_start|>assistant\n")
            if m.text:
                out.append(m.text)
            elif m.tool_calls:
                out.append("<tool_call>\n")
                for call in m.tool_calls:
                    out.append(f'{{"name": "{call.name}", "arguments": '
                               f"{_arguments_text(call.arguments)}}}\n")
                out.append("</tool_call>")
            if not last:
                out.append("<|im_end|>\n")
        elif isinstance(m, ToolResultMessage):
            out.append(f"<|im_start|>user\n<tool_response>\n{m.content}\n</tool_response>"
                       "<|im_end|>\n")
        else:
            raise TypeError(f"not a lecture message type: {m!r}")
        if last and not isinstance(m, AssistantMessage):
            out.append("<|im_start|>assistant\n")
    return "".join(out)
