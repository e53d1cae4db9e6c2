"""Part C of the second lab notebook (issue 10): its cells, written into
solutions/lecture-ReAct-lab2/lecture-ReAct-lab2.ipynb between ``part-c-intro`` and
``part-d-intro``, plus the title cell ``lab2-title`` and the imports Part C needs in
``lab2-setup``.  Run under the notebook lock:

    flock /work/coord/lecture-ReAct-lab2.ipynb.lock .venv/bin/python scripts/lab2_part_c_cells.py

Only cells whose id starts with ``c-`` (and ``lab2-title``) are rewritten; Part D's cells and
every other cell are left as they are.
"""
from __future__ import annotations

import pathlib
import sys

import nbformat

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "solutions" / "lecture-ReAct-lab2" / "lecture-ReAct-lab2.ipynb"

CELLS = []   # (id, kind, source, nbgrader metadata or None)


def md(cell_id, source):
    CELLS.append((cell_id, "markdown", source.strip("\n"), None))


def code(cell_id, source):
    CELLS.append((cell_id, "code", source.strip("\n"), None))


def answer(grade_id, source):
    CELLS.append((grade_id, "code", source.strip("\n"), {
        "grade": False, "grade_id": grade_id, "locked": False, "schema_version": 3,
        "solution": True}))


def test(grade_id, points, source):
    CELLS.append((grade_id, "code", source.strip("\n"), {
        "grade": True, "grade_id": grade_id, "locked": True, "points": points,
        "schema_version": 3, "solution": False}))


TITLE = r"""
# Lab, second notebook: real engines, a real model's mistakes, and other action spaces

The first lab built `run_agent()` against a scripted model. This notebook takes the same loop to
real inference engines and to the mistakes a real small model makes, then to other ways of
giving a model tools and actions.

- **Part C, engines and a real model's mistakes** (17 points): the loop on Ollama or on any
  OpenAI-compatible engine (llama.cpp's `llama-server`, vLLM); a harness that catches tool calls
  written as text, repeated calls and runaway runs, and says how each run ended; compaction of a
  history that never separates a call from its result; structured outputs measured on the engine.
- **Part D, MCP, ReAct in plain text, and code as the action**: see its introduction.

It works like the first lab: each function you write sits in its own cell between a given
signature and docstring; replace `raise NotImplementedError(...)` with your code and run the test
cell below it (silence means it passed). More tests are hidden and run at grading; they only add
cases for what the task text already asks; Part C's closing note lists what they check.

**Your functions from the first lab.** Part C needs no Part B code to be graded: its tests hand
your functions a tool executor of their own. The live cells and Part D, however, use your
`validate_tool_call`, `execute_tool_call` and `run_agent`: paste them into the three cells of
C.0. Until you do, the live cells say so and use the course's own executor.

**No model needed.** Every cell that talks to a model runs on whichever backend is configured
and, when none answers, says what to start and replays a scripted model instead.
"""

SETUP_LINES = [
    "import re",
    "import jsonschema",
    "from lreact import ModelError, RunResult, configured_llm, describe_backend",
    "from lreact.tools import TOOLS",
    "from lreact.traces import SYSTEM_PROMPT",
]

# --------------------------------------------------------------------------------------------

md("c-engines-intro", r"""
### C.0 Engines, and your Part B functions

The inference engine is not part of your runtime (lecture: Part III, "Function Calling: Defining &
Advertising Tools"): the loop only sends it the history and the tool schemas and reads back an
`AssistantMessage`. So the same `llm(messages, tools)` protocol runs on several engines, and you
choose one **without touching code**, with environment variables set before you start JupyterLab:

| you run | set |
| --- | --- |
| `ollama serve` and `ollama pull qwen2.5:1.5b` | nothing (default), or `LREACT_MODEL=qwen2.5:1.5b` |
| `llama-server -m qwen2.5-1.5b-instruct-q4_k_m.gguf --jinja --port 8080` | `LREACT_BACKEND=openai` |
| `vllm serve Qwen/Qwen2.5-1.5B-Instruct --enable-auto-tool-choice --tool-call-parser hermes` | `LREACT_BACKEND=openai LREACT_BASE_URL=http://127.0.0.1:8000/v1` |

`lreact.configured_llm()` returns the model object for that choice (`OllamaLLM`, or
`OpenAICompatLLM` through the official `openai` client), and `check_setup()` checks the same
backend. Both keep the tool-call ids the engine sends (and assign unique ones when it sends
none), and both hand you the arguments **exactly** as the model wrote them, malformed or not.

Paste your first-lab `validate_tool_call`, `execute_tool_call` and `run_agent` into the next three
cells, each over its stub. They are not graded here; the live cells and Part D use them.
""")

answer("paste_validate_tool_call", r'''
# Paste your validate_tool_call from the first lab here (not graded in this notebook).

def validate_tool_call(call, tools):
    """The three checks in order; returns the parsed arguments or raises ToolCallError."""
    ### BEGIN SOLUTION
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
    return arguments
    ### END SOLUTION
''')

answer("paste_execute_tool_call", r'''
# Paste your execute_tool_call from the first lab here (not graded in this notebook).

def execute_tool_call(call, tools, registry):
    """Validate and run one call; any failure becomes an "ERROR: ..." result with the call's id."""
    ### BEGIN SOLUTION
    try:
        arguments = validate_tool_call(call, tools)
        if call.name not in registry:
            raise ToolCallError(f"no function is registered for tool {call.name!r}")
        content = str(registry[call.name](**arguments))
    except Exception as e:
        content = f"ERROR: {e}"
    return ToolResultMessage(call.id, content)
    ### END SOLUTION
''')

answer("paste_run_agent", r'''
# Paste your run_agent from the first lab here (not graded in this notebook).

def run_agent(user_input, llm, tools, registry, *, history=None, max_steps=8):
    """The Prompt-ToolLoop of the first lab: returns the final text or the budget message."""
    ### BEGIN SOLUTION
    if history is None:
        history = [SystemMessage(SYSTEM_PROMPT)]
    history.append(UserMessage(user_input))
    for _ in range(max_steps):
        response = llm(history, tools)
        history.append(response)
        if not response.tool_calls:
            return response.text
        for call in response.tool_calls:
            history.append(execute_tool_call(call, tools, registry))
    return "stopped: step budget exhausted"
    ### END SOLUTION
''')

