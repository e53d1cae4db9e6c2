"""Part D of the second lab notebook (issue 11): MCP, ReAct in plain text, code as the action.

Its cells are written into solutions/lecture-ReAct-lab2/lecture-ReAct-lab2.ipynb right after
``part-d-intro``, at the end of the notebook.  Run under the notebook lock, then release:

    flock /work/coord/lecture-ReAct-lab2.ipynb.lock .venv/bin/python scripts/lab2_part_d_cells.py
    .venv/bin/python -m autograder release

Only cells whose id starts with ``d-`` are rewritten; every other cell is left as it is.  Cell
ids are ``d-`` + the name (answer cells ``d-<function>``, tests ``d-test_<function>...``); the
nbgrader ``grade_id`` of an answer cell is the function's name, of a test ``test_<name>...``.
"""
from __future__ import annotations

import pathlib

import nbformat

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "solutions" / "lecture-ReAct-lab2" / "lecture-ReAct-lab2.ipynb"

CELLS = []   # (id, kind, source[, nbgrader metadata])
add = lambda *c: CELLS.append(c)  # noqa: E731

MD, CODE = "markdown", "code"


def answer(gid):
    return {"grade": False, "grade_id": gid, "locked": False, "schema_version": 3, "solution": True}


def test(gid, points):
    return {"grade": True, "grade_id": gid, "locked": True, "points": points, "schema_version": 3,
            "solution": False}



add("d-overview", MD, r"""Part C hardened the loop against a real model. Part D keeps the loop and changes what sits
around it, in three ways the lecture describes but the first lab never built:

- **D.1 MCP.** The tools no longer live in your notebook: a separate server process offers them,
  and your runtime *discovers* them over the Model Context Protocol with the official `mcp` SDK.
- **D.2 ReAct in plain text.** No native tool calling: the model writes `Thought:` and `Action:`
  lines, and your runtime parses them and writes the `Observation:` lines, as in the original
  ReAct paper (Yao et al., 2023).
- **D.3 Code as the action.** One tool, `run_python(code)`, whose argument is a program. It runs
  in a separate, locked-down interpreter.

Everything here runs without a language model: graded tests use scripted models, and each live
cell falls back to a scripted run (and says so) when no server is configured. Part D is worth 20
points. Your Part B functions, pasted in cell C.0, are used unchanged: two of the graded tests
(one in D.1, one in D.3) run your `run_agent` over the new tools, and so do the live cells.""")

add("d-setup", CODE, r"""import copy
import functools
import re

import jsonschema

from lreact import textreact
from lreact.codeact import isolation, run_python, weather_prelude
from lreact.mcp_client import MCPClientError, MCPConnection, format_message
from lreact.textreact import EXEMPLAR, STOP

live_d = check_setup(timeout=2)
LIVE_D = live_d.ok
print(live_d)
print("live cells of Part D use", "the configured model" if LIVE_D else "scripted models")""", None)

add("d-mcp-intro", MD, r"""### D.1 Tools from an MCP server

With MCP the runtime does not import the tools; it starts (or connects to) a **server** and asks it
what it offers. The package ships one, `lreact/mcp_server.py`, written with the official SDK. It
offers the three primitives of the lecture: two **tools** (`get_weather` and `arithmetic`), one
**resource** (`weather://cities`, data the application can read) and one **prompt**
(`weather_report`, a template a user would pick from a menu). The next cell starts it as a
subprocess that speaks JSON-RPC over its stdin and stdout (no network), through
`lreact.mcp_client.MCPConnection`, a small blocking wrapper around the SDK's async
`ClientSession` with a timeout on every request. Lecture: Part III, "Standardising tools: MCP
(Model Context Protocol)".

The tool schemas come from the server's Python signatures. Note the field names: the SDK uses
snake_case attributes (`tool.input_schema`), while the JSON on the wire says `inputSchema`.""")

add("d-mcp-connect", CODE, r"""try:
    server = MCPConnection(timeout=10)
except MCPClientError as e:
    server = None
    print("The lab's MCP server did not start:", e)
    print("Check that the `mcp` package is installed (pip install mcp), then rerun this cell.")

if server is not None:
    print("server:", server.initialize_result.server_info.name)
    listing = server.list_tools()
    for tool in listing.tools:
        print(f"tool {tool.name}: {tool.description}")
        print("    input_schema:", json.dumps(tool.input_schema))
    for resource in server.list_resources().resources:
        print(f"resource {resource.uri}:", server.read_resource(str(resource.uri)).contents[0].text.replace("\n", ", "))
    for prompt in server.list_prompts().prompts:
        print(f"prompt {prompt.name}:", server.get_prompt(prompt.name, {"city": "Oslo"}).messages[0].content.text)""", None)

add("d-mcp-wire-intro", MD, r"""**Discovery and transport, on the wire.** `MCPConnection` records every JSON-RPC message it sends
(`->`) and receives (`<-`). The handshake is `initialize` (the client says which protocol version
it speaks; the server answers with its name and capabilities), then the notification
`notifications/initialized`, which has no `id` because nothing answers it. Requests and answers
are paired by their `id`, just as tool results are paired with calls by `tool_call_id`.""")

add("d-mcp-wire", CODE, r"""if server is not None:
    server.call_tool("get_weather", {"city": "Berlin"})
    server.call_tool("get_weather", {"city": "Atlantis"})
    for direction, message in server.messages:
        print(format_message(direction, message))
    print()
    calls = [m for d, m in server.messages if m.get("method") == "tools/call"]
    answers = {m["id"]: m for d, m in server.messages if d == "<-" and "id" in m}
    print("one tools/call exchange in full:")
    print("->", json.dumps(calls[-1], ensure_ascii=False))
    print("<-", json.dumps(answers[calls[-1]["id"]], ensure_ascii=False))""", None)

add("d-schemas-intro", MD, r"""#### From a tool listing to the schemas the model sees

The model never learns that a tool came from MCP: it is given the same function-calling schemas as
in Part B. Write `tool_schemas_from_mcp(listing)`. `listing` is what `connection.list_tools()`
returns: an object whose `.tools` is a list of tools, each with `.name`, `.description` (may be
`None`) and `.input_schema` (a JSON schema dict, may be `None`). Return a list with one schema per
tool, **in the server's order**, in the envelope of `lreact.tools.TOOLS`:

```python
{"type": "function",
 "function": {"name": tool.name, "description": <the description, or "" if None>,
              "parameters": <the input schema, or {"type": "object", "properties": {}} if None>}}
```

Read the attributes with their snake_case names; the tests hand you a stand-in object with the
same attributes as the SDK's result.""")

add("d-tool_schemas_from_mcp", CODE, r'''def tool_schemas_from_mcp(listing):
    """The function-calling schemas of the tools an MCP server lists, in its order
    (lecture: "Standardising tools: MCP (Model Context Protocol)")."""
    ### BEGIN SOLUTION
    schemas = []
    for tool in listing.tools:
        schemas.append({"type": "function",
                        "function": {"name": tool.name,
                                     "description": tool.description or "",
                                     "parameters": tool.input_schema or {"type": "object", "properties": {}}}})
    return schemas
    ### END SOLUTION''', answer("tool_schemas_from_mcp"))

add("test_tool_schemas_from_mcp", CODE, r'''from lreact.actionchecks import SERVER_TOOLS, fake_server, plain_json
from lreact.labchecks import reference
weather = reference("tools", "get_weather")      # a private copy, behind the stand-in server
def envelope(t):            # the schema the task asks for, for one listed tool
    return {"type": "function", "function": {"name": t["name"], "description": t.get("description") or "",
            "parameters": t.get("input_schema") or {"type": "object", "properties": {}}}}
hint = 'reread "Standardising tools: MCP (Model Context Protocol)": MCP changes discovery, not the schema the model gets'
got = plain_json(tool_schemas_from_mcp(fake_server(weather).list_tools()), "tool_schemas_from_mcp(...)", hint)
assert isinstance(got, list) and len(got) == 2, f"expected one schema per listed tool, got {str(got)[:200]}\nHint: {hint}"
assert [s.get("function", {}).get("name") for s in got if isinstance(s, dict)] == ["get_weather", "arithmetic"], \
    "keep the server's tools, in the server's order\nHint: " + hint
for schema, tool in zip(got, SERVER_TOOLS):
    assert schema == envelope(tool), f"the schema of {tool['name']!r} is not in the envelope of lreact.tools.TOOLS:\n{schema}\nHint: {hint}"''',
    test("test_tool_schemas_from_mcp", 1))

