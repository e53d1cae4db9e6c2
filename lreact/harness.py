"""The harness around the loop: what a runtime does in code about an untuned model's first errors
(second lab, Part C).

Lecture: Part II, "In-context learning vs trajectory tuning" (an untuned model's first
errors are invalid actions, repeated actions and refusals; a harness answers them with a
validator for tool calls, a repetition check, a step cap), "The execution loop"; Part IV,
"What the context contains" (the history may be compacted, provided that a tool call and its
result stay together).

The four functions are the course's reference versions of what the lab asks students to write:

- ``format_error(text, tools)``: is a text reply really an unparsed tool call?  Returns the error
  observation for the model, or ``None`` for a genuine answer;
- ``repeat_count(history)``: how often in a row the newest requested call set was requested;
- ``run_agent_hardened(...)``: the loop with both checks and a step cap, returning a ``RunResult``;
  with a thinking model it keeps the thinking out of the answer and re-sends it by the rule of
  Qwen's templates (second lab, C.6; lecture Part II, "Native reasoning models");
- ``compact_history(history, budget, count_tokens)``: a history that fits a token budget and
  never separates a call from its result.
"""
from __future__ import annotations

import json
import re

from .messages import AssistantMessage, RunResult, SystemMessage, ToolResultMessage, UserMessage
from .reference import reference_implementation
from .replies import original, split_reasoning
from .traces import SYSTEM_PROMPT

FORMAT_ERROR_PREFIX = "FORMAT ERROR: "
REPEAT_ERROR_PREFIX = "ERROR: repeated call: "
DROPPED_NOTE = "[{n} earlier messages were removed to fit the context]"

_NAME = re.compile(r'["\']name["\']\s*:\s*["\']([^"\'\\]*)["\']')
_FENCE = re.compile(r"^```[a-zA-Z]*\s*\n?(.*?)\n?```$", re.S)


def _tool_names(tools) -> list:
    return [t["function"]["name"] for t in tools]


# reference implementation
@reference_implementation
def format_error(text, tools):
    """``None`` when ``text`` (a reply without tool calls) is a genuine answer; otherwise the
    error observation that tells the model what was wrong with its unparsed tool call.

    Three forms count as a tool call written as text: a Qwen ``<tool_call>`` block (closed or
    not), a Mistral ``[TOOL_CALLS]`` block, and a reply that is a bare JSON object (possibly in a
    Markdown code fence) naming one of the advertised tools.  The message starts with
    ``FORMAT ERROR: ``, names the form, says whether the JSON inside parses and names the tool.
    """
    stripped = text.strip()
    if "<tool_call>" in stripped:
        form = "a <tool_call> block"
        payload = stripped.split("<tool_call>", 1)[1].split("</tool_call>", 1)[0].strip()
    elif "[TOOL_CALLS]" in stripped:
        form = "a [TOOL_CALLS] block"
        payload = stripped.split("[TOOL_CALLS]", 1)[1].split("</s>", 1)[0].strip()
    else:
        fenced = _FENCE.match(stripped)
        body = fenced.group(1).strip() if fenced else stripped
        names = _NAME.findall(body)
        if not body.startswith("{") or not any(n in _tool_names(tools) for n in names):
            return None
        form = "a bare JSON object"  # the message must say "bare JSON"
        payload = body
    try:
        json.loads(payload)
        verdict = "Its JSON parses, but a call written as text is not run."
    except ValueError as e:
        verdict = f"It is invalid JSON ({e})."
    named = _NAME.findall(payload)
    tool = f" of {named[0]!r}" if named else ""
    return (f"{FORMAT_ERROR_PREFIX}your reply wrote a tool call{tool} as text ({form}), so no "
            f"tool was run. {verdict} To use a tool, make a real tool call with JSON arguments; "
            "to answer, reply in plain text.")


def _signature(message):
    """The calls of an assistant turn as a sorted tuple of (name, canonical arguments)."""
    out = []
    for call in message.tool_calls:
        try:
            args = json.dumps(json.loads(call.arguments), sort_keys=True)
        except ValueError:
            args = call.arguments
        out.append((call.name, args))
    return tuple(sorted(out))