code("c-live-setup", r'''
from lreact.labchecks import reference
REGISTRY = reference("tools", "REGISTRY")        # the tools' functions (the course's versions)
_run_tool = reference("traces", "run_tool")      # the course's executor, for the fallback

print(describe_backend())
live = check_setup(timeout=2)
print(live)
LIVE = live.ok


def execute(call):
    """Run one call with your execute_tool_call; until it exists, with the course's executor."""
    try:
        return execute_tool_call(call, TOOLS, REGISTRY)
    except NotImplementedError:
        print("  [execute_tool_call is not pasted in C.0 yet: using the course's executor]")
        return _run_tool(call, REGISTRY)


def make_llm(script):
    """The configured model when one answers, else a ScriptedLLM replaying ``script``."""
    if LIVE:
        return configured_llm(temperature=0, seed=0)
    print(f"[scripted model: no usable backend ({live.backend}), replaying {len(script)} replies]")
    return ScriptedLLM(script)


def show_trace(history):
    turn = 0
    for m in history:
        if isinstance(m, AssistantMessage):
            turn += 1
            if m.text:
                print(f"turn {turn} assistant: {m.text!r}")
            for call in m.tool_calls:
                print(f"turn {turn} assistant calls {call.name}({call.arguments})  [id {call.id}]")
        elif isinstance(m, ToolResultMessage):
            print(f"       tool result [id {m.tool_call_id}]: {m.content}")
        else:
            print(f"{m.role}: {m.content[:160]}")
''')

# --- C.1 format errors -----------------------------------------------------------------------

md("c-format-intro", r"""
### C.1 A tool call written as text

A model that is not tuned for tool use, or a small one, fails first on the *format* (lecture:
Part II, "In-Context Learning vs. Post-Training for ReAct": invalid actions, repeated actions and
refusals come first; a harness answers them with a validator, a repetition check and a step cap).
A frequent invalid action is a call the engine could not parse: the model printed its call as
**text**, so the reply has no `tool_calls`, and the first lab's loop returned it as the final
answer. Below are such replies. The first was captured from a real run (a 135M-parameter model
behind Ollama, asked for the weather in Berlin); the others are transcribed in the forms small
models are known to write. Note the first one: `Berlin` is not quoted, so the JSON is broken too.
""")

code("c-format-replies", r'''
SMALL_MODEL_REPLIES = [
    # (what it is, the reply text)
    ("captured from a 135M model", '<tool_call>\n{"name": "get_weather", "arguments": {"city": Berlin}}\n</tool_call>'),
    ("Qwen block, valid JSON", '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Berlin"}}\n</tool_call>'),
    ("prose, then a block cut off", 'I will check the weather for you.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Berlin"}'),
    ("Mistral block, as text", '[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Berlin"}}]</s>'),
    ("Mistral block, unquoted value", '[TOOL_CALLS] [{"name": "calculate", "arguments": {"expression": 17 * 3}}]'),
    ("bare JSON object", '{"name": "get_weather", "arguments": {"city": "Paris"}}'),
    ("bare JSON in a code fence", '```json\n{"name": "calculate", "arguments": {"expression": "2+2"}}\n```'),
    ("a genuine answer", "It's 12°C and rainy in Berlin."),
]
for what, reply in SMALL_MODEL_REPLIES:
    print(f"{what:28} {reply!r}")
''')

md("c-format-task", r"""
Write `format_error(text, tools)`. It gets the text of a reply **without** tool calls and the
advertised tool schemas, and returns `None` when the text is a genuine answer, or else the
**error observation** the loop will send back to the model. Three forms count as a call written
as text:

1. a Qwen block: the text contains `<tool_call>`; the JSON is what follows it, up to
   `</tool_call>` or the end of the text if the block was cut off;
2. a Mistral block: the text contains `[TOOL_CALLS]`; the JSON is what follows it, up to `</s>` or
   the end;
3. a bare JSON object: the text, stripped and taken out of a Markdown code fence (```` ``` ````
   or ```` ```json ````) if it is in one, starts with `{` and has a `"name"` key (in double or
   single quotes) whose value is the name of one of the `tools`.

The message must be useful to the model, and the tests read it: start it with `FORMAT ERROR: `,
name the form (`<tool_call>`, `[TOOL_CALLS]` or `bare JSON`), say `invalid JSON` exactly when
the JSON (stripped) does not parse with `json.loads`, and name the tool when a `"name"` value can
be read from the text. Tell the model what to do instead: make a real tool call, or answer in
plain text.
""")

answer("format_error", r'''
def format_error(text, tools):
    """None for a genuine answer; else the error observation for a tool call written as text
    (lecture: "In-Context Learning vs. Post-Training for ReAct", "Error Recovery in the Loop")."""
    ### BEGIN SOLUTION
    name_pattern = r"""["']name["']\s*:\s*["']([^"']*)["']"""
    stripped = text.strip()
    if "<tool_call>" in stripped:
        form = "a <tool_call> block"
        payload = stripped.split("<tool_call>", 1)[1].split("</tool_call>", 1)[0].strip()
    elif "[TOOL_CALLS]" in stripped:
        form = "a [TOOL_CALLS] block"
        payload = stripped.split("[TOOL_CALLS]", 1)[1].split("</s>", 1)[0].strip()
    else:
        fence = re.match(r"^```[a-zA-Z]*\s*\n?(.*?)\n?```$", stripped, re.S)
        body = fence.group(1).strip() if fence else stripped
        names = {tool["function"]["name"] for tool in tools}
        if not body.startswith("{") or not set(re.findall(name_pattern, body)) & names:
            return None
        form = "a bare JSON object"
        payload = body
    try:
        json.loads(payload)
        verdict = "Its JSON parses, but a call written as text is not run."
    except ValueError as e:
        verdict = f"It is invalid JSON ({e})."
    named = re.findall(name_pattern, payload)
    tool = f" of {named[0]!r}" if named else ""
    return (f"FORMAT ERROR: your reply wrote a tool call{tool} as text ({form}), so no tool "
            f"was run. {verdict} To use a tool, make a real tool call with JSON arguments; to "
            "answer, reply in plain text.")
    ### END SOLUTION
''')

FORMAT_HEAD = r'''
from lreact.tools import TOOLS as REF_TOOLS
from lreact.labchecks import text
hint = 'reread "In-Context Learning vs. Post-Training for ReAct": a call written as text is an invalid action to report, not an answer'


def reported(reply, tools=REF_TOOLS):
    got = format_error(reply, tools)
    assert got is not None, f"format_error({reply!r}) returned None: this reply is a tool call written as text\nHint: {hint}"
    got = text(got, f"format_error({reply!r})", hint)
    assert got.startswith("FORMAT ERROR: "), f"the message must start with 'FORMAT ERROR: ', got {got!r}\nHint: {hint}"
    return got


def answer_text(reply, tools=REF_TOOLS):
    got = format_error(reply, tools)
    assert got is None, f"format_error({reply!r}) must return None for a genuine answer, got {got!r}\nHint: {hint}"


def says(message, reply, form, broken, tool):
    assert form in message, f"for {reply!r} the message must name the form {form!r}: {message!r}\nHint: {hint}"
    if broken:
        assert "invalid JSON" in message, f"the JSON of {reply!r} does not parse: say 'invalid JSON'\nHint: {hint}"
    else:
        assert "invalid JSON" not in message, f"the JSON of {reply!r} parses: do not say 'invalid JSON'\nHint: {hint}"
    if tool:
        assert tool in message, f"the message for {reply!r} must name the tool {tool!r}\nHint: {hint}"
'''