add("test_tool_schemas_from_mcp__hidden", CODE, r'''from lreact.actionchecks import fake_server, plain_json
hint = 'reread "Standardising tools: MCP (Model Context Protocol)" and the task: one schema per tool, in order; description "" and an empty object schema when missing'
# The tests below are hidden: they run when the lab is graded.
### BEGIN HIDDEN TESTS
def envelope(t):            # the schema the task asks for, for one listed tool
    return {"type": "function", "function": {"name": t["name"], "description": t.get("description") or "",
            "parameters": t.get("input_schema") or {"type": "object", "properties": {}}}}
listed = [
    {"name": "search_flights", "description": "Find flights between two airports.",
     "input_schema": {"type": "object", "properties": {"origin": {"type": "string"}, "destination": {"type": "string"},
                      "max_stops": {"type": "integer", "minimum": 0}}, "required": ["origin", "destination"]}},
    {"name": "now", "description": None, "input_schema": None},
    {"name": "book", "description": "Book a flight by its id.",
     "input_schema": {"type": "object", "properties": {"flight_id": {"type": "string"}}, "required": ["flight_id"],
                      "additionalProperties": False}},
    {"name": "a_last", "description": "", "input_schema": {"type": "object", "properties": {}}},
]
got = plain_json(tool_schemas_from_mcp(fake_server(None, tools=listed).list_tools()), "tool_schemas_from_mcp(...)", hint)
assert isinstance(got, list) and len(got) == len(listed), f"expected {len(listed)} schemas, got {str(got)[:200]}\nHint: {hint}"
for schema, tool in zip(got, listed):
    assert schema == envelope(tool), f"the schema of {tool['name']!r} is wrong:\n{schema}\nHint: {hint}"
# a server with no tools
assert plain_json(tool_schemas_from_mcp(fake_server(None, tools=[]).list_tools()), hint=hint) == [], \
    "a server without tools gives an empty list\nHint: " + hint
### END HIDDEN TESTS''', test("test_tool_schemas_from_mcp__hidden", 1))

add("d-route-intro", MD, r"""#### Routing a call to the server

Write `call_mcp_tool(call, tools, connection)`: the MCP counterpart of your `execute_tool_call`.

1. **Validate** the call against `tools` (the schemas of the previous step), with the three checks
   of Part B in their order: valid JSON, known tool, arguments that match the schema (your
   `validate_tool_call` does exactly this, and its messages name the failed check:
   `invalid JSON: ...`, `unknown tool: ...`, `schema violation: ...`). An invalid call never
   reaches the server.
2. **Route** it: `result = connection.call_tool(call.name, arguments)`, with the arguments as a
   parsed dict, not the JSON string.
3. **Convert** the result: its `.content` is a list of blocks; join the `.text` of the blocks whose
   `.type` is `"text"` with `"\n"` (skip other kinds, such as images). If `result.is_error` is true,
   the tool failed on the server: the content is `"ERROR: "` followed by that text. A failing tool
   is a *result*, not an exception, in MCP too (lecture: Part III, "Error recovery in the loop").
4. Return `ToolResultMessage(call.id, content)`. Never raise: a failed validation, a timeout or a
   lost connection (an exception from `connection.call_tool`) becomes `"ERROR: <message>"`.

`connection` is anything with a blocking `call_tool(name, arguments)`: the `MCPConnection` above,
or a stand-in in the tests.""")

add("d-call_mcp_tool", CODE, r'''def call_mcp_tool(call, tools, connection):
    """Validate ``call``, route it to the server with ``connection.call_tool`` and return a
    ToolResultMessage with the call's id; an error result or any failure becomes "ERROR: ..."
    (lecture: "Standardising tools: MCP (Model Context Protocol)")."""
    ### BEGIN SOLUTION
    try:
        try:
            arguments = json.loads(call.arguments)
        except (TypeError, ValueError) as e:
            raise ToolCallError(f"invalid JSON: the arguments {call.arguments!r} do not parse ({e})") from None
        schemas = {tool["function"]["name"]: tool["function"].get("parameters", {}) for tool in tools}
        if call.name not in schemas:
            raise ToolCallError(f"unknown tool: {call.name!r} is not one of {sorted(schemas)}")
        try:
            jsonschema.validate(arguments, schemas[call.name])
        except jsonschema.ValidationError as e:
            raise ToolCallError(f"schema violation: arguments of {call.name!r}: {e.message}") from None
        result = connection.call_tool(call.name, arguments)
        text = "\n".join(block.text for block in result.content if block.type == "text")
        content = f"ERROR: {text}" if result.is_error else text
    except Exception as e:  # the model reads every failure as a result
        content = f"ERROR: {e}"
    return ToolResultMessage(call.id, content)
    ### END SOLUTION''', answer("call_mcp_tool"))

add("test_call_mcp_tool", CODE, r'''from lreact import ToolCall
from lreact.actionchecks import fake_server, SERVER_TOOLS
from lreact.labchecks import plain_message, reference
weather = reference("tools", "get_weather")      # a private copy, behind the stand-in server
hint = 'reread "Standardising tools: MCP (Model Context Protocol)" and the four steps of the task'
schemas = [{"type": "function", "function": {"name": t["name"], "description": t["description"], "parameters": t["input_schema"]}}
           for t in SERVER_TOOLS]
server_d = fake_server(weather)
result = call_mcp_tool(ToolCall("call_m1", "get_weather", '{"city": "Berlin"}'), schemas, server_d)
assert plain_message(result, hint) == ("tool", "call_m1", "12°C, rainy"), f"got {result!r}\nHint: {hint}"
assert server_d.calls == [("get_weather", {"city": "Berlin"})], \
    f"the server received {server_d.calls}; send the name and the parsed arguments (a dict)\nHint: {hint}"
# a tool that fails on the server: is_error is set, and the result must say so
result = call_mcp_tool(ToolCall("call_m2", "get_weather", '{"city": "Atlantis"}'), schemas, server_d)
kind, call_id, content = plain_message(result, hint)
assert call_id == "call_m2" and content.startswith("ERROR: ") and "Atlantis" in content, \
    f"an error result (is_error) must become 'ERROR: <its text>', got {content!r}\nHint: {hint}"''',
    test("test_call_mcp_tool", 1))

add("test_call_mcp_tool__hidden", CODE, r'''from lreact import ToolCall
from lreact.actionchecks import fake_server, SERVER_TOOLS
from lreact.labchecks import plain_message, reference
from lreact.mcp_client import MCPTimeout
weather = reference("tools", "get_weather")      # a private copy, behind the stand-in server
hint = 'reread "Standardising tools: MCP (Model Context Protocol)" and the task: validate first, send a dict, join the text blocks, is_error and failures become "ERROR: ..."'
# The tests below are hidden: they run when the lab is graded.
### BEGIN HIDDEN TESTS
schemas = [{"type": "function", "function": {"name": t["name"], "description": t["description"], "parameters": t["input_schema"]}}
           for t in SERVER_TOOLS]

def routed(call, connection, tools=schemas):
    try:
        result = call_mcp_tool(call, tools, connection)
    except Exception as e:
        raise AssertionError(f"call_mcp_tool raised {type(e).__name__}: it must return an error result\nHint: {hint}")
    kind, call_id, content = plain_message(result, hint)
    assert kind == "tool" and call_id == call.id, f"the result must carry the call's id {call.id!r}\nHint: {hint}"
    return content

# invalid calls never reach the server, and the message names the failed check
for call, word in [(ToolCall("c1", "get_weather", '{"city": "Ber'), "json"),
                   (ToolCall("c2", "send_email", '{"to": "x"}'), "unknown tool"),
                   (ToolCall("c3", "get_weather", '{"town": "Berlin"}'), "schema"),
                   (ToolCall("c4", "arithmetic", '{"operation": "power", "a": 2, "b": 3}'), "schema"),
                   (ToolCall("c5", "arithmetic", '{"operation": "add", "a": "2", "b": 3}'), "schema")]:
    server_d = fake_server(weather)
    content = routed(call, server_d)
    assert content.startswith("ERROR: ") and word in content.lower(), \
        f"an invalid call ({word}) must give 'ERROR: ...' naming the check, got {content!r}\nHint: {hint}"
    assert server_d.calls == [], f"an invalid call must not reach the server, but it received {server_d.calls}\nHint: {hint}"
# the tools passed in are the tool set: a tool the server has but the schemas lack is unknown
server_d = fake_server(weather)
assert routed(ToolCall("c6", "arithmetic", '{"operation": "add", "a": 1, "b": 2}'), server_d, schemas[:1]).startswith("ERROR: ") \
    and server_d.calls == [], "validate against the tools you are given\nHint: " + hint
# arguments arrive parsed, numbers as numbers
server_d = fake_server(weather)
assert routed(ToolCall("c7", "arithmetic", '{"operation": "subtract", "a": 24, "b": -3}'), server_d) == "27", "route valid calls\nHint: " + hint
assert server_d.calls == [("arithmetic", {"operation": "subtract", "a": 24, "b": -3})], f"the server received {server_d.calls}\nHint: {hint}"
# an error result from the server
content = routed(ToolCall("c8", "arithmetic", '{"operation": "divide", "a": 1, "b": 0}'), fake_server(weather))
assert content.startswith("ERROR: ") and "division by zero" in content, f"is_error must give 'ERROR: <text>', got {content!r}\nHint: {hint}"
# several blocks: the text blocks joined by newlines, other kinds skipped
server_d = fake_server(weather, handlers={"get_weather": lambda city, unit="celsius": [
    "Paris: 15°C", {"type": "image", "data": "iVBORw0KGgo=", "mime_type": "image/png"}, "cloudy"]})
assert routed(ToolCall("c9", "get_weather", '{"city": "Paris"}'), server_d) == "Paris: 15°C\ncloudy", \
    "join the text of the text blocks with newlines and skip the others\nHint: " + hint
# an empty text result is not an error
server_d = fake_server(weather, handlers={"get_weather": lambda city, unit="celsius": ""})
assert routed(ToolCall("c10", "get_weather", '{"city": "Rome"}'), server_d) == "", "an empty text result is just empty\nHint: " + hint
# the transport fails: a timeout, a lost connection
for failure in (MCPTimeout("tools/call get_weather: no answer from the MCP server within 10 s"),
                ConnectionResetError("the MCP server closed the connection")):
    content = routed(ToolCall("c11", "get_weather", '{"city": "Oslo"}'), fake_server(weather, failures={"get_weather": failure}))
    assert content.startswith("ERROR: ") and str(failure) in content, \
        f"a failing connection must give 'ERROR: <the message>', got {content!r}\nHint: {hint}"
### END HIDDEN TESTS''', test("test_call_mcp_tool__hidden", 2))

