"""What an inference engine does around the model, as text (lecture Part IV, "System prompt, chat
template and statelessness"; Part III, "Function calling: defining and advertising tools").

The embedded backend (``lreact.engines.embedded``) does here what Ollama or llama-server do inside:

- ``wire_messages(history)``: the history as the chat-template dialect (OpenAI-style dicts;
  a call's ``arguments`` as a JSON object when it parses, as Hugging Face templates expect);
- ``ChatTemplate``: the model's own chat template from the GGUF file (Jinja, rendered by
  llama-cpp-python's ``Jinja2ChatFormatter``), used when it shows the tools to the model;
  otherwise the course's Qwen2.5 ChatML (``chatml_prompt``: the layout of Part IV, with the
  course's tool instructions ``lreact.chatml.TOOLS_PREAMBLE`` / ``TOOLS_POSTAMBLE``);
- the reply is taken apart by ``lreact.replies.parse_reply`` (thinking, both Qwen call
  grammars), the one parser of the package.

A template that has ``enable_thinking`` (Qwen3, Qwen3.5) gets it from ``render(...,
thinking=True/False)``; ``None`` leaves the template's default.  Earlier thinking reaches the
template as each message's ``reasoning_content`` (the field Qwen's templates read), and the
template applies its own rule to it.
"""
from __future__ import annotations

import json

from ..chatml import TOOLS_POSTAMBLE, TOOLS_PREAMBLE
from ..reference import near_copy_of
from ..messages import (
    AssistantMessage,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    messages_to_wire,
)

IM_END = "<|im_end|>"
_PROBE_TOOL = {"type": "function", "function": {
    "name": "lreact_probe_tool", "description": "probe",
    "parameters": {"type": "object", "properties": {"x": {"type": "string"}}}}}


def wire_messages(history) -> list:
    """The history as the list of dicts a Jinja chat template reads: Ollama's wire form
    (``messages_to_wire``) with OpenAI's ``type`` on each call, the tool's ``name`` on each
    result, malformed arguments shown as the model wrote them, and an assistant message's
    thinking as ``reasoning_content``."""
    out = messages_to_wire(history, reasoning_field="reasoning_content")
    for entry in out:
        for call in entry.get("tool_calls", ()):
            call["type"] = "function"
            args = call["function"]["arguments"]
            if set(args) == {"__raw_arguments__"}:
                call["function"]["arguments"] = args["__raw_arguments__"]
        if entry["role"] == "tool":
            entry["name"] = entry.pop("tool_name", "")
    return out


def _dumps(value) -> str:
    return json.dumps(value, ensure_ascii=False)


@near_copy_of("render_chatml")
def chatml_prompt(wire, tools=None, *, generation_prompt=True) -> str:
    """The course's Qwen2.5 ChatML for ``wire`` (``wire_messages``) and ``tools``: system turn
    with the tools section, ``<tool_call>`` blocks in assistant turns, results as
    ``<tool_response>`` blocks in a user turn, and the open assistant turn."""
    parts = []
    system = [m["content"] for m in wire if m["role"] == "system"]
    if system or tools:
        parts.append("<|im_start|>system\n" + "\n\n".join(system))
        if tools:
            parts.append(("\n\n" if system else "") + TOOLS_PREAMBLE)
            parts.extend("\n" + _dumps(t) for t in tools)
            parts.append("\n" + TOOLS_POSTAMBLE)
        parts.append(IM_END + "\n")
    rest = [m for m in wire if m["role"] != "system"]
    for i, m in enumerate(rest):
        if m["role"] == "user":
            parts.append(f"<|im_start|>user\n{m['content']}{IM_END}\n")
        elif m["role"] == "assistant":
            body = m["content"] or ""
            for call in m.get("tool_calls") or []:
                fn = call["function"]
                body += (("\n" if body else "") + '<tool_call>\n{"name": ' + _dumps(fn["name"])
                         + ', "arguments": ' + _dumps(fn["arguments"]) + "}\n</tool_call>")
            parts.append(f"<|im_start|>assistant\n{body}{IM_END}\n")
        else:  # tool results: consecutive ones share one user turn
            first = i == 0 or rest[i - 1]["role"] != "tool"
            last = i == len(rest) - 1 or rest[i + 1]["role"] != "tool"
            parts.append(("<|im_start|>user" if first else "")
                         + f"\n<tool_response>\n{m['content']}\n</tool_response>"
                         + (IM_END + "\n" if last else ""))
    if generation_prompt:
        parts.append("<|im_start|>assistant\n")
    return "".join(parts)


class ChatTemplate:
    """How one model's prompts are rendered: its own Jinja template when that shows tools,
    else the course's ChatML.  ``source`` says which, in words, for ``check_setup``."""

    def __init__(self, template, *, eos_token="", bos_token=""):
        self.formatter = None
        self.thinking_switch = bool(template) and "enable_thinking" in template
        self.source = "the course's Qwen2.5 ChatML (the GGUF file has no chat template)"
        if template:
            try:
                from llama_cpp.llama_chat_format import Jinja2ChatFormatter

                formatter = Jinja2ChatFormatter(template=template, eos_token=eos_token,
                                                bos_token=bos_token)
                probe = formatter(messages=wire_messages(_probe_history()), tools=[_PROBE_TOOL])
                if "lreact_probe_tool" in probe.prompt:
                    self.formatter = formatter
                    self.source = "the model's own chat template (from the GGUF file)"
                else:
                    self.source = ("the course's Qwen2.5 ChatML (the model's own chat template "
                                   "does not show tools to the model)")
            except Exception as e:   # a template the Jinja sandbox refuses: any error it raises
                self.source = ("the course's Qwen2.5 ChatML (the model's own chat template "
                               f"could not be rendered: {type(e).__name__})")

    @property
    def own(self) -> bool:
        return self.formatter is not None

    def render(self, history, tools=None, *, thinking=None) -> str:
        """The prompt text for ``history``; ``thinking`` (True/False) is passed as
        ``enable_thinking`` to a template that has that switch, ``None`` leaves its default."""
        wire = wire_messages(history)
        if self.formatter is not None:
            extra = {"enable_thinking": bool(thinking)} \
                if thinking is not None and self.thinking_switch else {}
            try:
                return self.formatter(messages=wire, tools=list(tools) if tools else None,
                                      **extra).prompt
            except Exception:   # e.g. a template that raise_exception()s on this history
                pass
        return chatml_prompt(wire, tools)


def _probe_history():
    return [SystemMessage("s"), UserMessage("u"),
            AssistantMessage(tool_calls=[ToolCall("call_1", "lreact_probe_tool", '{"x": "1"}')]),
            ToolResultMessage("call_1", "r")]