test("test_format_error", 1, FORMAT_HEAD + r'''
captured = '<tool_call>\n{"name": "get_weather", "arguments": {"city": Berlin}}\n</tool_call>'
says(reported(captured), captured, "<tool_call>", True, "get_weather")
mistral = '[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Berlin"}}]</s>'
says(reported(mistral), mistral, "[TOOL_CALLS]", False, "get_weather")
bare = '{"name": "calculate", "arguments": {"expression": "2+2"}}'
says(reported(bare), bare, "bare JSON", False, "calculate")
answer_text("It's 12°C and rainy in Berlin.")
''')

test("test_format_error__forms", 2, FORMAT_HEAD + r'''
# The tests below are hidden: they run when the lab is graded.
### BEGIN HIDDEN TESTS
cases = [   # (reply, form, JSON broken, tool)
    ('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Berlin"}}\n</tool_call>', "<tool_call>", False, "get_weather"),
    ('I will check the weather for you.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Berlin"}', "<tool_call>", True, "get_weather"),
    ('Sure!<tool_call>{"name": "calculate", "arguments": {"expression": "17*3"}}</tool_call> Done.', "<tool_call>", False, "calculate"),
    ('<tool_call>\n</tool_call>', "<tool_call>", True, None),
    ('[TOOL_CALLS] [{"name": "calculate", "arguments": {"expression": 17 * 3}}]', "[TOOL_CALLS]", True, "calculate"),
    ('Let me look. [TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Oslo"}}]', "[TOOL_CALLS]", False, "get_weather"),
    ('[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Rome"}}', "[TOOL_CALLS]", True, "get_weather"),
    ('{"name": "get_weather", "arguments": {"city": "Paris"}}', "bare JSON", False, "get_weather"),
    ('  \n{"name": "get_weather", "arguments": {"city": "Paris", "unit": "fahrenheit"}}\n', "bare JSON", False, "get_weather"),
    ('```json\n{"name": "calculate", "arguments": {"expression": "2+2"}}\n```', "bare JSON", False, "calculate"),
    ('```\n{"name": "calculate", "arguments": {"expression": "2+"}\n```', "bare JSON", True, "calculate"),
    ("{'name': 'get_weather', 'arguments': {'city': 'Oslo'}}", "bare JSON", True, "get_weather"),
    ('{"name": "get_weather", "arguments": {"city": "Rome"}}\nLet me know if you need anything else!', "bare JSON", True, "get_weather"),
    ('{"arguments": {"city": "Rome"}, "name": "get_weather"}', "bare JSON", False, "get_weather"),
]
for reply, form, broken, tool in cases:
    says(reported(reply), reply, form, broken, tool)
for genuine in ["It's 12°C and rainy in Berlin.",
                "The cities I know are {Berlin, Paris, Rome}.",
                '{"city": "Berlin", "temp_c": 12, "condition": "rainy"}',
                '{"name": "Berlin", "population": 3850809}',
                'You can ask me to call get_weather with a city, e.g. {"name": "get_weather"}.',
                "I used a tool_call to find that out: 12°C.",
                ""]:
    answer_text(genuine)
# only the tools passed in count for a bare object
answer_text('{"name": "get_weather", "arguments": {"city": "Paris"}}', [REF_TOOLS[1]])
only_calc = '{"name": "calculate", "arguments": {"expression": "1"}}'
says(reported(only_calc, [REF_TOOLS[1]]), only_calc, "bare JSON", False, "calculate")
### END HIDDEN TESTS
''')

# --- C.2 repetition --------------------------------------------------------------------------

md("c-repeat-intro", r"""
### C.2 The same call again and again

The second error of an untuned model is a **repeated action**: it asks for the same call, gets
the same result, and asks again, until the step cap ends the run. The harness can see this
coming. Write `repeat_count(history)`: look at the **newest** assistant turn of the history; if
it requested no call, return `0`. Otherwise count how many assistant turns in a row, going back
from that one, requested the **same calls**: the same tool names with the same arguments, where
arguments are compared as parsed JSON (`{"city":"Berlin"}` and `{ "city": "Berlin" }` are the
same; arguments that do not parse are compared as text), and the calls of one turn are compared
regardless of their order, each call counting (sort them: a turn that asks for the same call
twice differs from one that asks for it once). Tool results between the turns do not interrupt the
count; an assistant turn with other calls (or none) ends it, and so does a user message: never
count back past the newest `UserMessage`.
""")

answer("repeat_count", r'''
def repeat_count(history):
    """How many assistant turns in a row, back from the newest, requested the same calls
    (lecture: "In-Context Learning vs. Post-Training for ReAct": a repetition check)."""
    ### BEGIN SOLUTION
    def signature(message):
        calls = []
        for call in message.tool_calls:
            try:
                arguments = json.dumps(json.loads(call.arguments), sort_keys=True)
            except ValueError:
                arguments = call.arguments
            calls.append((call.name, arguments))
        return sorted(calls)

    turns = []
    for m in reversed(history):
        if isinstance(m, UserMessage):
            break
        if isinstance(m, AssistantMessage):
            turns.append(m)
    if not turns or not turns[0].tool_calls:
        return 0
    newest = signature(turns[0])
    count = 0
    for m in turns:
        if signature(m) != newest:
            break
        count += 1
    return count
    ### END SOLUTION
''')

REPEAT_HEAD = r'''
from lreact import AssistantMessage, SystemMessage, ToolCall, ToolResultMessage, UserMessage
hint = 'reread "In-Context Learning vs. Post-Training for ReAct": count the same calls in a row, back from the newest assistant turn'
W = ("get_weather", '{"city": "Berlin"}')
P = ("get_weather", '{"city": "Paris"}')
C = ("calculate", '{"expression": "2 + 2"}')


def turn(tag, *calls, text=""):
    return AssistantMessage(text, [ToolCall(f"{tag}_{k}", n, a) for k, (n, a) in enumerate(calls)])


def results(tag, n):
    return [ToolResultMessage(f"{tag}_{k}", "some result") for k in range(n)]


def expect(history, n, what):
    got = repeat_count(history)
    assert type(got) is int, f"repeat_count must return an int, got {got!r}\nHint: {hint}"
    assert got == n, f"{what}: repeat_count returned {got}, expected {n}\nHint: {hint}"


START = [SystemMessage("You are a helpful assistant."), UserMessage("Weather in Berlin?")]
'''

test("test_repeat_count", 1, REPEAT_HEAD + r'''
expect(START, 0, "no assistant turn yet")
expect(START + [turn("a", W)], 1, "one call")
expect(START + [turn("a", W)] + results("a", 1) + [turn("b", W)], 2, "the same call twice, a result between")
expect(START + [turn("a", W), *results("a", 1), turn("b", W), *results("b", 1), turn("c", W)], 3, "three times")
expect(START + [turn("a", W), *results("a", 1), turn("b", P)], 1, "another city is another call")
expect(START + [turn("a", W), *results("a", 1), AssistantMessage("It's 12°C.")], 0, "the newest turn calls nothing")
''')

