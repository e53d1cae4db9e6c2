"""lreact.harness: the reference versions of the second lab's Part C (format errors, the
repetition check, the hardened loop, compaction that keeps pairs).  Compaction is tested on
random histories with hypothesis."""
import json
import pathlib

import pytest
from hypothesis import given, settings, strategies as st

from lreact import (AssistantMessage, RunResult, ScriptedLLM, SystemMessage, ToolCall,
                    ToolResultMessage, UserMessage)
from lreact.harness import (DROPPED_NOTE, compact_history, format_error, repeat_count,
                            run_agent_hardened)
from lreact.labchecks import assert_paired, plain
from lreact.tools import REGISTRY, TOOLS
from lreact.traces import run_tool

REPLIES = json.loads((pathlib.Path(__file__).parent / "fixtures" / "small_model_replies.json")
                     .read_text(encoding="utf-8"))["replies"]


def execute(call):
    return run_tool(call, REGISTRY)


# -- format errors ----------------------------------------------------------------------------

@pytest.mark.parametrize("reply", REPLIES, ids=[r["label"] for r in REPLIES])
def test_format_error_on_small_model_replies(reply):
    got = format_error(reply["text"], TOOLS)
    if reply["form"] is None:
        assert got is None
        return
    assert got.startswith("FORMAT ERROR: ")
    assert reply["form"] in got
    assert ("invalid JSON" in got) == (not reply["json_valid"])
    assert repr(reply["tool"]) in got


def test_the_captured_reply_is_among_the_fixtures():
    assert REPLIES[0]["text"] == ('<tool_call>\n{"name": "get_weather", "arguments": '
                                  '{"city": Berlin}}\n</tool_call>')
    assert "captured" in REPLIES[0]["source"]


def test_bare_json_must_name_an_advertised_tool():
    text = '{"name": "get_weather", "arguments": {"city": "Paris"}}'
    assert format_error(text, TOOLS) is not None
    assert format_error(text, [TOOLS[1]]) is None   # only calculate is advertised


# -- repetition -------------------------------------------------------------------------------

def turn(*calls, text=""):
    return AssistantMessage(text, [ToolCall(f"c{i}", n, a) for i, (n, a) in enumerate(calls)])


def test_repeat_count():
    w = ("get_weather", '{"city": "Berlin"}')
    w2 = ("get_weather", '{ "city":"Berlin" }')       # the same arguments, other spacing
    p = ("get_weather", '{"city": "Paris"}')
    h = [SystemMessage("s"), UserMessage("u")]
    assert repeat_count(h) == 0
    assert repeat_count(h + [turn(w)]) == 1
    assert repeat_count(h + [turn(w), ToolResultMessage("c0", "r"), turn(w2)]) == 2
    assert repeat_count(h + [turn(w), turn(p), turn(w)]) == 1
    assert repeat_count(h + [turn(w), UserMessage("again"), turn(w)]) == 1
    assert repeat_count(h + [turn(w), turn(w), AssistantMessage("done")]) == 0
    assert repeat_count(h + [turn(w, p), turn(p, w)]) == 2            # the same set of calls
    assert repeat_count(h + [turn(w, p), turn(w)]) == 1


# -- the hardened loop ------------------------------------------------------------------------

CALL = ToolCall("b1", "get_weather", '{"city": "Berlin"}')


def test_run_answers_after_a_format_error():
    llm = ScriptedLLM([AssistantMessage(REPLIES[0]["text"]), AssistantMessage(tool_calls=[CALL]),
                       AssistantMessage("12°C and rainy.")])
    history = [SystemMessage("s")]
    result = run_agent_hardened("Berlin?", llm, TOOLS, execute, history=history)
    assert result == RunResult("12°C and rainy.", "answered", 3)
    assert [m[0] for m in plain(history)] == ["system", "user", "assistant", "user", "assistant",
                                              "tool", "assistant"]
    assert history[3].content.startswith("FORMAT ERROR: ")
    assert_paired(history)


def test_run_stops_after_k_format_errors():
    llm = ScriptedLLM([AssistantMessage(REPLIES[5]["text"])] * 3)
    history = [SystemMessage("s")]
    assert run_agent_hardened("x", llm, TOOLS, execute, history=history,
                              max_format_errors=3) == RunResult(None, "format_errors", 3)
    assert [type(m).__name__ for m in history[-2:]] == ["UserMessage", "AssistantMessage"]


def test_run_catches_repetition_then_stops():
    llm = ScriptedLLM([AssistantMessage(tool_calls=[ToolCall(f"r{i}", "get_weather",
                                                             '{"city": "Berlin"}')])
                       for i in range(4)])
    history = [SystemMessage("s")]
    result = run_agent_hardened("x", llm, TOOLS, execute, history=history, max_repeats=3)
    assert result == RunResult(None, "repetition", 4)
    results = [m.content for m in history if isinstance(m, ToolResultMessage)]
    assert results[:2] == ["12°C, rainy"] * 2
    assert all(r.startswith("ERROR: repeated call: ") for r in results[2:]) and len(results) == 4
    assert_paired(history)