add("d-mcp-agent-intro", MD, r"""#### Your loop over discovered tools

`run_agent` needs a registry: a function behind each advertised name. For MCP tools the function
is a thin forwarder: it turns its keyword arguments back into a call and routes it through your
`call_mcp_tool`. Because `execute_tool_call` passes a returned `"ERROR: ..."` text through
unchanged, the model sees the server's errors exactly as `call_mcp_tool` wrote them. Nothing in
`run_agent` changes: the model is stateless, the tools arrive as schemas, and where they run is
the runtime's business.""")

add("d-mcp-registry", CODE, r'''def mcp_registry(schemas, connection):
    """A registry for run_agent: each discovered tool forwards to the MCP server through
    call_mcp_tool (the id is a placeholder: execute_tool_call pairs the result with the real one)."""
    def forwarder(name):
        def tool(**arguments):
            return call_mcp_tool(ToolCall("forwarded", name, json.dumps(arguments)), schemas, connection).content
        return tool
    return {schema["function"]["name"]: forwarder(schema["function"]["name"]) for schema in schemas}''', None)

add("test_tool_schemas_from_mcp__agent", CODE, r'''from lreact import AssistantMessage, ScriptedLLM, SystemMessage, ToolCall
from lreact.actionchecks import fake_server, plain_json, SERVER_TOOLS
from lreact.labchecks import assert_model_calls, assert_paired, plain, reference, text
weather = reference("tools", "get_weather")      # a private copy, behind the stand-in server
hint = ('reread "Standardising tools: MCP (Model Context Protocol)": the model gets the discovered schemas '
        'and writes ordinary tool calls; your run_agent runs unchanged')
server_d = fake_server(weather)
schemas = plain_json(tool_schemas_from_mcp(server_d.list_tools()), "tool_schemas_from_mcp(...)", hint)
assert schemas == [{"type": "function", "function": {"name": t["name"], "description": t["description"], "parameters": t["input_schema"]}}
                   for t in SERVER_TOOLS], "write tool_schemas_from_mcp first\nHint: " + hint

def forward(name):          # this test's own forwarder to the stand-in server
    def tool(**arguments):
        result = server_d.call_tool(name, arguments)
        body = "\n".join(b.text for b in result.content if b.type == "text")
        return "ERROR: " + body if result.is_error else body
    return tool
registry_d = {s["function"]["name"]: forward(s["function"]["name"]) for s in schemas}

llm = ScriptedLLM([
    AssistantMessage(tool_calls=[ToolCall("call_w1", "get_weather", '{"city": "Madrid"}'),
                                 ToolCall("call_w2", "get_weather", '{"city": "Oslo"}')]),
    AssistantMessage(tool_calls=[ToolCall("call_a1", "arithmetic", '{"operation": "subtract", "a": 24, "b": -3}')]),
    AssistantMessage("Madrid is 27 degrees warmer than Oslo.")])
history = [SystemMessage("You are a helpful assistant.")]
answer = run_agent("How much warmer is Madrid than Oslo?", llm, schemas, registry_d, history=history)
assert text(answer, "the answer", hint) == "Madrid is 27 degrees warmer than Oslo.", f"run_agent returned {answer!r}\nHint: {hint}"
assert_model_calls(llm, history, schemas, hint)
assert_paired(history, hint)
results = [m for m in plain(history, hint) if m[0] == "tool"]
assert results == [("tool", "call_w1", "24°C, sunny"), ("tool", "call_w2", "-3°C, snowy"), ("tool", "call_a1", "27")], \
    f"the tool results are {results}\nHint: {hint}"
assert [c[0] for c in server_d.calls] == ["get_weather", "get_weather", "arithmetic"], f"the server received {server_d.calls}\nHint: {hint}"''',
    test("test_tool_schemas_from_mcp__agent", 1))

add("d-mcp-live-intro", MD, r"""**Live.** The same loop on the configured model, with the tools the real server offers. Without a
model server the cell replays a scripted model, whose replies use the server's real answers, and
says so. The last lines show the `tools/call` requests that the run sent over the wire.""")

add("d-mcp-live", CODE, r'''try:
    if server is None:
        raise RuntimeError("no MCP server: run the cell that starts it first")
    schemas_live = tool_schemas_from_mcp(server.list_tools())
    registry_live = mcp_registry(schemas_live, server)
    question = "How many degrees warmer is it in Madrid than in Oslo?"
    if LIVE_D:
        llm = lreact.configured_llm(temperature=0, seed=0)
    else:
        print("[scripted model: no usable model server, replaying a script built from the server's answers]")
        madrid, oslo = (server.call_tool("get_weather", {"city": c}).content[0].text for c in ("Madrid", "Oslo"))
        a, b = (float(t.split("°")[0]) for t in (madrid, oslo))
        difference = server.call_tool("arithmetic", {"operation": "subtract", "a": a, "b": b}).content[0].text
        llm = ScriptedLLM([
            AssistantMessage(tool_calls=[ToolCall("call_w1", "get_weather", '{"city": "Madrid"}'),
                                         ToolCall("call_w2", "get_weather", '{"city": "Oslo"}')]),
            AssistantMessage(tool_calls=[ToolCall("call_a1", "arithmetic", json.dumps({"operation": "subtract", "a": a, "b": b}))]),
            AssistantMessage(f"Madrid ({madrid}) is {difference} degrees warmer than Oslo ({oslo}).")])
    before = len(server.messages)
    history = [SystemMessage("You are a helpful assistant. Use the tools; answer briefly.")]
    answer = run_agent(question, llm, schemas_live, registry_live, history=history)
    for m in history[1:]:
        print(m)
    print("-> returned:", answer)
    print("tools/call requests of this run:")
    for direction, message in server.messages[before:]:
        if message.get("method") == "tools/call":
            print("  ", format_message(direction, message))
except NotImplementedError:
    print("Write tool_schemas_from_mcp and call_mcp_tool (and Part B's run_agent) first.")
except lreact.ModelError as e:
    print("The model server could not answer:", e)
except RuntimeError as e:
    print(e)''', None)

add("d-text-intro", MD, r"""### D.2 ReAct in plain text

Before engines had a `tools` parameter, a ReAct agent was a text-completion model and a parser.
The prompt holds a few-shot **exemplar** (one solved task in the format), the question, and the
trajectory so far; the model continues the text. The format (lecture: Part II, "The core
definition of ReAct" and "In-context learning vs trajectory tuning"):

```
Thought: <reasoning: an action in the space of language, it changes only the context>
Action: <tool>[<argument>]        for example get_weather[Berlin], or finish[<answer>]
Observation: <the tool's result, written by the runtime>
```

Three rules from the paper's reference implementation make this work:

- **The runtime writes the observations.** Generation stops at the stop sequence
  `STOP = "\nObservation:"`, so the model cannot invent a result. A backend may ignore stop
  sequences, and a model may run on anyway, so the runtime also cuts every continuation at the
  first `"\nObservation:"` itself.
- **`finish[answer]` is the only way out.** Unlike the native loop of Part B, which takes a
  text-only turn as the answer ("The execution loop"), a text loop ends only on an explicit
  finish action, or at the step cap.
- **A reply that does not parse is an observation, not a crash:** the runtime answers
  `Invalid action: ...` saying what it expected, and the model tries again.

`lreact.textreact` holds the format: `EXEMPLAR` and `STOP`. Here is the start of a prompt:""")

add("d-text-exemplar", CODE, r"""print(textreact.first_prompt("Is it warmer in Rome or in Tokyo?"))
print("-" * 60)
print("stop sequence:", repr(STOP))""", None)

add("d-parse-intro", MD, r"""#### Parsing one step

Write `parse_react_step(text)`. `text` is one continuation of the model: what it wrote after the
prompt's final `Thought:`. Return a tuple `(thought, action, argument)` of three strings:

1. Cut `text` at the first `STOP` (`"\nObservation:"`); ignore everything from there on.
2. Find the first line that starts with `Action:` (leading spaces allowed). The **thought** is all
   the text before that line, stripped; if it begins with `Thought:`, drop that prefix too (then
   strip again). A reply without thought text gives `""`.
3. The rest of the `Action:` line, stripped, must have the form `name[argument]`: a name (letters,
   digits, `_`, not starting with a digit) followed by the argument in square brackets that close
   the line. `re.fullmatch(r"([A-Za-z_]\w*)\[(.*)\]", body)` does it. The argument is stripped.
   Only the first `Action:` line counts.
4. Raise `ValueError` whose message starts with `"Invalid action"` and says what was expected
   when there is no `Action:` line, when the action is not of the form `name[argument]`, and for
   `finish` with an empty answer (`finish[]`, `finish[  ]`).

Whether the tool exists is not the parser's business: the loop checks that.""")