test("test_repeat_count__hidden", 1, REPEAT_HEAD + r'''
# The tests below are hidden: they run when the lab is graded.
### BEGIN HIDDEN TESTS
spaced = ("get_weather", '{ "city":"Berlin" }')
expect(START + [turn("a", W), *results("a", 1), turn("b", spaced)], 2, "the same arguments written with other spaces")
two = ("get_weather", '{"unit": "celsius", "city": "Berlin"}')
two_sorted = ("get_weather", '{"city": "Berlin", "unit": "celsius"}')
expect(START + [turn("a", two), turn("b", two_sorted)], 2, "the same arguments in another key order")
expect(START + [turn("a", W, P), *results("a", 2), turn("b", P, W)], 2, "the same set of calls in another order")
expect(START + [turn("a", W, P), *results("a", 2), turn("b", W)], 1, "a turn with fewer calls is different")
expect(START + [turn("a", W), *results("a", 1), turn("b", W, W)], 1, "a turn with the call twice is different")
expect(START + [turn("a", W), *results("a", 1), UserMessage("Again?"), turn("b", W)], 1, "never count past the newest user message")
expect(START + [turn("a", W), *results("a", 1), AssistantMessage("Hmm."), UserMessage("u"),
                turn("b", W), *results("b", 1), turn("c", W)], 2, "count from the newest user message on")
expect(START + [turn("a", W), *results("a", 1), turn("b", C), *results("b", 1), turn("c", W)], 1,
       "another call in between ends the run of repeats")
expect(START + [turn("a", W), AssistantMessage("FORMAT"), turn("c", W)], 1, "a turn without calls in between ends it")
bad = ("get_weather", '{"city": Berlin}')
expect(START + [turn("a", bad), *results("a", 1), turn("b", bad)], 2, "malformed arguments are compared as text")
expect(START + [turn("a", bad), *results("a", 1), turn("b", W)], 1, "malformed and valid arguments differ")
expect(START + [turn("a", ("calculate", '{"city": "Berlin"}')), turn("b", W)], 1, "the tool name counts too")
expect([], 0, "an empty history")
### END HIDDEN TESTS
''')

# --- C.3 the hardened loop -------------------------------------------------------------------

md("c-run-intro", r"""
### C.3 A loop that says how it ended

The first lab's `run_agent` returns a string: the answer, or `"stopped: step budget exhausted"`.
A caller cannot tell that message from a model that *says* it (lecture: Part II, "The Execution
Loop": the end of a run is inferred from the form of the response). The hardened loop returns a
record instead, `lreact.RunResult(answer, status, steps)`: `status` is `"answered"`,
`"step_budget"`, `"format_errors"` or `"repetition"`; `answer` is the final text when the run was
answered and `None` otherwise; `steps` is the number of model calls made.

Write `run_agent_hardened(user_input, llm, tools, execute, *, history=None, max_steps=8,
max_format_errors=3, max_repeats=3)`. It is the Prompt-ToolLoop with the harness built in:

1. `history=None` starts a fresh history `[SystemMessage(SYSTEM_PROMPT)]`; a given history is
   appended to in place. Append `UserMessage(user_input)`.
2. Up to `max_steps` times: call `llm(history, tools)` and append the response.
3. A response **without** calls: ask your `format_error(response.text, tools)`. `None` means it is
   the answer: return `RunResult(text, "answered", step)`. Otherwise it is a format error: if it
   is the `max_format_errors`-th **in a row**, return `RunResult(None, "format_errors", step)`;
   else append the error observation as a `UserMessage` (it answers no call, so it cannot be a
   tool result) and continue. A response with calls resets the count.
4. A response **with** calls: ask your `repeat_count(history)`. Below `max_repeats`, run each call
   with `execute(call)` (it returns the `ToolResultMessage`) and append the results in order.
   From `max_repeats` on, run nothing and answer each call with
   `ToolResultMessage(call.id, "ERROR: repeated call: ...")` saying what was repeated and how often,
   so the model is told and every call still has its result; if the count is **above**
   `max_repeats`, the model went on regardless: return `RunResult(None, "repetition", step)`
   after appending those results.
5. After `max_steps` calls without an end, return `RunResult(None, "step_budget", max_steps)`.

`execute` is a function you are given; in the tests it is the course's executor, so this cell is
graded on its own. In the live cells below it is your `execute_tool_call` from C.0.
""")

answer("run_agent_hardened", r'''
def run_agent_hardened(user_input, llm, tools, execute, *, history=None, max_steps=8,
                       max_format_errors=3, max_repeats=3):
    """The Prompt-ToolLoop with a format-error check, a repetition check and a step cap;
    returns a RunResult (lecture: "The Execution Loop", "Error Recovery in the Loop")."""
    ### BEGIN SOLUTION
    if history is None:
        history = [SystemMessage(SYSTEM_PROMPT)]
    history.append(UserMessage(user_input))
    format_errors = 0
    for step in range(1, max_steps + 1):
        response = llm(history, tools)
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
                    f"ERROR: repeated call: {call.name} with arguments {call.arguments} was "
                    f"requested {repeats} times in a row; its result will not change. Use the "
                    "results you have, or try something different.")))
            if repeats > max_repeats:
                return RunResult(None, "repetition", step)
            continue
        for call in response.tool_calls:
            history.append(execute(call))
    return RunResult(None, "step_budget", max_steps)
    ### END SOLUTION
''')

RUN_HEAD = r'''
import json
from lreact import AssistantMessage, RunResult, ScriptedLLM, SystemMessage, ToolCall, ToolResultMessage, UserMessage
from lreact.labchecks import reference   # private copies: the public tools are disabled while grading
from lreact.labchecks import assert_model_calls, assert_paired, plain, text
REF_TOOLS, REF_REGISTRY = reference("tools", "TOOLS"), reference("tools", "REGISTRY")
_run_tool = reference("traces", "run_tool")
executed = []


def execute(call):          # the course's executor, on the test's side
    executed.append(call.id)
    return _run_tool(call, REF_REGISTRY)


def outcome(result):
    assert isinstance(result, RunResult), \
        f"run_agent_hardened must return a RunResult, got {type(result).__name__}\nHint: {hint}"
    answer = None if result.answer is None else text(result.answer, "RunResult.answer", hint)
    return (answer, text(result.status, "RunResult.status", hint), int(result.steps))


def expect(result, answer, status, steps, what):
    got = outcome(result)
    assert got == (answer, status, steps), \
        f"{what}: run_agent_hardened returned RunResult{got}, expected RunResult{(answer, status, steps)}\nHint: {hint}"


def call(tag, name="get_weather", **arguments):
    return AssistantMessage(tool_calls=[ToolCall(tag, name, json.dumps(arguments or {"city": "Berlin"}))])


CAPTURED = '<tool_call>\n{"name": "get_weather", "arguments": {"city": Berlin}}\n</tool_call>'
MISTRAL = '[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Berlin"}}]</s>'
BARE = '{"name": "get_weather", "arguments": {"city": "Berlin"}}'
SYSTEM = SystemMessage("You are a helpful assistant.")
'''

