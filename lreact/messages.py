"""Message types of the lecture (Part IV, "Message types: what the loop stores") and their Ollama wire format.

The loop stores its history as a list of these objects.  Each role has its own type
because each carries different fields:

- ``SystemMessage(content)``: the standing instructions, first in every call;
- ``UserMessage(content)``: what the user typed;
- ``AssistantMessage(text, tool_calls, reasoning)``: one model turn, text and/or a list of
  ``ToolCall``, and the thinking span of a thinking model (``reasoning``: empty when there is
  none; never part of ``text``: lecture Part II, "Native reasoning models");
- ``ToolCall(id, name, arguments)``: one requested call, ``arguments`` a JSON *string*
  (as the model sampled it: it may be malformed, which is why the runtime validates it);
- ``ToolResultMessage(tool_call_id, content)``: the result of one call, paired by id.

``messages_to_wire`` / ``message_from_wire`` convert to and from the JSON that Ollama's
``/api/chat`` speaks (lecture Part IV, "Message types: what the loop stores"; the recorded exchanges in
``tests/fixtures/ollama/`` show that JSON).  The thinking travels in each engine's own field
(``REASONING_FIELDS``): ``thinking`` on Ollama's ``/api/chat``, ``reasoning_content`` on
llama-server (and vLLM before it removed that name), ``reasoning`` on vLLM and Ollama's ``/v1``.
"""
from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Callable, ClassVar, Union


class ToolCallError(ValueError):
    """A tool call failed validation (Part III, "Validating Tool Calls").

    The message says which of the three checks failed (JSON, tool existence, schema) and why.
    """


