"""Does sampling break tool calls? (lreact.views.tool_call_rates, lreact.engines.call_grammar, EmbeddedLLM's
tool_grammar; second lab, the cell after c-live-run).

On a scripted model the grid's counts are exactly what the script implies; on the real small
model (marked as tests/test_embedded.py's real-model tests) the grammar lets every reply be only a
valid call or prose, even at temperature 1.5, and a small grid runs end to end.
"""
from __future__ import annotations

import functools
import json
import math

import pytest
from test_embedded import MODEL, real_model

from lreact import AssistantMessage, ScriptedLLM, SystemMessage, ToolCall, UserMessage
from lreact.engines import call_grammar
from lreact.views import tool_call_rates as rates
from lreact.harness import format_error, run_agent_hardened
from lreact.tools import REGISTRY, TOOLS, calculate, get_weather
from lreact.traces import SYSTEM_PROMPT, run_tool

EXECUTE = functools.partial(run_tool, registry=REGISTRY)
FREE_0, FREE_07, FREE_15 = (rates.Setting(0.0, 1.0, False), rates.Setting(0.7, 1.0, False),
                            rates.Setting(1.5, 0.9, False))
GRAMMAR_0 = rates.Setting(0.0, 1.0, True)


# -- the questions and what counts as correct -------------------------------------------------

def test_questions_take_their_results_from_the_tools():
    qs = rates.tool_call_questions()
    assert len(qs) == 8 and {q.tool for q in qs} == {"get_weather", "calculate"}
    for q in qs:
        assert q.result == str(REGISTRY[q.tool](**q.arguments))
    assert qs[0].result == get_weather("Berlin") and qs[1].result == calculate("17 * 23")
    assert [q.text for q in rates.tool_call_questions(2)] == [q.text for q in qs[:2]]


def test_a_question_with_its_answer_in_the_text_is_refused():
    registry = {**REGISTRY, "calculate": lambda expression: "17"}   # 17 is in "17 * 23"
    with pytest.raises(AssertionError, match="cannot be told from an echo"):
        rates.tool_call_questions(2, registry)


def test_correct_means_every_result_number_in_the_answer():
    berlin = rates.tool_call_questions(1)[0]                      # '12°C, rainy'
    assert rates.answer_is_correct("In Berlin it is 12 °C and rainy.", berlin)
    assert rates.answer_is_correct("12.0 degrees", berlin)
    assert not rates.answer_is_correct("It is 125 degrees.", berlin)
    assert not rates.answer_is_correct("It is rainy.", berlin)
    assert not rates.answer_is_correct(None, berlin)


def test_call_problem_names_the_failed_check():
    assert rates.call_problem(ToolCall("c", "get_weather", '{"city": "Rome"}'), TOOLS) is None
    assert rates.call_problem(ToolCall("c", "get_weather", '{"city": '), TOOLS) == "invalid JSON"
    assert rates.call_problem(ToolCall("c", "get_wether", '{"city": "Rome"}'), TOOLS) == "unknown tool"
    assert rates.call_problem(ToolCall("c", "get_weather", '{"town": "Rome"}'), TOOLS) == "schema"


def test_grid_questions_env_var(monkeypatch):
    monkeypatch.delenv(rates.GRID_QUESTIONS_ENV_VAR, raising=False)
    assert rates.grid_questions() == rates.DEFAULT_QUESTIONS
    monkeypatch.setenv(rates.GRID_QUESTIONS_ENV_VAR, "2")
    assert rates.grid_questions() == 2
    for bad in ("0", "x", "99"):
        monkeypatch.setenv(rates.GRID_QUESTIONS_ENV_VAR, bad)
        with pytest.raises(ValueError, match="whole number from 1 to 8"):
            rates.grid_questions()


def test_the_grid_covers_every_setting_once():
    assert len(rates.GRID) == len(set(rates.GRID)) == 16
    assert {s.temperature for s in rates.GRID} == {0.0, 0.7, 1.0, 1.5}
    assert {s.top_p for s in rates.GRID} == {1.0, 0.9} and {s.grammar for s in rates.GRID} == {False, True}


# -- the counts on a scripted model -----------------------------------------------------------

