"""The labs' own agent loops on a real model through the embedded backend (tests/test_embedded.py
has the backend itself): the first lab's run_agent, the second lab's run_agent_hardened and its
text ReAct loop, taken from the solution notebooks, on varied questions.  Every run ends, the
history's pairing holds (the lab's check_pairing), nothing but lreact.ModelError escapes.  What
the runs did is written to artifacts/embedded/real-model-runs.json (runs, model errors, tool calls,
format errors): the figures of the closing note.
"""
from __future__ import annotations

import contextlib
import io
import json

import nbformat
import pytest

import lreact
from lreact import (AssistantMessage, ModelError, SystemMessage, ToolCall, ToolResultMessage, UserMessage)
from lreact.engines import engine_text
from lreact.tools import TOOLS
from test_embedded import ROOT, embedded_env, real_model  # noqa: F401 (a fixture)

ARTIFACTS = ROOT / "artifacts" / "embedded"
pytestmark = [real_model, pytest.mark.slow]


def _exec_cells(path, keep, extra=(), prelude=""):
    nb = nbformat.read(path, as_version=4)
    ns: dict = {}
    exec(prelude, ns)
    with contextlib.redirect_stdout(io.StringIO()):
        for cell in nb.cells:
            grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
            if cell.cell_type == "code" and (cell.id in keep or grade_id in extra):
                exec(compile(cell.source, cell.id, "exec"), ns)
    return ns


@pytest.fixture(scope="module")
def lab1():
    return _exec_cells(ROOT / "solutions/lecture-ReAct-lab/lecture-ReAct-lab.ipynb",
                       {"setup", "registry", "system-prompt"},
                       ("get_weather", "calculate", "validate_tool_call", "execute_tool_call",
                        "run_agent", "check_pairing"))


@pytest.fixture(scope="module")
def lab2():
    return _exec_cells(ROOT / "solutions/lecture-ReAct-lab2/lecture-ReAct-lab2.ipynb",
                       {"lab2-setup"},
                       ("paste_validate_tool_call", "paste_execute_tool_call", "paste_run_agent",
                        "check_pairing", "format_error", "repeat_count", "split_reasoning",
                        "run_agent_hardened", "parse_react_step", "run_react_text"),
                       # what Part D's setup cell imports (it also runs check_setup: not here)
                       prelude="from lreact.textreact import EXEMPLAR, STOP")


class RunLog:
    """What the real-model runs did, for the report (artifacts/embedded/real-model-runs.json)."""

    def __init__(self):
        self.runs = []

    def add(self, **row):
        self.runs.append(row)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        summary = {"runs": len(self.runs),
                   "model_errors": sum(r["outcome"] == "ModelError" for r in self.runs),
                   "tool_calls": sum(r["tool_calls"] for r in self.runs),
                   "format_errors": sum(r["format_errors"] for r in self.runs),
                   "pairing_held": all(r["pairing"] for r in self.runs)}
        (ARTIFACTS / "real-model-runs.json").write_text(
            json.dumps({"summary": summary, "runs": self.runs}, indent=1, ensure_ascii=False))


@pytest.fixture(scope="module")
def run_log():
    return RunLog()


PRIMER = [UserMessage("What's the weather in Paris?"),
          AssistantMessage(tool_calls=[ToolCall("call_p1", "get_weather", '{"city": "Paris"}')]),
          ToolResultMessage("call_p1", "15°C, cloudy"), AssistantMessage("15°C and cloudy.")]