add("d-parse_react_step", CODE, r'''def parse_react_step(text):
    """One model continuation -> (thought, action, argument); raises ValueError starting with
    "Invalid action" when it does not parse (lecture: "The core definition of ReAct")."""
    ### BEGIN SOLUTION
    text = str(text).split(STOP)[0]
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.strip().startswith("Action:"):
            break
    else:
        raise ValueError("Invalid action: the reply has no 'Action:' line; after the thought write one line "
                         "'Action: tool[argument]', or 'Action: finish[answer]' to answer")
    thought = "\n".join(lines[:i]).strip()
    if thought.startswith("Thought:"):
        thought = thought[len("Thought:"):].strip()
    body = lines[i].strip()[len("Action:"):].strip()
    match = re.fullmatch(r"([A-Za-z_]\w*)\[(.*)\]", body)
    if match is None:
        raise ValueError(f"Invalid action: {body!r} is not of the form tool[argument]; "
                         "write e.g. 'Action: get_weather[Berlin]' or 'Action: finish[your answer]'")
    name, argument = match.group(1), match.group(2).strip()
    if name == "finish" and not argument:
        raise ValueError("Invalid action: finish[] needs the answer inside the brackets, e.g. finish[It is sunny.]")
    return thought, name, argument
    ### END SOLUTION''', answer("parse_react_step"))

add("test_parse_react_step", CODE, r'''from lreact.checks import assert_raises
from lreact.actionchecks import plain_json
hint = 'reread "The core definition of ReAct" and the four rules of the task'
got = plain_json(parse_react_step(" I need the weather in Berlin.\nAction: get_weather[Berlin]"), "parse_react_step(...)", hint)
assert got == ["I need the weather in Berlin.", "get_weather", "Berlin"], f"got {got}\nHint: {hint}"
got = plain_json(parse_react_step(" It is 12°C and rainy.\nAction: finish[It is 12°C and rainy in Berlin.]"), hint=hint)
assert got == ["It is 12°C and rainy.", "finish", "It is 12°C and rainy in Berlin."], f"got {got}\nHint: {hint}"
e = assert_raises(ValueError, parse_react_step, " The weather in Berlin is probably fine.", name="a reply without an Action line", hint=hint)
assert str(e).startswith("Invalid action"), "the message must start with 'Invalid action'\nHint: " + hint''',
    test("test_parse_react_step", 1))

add("test_parse_react_step__hidden", CODE, r'''from lreact.checks import assert_raises
from lreact.actionchecks import plain_json
hint = 'reread "The core definition of ReAct" and the task: cut at the stop sequence, the first Action line, name[argument], finish needs an answer'
# The tests below are hidden: they run when the lab is graded.
### BEGIN HIDDEN TESTS
def parsed(reply):
    return plain_json(parse_react_step(reply), "parse_react_step(...)", hint)

cases = [
    # an invented observation (and what follows) is ignored
    (" I check Oslo.\nAction: get_weather[Oslo]\nObservation: 25°C, sunny\nThought: Warm!\nAction: finish[25°C]",
     ["I check Oslo.", "get_weather", "Oslo"]),
    # the prefix Thought: is dropped; a thought over several lines is kept whole
    ("Thought: First Madrid.\nThen Oslo.\nAction: get_weather[Madrid]", ["First Madrid.\nThen Oslo.", "get_weather", "Madrid"]),
    # no thought; spaces around the action and inside the brackets
    ("\n  Action:   calculate[ (17 + 25) * 3 ]  ", ["", "calculate", "(17 + 25) * 3"]),
    # brackets inside the argument; only the first Action line counts
    (" Nested.\nAction: calculate[[1, 2][0] + 1]\nAction: finish[2]", ["Nested.", "calculate", "[1, 2][0] + 1"]),
    (" Done.\nAction: finish[ 42 ]", ["Done.", "finish", "42"]),
    (" A tool without argument.\nAction: now[]", ["A tool without argument.", "now", ""]),
]
for reply, want in cases:
    got = parsed(reply)
    assert got == want, f"parse_react_step({reply!r}) gave {got}\nHint: {hint}"
for bad, what in [("", "an empty reply"),
                  (" I think the answer is 12°C.", "no Action line"),
                  (" I look it up.\nObservation: 12°C\nAction: get_weather[Berlin]", "an Action only after an invented observation"),
                  (" Let me see.\nAction: get_weather Berlin", "an action without brackets"),
                  (" Let me see.\nAction: get_weather[Berlin", "an unclosed bracket"),
                  (" Let me see.\nAction: get_weather[Berlin] now", "text after the closing bracket"),
                  (" Let me see.\nAction: ", "an empty action"),
                  (" Done.\nAction: finish[]", "finish without an answer"),
                  (" Done.\nAction: finish[   ]", "finish with a blank answer")]:
    e = assert_raises(ValueError, parse_react_step, bad, name=f"parse_react_step on {what}", hint=hint)
    assert str(e).startswith("Invalid action"), f"{what}: the message must start with 'Invalid action'\nHint: {hint}"
### END HIDDEN TESTS''', test("test_parse_react_step__hidden", 2))

add("d-loop-intro", MD, r"""#### The text loop

Write `run_react_text(question, complete, registry, *, max_steps=8)`. `complete(prompt, stop)` is a
text-completion model: it takes a prompt string and a list of stop sequences and returns the
continuation. `registry` maps tool names to functions of **one string argument**
(`get_weather[Berlin]` calls `registry["get_weather"]("Berlin")`). The prompt layout:

```
prompt = EXEMPLAR + "\n\nQuestion: " + question + "\nThought:"
```

Then, for at most `max_steps` steps (one step is one call of `complete`):

1. `continuation = complete(prompt, [STOP])`, cut at its first `STOP` (keep what comes before).
2. Append the cut continuation to the prompt **unchanged**.
3. Parse it with your `parse_react_step`. If the action is `finish`, return its argument: that is
   the answer. Otherwise the observation is
   - the `ValueError` message if the step does not parse (it starts with `Invalid action`);
   - `"Invalid action: unknown tool ..."` naming the tool and the actions that exist, if the name
     is not in `registry` (and is not `finish`);
   - else `str(registry[action](argument))`, or `"ERROR: <message>"` if the tool raises.
4. Append `"\nObservation: " + observation + "\nThought:"` and go on.

After `max_steps` steps without a finish, return exactly `"stopped: step budget exhausted"`. The
prompt only ever grows: every call sees the exemplar, the question and the whole trajectory.""")

add("d-run_react_text", CODE, r'''def run_react_text(question, complete, registry, *, max_steps=8):
    """The ReAct loop in plain text over complete(prompt, stop) -> str: finish[answer] is the only
    way out; parse errors and unknown tools become "Invalid action" observations
    (lecture: "The core definition of ReAct", "The execution loop")."""
    ### BEGIN SOLUTION
    prompt = f"{EXEMPLAR}\n\nQuestion: {question}\nThought:"
    for _ in range(max_steps):
        continuation = complete(prompt, [STOP]).split(STOP)[0]
        prompt += continuation
        try:
            thought, action, argument = parse_react_step(continuation)
        except ValueError as e:
            observation = str(e)
        else:
            if action == "finish":
                return argument
            if action not in registry:
                known = ", ".join(f"{name}[...]" for name in registry)
                observation = f"Invalid action: unknown tool {action!r}; the actions are {known} and finish[answer]"
            else:
                try:
                    observation = str(registry[action](argument))
                except Exception as e:
                    observation = f"ERROR: {e}"
        prompt += f"\nObservation: {observation}\nThought:"
    return "stopped: step budget exhausted"
    ### END SOLUTION''', answer("run_react_text"))

add("test_run_react_text", CODE, r'''from lreact.labchecks import reference, text
from lreact.textreact import EXEMPLAR as REF_EXEMPLAR, STOP as REF_STOP, ScriptedCompletion
REF_REGISTRY = reference("tools", "REGISTRY")      # private copies of the tools
hint = 'reread "The core definition of ReAct" and the layout in the task: the prompt grows by the step and its observation'
replies = [" I need the current weather in Berlin.\nAction: get_weather[Berlin]",
           " The observation answers the question.\nAction: finish[It is 12°C and rainy in Berlin.]"]
model = ScriptedCompletion(replies)
answer = run_react_text("What's the weather in Berlin?", model, REF_REGISTRY)
assert text(answer, "the answer", hint) == "It is 12°C and rainy in Berlin.", f"run_react_text returned {answer!r}\nHint: {hint}"
assert len(model.calls) == 2, f"complete was called {len(model.calls)} times, expected 2\nHint: {hint}"
p1 = REF_EXEMPLAR + "\n\nQuestion: What's the weather in Berlin?\nThought:"
assert model.calls[0]["prompt"] == p1, "the first prompt must be EXEMPLAR, a blank line, the question, and 'Thought:'\nHint: " + hint
assert model.calls[1]["prompt"] == p1 + replies[0] + "\nObservation: 12°C, rainy\nThought:", \
    "the second prompt must be the first, the model's step, its observation and a new 'Thought:'\nHint: " + hint
for call in model.calls:
    assert isinstance(call["stop"], (list, tuple)) and list(call["stop"]) == [REF_STOP], \
        f"pass the stop sequences as a list, [STOP]; got {call['stop']!r}\nHint: {hint}"''',
    test("test_run_react_text", 2))

