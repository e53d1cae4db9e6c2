"""lreact.mistral: the Mistral tool template, checked against the documented form (the example
rendering of Ollama's ``mistral`` template in its server test data, reproduced below)."""
import json

from lreact import AssistantMessage, SystemMessage, ToolCall, ToolResultMessage, UserMessage
from lreact.chatml import render_chatml
from lreact.mistral import render_mistral, tool_json
from lreact.tools import TOOLS
from lreact.traces import berlin_trace

# Ollama's test data for the mistral template: its tools, its messages, and the expected text.
WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_current_weather", "description": "Get the current weather",
    "parameters": {"type": "object",
                   "properties": {
                       "location": {"type": "string",
                                    "description": "The city and state, e.g. San Francisco, CA"},
                       "format": {"type": "string", "enum": ["celsius", "fahrenheit"],
                                  "description": "The temperature unit to use. Infer this from "
                                                 "the user's location."}},
                   "required": ["location", "format"]}}}
MESSAGES = [
    SystemMessage("You are a knowledgeable assistant. You can answer questions and perform tasks."),
    UserMessage("What's the weather like today in Paris?"),
    AssistantMessage(tool_calls=[ToolCall("89a1e453-0bce-4de3-a456-c54bed09c520",
                                          "get_current_weather",
                                          '{"location": "Paris, France", "format": "celsius"}')]),
    ToolResultMessage("89a1e453-0bce-4de3-a456-c54bed09c520", "22"),
    AssistantMessage("The current temperature in Paris, France is 22 degrees Celsius."),
    UserMessage("What's the weather like today in San Francisco and Toronto?"),
]
EXPECTED = (
    '[INST] What\'s the weather like today in Paris?[/INST][TOOL_CALLS] [{"name": '
    '"get_current_weather", "arguments": {"format":"celsius","location":"Paris, France"}}]</s>'
    '[TOOL_RESULTS] {"content": 22}[/TOOL_RESULTS] The current temperature in Paris, France is 22 '
    'degrees Celsius.</s>[AVAILABLE_TOOLS] [{"type":"function","function":{"name":'
    '"get_current_weather","description":"Get the current weather","parameters":{"type":"object",'
    '"required":["location","format"],"properties":{"format":{"type":"string","description":"The '
    'temperature unit to use. Infer this from the user\'s location.","enum":["celsius",'
    '"fahrenheit"]},"location":{"type":"string","description":"The city and state, e.g. San '
    'Francisco, CA"}}}}}][/AVAILABLE_TOOLS][INST] You are a knowledgeable assistant. You can '
    'answer questions and perform tasks.\n\nWhat\'s the weather like today in San Francisco and '
    'Toronto?[/INST]')


def test_the_documented_example_exactly():
    assert render_mistral(MESSAGES, [WEATHER_TOOL]) == EXPECTED


def test_tool_json_field_order():
    assert list(tool_json(WEATHER_TOOL)["function"]["parameters"]) == ["type", "required",
                                                                      "properties"]
    assert list(tool_json(WEATHER_TOOL)["function"]["parameters"]["properties"]) == [
        "format", "location"]


def test_the_berlin_trace_in_both_templates():
    history, tools = berlin_trace()
    text = render_mistral(history, tools)
    # tools once, before the (only, hence last) user turn; the system text inside that turn
    assert text.count("[AVAILABLE_TOOLS]") == 1 and text.startswith("[AVAILABLE_TOOLS] [")
    assert "[/AVAILABLE_TOOLS][INST] " + history[0].content + "\n\n" in text
    assert '[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city":"Berlin"}}]</s>' in text
    assert '[TOOL_RESULTS] {"content": 12°C, rainy}[/TOOL_RESULTS]' in text
    assert text.endswith(" It's 12°C and rainy in Berlin.</s>")
    # no ids in either template: order is all that pairs a result with its call
    call_id = history[2].tool_calls[0].id
    assert call_id not in text and call_id not in render_chatml(history, tools)
    assert "<|im_start|>" not in text and "[INST]" not in render_chatml(history, tools)


def test_tools_go_before_the_last_user_turn_only():
    history = [SystemMessage("Be brief."), UserMessage("Hi"), AssistantMessage("Hello!"),
               UserMessage("Weather in Oslo?")]
    text = render_mistral(history, TOOLS)
    assert text.startswith("[INST] Hi[/INST] Hello!</s>[AVAILABLE_TOOLS] ")
    assert text.endswith("[INST] Be brief.\n\nWeather in Oslo?[/INST]")
    assert render_mistral(history) == ("[INST] Hi[/INST] Hello!</s>"
                                       "[INST] Be brief.\n\nWeather in Oslo?[/INST]")


def test_html_characters_are_escaped_like_go_and_malformed_arguments_kept():
    tool = {"type": "function", "function": {"name": "f", "description": "a < b & c > d",
                                             "parameters": {"type": "object", "properties": {}}}}
    history = [UserMessage("x"), AssistantMessage(tool_calls=[ToolCall("c", "f", '{"a": 1')])]
    text = render_mistral(history, [tool])
    assert "a \\u003c b \\u0026 c \\u003e d" in text
    assert '"arguments": {"a": 1}]</s>' in text
    json.loads(text.split("[AVAILABLE_TOOLS] ")[1].split("[/AVAILABLE_TOOLS]")[0])