test("test_run_agent_hardened", 2, RUN_HEAD + r'''
hint = 'reread "Error Recovery in the Loop": a call written as text is fed back as an error, and the loop goes on'
llm = ScriptedLLM([AssistantMessage(CAPTURED), call("call_1"), AssistantMessage("It's 12°C and rainy in Berlin.")])
history = [SYSTEM]
result = run_agent_hardened("What's the weather in Berlin?", llm, REF_TOOLS, execute, history=history)
expect(result, "It's 12°C and rainy in Berlin.", "answered", 3, "a format error, a repaired call, an answer")
h = plain(history, hint)
assert [m[0] for m in h] == ["system", "user", "assistant", "user", "assistant", "tool", "assistant"], \
    f"the history has roles {[m[0] for m in h]}: the error goes back as a UserMessage after the bad turn\nHint: {hint}"
assert h[3][1].startswith("FORMAT ERROR: "), f"the error observation is {h[3][1]!r}\nHint: {hint}"
assert h[5] == ("tool", "call_1", "12°C, rainy"), f"the repaired call's result is {h[5]}\nHint: {hint}"
assert executed == ["call_1"], f"execute was called for {executed}\nHint: {hint}"
assert_model_calls(llm, history, REF_TOOLS, hint)
''')

test("test_run_agent_hardened__format_errors", 2, RUN_HEAD + r'''
hint = 'reread "In-Context Learning vs. Post-Training for ReAct": stop after max_format_errors format errors in a row'
# The tests below are hidden: they run when the lab is graded.
### BEGIN HIDDEN TESTS
llm = ScriptedLLM([AssistantMessage(CAPTURED), AssistantMessage(MISTRAL), AssistantMessage(BARE)])
history = [SYSTEM]
expect(run_agent_hardened("Berlin?", llm, REF_TOOLS, execute, history=history), None, "format_errors", 3,
       "three format errors in a row (the default limit)")
h = plain(history, hint)
assert [m[0] for m in h] == ["system", "user", "assistant", "user", "assistant", "user", "assistant"], \
    f"roles {[m[0] for m in h]}: feedback after the first two errors, none after the last\nHint: {hint}"
for i, reply in [(3, CAPTURED), (5, MISTRAL)]:
    assert h[i][1] == format_error(reply, REF_TOOLS), f"the feedback must be format_error's message\nHint: {hint}"
assert executed == [] and len(llm.calls) == 3, f"nothing runs; the model was called {len(llm.calls)} times\nHint: {hint}"
assert_model_calls(llm, history, REF_TOOLS, hint)

llm = ScriptedLLM([AssistantMessage(BARE)])
history = [SYSTEM]
expect(run_agent_hardened("Berlin?", llm, REF_TOOLS, execute, history=history, max_format_errors=1),
       None, "format_errors", 1, "max_format_errors=1")
assert [m[0] for m in plain(history, hint)] == ["system", "user", "assistant"], "stop at once\nHint: " + hint

# not in a row: a good call in between resets the count
llm = ScriptedLLM([AssistantMessage(CAPTURED), call("g1"), AssistantMessage(MISTRAL), call("g2", city="Paris"),
                   AssistantMessage(BARE), AssistantMessage("Berlin 12°C, Paris 15°C.")])
history = [SYSTEM]
expect(run_agent_hardened("Berlin and Paris?", llm, REF_TOOLS, execute, history=history, max_format_errors=2),
       "Berlin 12°C, Paris 15°C.", "answered", 6, "format errors separated by good calls")
assert executed == ["g1", "g2"], f"executed {executed}\nHint: {hint}"
assert_paired(history, hint)
assert_model_calls(llm, history, REF_TOOLS, hint)

# a genuine answer that merely looks technical is an answer
llm = ScriptedLLM([AssistantMessage('{"city": "Berlin", "temp_c": 12}')])
expect(run_agent_hardened("Berlin as JSON?", llm, REF_TOOLS, execute, history=[SYSTEM]),
       '{"city": "Berlin", "temp_c": 12}', "answered", 1, "JSON that names no tool is an answer")
### END HIDDEN TESTS
''')

test("test_run_agent_hardened__repetition", 2, RUN_HEAD + r'''
hint = 'reread "In-Context Learning vs. Post-Training for ReAct": at max_repeats tell the model; above it, stop'
# The tests below are hidden: they run when the lab is graded.
### BEGIN HIDDEN TESTS
def same(n, tag):
    return [call(f"{tag}{i}") for i in range(n)]

# told at the third request, the model changes course
llm = ScriptedLLM(same(3, "r") + [call("p", city="Paris"), AssistantMessage("Paris is at 15°C.")])
history = [SYSTEM]
expect(run_agent_hardened("Weather?", llm, REF_TOOLS, execute, history=history), "Paris is at 15°C.", "answered", 5,
       "the same call three times, then another")
results = [m for m in plain(history, hint) if m[0] == "tool"]
assert [r[1] for r in results] == ["r0", "r1", "r2", "p"], f"every call gets its result: {results}\nHint: {hint}"
assert results[0][2] == results[1][2] == "12°C, rainy", "the first two requests run\nHint: " + hint
assert results[2][2].startswith("ERROR: repeated call"), f"the third is answered with {results[2][2]!r}\nHint: {hint}"
assert executed == ["r0", "r1", "p"], f"executed {executed}: the repeated call must not run\nHint: {hint}"
assert_paired(history, hint)
assert_model_calls(llm, history, REF_TOOLS, hint)

# it goes on: stop, with every call answered
executed.clear()
llm = ScriptedLLM(same(4, "s"))
history = [SYSTEM]
expect(run_agent_hardened("Weather?", llm, REF_TOOLS, execute, history=history), None, "repetition", 4,
       "the same call four times")
results = [m for m in plain(history, hint) if m[0] == "tool"]
assert len(results) == 4 and all(r[2].startswith("ERROR: repeated call") for r in results[2:]), \
    f"results {results}\nHint: {hint}"
assert executed == ["s0", "s1"], f"executed {executed}\nHint: {hint}"
assert_paired(history, hint)

# max_repeats=2, parallel calls repeated as a set
executed.clear()
pair = lambda t: AssistantMessage(tool_calls=[ToolCall(f"{t}a", "get_weather", '{"city": "Rome"}'),
                                              ToolCall(f"{t}b", "calculate", '{"expression": "1+1"}')])
llm = ScriptedLLM([pair("x"), pair("y"), pair("z")])
history = [SYSTEM]
expect(run_agent_hardened("Rome and 1+1?", llm, REF_TOOLS, execute, history=history, max_repeats=2),
       None, "repetition", 3, "a pair of calls three times with max_repeats=2")
assert executed == ["xa", "xb"], f"executed {executed}\nHint: {hint}"
assert_paired(history, hint)
assert_model_calls(llm, history, REF_TOOLS, hint)
### END HIDDEN TESTS
''')