def _require_str(value, what: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, got {type(value).__name__}: {value!r}")
    return value


@dataclass
class SystemMessage:
    content: str
    role: ClassVar[str] = "system"

    def __post_init__(self):
        _require_str(self.content, "SystemMessage.content")


@dataclass
class UserMessage:
    content: str
    role: ClassVar[str] = "user"

    def __post_init__(self):
        _require_str(self.content, "UserMessage.content")


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: str  # a JSON string, exactly as the model produced it

    def __post_init__(self):
        _require_str(self.id, "ToolCall.id")
        _require_str(self.name, "ToolCall.name")
        if isinstance(self.arguments, dict):
            raise TypeError(
                "ToolCall.arguments must be a JSON string, not a dict: "
                f"write json.dumps({self.arguments!r}) instead")
        _require_str(self.arguments, "ToolCall.arguments")


@dataclass
class AssistantMessage:
    text: str = ""
    tool_calls: list = field(default_factory=list)
    reasoning: str = ""   # the thinking span of a thinking model; never part of text
    role: ClassVar[str] = "assistant"

    def __post_init__(self):
        _require_str(self.text, "AssistantMessage.text")
        _require_str(self.reasoning, "AssistantMessage.reasoning")
        self.tool_calls = list(self.tool_calls)
        for call in self.tool_calls:
            if not isinstance(call, ToolCall):
                raise TypeError(
                    f"AssistantMessage.tool_calls must hold ToolCall objects, got {call!r}")


@dataclass
class ToolResultMessage:
    tool_call_id: str
    content: str
    role: ClassVar[str] = "tool"

    def __post_init__(self):
        _require_str(self.tool_call_id, "ToolResultMessage.tool_call_id")
        _require_str(self.content, "ToolResultMessage.content")


RUN_STATUSES = ("answered", "step_budget", "format_errors", "repetition")


@dataclass
class RunResult:
    """How a run of the hardened loop ended (second lab, Part C; lecture Part II, "The Execution
    Loop", and "In-context learning vs trajectory tuning": a validator, a repetition
    check, a step cap).

    ``answer`` is the model's final text when ``status == "answered"`` and ``None`` otherwise, so
    a run that was stopped can never be mistaken for a model that *says* "stopped".  ``status`` is
    one of ``RUN_STATUSES``; ``steps`` is the number of model calls the run made.
    """
    answer: Union[str, None]
    status: str
    steps: int

    def __post_init__(self):
        if self.status not in RUN_STATUSES:
            raise ValueError(f"RunResult.status must be one of {RUN_STATUSES}, got {self.status!r}")
        if self.answer is not None:
            _require_str(self.answer, "RunResult.answer")
        if self.status == "answered" and self.answer is None:
            raise ValueError("an answered run needs its answer text")
        if self.status != "answered" and self.answer is not None:
            raise ValueError(f"a run that ended with {self.status!r} has no answer: use None")
        if type(self.steps) is not int or self.steps < 0:
            raise TypeError(f"RunResult.steps must be a whole number >= 0, got {self.steps!r}")


Message = Union[SystemMessage, UserMessage, AssistantMessage, ToolResultMessage]
MESSAGE_TYPES = (SystemMessage, UserMessage, AssistantMessage, ToolResultMessage)


def new_call_id() -> str:
    """A fresh tool-call id in the server's style (``call_`` + 8 hex digits)."""
    return "call_" + uuid.uuid4().hex[:8]


def arguments_as_object(arguments: str):
    """The arguments of a call as a JSON object for the wire.

    Ollama's ``/api/chat`` wants an object.  A string that is not a JSON object (a malformed
    call the model produced earlier) is kept whole under ``"__raw_arguments__"`` so nothing is lost.
    """
    try:
        value = json.loads(arguments)
    except (TypeError, ValueError):
        return {"__raw_arguments__": arguments}
    return value if isinstance(value, dict) else {"__raw_arguments__": arguments}


# where each engine puts the thinking of an assistant message, in and out
REASONING_FIELDS = ("thinking", "reasoning_content", "reasoning")


def messages_to_wire(messages, *, reasoning_field: str = "thinking") -> list:
    """Convert a history to the list of dicts that Ollama's ``/api/chat`` expects.

    Tool results carry ``tool_name`` (Ollama's field, looked up from the call they answer)
    and ``tool_call_id``; assistant tool calls carry their ``id``.  An assistant message's
    ``reasoning``, when it has one, goes in ``reasoning_field`` (Ollama's ``thinking`` unless
    another engine's name is asked for: ``REASONING_FIELDS``).  Which thinking to send at all is
    the runtime's choice (the template's rule: second lab, C.6), made before this is called.
    """
    if reasoning_field not in REASONING_FIELDS:
        raise ValueError(f"reasoning_field must be one of {REASONING_FIELDS}, got "
                         f"{reasoning_field!r}")
    names = {}
    wire = []
    for i, m in enumerate(messages):
        if isinstance(m, (SystemMessage, UserMessage)):
            wire.append({"role": m.role, "content": m.content})
        elif isinstance(m, AssistantMessage):
            out = {"role": "assistant", "content": m.text}
            if m.reasoning:
                out[reasoning_field] = m.reasoning
            if m.tool_calls:
                out["tool_calls"] = []
                for call in m.tool_calls:
                    names[call.id] = call.name
                    out["tool_calls"].append({
                        "id": call.id,
                        "function": {"name": call.name,
                                     "arguments": arguments_as_object(call.arguments)},
                    })
            wire.append(out)
        elif isinstance(m, ToolResultMessage):
            out = {"role": "tool", "content": m.content, "tool_call_id": m.tool_call_id}
            if m.tool_call_id in names:
                out["tool_name"] = names[m.tool_call_id]
            wire.append(out)
        else:
            raise TypeError(
                f"message {i} is a {type(m).__name__}, not one of the lecture's message types "
                "(SystemMessage, UserMessage, AssistantMessage, ToolResultMessage)")
    return wire


def message_from_wire(message: dict, new_id: Callable[[], str] = new_call_id) -> Message:
    """Convert one wire message (a dict) back to a lecture message type.

    For an assistant message, a tool call keeps the server's ``id`` when it has one and gets
    ``new_id()`` otherwise; ``arguments`` becomes a JSON string whether it came as an object
    (``/api/chat``) or as a string (the OpenAI-compatible endpoint).  The thinking is read from
    whichever of ``REASONING_FIELDS`` holds text (``thinking``, ``reasoning_content``,
    ``reasoning``, in that order).
    """
    if not isinstance(message, dict) or "role" not in message:
        raise ValueError(f"not a wire message (a dict with a 'role'): {message!r}")
    role = message["role"]
    content = message.get("content") or ""
    if role == "system":
        return SystemMessage(content)
    if role == "user":
        return UserMessage(content)
    if role == "tool":
        return ToolResultMessage(message.get("tool_call_id") or "", content)
    if role == "assistant":
        calls = []
        for raw in message.get("tool_calls") or []:
            fn = raw.get("function") or {}
            args = fn.get("arguments", {})
            if not isinstance(args, str):
                args = json.dumps(args, ensure_ascii=False)
            calls.append(ToolCall(id=raw.get("id") or new_id(), name=fn.get("name", ""),
                                  arguments=args))
        reasoning = next((message[k] for k in REASONING_FIELDS
                          if isinstance(message.get(k), str) and message[k]), "")
        return AssistantMessage(text=content, tool_calls=calls, reasoning=reasoning)
    raise ValueError(f"unknown role {role!r}: expected system, user, assistant or tool")
