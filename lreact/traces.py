"""Agent runs as message lists, and how much of the context window each model call fills
(Part IV, "A Concrete Trace", "What the context contains", "The context budget").

- ``berlin_trace()``: the lecture's two-turn run ("What's the weather in Berlin?").
- ``multi_tool_trace()``: a longer run with two calls in one turn, an arithmetic call, a failed
  call whose error goes back to the model, and its repair.
- ``model_calls(history)``: what the model received on each call (the whole history so far,
  because the model is stateless).
- ``context_segments(messages, tools)``: the ChatML text of one call cut into labelled pieces
  (system prompt, tool schemas, one piece per message), each with its token count.

The tool results are computed by running ``lreact.tools``; only the model's turns are scripted.

Token counts are an APPROXIMATION: ``approx_tokens(text) = ceil(len(text) / 4)``, the usual rule
of thumb of about four characters per token for English text and JSON.  A real tokenizer (Qwen's
has about 150,000 entries) gives somewhat different numbers; the shape of the growth is the point.
"""
from __future__ import annotations

import json
import math

from .chatml import render_chatml
from .messages import AssistantMessage, SystemMessage, ToolCall, ToolResultMessage, UserMessage
from .reference import near_copy_of
from .tools import REGISTRY, TOOLS, WEATHER_TOOL

SYSTEM_PROMPT = ("You are a helpful assistant. Use the tools when a question needs current data "
                 "or arithmetic, and answer briefly.")
CONTEXT_WINDOW = 4096  # tokens: Ollama's default num_ctx on small machines
CHARS_PER_TOKEN = 4


def approx_tokens(text: str) -> int:
    """About how many tokens ``text`` is: ``ceil(len(text) / 4)`` (an approximation, see above)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


@near_copy_of("execute_tool_call")
def run_tool(call: ToolCall, registry=None) -> ToolResultMessage:
    """Execute one call as the runtime does: parse the arguments, run the function, and turn any
    failure into an ``"ERROR: ..."`` result that carries the call's id (Part III,
    "Error recovery in the loop").  Used here to compute the results of the scripted runs."""
    registry = REGISTRY if registry is None else registry
    try:
        args = json.loads(call.arguments)
        result = registry[call.name](**args)
    except KeyError as e:
        result = "ERROR: " + str(e.args[0] if e.args else e)
    except Exception as e:  # noqa: BLE001 - every failure becomes an observation
        result = f"ERROR: {type(e).__name__}: {e}"
    return ToolResultMessage(call.id, str(result))


def _call(call_id, name, **arguments) -> ToolCall:
    return ToolCall(call_id, name, json.dumps(arguments))


def _value(result: ToolResultMessage) -> str:
    return result.content


def berlin_trace():
    """The lecture's concrete trace: returns ``(history, tools)``.

    turn 1: the model asks for get_weather(city="Berlin"); the runtime answers with the result;
    turn 2: the model answers in text, which ends the run.
    """
    history = [SystemMessage(SYSTEM_PROMPT), UserMessage("What's the weather in Berlin?")]
    ask = AssistantMessage(tool_calls=[_call("call_1", "get_weather", city="Berlin")])
    result = run_tool(ask.tool_calls[0])
    temp, condition = _value(result).split(", ")
    history += [ask, result,
                AssistantMessage(f"It's {temp} and {condition} in Berlin.")]
    return history, [WEATHER_TOOL]


def multi_tool_trace():
    """A longer run with both tools: returns ``(history, tools)``.

    turn 1: two weather calls in one turn (parallel calls, two ids, two results);
    turn 2: an arithmetic call and a weather call for a misspelt city, which fails; the error
            goes back to the model as the result of that call;
    turn 3: the model repairs the call;
    turn 4: the final answer in text.
    """
    history = [SystemMessage(SYSTEM_PROMPT),
               UserMessage("I'm travelling Berlin -> Madrid -> Oslo this week. How many degrees "
                           "warmer is Madrid than Berlin, and how cold is Oslo in Fahrenheit?")]
    turns = [
        [_call("call_1", "get_weather", city="Berlin"),
         _call("call_2", "get_weather", city="Madrid")],
    ]
    t1 = AssistantMessage(tool_calls=turns[0])
    r1 = [run_tool(c) for c in t1.tool_calls]
    berlin_c = int(_value(r1[0]).split("°")[0])
    madrid_c = int(_value(r1[1]).split("°")[0])
    t2 = AssistantMessage(tool_calls=[
        _call("call_3", "calculate", expression=f"{madrid_c} - {berlin_c}"),
        _call("call_4", "get_weather", city="Olso", unit="fahrenheit")])
    r2 = [run_tool(c) for c in t2.tool_calls]
    t3 = AssistantMessage(tool_calls=[_call("call_5", "get_weather", city="Oslo",
                                            unit="fahrenheit")])
    r3 = [run_tool(c) for c in t3.tool_calls]
    final = AssistantMessage(
        f"Madrid ({_value(r1[1])}) is {_value(r2[0])} degrees warmer than Berlin "
        f"({_value(r1[0])}). Oslo is {_value(r3[0])}, so pack a warm coat.")
    history += [t1, *r1, t2, *r2, t3, *r3, final]
    return history, list(TOOLS)


TRACES = {"Berlin trace (1 tool call)": berlin_trace,
          "multi-tool run (5 tool calls)": multi_tool_trace}


def model_calls(history):
    """The message list each model call received: for the assistant message at position i,
    ``history[:i]``.  Every call gets the whole history so far (statelessness)."""
    return [history[:i] for i, m in enumerate(history) if isinstance(m, AssistantMessage)]


def message_label(m) -> str:
    """A one-line description of a message for tables and plots."""
    if isinstance(m, SystemMessage):
        return "system prompt"
    if isinstance(m, UserMessage):
        return "user: " + _short(m.content)
    if isinstance(m, AssistantMessage):
        if m.tool_calls:
            calls = ", ".join(f"{c.name}({_args(c.arguments)}) [{c.id}]" for c in m.tool_calls)
            return "assistant → " + calls
        return "assistant: " + _short(m.text)
    if isinstance(m, ToolResultMessage):
        return f"tool [{m.tool_call_id}]: " + _short(m.content)
    return repr(m)


def _args(arguments: str) -> str:
    try:
        return ", ".join(f"{k}={v!r}" for k, v in json.loads(arguments).items())
    except (ValueError, AttributeError):
        return arguments


def _short(text: str, n: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def context_segments(messages, tools=None):
    """The ChatML text of one call (``render_chatml(messages, tools)``), cut into labelled pieces:
    a list of ``(label, kind, text, tokens)`` with kind in {"system", "tools", "user", "assistant",
    "tool", "open"}.  The pieces concatenate to the full text."""
    messages = list(messages)
    full = render_chatml(messages, tools)
    blocks = ["<|im_start|>" + b for b in full.split("<|im_start|>")[1:]]
    system = [m for m in messages if isinstance(m, SystemMessage)]
    rest = [m for m in messages if not isinstance(m, SystemMessage)]
    out = []
    if system or tools:
        sys_block = blocks.pop(0)
        without_tools = render_chatml(system) if system else ""
        if tools:
            cut = len(without_tools.rstrip("\n").removesuffix("<|im_end|>")) if system else len(
                "<|im_start|>system")
            out.append(("system prompt", "system", sys_block[:cut], approx_tokens(sys_block[:cut])))
            out.append(("tool schemas", "tools", sys_block[cut:], approx_tokens(sys_block[cut:])))
        else:
            out.append(("system prompt", "system", sys_block, approx_tokens(sys_block)))
    for m, block in zip(rest, blocks):
        out.append((message_label(m), m.role, block, approx_tokens(block)))
    for block in blocks[len(rest):]:
        out.append(("open assistant turn", "open", block, approx_tokens(block)))
    assert "".join(seg[2] for seg in out) == full
    return out


def context_tokens(messages, tools=None) -> int:
    """Approximate tokens of the whole text one call sends (sum of its segments)."""
    return sum(seg[3] for seg in context_segments(messages, tools))


def thinking_tokens(history) -> tuple:
    """``(sent, left_out)``: approximate tokens of the thinking spans (``AssistantMessage.reasoning``)
    that the next call re-sends by the rule of Qwen3's and Qwen3.5's templates (the turns after
    the newest user message) and that it leaves out (the older ones).  Lecture Part IV, "The
    context budget"; Part II, "Native reasoning models"."""
    from .messages import AssistantMessage, UserMessage
    users = [i for i, m in enumerate(history) if isinstance(m, UserMessage)]
    newest = users[-1] if users else -1
    sent = left_out = 0
    for i, m in enumerate(history):
        if isinstance(m, AssistantMessage) and m.reasoning:
            if i > newest:
                sent += approx_tokens(m.reasoning)
            else:
                left_out += approx_tokens(m.reasoning)
    return sent, left_out