def test_run_step_budget():
    llm = ScriptedLLM([AssistantMessage(tool_calls=[ToolCall(f"s{i}", "calculate",
                                                             json.dumps({"expression": f"{i}+1"}))])
                       for i in range(2)])
    assert run_agent_hardened("x", llm, TOOLS, execute, max_steps=2) == \
        RunResult(None, "step_budget", 2)


def test_a_model_that_says_stopped_is_an_answer():
    llm = ScriptedLLM([AssistantMessage("stopped: step budget exhausted")])
    assert run_agent_hardened("x", llm, TOOLS, execute) == \
        RunResult("stopped: step budget exhausted", "answered", 1)


def test_run_result_refuses_nonsense():
    for args in [("x", "stopped", 1), (None, "answered", 1), ("x", "repetition", 1),
                 (None, "answered", -1)]:
        with pytest.raises((ValueError, TypeError)):
            RunResult(*args)


# -- compaction (property-based) --------------------------------------------------------------

@st.composite
def histories(draw):
    """A valid history: an optional system prompt, then turns of a user message, assistant
    turns with 0-3 calls each followed by their results, and a final text turn (maybe)."""
    n = iter(range(10 ** 6))
    words = st.text(alphabet="abcdefgh ", min_size=0, max_size=30)
    h = [SystemMessage(draw(words))] if draw(st.booleans()) else []
    for _ in range(draw(st.integers(0, 5))):
        h.append(UserMessage(draw(words)))
        for _ in range(draw(st.integers(0, 3))):
            calls = [ToolCall(f"id{next(n)}", "get_weather", json.dumps({"city": draw(words)}))
                     for _ in range(draw(st.integers(1, 3)))]
            h.append(AssistantMessage(draw(words), calls))
            h += [ToolResultMessage(c.id, draw(words)) for c in calls]
        if draw(st.booleans()):
            h.append(AssistantMessage(draw(words)))
    return h


def tokens(m):
    text = getattr(m, "content", None)
    if text is None:
        text = m.text + "".join(c.name + c.arguments for c in m.tool_calls)
    return 1 + len(text) // 4


@settings(max_examples=300, deadline=None)
@given(histories(), st.integers(0, 120))
def test_compaction_properties(history, budget):
    before = plain(history)
    try:
        out = compact_history(history, budget, tokens)
    except ValueError:
        # legitimate only if not even the system prompt, the note and the newest unit fit
        head = 1 if history and isinstance(history[0], SystemMessage) else 0
        assert sum(map(tokens, history)) > budget
        start = len(history)
        while start > head and isinstance(history[start - 1], ToolResultMessage):
            start -= 1
        start = max(head, start - 1) if start > head else start
        dropped = start - head
        note = tokens(UserMessage(DROPPED_NOTE.format(n=dropped))) if dropped else 0
        assert sum(map(tokens, history[:head] + history[start:])) + note > budget
        return
    assert plain(history) == before                       # the input is not changed
    assert sum(map(tokens, out)) <= budget
    assert_paired(out)                                    # never a call without its result
    p = plain(out)
    if sum(map(tokens, history)) <= budget:
        assert p == before
        return
    head = 1 if history and isinstance(history[0], SystemMessage) else 0
    assert p[:head] == before[:head]                      # the system prompt stays first
    note = p[head]
    rest = p[head + 1:]
    assert rest and before[len(before) - len(rest):] == rest   # the newest messages, in order
    dropped = len(before) - head - len(rest)
    assert note == ("user", DROPPED_NOTE.format(n=dropped)) and dropped > 0
    assert p[head + 1][0] != "tool"                       # the kept part starts at a unit


def test_compaction_keeps_units_whole():
    h = [SystemMessage("sys"), UserMessage("q1"),
         AssistantMessage("", [ToolCall("a", "get_weather", "{}"), ToolCall("b", "calculate", "{}")]),
         ToolResultMessage("a", "x" * 40), ToolResultMessage("b", "y" * 40),
         AssistantMessage("answer one"), UserMessage("q2"), AssistantMessage("answer two")]
    assert sum(map(tokens, h)) == 38
    out = compact_history(h, 37, tokens)
    # the call turn and its two results (29 tokens) no longer fit beside the 14-token note
    assert plain(out) == [("system", "sys"), ("user", DROPPED_NOTE.format(n=4)),
                          ("assistant", "answer one", ()), ("user", "q2"),
                          ("assistant", "answer two", ())]
    assert plain(compact_history(h, 38, tokens)) == plain(h)
    assert plain(compact_history(h, 18, tokens)) == [("system", "sys"),
                                                    ("user", DROPPED_NOTE.format(n=6)),
                                                    ("assistant", "answer two", ())]
    with pytest.raises(ValueError):
        compact_history(h, 2, tokens)