TIME_TOOL = {"type": "function", "function": {
    "name": "get_time", "description": "The current time in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}
QUESTIONS = [   # (label, question, tools, few-shot primer before the question)
    ("weather", "What's the weather in Berlin?", TOOLS, []),
    ("arithmetic", "What is (17 + 25) * 3?", TOOLS, []),
    ("two tools", "How many degrees warmer is it in Madrid than in Oslo?", TOOLS, []),
    ("no tool", "Tell me a short joke about cats.", TOOLS, []),
    ("no tools advertised", "What's the weather in Rome?", [], []),
    ("gibberish", "qz'' ]]{{ vbnm §§ <tool_call> ????", TOOLS, []),
    ("empty input", "", TOOLS, []),
    ("unknown tool", "What time is it in Tokyo? Use get_time.", TOOLS + [TIME_TOOL], []),
    ("few-shot weather", "What's the weather in Cairo?", TOOLS, PRIMER),
    ("few-shot two cities", "And in Vienna and in London?", TOOLS, PRIMER),
    ("beyond the context window", "Summarise: " + "the weather is fine today. " * 700, TOOLS, []),
    ("first call by a grammar", "What's the weather in Berlin?", TOOLS, []),
]


CALL_SCHEMA = {"type": "object", "required": ["name", "arguments"], "additionalProperties": False,
               "properties": {"name": {"type": "string", "enum": ["get_weather"]},
                              "arguments": {"type": "object", "required": ["city"],
                                            "additionalProperties": False,
                                            "properties": {"city": {"type": "string",
                                                                    "maxLength": 20}}}}}


class FirstCallByGrammar:
    """The real model with its first reply constrained to a get_weather call by a JSON-schema
    grammar (what llama-cpp-python's chatml-function-calling format does), written as the
    <tool_call> block a Qwen model writes and parsed like any reply; later replies are free.  The
    135M model never writes a valid call unaided: this runs the call path end to end on it."""

    def __init__(self, llm):
        self.llm, self.replies = llm, 0

    def __call__(self, messages, tools=None):
        self.replies += 1
        if self.replies > 1:
            return self.llm(messages, tools)
        text = self.llm.chat_text(messages, json_schema=CALL_SCHEMA)
        return lreact.parse_reply(f"<tool_call>\n{text}\n</tool_call>", tools,
                                  new_id=self.llm._fresh_id)


def _format_errors(history, tools):
    from lreact.harness import format_error     # the course's reference, in the test process

    return sum(1 for m in history if isinstance(m, AssistantMessage) and not m.tool_calls
               and format_error(m.text, tools or TOOLS) is not None)


@pytest.mark.parametrize("label,question,tools,primer", QUESTIONS, ids=[q[0] for q in QUESTIONS])
def test_run_agent_of_the_first_lab_on_the_real_model(embedded_env, lab1, run_log, label,
                                                      question, tools, primer):
    llm = lreact.configured_llm(temperature=0, seed=0, max_tokens=64, timeout=120)
    if label == "first call by a grammar":
        llm = FirstCallByGrammar(llm)
    history = [SystemMessage(lab1["SYSTEM_PROMPT"])] + [m for m in primer]
    start = len(history)
    try:
        answer = lab1["run_agent"](question, llm, tools, lab1["REGISTRY"], history=history,
                                   max_steps=4)
        outcome = "answered" if answer != "stopped: step budget exhausted" else "step budget"
        assert isinstance(answer, str)
    except ModelError as e:                  # the only exception allowed to escape
        outcome, answer = "ModelError", str(e)
    lab1["check_pairing"](history)
    new = history[start:]
    run_log.add(loop="run_agent", label=label, outcome=outcome, model_calls=sum(
        isinstance(m, AssistantMessage) for m in new), tool_calls=sum(
        len(m.tool_calls) for m in new if isinstance(m, AssistantMessage)),
        format_errors=_format_errors(new, tools), pairing=True, answer=answer[:160])
    if label == "beyond the context window":
        assert outcome == "ModelError" and "context window holds 4096 tokens" in answer
    if label == "first call by a grammar":      # a real call, run, its result paired by id
        call = history[start + 1].tool_calls[0]
        assert call.name == "get_weather" and isinstance(history[start + 2], ToolResultMessage)
        assert history[start + 2].tool_call_id == call.id and len(new) >= 4


HARDENED = [q for q in QUESTIONS if q[0] in ("weather", "two tools", "gibberish", "empty input",
                                            "few-shot weather", "beyond the context window")]


@pytest.mark.parametrize("label,question,tools,primer", HARDENED, ids=[q[0] for q in HARDENED])
def test_run_agent_hardened_of_the_second_lab_on_the_real_model(embedded_env, lab1, lab2, run_log,
                                                                label, question, tools, primer):
    llm = lreact.configured_llm(temperature=0, seed=0, max_tokens=64, timeout=120)
    history = [SystemMessage("You are a helpful assistant. Use the tools; answer briefly.")] + primer
    start = len(history)
    execute = lambda call: lab2["execute_tool_call"](call, tools, lab1["REGISTRY"])  # noqa: E731
    try:
        result = lab2["run_agent_hardened"](question, llm, tools, execute, history=history,
                                            max_steps=4, max_format_errors=2)
        assert isinstance(result, lreact.RunResult) and 1 <= result.steps <= 4
        outcome, answer = result.status, result.answer or ""
    except ModelError as e:
        outcome, answer = "ModelError", str(e)
    lab1["check_pairing"](history)
    new = history[start:]
    run_log.add(loop="run_agent_hardened", label=label, outcome=outcome, model_calls=sum(
        isinstance(m, AssistantMessage) for m in new), tool_calls=sum(
        len(m.tool_calls) for m in new if isinstance(m, AssistantMessage)),
        format_errors=sum(isinstance(m, UserMessage) and m.content.startswith("FORMAT ERROR")
                          for m in new), pairing=True, answer=answer[:160])


def test_text_react_of_the_second_lab_on_the_real_model(embedded_env, lab2, run_log):
    from lreact import textreact
    from lreact.labchecks import reference

    complete = textreact.RecordingCompletion(
        textreact.configured_complete(temperature=0, seed=0, max_tokens=48))
    assert complete.complete.llm.backend == "embedded"
    answer = lab2["run_react_text"]("Is it warmer in Rome or in Tokyo?", complete,
                                    reference("tools", "REGISTRY"), max_steps=3)
    assert isinstance(answer, str) and complete.calls
    assert all(textreact.STOP not in c["reply"] for c in complete.calls)   # the stop held
    invalid = sum(o.startswith("Invalid action") for o in textreact.observations(
        complete.calls[-1]["prompt"], len(textreact.EXEMPLAR)))
    run_log.add(loop="run_react_text", label="Rome or Tokyo",
                outcome="step budget" if answer.startswith("stopped:") else "answered",
                model_calls=len(complete.calls), tool_calls=0, format_errors=invalid,
                pairing=True, answer=answer[:160])