# --- lab 2's fallbacks (its set-up cell): the course's executor and loop, for the live cells
# when the first lab's functions are not pasted in C.0.  Close to lab 1's answers, so the student
# edition ships this module compiled (``near_copy_of``).

@near_copy_of("validate_tool_call", "execute_tool_call")
def course_execute(call: ToolCall, tools, registry) -> ToolResultMessage:
    """The course's executor: the three checks (lecture Part III, "Validating a call"), then the
    tool; a failure is an ``"ERROR: ..."`` result."""
    import jsonschema
    schemas = {t["function"]["name"]: t["function"].get("parameters", {}) for t in tools}
    try:
        try:
            arguments = json.loads(call.arguments)
        except ValueError as e:
            raise ValueError(f"invalid JSON: {e}") from None
        if call.name not in schemas or call.name not in registry:
            raise ValueError(f"unknown tool: {call.name!r}")
        try:
            jsonschema.validate(arguments, schemas[call.name])
        except jsonschema.ValidationError as e:
            raise ValueError(f"schema violation: {e.message}") from None
        content = str(registry[call.name](**arguments))
    except Exception as e:  # noqa: BLE001 - every failure is an observation
        content = f"ERROR: {e}"
    return ToolResultMessage(call.id, content)


@near_copy_of("run_agent")
def course_loop(question: str, llm, tools, registry, *, history: list, max_steps: int = 8) -> str:
    """The course's Prompt-ToolLoop (lecture Part II, "The execution loop") for lab 2's live
    cells when the first lab's ``run_agent`` is not pasted: the reply's text, or a stop line."""
    history.append(UserMessage(question))
    for _ in range(max_steps):
        response = llm(history, tools)
        history.append(response)
        if not response.tool_calls:
            return response.text
        history.extend(course_execute(call, tools, registry) for call in response.tool_calls)
    return "stopped: step budget exhausted"