add("test_run_react_text__failures", CODE, r'''from lreact.labchecks import reference, text
from lreact.textreact import EXEMPLAR as REF_EXEMPLAR, STOP as REF_STOP, ScriptedCompletion, observations
REF_REGISTRY = reference("tools", "REGISTRY")
hint = ('reread "The core definition of ReAct": the runtime writes every observation; a reply that does not '
        'parse, or names an unknown tool, gets "Invalid action"; only finish[answer] ends the run')
# The tests below are hidden: they run when the lab is graded.
### BEGIN HIDDEN TESTS
def run(question, replies, registry=REF_REGISTRY, **kw):
    model = ScriptedCompletion(replies)
    try:
        answer = run_react_text(question, model, registry, **kw)
    except Exception as e:
        raise AssertionError(f"run_react_text raised {type(e).__name__}: {e}\nHint: {hint}") from None
    return text(answer, "the answer", hint), model

def check_growth(question, replies, model, expected_observations):
    """Each prompt is the previous one + the cut reply + its observation + 'Thought:'."""
    prompt = REF_EXEMPLAR + f"\n\nQuestion: {question}\nThought:"
    assert model.calls[0]["prompt"] == prompt, "the first prompt has the wrong layout\nHint: " + hint
    for k, (reply, obs) in enumerate(zip(replies, expected_observations), start=1):
        prefix = prompt + reply.split(REF_STOP)[0] + "\nObservation: "
        following = model.calls[k]["prompt"]
        assert following.startswith(prefix) and following.endswith("\nThought:"), \
            (f"prompt {k + 1} must be prompt {k}, the model's step cut at the stop sequence, '\\nObservation: ', "
             f"the observation and '\\nThought:'\nHint: {hint}")
        observation = following[len(prefix):-len("\nThought:")]
        assert obs(observation), f"step {k}: the observation is {observation!r}\nHint: {hint}"
        prompt = following

# 1. the model invents an observation: the runtime cuts it and writes the real one
q = "What's the weather in Oslo?"
replies = [" I look up Oslo.\nAction: get_weather[Oslo]\nObservation: 25°C, sunny\nThought: A warm day.\nAction: finish[25°C and sunny]",
           " Oslo is cold today.\nAction: finish[-3°C and snowy in Oslo.]"]
answer, model = run(q, replies)
assert answer == "-3°C and snowy in Oslo.", f"an invented observation must not end the run; got {answer!r}\nHint: {hint}"
assert len(model.calls) == 2, "the invented observation is not the tool's result: the runtime must run the tool\nHint: " + hint
assert "25°C, sunny" not in model.calls[1]["prompt"], "the invented observation must be cut from the prompt\nHint: " + hint
check_growth(q, replies, model, [lambda o: o == "-3°C, snowy"])

# 2. a missing Action line, 3. an unknown tool, 4. finish with no answer, 5. a tool that raises
q = "What is (17 + 25) * 3?"
replies = [" The answer is probably 126.",
           " I should search.\nAction: search[17 + 25 times 3]",
           " I am done.\nAction: finish[]",
           " Let me compute it.\nAction: calculate[(17 + 25) * 3 / 0]",
           " Without the division.\nAction: calculate[(17 + 25) * 3]",
           " That is the result.\nAction: finish[126]"]
answer, model = run(q, replies)
assert answer == "126", f"the run must go on after each failed step; got {answer!r}\nHint: {hint}"
assert len(model.calls) == 6, f"six steps expected, got {len(model.calls)}\nHint: {hint}"
check_growth(q, replies, model, [
    lambda o: o.startswith("Invalid action") and "Action" in o,
    lambda o: o.startswith("Invalid action") and "search" in o and "calculate" in o and "finish" in o,
    lambda o: o.startswith("Invalid action"),
    lambda o: o.startswith("ERROR: "),
    lambda o: o == "126"])

# an invented observation on a step that does not parse is cut too
q = "Weather in Rome?"
replies = [" Rome is sunny.\nObservation: 30°C\nAction: finish[30°C]", " Now properly.\nAction: get_weather[Rome]",
           " Done.\nAction: finish[21°C and sunny.]"]
answer, model = run(q, replies)
assert answer == "21°C and sunny." and "30°C" not in model.calls[1]["prompt"], \
    "cut every continuation at the first stop sequence before using it\nHint: " + hint
### END HIDDEN TESTS''', test("test_run_react_text__failures", 2))

add("test_run_react_text__budget", CODE, r'''from lreact.labchecks import reference, text
from lreact.textreact import EXEMPLAR as REF_EXEMPLAR, ScriptedCompletion, observations
REF_REGISTRY = reference("tools", "REGISTRY")
hint = 'reread "The execution loop": a step cap ends a run that never finishes; the registry you are given is the tool set'
# The tests below are hidden: they run when the lab is graded.
### BEGIN HIDDEN TESTS
# a model that never finishes: exactly max_steps calls, then the fixed message
for steps in (3, 1):
    model = ScriptedCompletion([" Again.\nAction: get_weather[Berlin]"] * 10)
    answer = run_react_text("Weather?", model, REF_REGISTRY, max_steps=steps)
    assert text(answer, "the answer", hint) == "stopped: step budget exhausted", f"got {answer!r}\nHint: {hint}"
    assert len(model.calls) == steps, f"max_steps={steps}: complete was called {len(model.calls)} times\nHint: {hint}"
model = ScriptedCompletion([" I cannot decide."] * 20)
assert text(run_react_text("Weather?", model, REF_REGISTRY), hint=hint) == "stopped: step budget exhausted", \
    "format errors count as steps\nHint: " + hint
assert len(model.calls) == 8, f"the default budget is 8 steps, got {len(model.calls)}\nHint: {hint}"
# an immediate finish: one call
model = ScriptedCompletion([" I know this one.\nAction: finish[Paris]"])
assert text(run_react_text("What is the capital of France?", model, REF_REGISTRY), hint=hint) == "Paris" and len(model.calls) == 1, \
    "finish[answer] on the first step ends the run\nHint: " + hint
# the registry passed in is the tool set, called with the argument string
seen = []
def lookup(word):
    seen.append(word)
    return {"ReAct": "Reasoning + Acting, Yao et al. 2023"}.get(word, "not found")
model = ScriptedCompletion([" I look it up.\nAction: lookup[ReAct]", " Weather is not needed.\nAction: get_weather[Paris]",
                            " Found it.\nAction: finish[Reasoning + Acting]"])
answer = run_react_text("What does ReAct stand for?", model, {"lookup": lookup})
assert text(answer, hint=hint) == "Reasoning + Acting" and seen == ["ReAct"], f"got {answer!r}, tool calls {seen}\nHint: {hint}"
obs = observations(model.calls[2]["prompt"], len(REF_EXEMPLAR))
assert obs[0] == "Reasoning + Acting, Yao et al. 2023" and obs[1].startswith("Invalid action") and "get_weather" in obs[1], \
    f"observations {obs}: only the tools of the registry you are given exist\nHint: {hint}"
# a tool result that is not a string is str()-ed
model = ScriptedCompletion([" Count.\nAction: count[abc]", " Three.\nAction: finish[3]"])
run_react_text("How long is abc?", model, {"count": len})
assert observations(model.calls[1]["prompt"], len(REF_EXEMPLAR)) == ["3"], "str() the tool's result\nHint: " + hint
### END HIDDEN TESTS''', test("test_run_react_text__budget", 1))

add("d-compare-intro", MD, r"""#### Side by side: text ReAct against native tool calling

The same questions through both loops: your `run_react_text` on a raw text-completion endpoint
(Ollama's `/api/generate` with `raw: true`, or an OpenAI-compatible `/v1/completions`) and your
`run_agent` with native tool calling. The cell counts, per question, the model calls, the format
errors the runtime had to answer (`Invalid action` observations; for the native loop, error
results from the validator) and the continuations that ran past the stop sequence. Without a
model server both loops replay scripted models, with replies written to show typical mistakes of
a small model; the figures then describe those scripts, not a model.""")