test("test_run_agent_hardened__ending", 2, RUN_HEAD + r'''
hint = 'reread "The Execution Loop": a RunResult says how the run ended; the step cap still holds'
# The tests below are hidden: they run when the lab is graded.
### BEGIN HIDDEN TESTS
def counting(n, tag):
    return [call(f"{tag}{i}", "calculate", expression=f"{i} + 1") for i in range(n)]

for max_steps in (3, 1):
    executed.clear()
    llm = ScriptedLLM(counting(max_steps, f"b{max_steps}_"))
    history = [SYSTEM]
    expect(run_agent_hardened("Count.", llm, REF_TOOLS, execute, history=history, max_steps=max_steps),
           None, "step_budget", max_steps, f"max_steps={max_steps}")
    assert len(llm.calls) == max_steps and len(executed) == max_steps, f"{len(llm.calls)} model calls\nHint: {hint}"
    assert_paired(history, hint)
llm = ScriptedLLM(counting(8, "d"))
expect(run_agent_hardened("Count.", llm, REF_TOOLS, execute, history=[SYSTEM]), None, "step_budget", 8,
       "the default max_steps is 8")

# a model that SAYS it stopped has answered
llm = ScriptedLLM([AssistantMessage("stopped: step budget exhausted")])
expect(run_agent_hardened("Say it.", llm, REF_TOOLS, execute, history=[SYSTEM]),
       "stopped: step budget exhausted", "answered", 1, "the model's own words are an answer")

# history=None: a fresh history with the system prompt
llm = ScriptedLLM([AssistantMessage("Hello.")])
expect(run_agent_hardened("Hi", llm, REF_TOOLS, execute), "Hello.", "answered", 1, "an immediate answer")
sent = plain(list(llm.calls[0]["messages"]), hint)
assert [m[0] for m in sent] == ["system", "user"] and sent[0][1].strip() and sent[1] == ("user", "Hi"), \
    "without a history, the model gets the system prompt and the input\nHint: " + hint

# continuing a history: appended in place
history = [SYSTEM, UserMessage("Weather in Berlin?"), call("old"), ToolResultMessage("old", "12°C, rainy"),
           AssistantMessage("12°C and rainy.")]
before = plain(history, hint)
llm = ScriptedLLM([call("new", city="Oslo"), AssistantMessage("Oslo: -3°C, snowy.")])
expect(run_agent_hardened("And Oslo?", llm, REF_TOOLS, execute, history=history), "Oslo: -3°C, snowy.", "answered", 2,
       "a second question in the same history")
h = plain(history, hint)
assert h[:5] == before and h[5] == ("user", "And Oslo?") and h[7] == ("tool", "new", "-3°C, snowy"), \
    f"the new turn must be appended to the given history: {h[5:]}\nHint: {hint}"
assert_model_calls(llm, history, REF_TOOLS, hint)
### END HIDDEN TESTS
''')

md("c-live-intro", r"""
**The harness on a real model.** Three questions, each run twice: with your first-lab
`run_agent` and with `run_agent_hardened`. On a small model (try `LREACT_MODEL=qwen2.5:0.5b`) you
may see calls written as text; the first loop returns them as if they were answers, the hardened
one feeds them back. Without a backend the scripted model replays such replies (the captured
135M reply among them), so you can see both loops handle the same turns.
""")

code("c-live-run", r'''
_weather = reference("tools", "get_weather")
SCRIPTS = {
    "What's the weather in Berlin?": [
        AssistantMessage(SMALL_MODEL_REPLIES[0][1]),
        AssistantMessage(tool_calls=[ToolCall("call_b1", "get_weather", '{"city": "Berlin"}')]),
        AssistantMessage(f"In Berlin it is {_weather('Berlin')}."),
    ],
    "Is it warmer in Madrid or in Oslo?": [
        AssistantMessage(tool_calls=[ToolCall("call_m1", "get_weather", '{"city": "Madrid"}')]),
        AssistantMessage(tool_calls=[ToolCall("call_m2", "get_weather", '{"city": "Madrid"}')]),
        AssistantMessage(tool_calls=[ToolCall("call_m3", "get_weather", '{"city": "Madrid"}')]),
        AssistantMessage(tool_calls=[ToolCall("call_o1", "get_weather", '{"city": "Oslo"}')]),
        AssistantMessage(f"Madrid ({_weather('Madrid')}) is warmer than Oslo ({_weather('Oslo')})."),
    ],
    "What is 17 * 3?": [AssistantMessage(SMALL_MODEL_REPLIES[4][1])] * 3,
}
for question, script in SCRIPTS.items():
    print("=" * 90)
    print("QUESTION:", question)
    for name in ("run_agent", "run_agent_hardened"):
        history = [SystemMessage(SYSTEM_PROMPT)]
        try:
            if name == "run_agent":
                outcome = run_agent(question, make_llm(script), TOOLS, REGISTRY, history=history)
            else:
                outcome = run_agent_hardened(question, make_llm(script), TOOLS, execute, history=history)
        except NotImplementedError:
            print(f"-- {name}: not written yet (C.0 / C.3)")
            continue
        except ModelError as e:
            print(f"-- {name}: the model could not answer: {e}")
            continue
        print(f"-- {name} returned {outcome!r}")
        show_trace(history[2:])
''')

# --- C.4 structured outputs ------------------------------------------------------------------

md("c-structured-intro", r"""
### C.4 Structured outputs: the grammar on the engine's side

The first lab's constrained decoder masked every token the grammar forbids, so its output always
parsed. Engines offer the same as **structured outputs**: Ollama's `format` takes a JSON schema,
OpenAI-compatible engines take `response_format` (lecture: Part III, "Definition: Native Tool
Calling"; Part I, "Constrained Decoding"). The next cell first computes the contrast on the toy
grammar model of the first lab (`lreact.grammar`): seeded samples, free and masked. Then, when a
backend answers, it asks the configured model N times for a tool call as plain JSON, once free and
once constrained to the schema below, and counts how many replies parse and validate against it.
The validator keeps its three checks either way
(lecture: Part III, "Validating Tool Calls: Parsing vs. Policy"): constrained decoding makes a
malformed call unlikely to impossible, but the runtime does not rely on it.
""")