def _call(name, args):
    return AssistantMessage(tool_calls=[ToolCall("call_1", name, json.dumps(args))])


def _script(setting, question):
    """What the scripted model replies to one question under one setting."""
    right = AssistantMessage(f"The result: {question.result}.")
    good = _call(question.tool, question.arguments)
    if setting == FREE_0:        # a valid call, then the right answer
        return [good, right]
    if setting == FREE_07:       # a call written as text (flagged), then as FREE_0
        as_text = AssistantMessage(f'<tool_call>\n{{"name": "{question.tool}", "arguments": {{')
        return [as_text, good, right]
    # FREE_15: an unknown tool, a schema violation, a valid call, then a wrong answer
    return [_call("get_wether", {"city": "Rome"}), _call(question.tool, {"x": 1}), good,
            AssistantMessage("I do not know, maybe 4242.")]


def _make_llm(setting, seed):
    if setting.grammar:
        return None
    return ScriptedLLM(_script(setting, rates.tool_call_questions(seed + 1)[seed]))


_make_llm.reason = "scripted: no grammar here"


def _grid(n=3, **kw):
    return rates.run_grid(run_agent_hardened, _make_llm, execute=EXECUTE, n_questions=n,
                          settings=[FREE_0, FREE_07, FREE_15, GRAMMAR_0], **kw)


def test_scripted_grid_counts_exactly_what_the_script_implies():
    r0, r07, r15, rg = _grid(3)
    assert (r0.runs, r0.valid_runs, r0.format_errors, r0.replies, r0.correct) == (3, 3, 0, 6, 3)
    assert (r07.runs, r07.valid_runs, r07.format_errors, r07.replies, r07.correct) == (3, 0, 3, 9, 3)
    assert (r15.runs, r15.valid_runs, r15.format_errors, r15.replies, r15.correct) == (3, 0, 6, 12, 0)
    assert (rg.runs, rg.note) == (0, "scripted: no grammar here")
    assert r07.rate("format_errors") == pytest.approx(3 / 9) and r15.rate("correct") == 0
    assert math.isnan(rg.rate("valid"))
    assert all(r.failed == 0 for r in (r0, r07, r15))


def test_seeds_are_fixed_per_question_and_shared_by_the_settings():
    seen = []

    def make(setting, seed):
        seen.append((setting, seed))
        return _make_llm(setting, seed)

    rates.run_grid(run_agent_hardened, make, execute=EXECUTE, n_questions=2,
                   settings=[FREE_0, FREE_07])
    assert seen == [(FREE_0, 0), (FREE_0, 1), (FREE_07, 0), (FREE_07, 1)]


def test_a_run_that_raises_is_counted_and_the_grid_goes_on():
    def broken(question, llm, tools, execute, **kw):
        llm([SystemMessage(SYSTEM_PROMPT), UserMessage(question)], tools)
        raise RuntimeError("loop bug")

    (row,) = rates.run_grid(broken, _make_llm, execute=EXECUTE, n_questions=2, settings=[FREE_0])
    # a run that raised is never a valid-call run, even after a valid call
    assert (row.runs, row.failed, row.correct, row.replies, row.valid_runs) == (2, 2, 0, 2, 0)
    assert row.error == "RuntimeError: loop bug"


def test_a_reply_with_two_bad_parallel_calls_is_one_format_error():
    bad_pair = AssistantMessage(tool_calls=[ToolCall("call_1", "get_wether", "{}"),
                                            ToolCall("call_2", "calculate", "{bad json")])

    def make(setting, seed):
        q = rates.tool_call_questions(1)[0]
        return ScriptedLLM([bad_pair, _call(q.tool, q.arguments), AssistantMessage("done")])

    (row,) = rates.run_grid(run_agent_hardened, make, execute=EXECUTE, n_questions=1,
                            settings=[FREE_0])
    assert (row.replies, row.format_errors) == (3, 1) and row.rate("format_errors") <= 1