add("d-compare", CODE, r'''from lreact.labchecks import reference
REF_TOOLS, REF_REGISTRY = reference("tools", "TOOLS"), reference("tools", "REGISTRY")
_weather, _calculate = reference("tools", "get_weather"), reference("tools", "calculate")
madrid, oslo = _weather("Madrid"), _weather("Oslo")
t_madrid, t_oslo = (int(t.split("°")[0]) for t in (madrid, oslo))
expression = f"{t_madrid} - {t_oslo}"
difference = _calculate(expression)
COMPARE = [
    ("berlin", "What's the weather in Berlin?",
     [" I need the current weather in Berlin.\nAction: get_weather[Berlin]",
      f" The observation answers it.\nAction: finish[It is {_weather('Berlin')} in Berlin.]"],
     [AssistantMessage(tool_calls=[ToolCall("call_1", "get_weather", '{"city": "Berlin"}')]),
      AssistantMessage(f"It is {_weather('Berlin')} in Berlin.")]),
    ("difference", "How many degrees warmer is it in Madrid than in Oslo?",
     [" First Madrid.\nAction: get_weather[Madrid]\nObservation: 30°C, sunny",      # runs past the stop
      " Now Oslo.\nAction: get_weather[Oslo]",
      f" The difference is {expression}.",                                          # no Action line
      f" I compute it.\nAction: calculate[{expression}]",
      f" Done.\nAction: finish[Madrid is {difference} degrees warmer than Oslo.]"],
     [AssistantMessage(tool_calls=[ToolCall("call_1", "get_weather", '{"city": "Madrid"}'),
                                   ToolCall("call_2", "get_weather", '{"city": "Oslo"}')]),
      AssistantMessage(tool_calls=[ToolCall("call_3", "calculate", '{"expression": "' + expression + '"')]),  # broken JSON
      AssistantMessage(tool_calls=[ToolCall("call_4", "calculate", json.dumps({"expression": expression}))]),
      AssistantMessage(f"Madrid is {difference} degrees warmer than Oslo.")]),
]
del _weather, _calculate

rows = []
try:
    for key, question, text_script, native_script in COMPARE:
        if LIVE_D:
            complete = textreact.RecordingCompletion(textreact.configured_complete(temperature=0, seed=0))
            llm = lreact.configured_llm(temperature=0, seed=0)
        else:
            complete = textreact.RecordingCompletion(textreact.ScriptedCompletion(text_script))
            llm = ScriptedLLM(native_script)
        text_answer = run_react_text(question, complete, REF_REGISTRY)
        last = complete.calls[-1]["prompt"] + complete.calls[-1]["reply"].split(STOP)[0]
        text_errors = sum(o.startswith("Invalid action") for o in textreact.observations(last, len(EXEMPLAR)))
        overrun = sum(STOP in c["reply"] for c in complete.calls)
        history = [SystemMessage("You are a helpful assistant. Use the tools; answer briefly.")]
        native_answer = run_agent(question, llm, REF_TOOLS, REF_REGISTRY, history=history)
        native_calls = sum(isinstance(m, AssistantMessage) for m in history)
        native_errors = sum(isinstance(m, ToolResultMessage) and m.content.startswith(("ERROR: invalid JSON", "ERROR: unknown tool", "ERROR: schema"))
                            for m in history)
        rows.append((key, len(complete.calls), text_errors, overrun, text_answer, native_calls, native_errors, native_answer))
    print("scripted models (no model server)" if not LIVE_D else lreact.describe_backend())
    print(f"{'question':<11} {'loop':<11} {'model calls':>11} {'format errors':>13} {'past stop':>9}  answer")
    for key, tc, te, to, ta, nc, ne, na in rows:
        print(f"{key:<11} {'text ReAct':<11} {tc:>11} {te:>13} {to:>9}  {ta}")
        print(f"{'':<11} {'native':<11} {nc:>11} {ne:>13} {'-':>9}  {na}")
    print(f"{'total':<11} {'text ReAct':<11} {sum(r[1] for r in rows):>11} {sum(r[2] for r in rows):>13} {sum(r[3] for r in rows):>9}")
    print(f"{'':<11} {'native':<11} {sum(r[5] for r in rows):>11} {sum(r[6] for r in rows):>13}")
except NotImplementedError:
    print("Write parse_react_step and run_react_text (and Part B's run_agent) first.")
except lreact.ModelError as e:
    print("The model server could not answer:", e)''', None)

add("d-code-intro", MD, r"""### D.3 Code as the action

A specific tool does one thing; a **code tool** takes a whole program, so one action can loop,
combine several steps and keep intermediate results in variables (CodeAct, Wang et al., 2024).
The price: the runtime now executes arbitrary code a model wrote. Lecture: Part III, "Specific
tools vs a code tool".

`lreact.codeact.run_python(code, *, timeout, memory, max_output, prelude)` runs one code action
in a **fresh Python interpreter**, never in this kernel, and returns a plain dict with `stdout`,
`stderr`, `exit_code`, `timed_out` and `truncated`. Every run has a wall-clock time limit (the
whole process tree is killed), CPU, memory, process and file-size limits, and keeps at most
`max_output` characters of each output stream. Where bubblewrap works it also removes the network,
hides every folder but the Python installation, and gives the code a private scratch folder. The
next cell says which of these protections this machine provides; read it: without bubblewrap the
code can read your files and reach the network.""")

add("d-code-sandbox", CODE, r'''print("isolation:", isolation())
hostile = {
    "an endless loop": "while True:\n    pass",
    "a fork bomb": "import os\nwhile True:\n    os.fork()",
    "a flood of output": "print('spam ' * 10**7)",
    "reading a file outside the scratch folder": "print(open('/etc/hostname').read())",
    "opening a socket": "import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=1)",
}
print(run_python("print(sum(range(10)))", timeout=5))
for what, code in hostile.items():
    r = run_python(code, timeout=2, max_output=200)
    last = (r["stderr"].strip().splitlines() or [""])[-1]
    print(f"{what:<45} timed out: {r['timed_out']!s:<5}  exit code: {r['exit_code']!s:<4}  "
          f"output kept: {len(r['stdout'])} chars  last error line: {last[:70]}")
print("this kernel is still here: 2 + 2 =", 2 + 2)''', None)

add("d-schema-intro", MD, r"""#### The schema of the code tool

Write `code_tool_schema(timeout, max_output)`: the function-calling schema of `run_python`, in the
envelope of `lreact.tools.TOOLS`. A schema is everything the model knows about a tool (lecture:
"Designing tools well: the agent-computer interface (ACI)"), so:

- the name is `"run_python"`; there is exactly one parameter, `code`, a **string** of Python
  source; it is required and no other argument is allowed (`"additionalProperties": False`): the
  model must not pick its own time limit;
- the description tells the model what it needs to write good code: that only what the program
  **prints** comes back, the time limit in seconds (write it as `f"{timeout:g}"`, e.g. `5` or
  `2.5`) and the output limit in characters (`max_output`).""")

add("d-code_tool_schema", CODE, r'''def code_tool_schema(timeout, max_output):
    """The function-calling schema of the run_python code tool; its description states the time
    and output limits (lecture: "Specific tools vs a code tool")."""
    ### BEGIN SOLUTION
    return {"type": "function", "function": {
        "name": "run_python",
        "description": (f"Run a Python program in a fresh interpreter (no network, a private scratch folder) "
                        f"and return what it prints: stdout, then stderr. Only printed output comes back, so "
                        f"print() every result you need. The run is stopped after {timeout:g} seconds, and "
                        f"output beyond {max_output} characters is cut."),
        "parameters": {"type": "object",
                       "properties": {"code": {"type": "string", "description": "The Python source code to run"}},
                       "required": ["code"],
                       "additionalProperties": False}}}
    ### END SOLUTION''', answer("code_tool_schema"))

add("test_code_tool_schema", CODE, r'''import jsonschema
from lreact.actionchecks import assert_tool_schema, plain_json
hint = 'reread "Specific tools vs a code tool" and the task: one required string argument, code'
schema = plain_json(code_tool_schema(5, 2000), "code_tool_schema(5, 2000)", hint)
fn = assert_tool_schema(schema, "run_python", hint)
try:
    jsonschema.validate({"code": "print(2 + 2)"}, fn["parameters"])
except jsonschema.ValidationError as e:
    raise AssertionError(f"the schema must accept {{'code': 'print(2 + 2)'}}: {e.message}\nHint: {hint}") from None
for bad in ({}, {"code": 42}):
    try:
        jsonschema.validate(bad, fn["parameters"])
    except jsonschema.ValidationError:
        continue
    raise AssertionError(f"the schema must reject {bad}\nHint: {hint}")''', test("test_code_tool_schema", 1))

add("test_code_tool_schema__hidden", CODE, r'''import jsonschema
from lreact.actionchecks import assert_tool_schema, plain_json
hint = 'reread "Specific tools vs a code tool" and the task: no other arguments, and the description states the limits and that printed output comes back'
# The tests below are hidden: they run when the lab is graded.
### BEGIN HIDDEN TESTS
for timeout, max_output in [(5, 2000), (2.5, 800), (30, 10000)]:
    schema = plain_json(code_tool_schema(timeout, max_output), f"code_tool_schema({timeout}, {max_output})", hint)
    fn = assert_tool_schema(schema, "run_python", hint)
    for bad in ({"code": "print(1)", "timeout": 1000}, {"source": "print(1)"}, {"code": ["print(1)"]}, {"code": None}):
        try:
            jsonschema.validate(bad, fn["parameters"])
        except jsonschema.ValidationError:
            continue
        raise AssertionError(f"the schema must reject {bad}\nHint: {hint}")
    jsonschema.validate({"code": ""}, fn["parameters"])
    description = fn["description"]
    assert f"{timeout:g}" in description, f"the description must state the time limit ({timeout:g} seconds)\nHint: {hint}"
    assert str(max_output) in description, f"the description must state the output limit ({max_output} characters)\nHint: {hint}"
    assert "print" in description.lower(), "the description must say that printed output is what comes back\nHint: " + hint
### END HIDDEN TESTS''', test("test_code_tool_schema__hidden", 1))

