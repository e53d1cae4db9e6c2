"""lreact.messages: the lecture's message types (Part IV) and Ollama's /api/chat wire format."""
import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lreact import (AssistantMessage, SystemMessage, ToolCall, ToolCallError, ToolResultMessage,
                    UserMessage, message_from_wire, messages_to_wire)
from lreact.messages import arguments_as_object, new_call_id

CALL = ToolCall("call_ab12cd34", "get_weather", '{"city": "Berlin"}')
BERLIN = [
    SystemMessage("You are a helpful assistant."),
    UserMessage("What's the weather in Berlin?"),
    AssistantMessage(tool_calls=[CALL]),
    ToolResultMessage("call_ab12cd34", "12°C, rainy"),
    AssistantMessage("It's 12°C and rainy in Berlin."),
]
BERLIN_WIRE = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "What's the weather in Berlin?"},
    {"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_ab12cd34", "function": {"name": "get_weather", "arguments": {"city": "Berlin"}}}]},
    {"role": "tool", "content": "12°C, rainy", "tool_call_id": "call_ab12cd34",
     "tool_name": "get_weather"},
    {"role": "assistant", "content": "It's 12°C and rainy in Berlin."},
]


# -- the types --------------------------------------------------------------------------------

def test_roles():
    assert [m.role for m in BERLIN] == ["system", "user", "assistant", "tool", "assistant"]


def test_assistant_defaults_are_not_shared():
    a, b = AssistantMessage(), AssistantMessage()
    assert (a.text, a.tool_calls) == ("", [])
    a.tool_calls.append(CALL)
    assert b.tool_calls == []


def test_assistant_copies_the_list_it_is_given():
    calls = [CALL]
    message = AssistantMessage(tool_calls=calls)
    calls.append(CALL)
    assert len(message.tool_calls) == 1
    assert AssistantMessage(tool_calls=(CALL,)).tool_calls == [CALL]


def test_tool_call_arguments_must_be_a_json_string():
    with pytest.raises(TypeError, match=r"json\.dumps"):
        ToolCall("call_1", "get_weather", {"city": "Berlin"})
    with pytest.raises(TypeError):
        ToolCall("call_1", "get_weather", None)
    # a malformed string is allowed: the model may produce one, the runtime validates it
    assert ToolCall("call_1", "get_weather", '{"city": ').arguments == '{"city": '


@pytest.mark.parametrize("build", [
    lambda: SystemMessage(None),
    lambda: UserMessage(3),
    lambda: AssistantMessage(text=None),
    lambda: AssistantMessage(tool_calls=[{"name": "get_weather"}]),
    lambda: ToolResultMessage(1, "x"),
    lambda: ToolResultMessage("call_1", {"temp": 12}),
    lambda: ToolCall(1, "get_weather", "{}"),
])
def test_wrong_field_types_are_refused(build):
    with pytest.raises(TypeError):
        build()


def test_tool_call_error_is_a_value_error():
    assert issubclass(ToolCallError, ValueError)


def test_new_call_ids_look_like_the_servers_and_differ():
    ids = [new_call_id() for _ in range(1000)]
    assert all(re.fullmatch(r"call_[0-9a-f]{8}", i) for i in ids)
    assert len(set(ids)) == 1000


# -- to the wire ------------------------------------------------------------------------------

def test_berlin_history_to_wire():
    assert messages_to_wire(BERLIN) == BERLIN_WIRE
    json.dumps(messages_to_wire(BERLIN))  # plain JSON


def test_tool_name_is_looked_up_for_parallel_calls():
    history = [AssistantMessage(tool_calls=[
        ToolCall("call_1", "get_weather", '{"city": "Berlin"}'),
        ToolCall("call_2", "calculate", '{"expression": "1+1"}')]),
        ToolResultMessage("call_2", "2"), ToolResultMessage("call_1", "12°C, rainy")]
    wire = messages_to_wire(history)
    assert [(w["tool_call_id"], w["tool_name"]) for w in wire[1:]] == \
        [("call_2", "calculate"), ("call_1", "get_weather")]
    assert [c["id"] for c in wire[0]["tool_calls"]] == ["call_1", "call_2"]


def test_orphan_result_has_no_tool_name():
    (w,) = messages_to_wire([ToolResultMessage("call_nobody", "x")])
    assert w == {"role": "tool", "content": "x", "tool_call_id": "call_nobody"}