code("c-structured", r'''
from lreact import grammar

CALL_SCHEMA = {"type": "object", "additionalProperties": False, "required": ["name", "arguments"],
               "properties": {"name": {"type": "string", "enum": ["get_weather"]},
                              "arguments": {"type": "object", "required": ["city"], "additionalProperties": False,
                                            "properties": {"city": {"type": "string"}}}}}
N = 10


def valid_call(reply):
    try:
        jsonschema.validate(json.loads(reply), CALL_SCHEMA)
        return True
    except (ValueError, jsonschema.ValidationError):
        return False


print("The toy grammar model of the first lab (lreact.grammar), 200 seeded samples each:")
rng = np.random.default_rng(0)


def sample(constrained, max_len=20):
    ids, state = [], grammar.start()
    for _ in range(max_len):
        z = grammar.toy_logits(ids)
        if constrained:
            mask = np.full(len(z), -np.inf)
            mask[grammar.allowed_tokens(state)] = 0.0
            z = z + mask
        p = np.exp(z - z.max())
        token = int(rng.choice(len(z), p=p / p.sum()))
        if grammar.VOCAB[token] == grammar.EOS:
            break
        ids.append(token)
        if constrained:
            state = grammar.advance(state, token)
    return grammar.detokenize(ids)


for label, constrained in [("free", False), ("constrained", True)]:
    texts = [sample(constrained) for _ in range(200)]
    ok = sum(grammar.parses(t) for t in texts)
    print(f"  {label:12}: {ok}/200 parse; e.g. {texts[0]!r}")

if LIVE:
    print(f"\nThe configured model ({describe_backend()}), {N} replies each at temperature 1:")
    model = configured_llm(temperature=1.0)
    ask = [SystemMessage('Reply with only a JSON object {"name": "get_weather", "arguments": {"city": ...}}.'),
           UserMessage("What's the weather in Berlin?")]
    try:
        for label, schema in [("free", None), ("with the schema", CALL_SCHEMA)]:
            replies = [model.chat_text(ask, json_schema=schema) for _ in range(N)]
            ok = sum(valid_call(r) for r in replies)
            print(f"  {label:16}: {ok}/{N} parse and validate; e.g. {replies[0][:70]!r}")
    except ModelError as e:
        print("The model could not answer:", e)
else:
    print("\nNo backend answers (see C.0): start one to measure the same on a real model.")
''')

# --- C.5 compaction --------------------------------------------------------------------------

md("c-compact-intro", r"""
### C.5 Compaction that keeps pairs

The history only grows, and the whole context must fit the window; when it no longer does, the
runtime compacts it, and may drop or summarise turns **provided a tool call and its result stay
together** (lecture: Part IV, "Actual Context Contents", "The Context Budget"). Write
`compact_history(history, budget, count_tokens)`. `count_tokens(message)` gives the tokens of one
message; the size of a history is the sum over its messages.

- If the history fits (`<= budget`), return a copy of it, unchanged.
- Otherwise keep the system prompt (the first message, if it is a `SystemMessage`), then one note
  `UserMessage(f"[{n} earlier messages were removed to fit the context]")`, where `n` is the number
  of messages removed, then the **newest** messages, as many as fit together with the system
  prompt and the note.
- The newest messages are taken in **units**, from the end backwards: an assistant turn with
  calls and the tool results that follow it form one unit, kept or removed whole; every other
  message is a unit of its own. Stop at the first unit that would not fit (what you keep is a
  contiguous run of the newest messages).
- If not even the system prompt, the note and the newest unit fit, raise `ValueError`.
- Never change the list you are given.
""")

answer("compact_history", r'''
def compact_history(history, budget, count_tokens):
    """A copy of ``history`` that fits ``budget`` tokens: the system prompt, a note, and the
    newest units, never a call without its result (lecture: "Actual Context Contents")."""
    ### BEGIN SOLUTION
    history = list(history)
    if sum(count_tokens(m) for m in history) <= budget:
        return history
    head = history[:1] if history and isinstance(history[0], SystemMessage) else []
    units = []
    for m in history[len(head):]:
        if isinstance(m, ToolResultMessage) and units and isinstance(units[-1][0], AssistantMessage) \
                and units[-1][0].tool_calls:
            units[-1].append(m)
        else:
            units.append([m])
    kept = None
    for i in range(len(units) - 1, -1, -1):
        removed = sum(len(u) for u in units[:i])
        note = [UserMessage(f"[{removed} earlier messages were removed to fit the context]")] if removed else []
        candidate = head + note + [m for u in units[i:] for m in u]
        if sum(count_tokens(m) for m in candidate) > budget:
            break
        kept = candidate
    if kept is None:
        raise ValueError(f"a budget of {budget} tokens cannot hold the system prompt, the note and the newest turn")
    return kept
    ### END SOLUTION
''')

COMPACT_HEAD = r'''
import json
import numpy as np
from lreact import AssistantMessage, SystemMessage, ToolCall, ToolResultMessage, UserMessage
from lreact.labchecks import reference, assert_paired, plain
from lreact.checks import assert_raises
REF_COMPACT = reference("harness", "compact_history")
hint = 'reread "Actual Context Contents": keep the system prompt and the newest turns; a call and its results stay together'


def count_tokens(m):          # about 4 characters a token, and 1 for the message itself
    body = m.content if not isinstance(m, AssistantMessage) else \
        m.text + "".join(c.name + c.arguments for c in m.tool_calls)
    return 1 + len(body) // 4


def check(history, budget, what):
    before = plain(history, hint)
    expected = plain(REF_COMPACT(history, budget, count_tokens), hint)
    result = compact_history(history, budget, count_tokens)
    assert plain(history, hint) == before, f"{what}: compact_history changed the list it was given\nHint: {hint}"
    assert isinstance(result, list), f"{what}: return a list, got {type(result).__name__}\nHint: {hint}"
    got = plain(result, hint)
    size = sum(count_tokens(m) for m in result)
    assert size <= budget, f"{what}: the result has {size} tokens, more than the budget {budget}\nHint: {hint}"
    assert_paired(result, hint)
    if before and before[0][0] == "system":
        assert got[:1] == before[:1], f"{what}: the system prompt must stay first\nHint: {hint}"
    assert got == expected, (f"{what} (budget {budget}): got roles {[m[0] for m in got]}, expected "
                             f"{[m[0] for m in expected]}; got {got[:3]}...\nHint: {hint}")


def trace():
    return [SystemMessage("You are a helpful assistant. Answer briefly."),
            UserMessage("Is it warmer in Madrid or in Oslo?"),
            AssistantMessage("", [ToolCall("m", "get_weather", '{"city": "Madrid"}'),
                                  ToolCall("o", "get_weather", '{"city": "Oslo"}')]),
            ToolResultMessage("m", "24°C, sunny"), ToolResultMessage("o", "-3°C, snowy"),
            AssistantMessage("Madrid, at 24°C; Oslo is at -3°C."),
            UserMessage("And how much warmer is that?"),
            AssistantMessage("", [ToolCall("c", "calculate", '{"expression": "24 - (-3)"}')]),
            ToolResultMessage("c", "27"),
            AssistantMessage("27 degrees warmer.")]
'''

test("test_compact_history", 1, COMPACT_HEAD + r'''
h = trace()
full = sum(count_tokens(m) for m in h)
check(h, full, "a history that fits")
for budget in (full - 1, 60, 45, 35):
    check(h, budget, "the two-question trace")
got = plain(compact_history(h, 45, count_tokens), hint)
assert got[1][0] == "user" and got[1][1].startswith("[") and "earlier messages were removed" in got[1][1], \
    f"after the system prompt comes the note, got {got[1]}\nHint: {hint}"
''')