add("d-glue-intro", MD, r"""#### From a code action to an observation

Write `run_code_action(code, run, *, timeout=5.0, max_output=2000)`, the function behind the
`run_python` name in the registry. `run` is a function like `lreact.codeact.run_python`: call it
as `run(code, timeout=timeout)` (**always pass the time limit**) and turn the dict it returns
into the observation text the model reads:

1. `output` = the result's `stdout`; if `stderr` is not empty, add a line `stderr:` and then the
   `stderr` text after it (start it on a new line if `output` does not end with one).
2. If `timed_out` is true: `"ERROR: time limit of {timeout:g} s exceeded; the code was stopped.\n"`
   followed by `output`. Else if `exit_code` is not 0: `"ERROR: the code failed with exit status
   {exit_code}.\n"` followed by `output`. Else, if `output` is empty or only whitespace, the
   observation is `"(no output)"` (an empty observation confuses a model).
3. If the observation is longer than `max_output` characters, keep the first `max_output` and add
   `"\n[... truncated: N more characters]"` with `N` the number cut off.
4. Never raise: if `run` itself raises, return `"ERROR: the code could not be run: <message>"`.""")

add("d-run_code_action", CODE, r'''def run_code_action(code, run, *, timeout=5.0, max_output=2000):
    """Run one code action with ``run(code, timeout=timeout)`` and return the observation text:
    output and errors, "ERROR: ..." on a timeout or a failure, truncated to ``max_output``
    characters (lecture: "Specific tools vs a code tool")."""
    ### BEGIN SOLUTION
    try:
        result = run(code, timeout=timeout)
    except Exception as e:
        return f"ERROR: the code could not be run: {e}"
    output = result["stdout"]
    if result["stderr"]:
        if output and not output.endswith("\n"):
            output += "\n"
        output += "stderr:\n" + result["stderr"]
    if result["timed_out"]:
        output = f"ERROR: time limit of {timeout:g} s exceeded; the code was stopped.\n" + output
    elif result["exit_code"] != 0:
        output = f"ERROR: the code failed with exit status {result['exit_code']}.\n" + output
    elif not output.strip():
        output = "(no output)"
    if len(output) > max_output:
        output = output[:max_output] + f"\n[... truncated: {len(output) - max_output} more characters]"
    return output
    ### END SOLUTION''', answer("run_code_action"))

add("test_run_code_action", CODE, r'''from lreact.actionchecks import RecordingRunner
from lreact.labchecks import text
hint = 'reread "Specific tools vs a code tool" and the four steps of the task'
run = RecordingRunner(stdout="Madrid\n")
got = text(run_code_action("print('Madrid')", run, timeout=3, max_output=500), "run_code_action(...)", hint)
assert got == "Madrid\n", f"a successful run's observation is its output, got {got!r}\nHint: {hint}"
assert len(run.calls) == 1 and run.calls[0][0] == "print('Madrid')", f"run the code once, got calls {run.calls}\nHint: {hint}"
assert run.calls[0][1].get("timeout") == 3, \
    f"pass the time limit: run(code, timeout=timeout); the runner got {run.calls[0][1]}\nHint: {hint}"
run = RecordingRunner(stdout="", stderr="Traceback (most recent call last):\nZeroDivisionError: division by zero\n", exit_code=1)
got = text(run_code_action("1/0", run, timeout=3, max_output=500), "run_code_action(...)", hint)
assert got.startswith("ERROR: ") and "ZeroDivisionError" in got and "1" in got.splitlines()[0], \
    f"a failed run gives 'ERROR: ...' with the exit status and its stderr, got {got!r}\nHint: {hint}"''',
    test("test_run_code_action", 1))

add("test_run_code_action__hidden", CODE, r'''from lreact.actionchecks import RecordingRunner
from lreact.labchecks import text
hint = 'reread "Specific tools vs a code tool" and the task: the layout of output and stderr, timeouts, exit codes, "(no output)", truncation, never raise'
# The tests below are hidden: they run when the lab is graded.
### BEGIN HIDDEN TESTS
def obs(run, code="pass", **kw):
    try:
        return text(run_code_action(code, run, **kw), "run_code_action(...)", hint)
    except AssertionError:
        raise
    except Exception as e:
        raise AssertionError(f"run_code_action raised {type(e).__name__}: {e}\nHint: {hint}") from None

# output and stderr, in this layout
assert obs(RecordingRunner(stdout="a\nb\n", stderr="warning: x\n")) == "a\nb\nstderr:\nwarning: x\n", "stdout, then 'stderr:' and the stderr text\nHint: " + hint
assert obs(RecordingRunner(stdout="no newline", stderr="w")) == "no newline\nstderr:\nw", "stderr starts on a new line\nHint: " + hint
assert obs(RecordingRunner(stdout="", stderr="only stderr\n")) == "stderr:\nonly stderr\n", hint
# a timeout, with and without output
got = obs(RecordingRunner(stdout="partial\n", timed_out=True, exit_code=None), timeout=2.5)
assert got == "ERROR: time limit of 2.5 s exceeded; the code was stopped.\npartial\n", f"got {got!r}\nHint: {hint}"
got = obs(RecordingRunner(timed_out=True, exit_code=None), timeout=5.0)
assert got.startswith("ERROR: time limit of 5 s exceeded"), f"got {got!r}\nHint: {hint}"
# an exit code other than 0 (also a negative one: killed by a signal)
for code_ in (3, -9):
    got = obs(RecordingRunner(stdout="x\n", exit_code=code_))
    assert got == f"ERROR: the code failed with exit status {code_}.\nx\n", f"got {got!r}\nHint: {hint}"
# no output at all
for quiet_run in (RecordingRunner(), RecordingRunner(stdout="\n  \n")):
    assert obs(quiet_run) == "(no output)", "a run that prints nothing gives '(no output)'\nHint: " + hint
# truncation to max_output characters, with the number cut off
got = obs(RecordingRunner(stdout="x" * 5000), max_output=100)
assert got == "x" * 100 + "\n[... truncated: 4900 more characters]", f"got {got[:150]!r}...\nHint: {hint}"
got = obs(RecordingRunner(stdout="y" * 100), max_output=100)
assert got == "y" * 100, "exactly max_output characters are not truncated\nHint: " + hint
got = obs(RecordingRunner(stdout="z" * 300, exit_code=1), max_output=50)
assert got.startswith("ERROR: the code failed") and len(got) <= 50 + len("\n[... truncated: 999 more characters]"), \
    "truncate the whole observation, the error line included\nHint: " + hint
# the runner fails: an error observation, never an exception
got = obs(RecordingRunner(raises=OSError("bwrap: cannot create namespace")))
assert got.startswith("ERROR: ") and "bwrap: cannot create namespace" in got, f"got {got!r}\nHint: {hint}"
# the time limit given is the one passed on, and the default is 5 seconds
run = RecordingRunner(stdout="1\n")
obs(run, "print(1)", timeout=0.5)
obs(run, "print(1)")
assert [c[1].get("timeout") for c in run.calls] == [0.5, 5.0], f"pass the time limit on; the runner got {[c[1] for c in run.calls]}\nHint: {hint}"
### END HIDDEN TESTS''', test("test_run_code_action__hidden", 1))

add("test_run_code_action__sandbox", CODE, r'''import functools
from lreact.codeact import run_python as ref_run_python
from lreact.labchecks import text
hint = 'reread "Specific tools vs a code tool": a hostile code action costs only its own call; pass the time limit'
# The tests below are hidden: they run when the lab is graded.
### BEGIN HIDDEN TESTS
def sandboxed(code, **kw):
    return ref_run_python(code, memory=256 * 1024**2, max_output=20000, **kw)

def obs(code, **kw):
    try:
        return text(run_code_action(code, sandboxed, **kw), "run_code_action(...)", hint)
    except AssertionError:
        raise
    except Exception as e:
        raise AssertionError(f"run_code_action raised {type(e).__name__}: {e}\nHint: {hint}") from None

assert obs("print(6 * 7)", timeout=10) == "42\n", "run the code and return its output\nHint: " + hint
got = obs("while True:\n    pass", timeout=1)
assert got.startswith("ERROR: time limit of 1 s exceeded"), f"an endless loop must stop at the time limit, got {got[:120]!r}\nHint: {hint}"
got = obs("print('spam ' * 10**6)", timeout=10, max_output=300)
assert got.startswith("spam spam") and "truncated" in got and len(got) < 400, f"a flood must be truncated, got {len(got)} characters\nHint: {hint}"
got = obs("import os\nwhile True:\n    os.fork()", timeout=3)
assert got.startswith("ERROR: "), f"a fork bomb must end in an error observation, got {got[:120]!r}\nHint: {hint}"
got = obs("x = [1, 2, 3]\nprint(x[5])", timeout=10)
assert got.startswith("ERROR: the code failed with exit status 1") and "IndexError" in got, f"got {got[:200]!r}\nHint: {hint}"
assert obs("x = 1", timeout=10) == "(no output)", hint
### END HIDDEN TESTS''', test("test_run_code_action__sandbox", 1))

