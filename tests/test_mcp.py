"""The lab's MCP server and the blocking client, against the real `mcp` SDK over stdio.

No mock: each test talks to `python -m lreact.actions.mcp_server` started as a subprocess by
`lreact.actions.mcp_client.MCPConnection` (Part III, "Standardising tools: MCP").
"""
import json
import sys
import textwrap

import pytest

from lreact.actions.mcp_client import (MCPClientError, MCPConnection, MCPTimeout, ScriptedMCPConnection,
                               format_message)
from lreact.tools import WEATHER


@pytest.fixture(scope="module")
def conn():
    with MCPConnection(timeout=20) as c:
        yield c


def texts(result):
    return [block.text for block in result.content if block.type == "text"]


def test_discovery_lists_both_tools_with_schemas_from_the_signatures(conn):
    listing = conn.list_tools()
    by_name = {t.name: t for t in listing.tools}
    assert [t.name for t in listing.tools] == ["get_weather", "arithmetic"]
    weather = by_name["get_weather"].input_schema
    assert weather["type"] == "object" and weather["required"] == ["city"]
    assert weather["properties"]["unit"]["enum"] == ["celsius", "fahrenheit"]
    assert "weather" in by_name["get_weather"].description.lower()
    arith = by_name["arithmetic"].input_schema
    assert sorted(arith["required"]) == ["a", "b", "operation"]
    assert arith["properties"]["a"]["type"] == "number"


def test_call_tool_returns_text_content(conn):
    result = conn.call_tool("get_weather", {"city": "Berlin"})
    row = WEATHER["Berlin"]
    assert result.is_error is False
    assert texts(result) == [f"{row['temp_c']}°C, {row['condition']}"]
    assert texts(conn.call_tool("get_weather", {"city": " oslo ", "unit": "fahrenheit"})) == \
        [f"{round(WEATHER['Oslo']['temp_c'] * 9 / 5 + 32)}°F, {WEATHER['Oslo']['condition']}"]
    assert texts(conn.call_tool("arithmetic", {"operation": "multiply", "a": 42, "b": 3})) == ["126"]
    assert texts(conn.call_tool("arithmetic", {"operation": "divide", "a": 7, "b": 2})) == ["3.5"]


@pytest.mark.parametrize("name, arguments, words", [
    ("get_weather", {"city": "Atlantis"}, ["unknown city", "Atlantis"]),
    ("arithmetic", {"operation": "divide", "a": 1, "b": 0}, ["division by zero"]),
    ("get_weather", {"town": "Berlin"}, ["city"]),        # the server validates too
    ("send_email", {"to": "x"}, ["Unknown tool", "send_email"]),
])
def test_a_failing_tool_is_an_error_result_not_an_exception(conn, name, arguments, words):
    result = conn.call_tool(name, arguments)
    assert result.is_error is True
    text = " ".join(texts(result))
    for word in words:
        assert word in text


def test_resource_and_prompt_primitives(conn):
    uris = [str(r.uri) for r in conn.list_resources().resources]
    assert uris == ["weather://cities"]
    contents = conn.read_resource("weather://cities").contents
    assert contents[0].text.splitlines() == sorted(WEATHER)
    assert [p.name for p in conn.list_prompts().prompts] == ["weather_report"]
    prompt = conn.get_prompt("weather_report", {"city": "Oslo"})
    assert prompt.messages[0].role == "user" and "Oslo" in prompt.messages[0].content.text


def test_the_json_rpc_traffic_is_recorded_in_order():
    with MCPConnection(timeout=20) as c:
        c.list_tools()
        c.call_tool("get_weather", {"city": "Paris"})
        log = list(c.messages)
    sent = [m.get("method") for d, m in log if d == "->"]
    assert sent == ["initialize", "notifications/initialized", "tools/list", "tools/call"]
    requests = {m["id"]: m for d, m in log if d == "->" and "id" in m}
    answers = {m["id"]: m for d, m in log if d == "<-" and "id" in m}
    assert set(requests) == set(answers)        # every request answered, paired by id
    call_id = next(i for i, m in requests.items() if m["method"] == "tools/call")
    assert requests[call_id]["params"] == {"name": "get_weather", "arguments": {"city": "Paris"}}
    assert answers[call_id]["result"]["isError"] is False       # the wire is camelCase
    assert answers[call_id]["result"]["content"][0]["text"].endswith("cloudy")
    init_id = next(i for i, m in requests.items() if m["method"] == "initialize")
    assert answers[init_id]["result"]["serverInfo"]["name"] == "lreact-weather"
    assert "tools" in answers[init_id]["result"]["capabilities"]
    line = format_message("->", requests[call_id])
    assert line.startswith("-> tools/call #") and "Paris" in line
    json.dumps(log)   # plain JSON all the way