test("test_compact_history__random", 2, COMPACT_HEAD + r'''
# The tests below are hidden: they run when the lab is graded.
### BEGIN HIDDEN TESTS
rng = np.random.default_rng(20261201)
words = ["Berlin", "rainy", "12°C", "the", "weather", "is", "Paris", "sunny", "and", "what", "about"]


def say(k):
    return " ".join(rng.choice(words, size=k))


def random_history(n):
    h = [SystemMessage(say(int(rng.integers(0, 12))))] if rng.random() < 0.8 else []
    for t in range(int(rng.integers(1, 4))):
        h.append(UserMessage(say(int(rng.integers(1, 10)))))
        for s in range(int(rng.integers(0, 3))):
            calls = [ToolCall(f"id{n}_{t}_{s}_{k}", "get_weather", json.dumps({"city": say(1)}))
                     for k in range(int(rng.integers(1, 4)))]
            h.append(AssistantMessage(say(int(rng.integers(0, 4))), calls))
            h += [ToolResultMessage(c.id, say(int(rng.integers(1, 8)))) for c in calls]
        if rng.random() < 0.7:
            h.append(AssistantMessage(say(int(rng.integers(1, 10)))))
    return h


checked = refused = 0
for n in range(80):
    h = random_history(n)
    full = sum(count_tokens(m) for m in h)
    budget = int(rng.integers(max(1, full // 4), full + 2))
    try:
        REF_COMPACT(h, budget, count_tokens)
    except ValueError:
        assert_raises(ValueError, compact_history, h, budget, count_tokens,
                      name=f"random history {n} with a budget too small for its newest turn", hint=hint)
        refused += 1
        continue
    check(h, budget, f"random history {n}")
    checked += 1
assert checked > 40, "the random cases must mostly be compactable"
### END HIDDEN TESTS
''')

test("test_compact_history__edges", 1, COMPACT_HEAD + r'''
# The tests below are hidden: they run when the lab is graded.
### BEGIN HIDDEN TESTS
h = trace()
check(h, 10 ** 6, "a history far below the budget")
for budget in (19, 30, 50):
    check(h[1:], budget, "a history without a system prompt")
    check([SystemMessage("s")] + h[1:], budget + 1, "a short system prompt")
chat = [SystemMessage("s"), UserMessage("Hello there, how are you today?"),
        AssistantMessage("Fine, thanks for asking! How can I help?")] + h[1:5]
for budget in (36, 44, 45, 50):
    check(chat, budget, "the newest unit is an assistant turn with two results")
check(h, 35, "only the last answer fits")
assert_raises(ValueError, compact_history, h, 5, count_tokens, name="a budget below the system prompt", hint=hint)
big = h[:2] + [AssistantMessage("", [ToolCall("x", "get_weather", '{"city": "Berlin"}')]),
               ToolResultMessage("x", "y" * 400)]
assert_raises(ValueError, compact_history, big, 60, count_tokens, name="a newest unit larger than the budget", hint=hint)
### END HIDDEN TESTS
''')

code("c-compact-demo", r'''
from lreact.traces import approx_tokens, multi_tool_trace


def tokens_of(m):
    body = m.content if not isinstance(m, AssistantMessage) else \
        m.text + "".join(c.name + c.arguments for c in m.tool_calls)
    return 1 + approx_tokens(body)


long_history, _ = multi_tool_trace()
size = sum(map(tokens_of, long_history))
try:
    for budget in (size, size * 3 // 4, size // 2):
        short = compact_history(long_history, budget, tokens_of)
        print(f"budget {budget:4}: {len(long_history)} -> {len(short)} messages, "
              f"{size} -> {sum(map(tokens_of, short))} tokens")
    show_trace(compact_history(long_history, size // 2, tokens_of))
except NotImplementedError:
    print("Write compact_history first.")
except ValueError as e:
    print("compact_history:", e)
''')

md("c-closing", r"""
#### Part C: points and what the hidden tests check

**Points.** 17: `format_error` 3, `repeat_count` 2, `run_agent_hardened` 8, `compact_history` 4.
`run_agent_hardened` uses your `format_error` and `repeat_count`: get those right first. A test
cell scores its points only if it runs without an error.

- `format_error`: Qwen blocks with valid and broken JSON, with prose around them, cut off or
  empty; Mistral blocks with and without `</s>`, valid and broken; bare objects in and out of
  code fences, with single quotes, with a sentence after them, with `"name"` not first; genuine
  answers with braces, JSON data that names no tool, a tool's name mentioned in prose, the empty
  text; only the tools passed in count.
- `repeat_count`: arguments with other spacing or key order, parallel calls in another order,
  turns with fewer or duplicated calls, the newest user message as the limit, another call or a
  turn without calls in between, malformed arguments, another tool with the same arguments, an
  empty history.
- `run_agent_hardened`, driven by the scripted model with the course's executor; each checks the
  `RunResult`, the history, the pairing and what the model received: three format errors in a
  row (feedback is your `format_error`'s message, none after the last), `max_format_errors=1`,
  errors separated by good calls, JSON data as an answer; a call repeated three times then a
  change of course, four times (stop), a pair of parallel calls with `max_repeats=2`; the step
  cap (3, 1 and the default 8), a model that says "stopped", `history=None`, a continued history.
- `compact_history`: 80 seeded random histories (one to three questions, up to two call turns of
  one to three parallel calls each) at random budgets, compared with the course's version, with
  budget, pairing and system-prompt checks; a copy when it fits, no system prompt, a two-result
  newest unit, budgets too small for the system prompt or the newest unit.
""")


def main():
    path = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else NOTEBOOK
    nb = nbformat.read(path, as_version=4)
    ids = [c.id for c in nb.cells]
    for need in ("lab2-title", "lab2-setup", "part-c-intro", "part-d-intro"):
        if need not in ids:
            raise SystemExit(f"{path}: no cell {need!r}; the skeleton is not as expected")
    cells = [c for c in nb.cells if not c.id.startswith("c-") and
             not ((c.metadata.get("nbgrader") or {}).get("grade_id", "") in
                  {cid for cid, *_ in CELLS})]
    out = []
    for c in cells:
        if c.id == "lab2-title":
            c.source = TITLE.strip("\n")
        if c.id == "lab2-setup":
            lines = c.source.split("\n")
            for line in SETUP_LINES:
                if line not in lines:
                    lines.append(line)
            c.source = "\n".join(lines)
        out.append(c)
        if c.id == "part-c-intro":
            for cell_id, kind, source, meta in CELLS:
                new = (nbformat.v4.new_markdown_cell(source) if kind == "markdown"
                       else nbformat.v4.new_code_cell(source))
                new.id = cell_id.replace("_", "-") if meta is None else cell_id
                if meta is not None:
                    new.metadata["nbgrader"] = dict(meta)
                    new.id = "c-" + cell_id.replace("_", "-")
                out.append(new)
    nb.cells = out
    for c in nb.cells:
        if c.cell_type == "code":
            c.outputs, c.execution_count = [], None
    nbformat.validate(nb)
    nbformat.write(nb, path)
    print(f"wrote {len(CELLS)} Part C cells into {path}")


if __name__ == "__main__":
    main()