add("d-ex11-intro", MD, r"""#### Exercise 11, for real: three specific calls against one code action

The exercises notebook asked (Exercise 11) how many model calls the question "Which of Berlin,
Paris and Madrid is warmest today?" costs with the specific tool `get_weather` (one call per turn)
and with the code tool. Here your loop answers it. With the code tool the registry holds one
function, `run_python`, which runs the code action through your `run_code_action` in the sandbox,
where a `get_weather(city)` is predefined (`weather_prelude()`). The test replays scripted models;
the live cell after it asks the configured model.""")

add("test_code_tool_schema__exercise11", CODE, r'''import json
from lreact import AssistantMessage, ScriptedLLM, SystemMessage, ToolCall
from lreact.actionchecks import plain_json
from lreact.codeact import run_python as ref_run_python, weather_prelude
from lreact.labchecks import assert_model_calls, assert_paired, plain, reference, text
REF_WEATHER_TOOL, REF_REGISTRY = reference("tools", "WEATHER_TOOL"), reference("tools", "REGISTRY")
table = reference("tools", "WEATHER")
hint = ('reread "Specific tools vs a code tool": one code action replaces three turns; your schema must let '
        'your validator accept a call with a code string')
cities = ["Berlin", "Paris", "Madrid"]
warmest = max(cities, key=lambda c: table[c]["temp_c"])
question = "Which of Berlin, Paris and Madrid is warmest today?"
# the specific tool: one call per turn, then the answer
specific = ScriptedLLM([AssistantMessage(tool_calls=[ToolCall(f"call_{c}", "get_weather", json.dumps({"city": c}))]) for c in cities]
                       + [AssistantMessage(f"{warmest} is the warmest.")])
h1 = [SystemMessage("Use the tools.")]
a1 = run_agent(question, specific, [REF_WEATHER_TOOL], REF_REGISTRY, history=h1)
# the code tool: one code action, then the answer
schema = plain_json(code_tool_schema(10, 2000), "code_tool_schema(10, 2000)", hint)
code = ("temps = {}\nfor city in ['Berlin', 'Paris', 'Madrid']:\n    temps[city] = float(get_weather(city).split('°')[0])\n"
        "print(max(temps, key=temps.get))")
observed = []
def run_python_tool(code):                       # this test's own glue, on the real sandbox
    r = ref_run_python(code, timeout=10, prelude=weather_prelude())
    observed.append(r)
    return r["stdout"] if r["exit_code"] == 0 else "ERROR: " + r["stderr"]
coder = ScriptedLLM([AssistantMessage(tool_calls=[ToolCall("call_code", "run_python", json.dumps({"code": code}))]),
                     AssistantMessage(f"{warmest} is the warmest.")])
h2 = [SystemMessage("Use the tools.")]
a2 = run_agent(question, coder, [schema], {"run_python": run_python_tool}, history=h2)
assert observed, f"the code action never ran: its result was {[m for m in plain(h2, hint) if m[0] == 'tool']}\nHint: {hint}"
assert observed[0]["stdout"].strip() == warmest, f"the code action printed {observed[0]['stdout']!r}\nHint: {hint}"
assert_model_calls(coder, h2, [schema], hint)
assert_paired(h2, hint)
assert (len(specific.calls), len(coder.calls)) == (4, 2), f"model calls: {len(specific.calls)} and {len(coder.calls)}\nHint: {hint}"
assert text(a1, hint=hint) == text(a2, hint=hint) == f"{warmest} is the warmest.", hint''',
    test("test_code_tool_schema__exercise11", 1))

add("d-ex11-live", CODE, r'''from lreact.labchecks import reference
REF_WEATHER_TOOL, REF_REGISTRY = reference("tools", "WEATHER_TOOL"), reference("tools", "REGISTRY")
_table = reference("tools", "WEATHER")
question = "Which of Berlin, Paris and Madrid is warmest today?"
cities = ["Berlin", "Paris", "Madrid"]
warmest = max(cities, key=lambda c: _table[c]["temp_c"])
del _table
SYSTEM_D3 = ("You are a helpful assistant. Use the tools. Inside run_python, get_weather(city) is predefined and "
             "returns text like '12°C, rainy'. Answer briefly.")
code_action = ("temps = {}\nfor city in ['Berlin', 'Paris', 'Madrid']:\n"
               "    temps[city] = float(get_weather(city).split('°')[0])\nprint(temps, max(temps, key=temps.get))")
try:
    sandbox_run = functools.partial(run_python, prelude=weather_prelude())
    CODE_TOOLS = [code_tool_schema(5, 2000)]
    CODE_REGISTRY = {"run_python": lambda code: run_code_action(code, sandbox_run, timeout=5, max_output=2000)}
    runs = {}
    for name, tools, registry, script in [
            ("specific tool", [REF_WEATHER_TOOL], REF_REGISTRY,
             [AssistantMessage(tool_calls=[ToolCall(f"call_{c}", "get_weather", json.dumps({"city": c}))]) for c in cities]
             + [AssistantMessage(f"{warmest} is the warmest.")]),
            ("code tool", CODE_TOOLS, CODE_REGISTRY,
             [AssistantMessage(tool_calls=[ToolCall("call_code", "run_python", json.dumps({"code": code_action}))]),
              AssistantMessage(f"{warmest} is the warmest.")])]:
        llm = lreact.configured_llm(temperature=0, seed=0) if LIVE_D else ScriptedLLM(script)
        history = [SystemMessage(SYSTEM_D3)]
        answer = run_agent(question, llm, tools, registry, history=history)
        runs[name] = (sum(isinstance(m, AssistantMessage) for m in history),
                      sum(len(m.tool_calls) for m in history if isinstance(m, AssistantMessage)), answer, history)
    print("scripted models (no model server)" if not LIVE_D else lreact.describe_backend())
    for name, (model_calls, tool_calls, answer, history) in runs.items():
        print(f"{name:<14} model calls: {model_calls}   tool calls: {tool_calls}   answer: {answer}")
    print("observation of the code action:", [m.content for m in runs["code tool"][3] if isinstance(m, ToolResultMessage)])
except NotImplementedError:
    print("Write code_tool_schema and run_code_action (and Part B's run_agent) first.")
except lreact.ModelError as e:
    print("The model server could not answer:", e)''', None)

add("d-closing", MD, r"""### Part D: points and what the hidden tests check

**Points.** D.1: 6, D.2: 8, D.3: 6; Part D in all: 20. As in the first lab, a test cell scores
only if it runs to its end without an error and without writing to stderr.

- `tool_schemas_from_mcp` (3): the lab server's listing (visible); a listing with a missing
  description and a missing schema, an empty schema, four tools in the server's order, and a
  server without tools; your `run_agent` over the discovered schemas with a scripted model
  (visible).
- `call_mcp_tool` (3): a call and an `is_error` result (visible); broken JSON, an unknown tool and
  three schema violations never reach the server; the tool set passed in is used; numbers arrive
  as numbers; several content blocks, a non-text block, an empty result; a timeout and a lost
  connection become `"ERROR: ..."`.
- `parse_react_step` (3): a step, a finish, a missing action (visible); an invented observation
  after the action, a `Thought:` prefix and a thought over several lines, spaces, brackets inside
  the argument, two action lines, an empty argument; nine replies that must raise.
- `run_react_text` (5): the Berlin run with the exact prompts and the stop sequence (visible);
  an invented observation, a missing action, an unknown tool, `finish[]`, a tool that raises,
  each followed by a repaired step; the step cap (3, 1, the default 8, format errors count as
  steps); an immediate finish; the registry passed in; non-string tool results.
- `code_tool_schema` (3): the envelope and the `code` argument (visible); extra arguments, a wrong
  name, wrong types; the limits and `print` in the description; Exercise 11 run through your
  `run_agent` with both tools, counting model calls (visible).
- `run_code_action` (3): a success and a failure with the time limit passed on (visible); the
  layout of output and stderr, timeouts, exit codes, `(no output)`, truncation, a failing
  runner, the default limit; the real sandbox with an endless loop, a flood of output, a fork
  bomb and an exception.""")


def build(path=NOTEBOOK):
    nb = nbformat.read(path, as_version=4)
    mine = []
    for entry in CELLS:
        cid, kind, source, meta = (tuple(entry) + (None,))[:4]
        cid = cid if cid.startswith("d-") else "d-" + cid
        cell = (nbformat.v4.new_markdown_cell(source) if kind == MD
                else nbformat.v4.new_code_cell(source))
        cell.id = cid
        if meta:
            cell.metadata["nbgrader"] = dict(meta)
        mine.append(cell)
    ids = [c.id for c in mine]
    assert len(set(ids)) == len(ids), "duplicate Part D cell ids"
    kept = [c for c in nb.cells if not c.get("id", "").startswith("d-")]
    at = next(i for i, c in enumerate(kept) if c.get("id") == "part-d-intro")
    nb.cells = kept[:at + 1] + mine + kept[at + 1:]
    nbformat.validate(nb)
    nbformat.write(nb, path)
    print(f"wrote {len(mine)} Part D cells; the notebook has {len(nb.cells)} cells")


if __name__ == "__main__":
    build()