# reference implementation
@reference_implementation
def repeat_count(history) -> int:
    """How many assistant turns in a row, counting back from the newest one and not past the
    newest user message, requested the same calls (names and arguments, as parsed JSON) as the
    newest assistant turn.  0 when the newest assistant turn requested no call."""
    turns = []
    for m in reversed(history):
        if isinstance(m, UserMessage):
            break
        if isinstance(m, AssistantMessage):
            turns.append(m)
    if not turns or not turns[0].tool_calls:
        return 0
    newest = _signature(turns[0])
    count = 0
    for m in turns:
        if _signature(m) != newest:
            break
        count += 1
    return count


# reference implementation
@reference_implementation
def run_agent_hardened(user_input, llm, tools, execute, *, history=None, max_steps=8,
                       max_format_errors=3, max_repeats=3, system_prompt=None):
    """The Prompt-ToolLoop with a harness: format errors are fed back, repeated calls are caught,
    and the run says how it ended (a ``RunResult``).  ``execute(call)`` runs one call and returns
    its ``ToolResultMessage``.

    Thinking models: a thinking span left in a reply's text is split off into ``reasoning``
    (``lreact.replies.split_reasoning``), so the format check and the answer see the rest only;
    each call sends the history with the thinking of the turns before the newest user message
    left out, the rule of Qwen3's and Qwen3.5's templates (the history keeps all of it)."""

    if history is None:
        history = [SystemMessage(system_prompt or SYSTEM_PROMPT)]
    history.append(UserMessage(user_input))
    format_errors = 0
    for step in range(1, max_steps + 1):
        newest_user = max(i for i, m in enumerate(history) if isinstance(m, UserMessage))
        sent = [AssistantMessage(m.text, m.tool_calls)
                if isinstance(m, AssistantMessage) and i < newest_user else m
                for i, m in enumerate(history)]
        response = llm(sent, tools)
        reasoning, answer = original(split_reasoning)(response.text)
        if answer != response.text:
            response = AssistantMessage(answer, response.tool_calls, reasoning)
        history.append(response)
        if not response.tool_calls:
            problem = format_error(response.text, tools)
            if problem is None:
                return RunResult(response.text, "answered", step)
            format_errors += 1
            if format_errors >= max_format_errors:
                return RunResult(None, "format_errors", step)
            history.append(UserMessage(problem))
            continue
        format_errors = 0
        repeats = repeat_count(history)
        if repeats >= max_repeats:
            for call in response.tool_calls:
                history.append(ToolResultMessage(call.id, (
                    f"{REPEAT_ERROR_PREFIX}{call.name} with arguments {call.arguments} was "
                    f"requested {repeats} times in a row; its result will not change. Use the "
                    "results you have, or try something different.")))
            if repeats > max_repeats:
                return RunResult(None, "repetition", step)
            continue
        for call in response.tool_calls:
            history.append(execute(call))
    return RunResult(None, "step_budget", max_steps)


def _units(messages):
    """Split messages into indivisible units: an assistant turn with the results that follow
    it, or any other single message."""
    units = []
    for m in messages:
        if isinstance(m, ToolResultMessage) and units and (
                isinstance(units[-1][0], AssistantMessage) and units[-1][0].tool_calls):
            units[-1].append(m)
        else:
            units.append([m])
    return units


# reference implementation
@reference_implementation
def compact_history(history, budget, count_tokens):
    """A new history whose messages' ``count_tokens`` sum to at most ``budget``.

    Unchanged (a copy) when it fits.  Otherwise: the system prompt (a leading SystemMessage) is
    kept, then one note ``UserMessage(DROPPED_NOTE.format(n=...))`` saying how many messages
    were removed, then the longest run of the newest units that fits, where an assistant turn
    and the results of its calls form one unit that is kept or dropped whole.  Raises
    ValueError when not even the system prompt, the note and the newest unit fit."""
    history = list(history)
    if sum(count_tokens(m) for m in history) <= budget:
        return history
    head = history[:1] if history and isinstance(history[0], SystemMessage) else []
    units = _units(history[len(head):])
    kept = []
    for i in range(len(units) - 1, -1, -1):
        dropped = sum(len(u) for u in units[:i])
        note = [UserMessage(DROPPED_NOTE.format(n=dropped))] if dropped else []
        candidate = head + note + [m for u in units[i:] for m in u]
        if sum(count_tokens(m) for m in candidate) > budget:
            break
        kept = candidate
    if not kept:
        raise ValueError(f"a budget of {budget} tokens cannot hold the system prompt, the note "
                         "and the newest turn")
    return kept