def test_a_server_that_never_answers_times_out(tmp_path):
    silent = tmp_path / "silent.py"
    silent.write_text("import sys, time\nsys.stdin.readline()\ntime.sleep(120)\n")
    with pytest.raises(MCPTimeout, match="initialize"):
        MCPConnection([sys.executable, str(silent)], timeout=1, start_timeout=2)


def test_a_slow_tool_times_out_and_the_connection_says_so(tmp_path):
    server = tmp_path / "slow_server.py"
    server.write_text(textwrap.dedent("""
        import time
        from mcp.server.mcpserver import MCPServer
        mcp = MCPServer("slow", log_level="WARNING")

        @mcp.tool()
        def slow(seconds: float) -> str:
            \"\"\"Sleeps.\"\"\"
            time.sleep(seconds)
            return "done"

        mcp.run()
    """))
    with MCPConnection([sys.executable, str(server)], timeout=1) as c:
        assert texts(c.call_tool("slow", {"seconds": 0})) == ["done"]
        with pytest.raises(MCPTimeout, match="tools/call slow"):
            c.call_tool("slow", {"seconds": 30})
        assert [t.name for t in c.list_tools().tools] == ["slow"]   # the connection lives on


def test_a_server_that_crashes_at_start_is_reported_with_its_stderr(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("import sys\nprint('no such module: widgets', file=sys.stderr)\nsys.exit(2)\n")
    with pytest.raises(MCPClientError, match="no such module"):
        MCPConnection([sys.executable, str(broken)], timeout=2, start_timeout=10)


def test_closed_connection_refuses_requests():
    c = MCPConnection(timeout=20)
    c.close()
    c.close()     # idempotent
    with pytest.raises(MCPClientError, match="closed"):
        c.list_tools()


def test_bad_arguments_are_refused_before_sending(conn):
    with pytest.raises(TypeError, match="dict"):
        conn.call_tool("get_weather", '{"city": "Berlin"}')
    with pytest.raises(ValueError, match="timeout"):
        MCPConnection(timeout=0)


def test_the_scripted_connection_has_the_real_shapes(conn):
    real = conn.list_tools()
    fake = ScriptedMCPConnection(
        [{"name": t.name, "description": t.description, "input_schema": t.input_schema}
         for t in real.tools],
        {"get_weather": lambda city, unit="celsius": WEATHER[city]["condition"]})
    assert [(t.name, t.input_schema) for t in fake.list_tools().tools] == \
        [(t.name, t.input_schema) for t in real.tools]
    ok = fake.call_tool("get_weather", {"city": "Rome"})
    assert ok.is_error is False and ok.content[0].type == "text" and ok.content[0].text == "sunny"
    bad_real = conn.call_tool("get_weather", {"city": "Atlantis"})
    bad_fake = fake.call_tool("get_weather", {"city": "Atlantis"})
    assert bad_fake.is_error and texts(bad_fake)[0].startswith("Error executing tool get_weather: ")
    assert texts(bad_real)[0].startswith("Error executing tool get_weather: ")
    unknown = fake.call_tool("send_email", {})
    assert unknown.is_error and texts(unknown) == ["Unknown tool: send_email"]
    assert fake.calls == [("get_weather", {"city": "Rome"}), ("get_weather", {"city": "Atlantis"}),
                          ("send_email", {})]
    failing = ScriptedMCPConnection([], failures={"x": MCPTimeout("tools/call x: no answer")})
    with pytest.raises(MCPTimeout):
        failing.call_tool("x", {})