def test_assistant_with_text_and_calls_keeps_both():
    (w,) = messages_to_wire([AssistantMessage("Let me check.", [CALL])])
    assert w["content"] == "Let me check." and len(w["tool_calls"]) == 1


@pytest.mark.parametrize("arguments", ['{"city": ', "[1, 2]", '"Berlin"', "", "null"])
def test_arguments_that_are_not_an_object_are_kept_whole(arguments):
    assert arguments_as_object(arguments) == {"__raw_arguments__": arguments}
    (w,) = messages_to_wire([AssistantMessage(tool_calls=[ToolCall("c", "get_weather", arguments)])])
    assert w["tool_calls"][0]["function"]["arguments"] == {"__raw_arguments__": arguments}


def test_to_wire_refuses_dicts_and_names_the_index():
    with pytest.raises(TypeError, match="message 1 is a dict"):
        messages_to_wire([UserMessage("hi"), {"role": "user", "content": "hi"}])


def test_to_wire_does_not_change_the_history():
    before = [AssistantMessage(tool_calls=[ToolCall("c", "get_weather", '{"city":"Berlin"}')])]
    messages_to_wire(before)
    assert before[0].tool_calls[0].arguments == '{"city":"Berlin"}'


# -- from the wire ----------------------------------------------------------------------------

def test_berlin_history_from_wire():
    assert [message_from_wire(w) for w in BERLIN_WIRE] == BERLIN


def test_arguments_object_becomes_a_json_string():
    call = message_from_wire({"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_9", "function": {"index": 0, "name": "get_weather",
                                      "arguments": {"city": "München", "unit": "celsius"}}}]}).tool_calls[0]
    assert isinstance(call.arguments, str)
    assert json.loads(call.arguments) == {"city": "München", "unit": "celsius"}
    assert "München" in call.arguments  # not \\u-escaped


def test_arguments_string_from_the_openai_endpoint_is_kept_verbatim():
    raw = '{"city":"Berlin"}'
    call = message_from_wire({"role": "assistant", "tool_calls": [
        {"id": "call_9", "type": "function", "function": {"name": "get_weather", "arguments": raw}}]}
    ).tool_calls[0]
    assert call.arguments == raw


def test_ids_are_kept_or_assigned():
    counter = iter(range(100))
    new_id = lambda: f"fresh_{next(counter)}"  # noqa: E731
    message = message_from_wire({"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_server", "function": {"name": "a", "arguments": {}}},
        {"function": {"name": "b", "arguments": {}}},
        {"id": "", "function": {"name": "c", "arguments": {}}}]}, new_id=new_id)
    assert [c.id for c in message.tool_calls] == ["call_server", "fresh_0", "fresh_1"]
    assert [c.arguments for c in message.tool_calls] == ["{}", "{}", "{}"]


def test_missing_content_and_calls():
    assert message_from_wire({"role": "assistant", "content": None}) == AssistantMessage()
    assert message_from_wire({"role": "assistant", "tool_calls": None}) == AssistantMessage()
    assert message_from_wire({"role": "user"}) == UserMessage("")


@pytest.mark.parametrize("bad", [{"content": "hi"}, "user: hi", None, {"role": "robot"}])
def test_from_wire_refuses_what_is_not_a_message(bad):
    with pytest.raises(ValueError):
        message_from_wire(bad)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**9, 10**9) | st.text(max_size=8)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8)
arguments_objects = st.dictionaries(st.text(max_size=8), json_values, max_size=4)
texts = st.text(max_size=30)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.text(min_size=1, max_size=12), st.text(min_size=1, max_size=12),
                          arguments_objects), min_size=0, max_size=3),
       texts, texts, texts)
def test_wire_round_trip(calls, system, user, text):
    history = [SystemMessage(system), UserMessage(user),
               AssistantMessage(text, [ToolCall(cid, name, json.dumps(args))
                                       for cid, name, args in calls])]
    history += [ToolResultMessage(cid, f"result {i}") for i, (cid, _, _) in enumerate(calls)]
    wire = messages_to_wire(history)
    back = [message_from_wire(json.loads(json.dumps(w)), new_id=lambda: "never") for w in wire]
    assert [type(m) for m in back] == [type(m) for m in history]
    assert back[:2] == history[:2] and back[3:] == history[3:]
    assert back[2].text == text
    assert [(c.id, c.name) for c in back[2].tool_calls] == [(cid, n) for cid, n, _ in calls]
    assert [json.loads(c.arguments) for c in back[2].tool_calls] == [a for _, _, a in calls]