def test_table_and_figure_show_the_counts_and_the_number_of_runs():
    rows = _grid(2)
    table = rates.rates_table(rows)
    first = table.splitlines()[2].split()
    assert first[:3] == ["T=0", "p=1", "free"] and first[3:] == ["2/2", "0/4", "2/2"]
    assert "2/6" in table and "not run: scripted: no grammar here" in table
    assert rates.first_to_break(rows) == rows[1].setting       # the mildest of the worst
    fig = rates.rates_figure(rows)
    labels = [t.get_text() for t in fig.axes[0].texts]
    assert labels == ["not run"] and "(2 runs per setting)" in fig.axes[0].get_title()
    legend = fig.axes[0].get_legend().get_window_extent(fig.canvas.get_renderer())
    assert legend.y0 >= fig.axes[0].get_window_extent().y1 - 1    # above the bars, never on them
    heights = [round(p.get_height(), 3) for p in fig.axes[0].patches]
    assert heights[:4] == [1.0, 0.0, 0.0, 0.0]            # valid-call rate per setting
    assert heights[4:8] == [0.0, round(2 / 6, 3), 0.5, 0.0]  # format errors per reply
    assert heights[8:] == [1.0, 1.0, 0.0, 0.0]             # correct


def test_other_backends_run_only_the_grammar_off_half(monkeypatch):
    monkeypatch.setenv("LREACT_BACKEND", "ollama")
    make = rates.configured_models()
    assert make(GRAMMAR_0, 0) is None and "ollama backend" in make.reason
    assert make(FREE_0, 0).options["temperature"] == 0.0


# -- the grammar --------------------------------------------------------------------------------

def test_grammar_text_has_a_call_branch_per_tool_and_forbids_call_characters_in_prose():
    gbnf = call_grammar.tool_call_gbnf(TOOLS)
    assert gbnf.startswith("root ::= tool-call | prose\n")
    assert '"\\"get_weather\\""' in gbnf and '"\\"calculate\\""' in gbnf
    assert "prose ::= [^<>{}\\[\\]`]+" in gbnf
    with pytest.raises(ValueError, match="at least one tool"):
        call_grammar.tool_call_gbnf([])
    with pytest.raises(ValueError, match="not a function-calling tool schema"):
        call_grammar.tool_call_gbnf([{"name": "x"}])


def test_embedded_tool_grammar_is_checked():
    from lreact.engines.embedded import EmbeddedLLM

    with pytest.raises(TypeError, match="tool_grammar must be True or False"):
        EmbeddedLLM("x.gguf", tool_grammar="yes")
    assert "tool_grammar=True" in repr(EmbeddedLLM("x.gguf", tool_grammar=True))


# -- on the real model ------------------------------------------------------------------------

QUESTION = [SystemMessage(SYSTEM_PROMPT), UserMessage("What's the weather in Berlin?")]
FORBIDDEN = set(call_grammar.PROSE_FORBIDDEN)


@real_model
def test_with_the_grammar_every_reply_is_a_valid_call_or_prose_even_at_temperature_1_5():
    from lreact.engines.embedded import EmbeddedLLM

    kinds = []
    for seed in range(5):
        llm = EmbeddedLLM(MODEL, temperature=1.5, top_p=1.0, seed=seed, max_tokens=96,
                          tool_grammar=True)
        reply = llm(QUESTION, TOOLS)
        if reply.tool_calls:
            assert len(reply.tool_calls) == 1 and not reply.text
            assert rates.call_problem(reply.tool_calls[0], TOOLS) is None, reply
            kinds.append("call")
        else:
            assert reply.text and not FORBIDDEN & set(reply.text), reply.text
            assert format_error(reply.text, TOOLS) is None
            kinds.append("prose")
    assert "call" in kinds, kinds       # the grammar leaves the call reachable


@real_model
def test_a_small_real_grid_runs_and_the_grammar_half_has_no_format_errors(monkeypatch):
    monkeypatch.setenv("LREACT_BACKEND", "embedded")
    monkeypatch.setenv("LREACT_GGUF", MODEL)
    settings = [rates.Setting(1.5, 1.0, False), rates.Setting(1.5, 1.0, True)]
    free, constrained = rates.run_grid(run_agent_hardened, rates.configured_models(),
                                       execute=EXECUTE, n_questions=1, settings=settings,
                                       max_steps=3)
    for row in (free, constrained):
        assert row.runs == 1 and row.failed == 0 and 1 <= row.replies <= 3
    assert constrained.format_errors == 0
