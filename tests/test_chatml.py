"""lreact.chatml: the Qwen2.5 ChatML text under Ollama's qwen2.5 template (Part IV).

The expected strings are written out by hand from the template (Ollama library blob
eb4402837c78), not produced by the code under test.
"""
import json

import pytest

from lreact import AssistantMessage, SystemMessage, ToolCall, ToolResultMessage, UserMessage
from lreact.chatml import render_chatml
from lreact.tools import TOOLS

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}
CALC = {"type": "function", "function": {
    "name": "calculate", "description": "Arithmetic.",
    "parameters": {"type": "object", "properties": {"expression": {"type": "string"}},
                   "required": ["expression"]}}}

SYSTEM_WITH_TOOLS = (
    "<|im_start|>system\n"
    "You are a helpful assistant.\n"
    "\n"
    "# Tools\n"
    "\n"
    "You may call one or more functions to assist with the user query.\n"
    "\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n"
    "<tools>\n"
    '{"type": "function", "function": {"name":"get_weather","description":"Weather in a city.",'
    '"parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}\n'
    '{"type": "function", "function": {"name":"calculate","description":"Arithmetic.",'
    '"parameters":{"type":"object","properties":{"expression":{"type":"string"}},'
    '"required":["expression"]}}}\n'
    "</tools>\n"
    "\n"
    "For each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\n"
    "<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n'
    "</tool_call><|im_end|>\n"
)

BERLIN = [
    SystemMessage("You are a helpful assistant."),
    UserMessage("What's the weather in Berlin?"),
    AssistantMessage(tool_calls=[ToolCall("call_ab12cd34", "get_weather", '{"city": "Berlin"}')]),
    ToolResultMessage("call_ab12cd34", "12°C, rainy"),
]


def test_berlin_history_with_tools():
    assert render_chatml(BERLIN, [WEATHER, CALC]) == (
        SYSTEM_WITH_TOOLS
        + "<|im_start|>user\nWhat's the weather in Berlin?<|im_end|>\n"
        "<|im_start|>assistant\n"
        "<tool_call>\n"
        '{"name": "get_weather", "arguments": {"city":"Berlin"}}\n'
        "</tool_call><|im_end|>\n"
        "<|im_start|>user\n"
        "<tool_response>\n"
        "12°C, rainy\n"
        "</tool_response><|im_end|>\n"
        "<|im_start|>assistant\n")


def test_first_call_ends_with_the_open_assistant_turn():
    text = render_chatml(BERLIN[:2], [WEATHER, CALC])
    assert text == (SYSTEM_WITH_TOOLS
                    + "<|im_start|>user\nWhat's the weather in Berlin?<|im_end|>\n"
                    "<|im_start|>assistant\n")


def test_final_answer_turn_is_closed_before_the_next_user_turn():
    history = BERLIN + [AssistantMessage("It's 12°C and rainy in Berlin."),
                        UserMessage("And in Paris?")]
    assert render_chatml(history).endswith(
        "</tool_response><|im_end|>\n"
        "<|im_start|>assistant\nIt's 12°C and rainy in Berlin.<|im_end|>\n"
        "<|im_start|>user\nAnd in Paris?<|im_end|>\n"
        "<|im_start|>assistant\n")


def test_parallel_calls_share_one_block_and_results_follow_in_order():
    history = [
        UserMessage("Berlin or Paris, which is warmer?"),
        AssistantMessage(tool_calls=[
            ToolCall("call_1", "get_weather", '{"city": "Berlin"}'),
            ToolCall("call_2", "get_weather", '{"city": "Paris"}')]),
        ToolResultMessage("call_1", "12°C, rainy"),
        ToolResultMessage("call_2", "15°C, cloudy"),
    ]
    assert render_chatml(history) == (
        "<|im_start|>user\nBerlin or Paris, which is warmer?<|im_end|>\n"
        "<|im_start|>assistant\n"
        "<tool_call>\n"
        '{"name": "get_weather", "arguments": {"city":"Berlin"}}\n'
        '{"name": "get_weather", "arguments": {"city":"Paris"}}\n'
        "</tool_call><|im_end|>\n"
        "<|im_start|>user\n<tool_response>\n12°C, rainy\n</tool_response><|im_end|>\n"
        "<|im_start|>user\n<tool_response>\n15°C, cloudy\n</tool_response><|im_end|>\n"
        "<|im_start|>assistant\n")


def test_no_system_and_no_tools():
    assert render_chatml([UserMessage("Hi")]) == \
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    assert render_chatml([UserMessage("Hi")], tools=[]) == render_chatml([UserMessage("Hi")])


def test_system_without_tools():
    assert render_chatml([SystemMessage("Be brief."), UserMessage("Hi")]) == (
        "<|im_start|>system\nBe brief.<|im_end|>\n"
        "<|im_start|>user\nHi<|im_end|>\n"
        "<|im_start|>assistant\n")


def test_tools_without_system():
    text = render_chatml([UserMessage("Hi")], [WEATHER])
    assert text.startswith("<|im_start|>system\n\n# Tools\n\nYou may call one or more functions")
    assert text.endswith("</tool_call><|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
                         "<|im_start|>assistant\n")


def test_last_assistant_turn_stays_open_for_the_model_to_continue():
    text = render_chatml([UserMessage("Hi"), AssistantMessage("Hello, how")])
    assert text == "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello, how"


def test_ids_and_tool_names_never_reach_the_model():
    text = render_chatml(BERLIN, TOOLS)
    assert "call_ab12cd34" not in text
    assert text.count("get_weather") == 2  # once in <tools>, once in the call


def test_every_tool_is_one_json_object_per_line():
    text = render_chatml([UserMessage("Hi")], TOOLS)
    block = text.split("<tools>\n", 1)[1].split("\n</tools>", 1)[0]
    lines = block.split("\n")
    assert [json.loads(line) for line in lines] == TOOLS


def test_arguments_are_compact_with_sorted_keys_and_malformed_ones_verbatim():
    history = [UserMessage("x"), AssistantMessage(tool_calls=[
        ToolCall("c1", "get_weather", '{"unit": "celsius",  "city": "München"}'),
        ToolCall("c2", "calculate", '{"expression": "2+')])]
    text = render_chatml(history)
    assert '{"name": "get_weather", "arguments": {"city":"München","unit":"celsius"}}\n' in text
    assert '{"name": "calculate", "arguments": {"expression": "2+}\n' in text


def test_assistant_text_wins_over_calls_as_in_the_template():
    history = [UserMessage("x"), AssistantMessage("Let me check.", [
        ToolCall("c1", "get_weather", '{"city": "Berlin"}')]), ToolResultMessage("c1", "12°C")]
    text = render_chatml(history)
    assert "<|im_start|>assistant\nLet me check.<|im_end|>\n" in text
    assert "<tool_call>\n{" not in text


def test_only_lecture_message_types():
    with pytest.raises(TypeError):
        render_chatml([{"role": "user", "content": "hi"}])
