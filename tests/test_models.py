"""lreact.engines.models: the ``llm(messages, tools) -> AssistantMessage`` protocol, ScriptedLLM, and the
one place the default model is pinned (OllamaLLM itself: tests/test_ollama_recorded.py)."""
import json

import pytest

import lreact
from lreact import (DEFAULT_MODEL, AssistantMessage, ScriptedLLM, ScriptExhaustedError,
                    SystemMessage, ToolCall, ToolResultMessage, UserMessage, default_model)
from lreact.tools import TOOLS

CALL = ToolCall("call_1", "get_weather", '{"city": "Berlin"}')
SCRIPT = [AssistantMessage(tool_calls=[CALL]), AssistantMessage("It's 12°C and rainy in Berlin.")]


def berlin():
    return [SystemMessage("Be brief."), UserMessage("What's the weather in Berlin?")]


# -- default model ----------------------------------------------------------------------------

def test_default_model_is_pinned_and_overridable(monkeypatch):
    monkeypatch.delenv("LREACT_MODEL", raising=False)
    assert default_model() == DEFAULT_MODEL == "qwen2.5:7b"
    monkeypatch.setenv("LREACT_MODEL", "qwen2.5:0.5b")
    assert default_model() == "qwen2.5:0.5b"
    monkeypatch.setenv("LREACT_MODEL", "  qwen2.5:1.5b \n")
    assert default_model() == "qwen2.5:1.5b"
    monkeypatch.setenv("LREACT_MODEL", "   ")
    assert default_model() == DEFAULT_MODEL


def test_model_errors_share_one_base():
    assert issubclass(lreact.OllamaError, lreact.ModelError)
    assert issubclass(lreact.EngineError, lreact.ModelError)
    assert issubclass(lreact.ModelError, RuntimeError)


def test_run_result_is_a_record_of_lreact_messages():
    """The grader's channel carries the dataclasses of lreact.messages as plain records."""
    import dataclasses
    from lreact import messages
    assert dataclasses.is_dataclass(messages.RunResult)
    assert messages.RunResult.__module__ == "lreact.messages"
    assert [f.name for f in dataclasses.fields(messages.RunResult)] == ["answer", "status", "steps"]
    assert messages.RUN_STATUSES == ("answered", "step_budget", "format_errors", "repetition")


def test_public_names():
    for name in ["AssistantMessage", "SystemMessage", "ToolCall", "ToolCallError",
                 "ToolResultMessage", "UserMessage", "ScriptedLLM", "OllamaLLM", "OllamaError",
                 "ScriptExhaustedError", "DEFAULT_MODEL", "default_model", "check_setup",
                 "messages_to_wire", "message_from_wire", "ModelError", "EngineError",
                 "OpenAICompatLLM", "configured_llm", "configured_backend", "describe_backend",
                 "RunResult"]:
        assert hasattr(lreact, name) and name in lreact.__all__


# -- ScriptedLLM ------------------------------------------------------------------------------

def test_replays_in_order_and_records_every_call():
    llm = ScriptedLLM(SCRIPT)
    history = berlin()
    first = llm(history, TOOLS)
    assert first.tool_calls[0].id == "call_1" and first.text == ""
    history += [first, ToolResultMessage("call_1", "12°C, rainy")]
    second = llm(history, TOOLS)
    assert second.text == "It's 12°C and rainy in Berlin." and second.tool_calls == []
    assert len(llm.calls) == 2 and llm.remaining == 0
    assert [len(c["messages"]) for c in llm.calls] == [2, 4]  # stateless: the whole history
    assert all(c["tools"] == TOOLS for c in llm.calls)  # tools advertised on every call
    assert llm.calls[1]["messages"][3].tool_call_id == llm.calls[1]["messages"][2].tool_calls[0].id


def test_records_deep_copies_of_messages_and_tools():
    llm = ScriptedLLM(SCRIPT)
    history = berlin()
    tools = json.loads(json.dumps(TOOLS))
    reply = llm(history, tools)
    history.append(reply)
    history[1].content = "changed afterwards"
    tools[0]["function"]["name"] = "renamed"
    reply.tool_calls[0].arguments = '{"city": "Paris"}'
    recorded = llm.calls[0]
    assert len(recorded["messages"]) == 2
    assert recorded["messages"][1].content == "What's the weather in Berlin?"
    assert recorded["tools"][0]["function"]["name"] == "get_weather"
    assert recorded["messages"] is not history


def test_returns_copies_so_the_script_cannot_be_changed():
    llm = ScriptedLLM([AssistantMessage(tool_calls=[CALL])] * 2)
    a = llm(berlin(), TOOLS)
    a.tool_calls[0].id = "tampered"
    a.tool_calls.append(CALL)
    b = llm(berlin(), TOOLS)
    assert b.tool_calls == [CALL] and b is not a
    assert llm.responses[0].tool_calls == [CALL]
    assert CALL.id == "call_1"


def test_the_given_list_is_copied():
    script = list(SCRIPT)
    llm = ScriptedLLM(script)
    script.clear()
    assert llm.remaining == 2
    llm2 = ScriptedLLM(iter(SCRIPT))  # any iterable
    assert llm2.remaining == 2


def test_running_out_is_a_clear_error():
    llm = ScriptedLLM([AssistantMessage("done")])
    llm(berlin(), TOOLS)
    with pytest.raises(ScriptExhaustedError) as e:
        llm(berlin(), TOOLS)
    text = str(e.value)
    assert "1 scripted responses" in text and "called 2 times" in text and "max_steps" in text
    assert isinstance(e.value, RuntimeError)
    assert len(llm.calls) == 2  # the failing call is recorded too: a test can see what was sent


def test_empty_script():
    with pytest.raises(ScriptExhaustedError):
        ScriptedLLM([])(berlin(), TOOLS)


def test_malformed_calls_are_replayed_verbatim():
    bad = AssistantMessage(tool_calls=[ToolCall("call_x", "get_wether", '{"city": "Berlin"'),
                                       ToolCall("call_y", "calculate", "")])
    got = ScriptedLLM([bad])(berlin(), TOOLS)
    assert [(c.id, c.name, c.arguments) for c in got.tool_calls] == \
        [("call_x", "get_wether", '{"city": "Berlin"'), ("call_y", "calculate", "")]


def test_tools_may_be_none_and_messages_a_tuple():
    llm = ScriptedLLM(SCRIPT)
    llm(tuple(berlin()))
    assert llm.calls[0]["tools"] is None and isinstance(llm.calls[0]["messages"], list)


@pytest.mark.parametrize("messages, tools", [
    ([{"role": "user", "content": "hi"}], TOOLS),
    ("What's the weather?", TOOLS),
    (berlin(), TOOLS[0]),
    ([UserMessage("hi"), None], TOOLS),
])
def test_bad_calls_are_refused_with_a_type_error(messages, tools):
    llm = ScriptedLLM(SCRIPT)
    with pytest.raises(TypeError):
        llm(messages, tools)
    assert llm.calls == [] and llm.remaining == 2


@pytest.mark.parametrize("bad", ["It's 12°C.", {"role": "assistant", "content": "x"}, None,
                                 UserMessage("hi")])
def test_script_must_hold_assistant_messages(bad):
    with pytest.raises(TypeError, match=r"responses\[1\]"):
        ScriptedLLM([SCRIPT[0], bad])


def test_repr_counts():
    llm = ScriptedLLM(SCRIPT)
    llm(berlin(), TOOLS)
    assert repr(llm) == "ScriptedLLM(2 responses, 1 calls made)"
