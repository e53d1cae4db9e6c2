"""ReAct against Act and CoT (lreact/views/methods.py; second lab, Part D.2, "The loop measured").

On scripted completions every count is exact: success, model calls, format errors and the
engine's token counts summed per run; the observations the runtime writes come from the course's
tools.  The tasks' expected answers are the tools' own outputs.  The same runner on the real
small model: tests/test_context_budget.py.
"""
from __future__ import annotations

import pytest

from lreact.views import methods
from lreact.textreact import STOP, ScriptedCompletion
from lreact.tools import REGISTRY, WEATHER, calculate, get_weather


class CountedScript(ScriptedCompletion):
    """A scripted completion that also reports engine-style counts for every call: prompt tokens
    = 100 x the call's number, generated tokens = the call's number."""

    def __call__(self, prompt, stop=None):
        reply = super().__call__(prompt, stop)
        n = len(self.calls)
        self.calls[-1].update(prompt_tokens=100 * n, completion_tokens=n)
        return reply


def _task(key):
    return next(t for t in methods.tasks(20, REGISTRY) if t.key == key)


def test_the_tasks_expect_what_the_tools_return():
    tasks = methods.tasks(20, REGISTRY)
    assert len(tasks) == 20 and len({t.key for t in tasks}) == 20
    assert [t.key.split("-")[0] for t in tasks[:5]] == ["temp", "diff", "calc", "sky", "sum"]
    paris, oslo = _task("temp-Paris"), _task("sky-Oslo")
    assert paris.expected == get_weather("Paris").split("°")[0] == str(WEATHER["Paris"]["temp_c"])
    assert oslo.expected == get_weather("Oslo").split(", ")[1] == "snowy"
    assert _task("diff-Cairo-Oslo").expected == calculate("31 - -3") == "34"
    assert _task("calc-2").expected == calculate("(48 + 12) / 4") == "15"
    assert methods.tasks(3, REGISTRY) == tasks[:3]
    for bad in (0, 21, "3", 2.0):
        with pytest.raises(ValueError, match="from 1 to 20"):
            methods.tasks(bad, REGISTRY)


def test_the_size_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv(methods.TASKS_ENV_VAR, raising=False)
    assert methods.task_count() == 3
    monkeypatch.setenv(methods.TASKS_ENV_VAR, "20")
    assert methods.task_count() == 20
    for bad in ("0", "21", "three", "-1"):
        monkeypatch.setenv(methods.TASKS_ENV_VAR, bad)
        with pytest.raises(ValueError, match="LREACT_METHODS_TASKS=.*whole number from 1 to 20"):
            methods.task_count()


@pytest.mark.parametrize("answer, expected, ok", [
    ("It is 15°C in Paris.", "15", True), ("Oslo is -3°C", "-3", True),
    ("It is -12 there", "12", False), ("112", "12", False), ("12.5 degrees", "12", False),
    ("24 - 12", "12", False), ("Madrid is 12 degrees warmer.", "12", True),
    ("Snowy.", "snowy", True), ("snowyish", "snowy", False), (None, "12", False),
    ("17 * 23 = 391", "391", True), ("387 is 17 * 23", "391", False),
    ("24 - 12 = 120", "12", False)])
def test_an_answer_must_state_the_value(answer, expected, ok):
    assert methods.answer_matches(answer, expected) is ok


def test_react_counts_steps_format_errors_and_tokens():
    paris = _task("temp-Paris")
    script = CountedScript([
        " I need the weather in Paris.\nAction: get_weather[Paris]\nObservation: 99°C, hot",
        " The temperature is what I need.",                              # no Action line
        " Paris has 15°C.\nAction: finish[It is 15°C in Paris.]"])
    run = methods.run_method("ReAct", paris, script, REGISTRY)
    assert run == methods.MethodRun("ReAct", "temp-Paris", "It is 15°C in Paris.", True, 3, 1,
                                    100 + 200 + 300, 1 + 2 + 3)
    first, second, third = script.prompts
    assert first == f"{methods.EXEMPLARS['ReAct']}\n\nQuestion: {paris.question}\nThought:"
    # the invented observation was cut; the runtime wrote the tool's own
    assert second.endswith(f"get_weather[Paris]\nObservation: {get_weather('Paris')}\nThought:")
    assert "99°C" not in second and third.startswith(second)
    assert "\nObservation: Invalid action: no line 'Action: tool[argument]'" in third
    assert all(c["stop"] == [STOP, "\nQuestion:"] for c in script.calls)


def test_act_has_no_thoughts_and_unknown_tools_are_format_errors():
    oslo = _task("temp-Oslo")
    script = CountedScript([" search[Oslo]", " get_weather[Oslo]\nmore text", " Finish[-3°C]"])
    run = methods.run_method("Act", oslo, script, REGISTRY)
    assert (run.answer, run.success, run.steps, run.format_errors) == ("-3°C", True, 3, 1)
    assert script.prompts[0].endswith(f"Question: {oslo.question}\nAction:")
    assert "Thought:" not in methods.EXEMPLARS["Act"]
    assert "unknown tool 'search'" in script.prompts[1]
    assert script.prompts[2].endswith(f"Observation: {get_weather('Oslo')}\nAction:")


def test_cot_has_no_tools_so_a_tool_call_is_a_format_error():
    oslo = _task("temp-Oslo")
    script = CountedScript([" I look it up.\nAction: get_weather[Oslo]",
                            " Oslo is cold in winter.\nAction: finish[Oslo has -5°C.]"])
    run = methods.run_method("CoT", oslo, script, REGISTRY)
    assert (run.answer, run.success, run.steps, run.format_errors) == ("Oslo has -5°C.", False,
                                                                      2, 1)
    assert "this method has no tools" in script.prompts[1]


def test_the_step_cap_ends_a_run_without_an_answer():
    script = ScriptedCompletion([" Hmm.\nAction: calculate[17 * 23]"] * 2)
    run = methods.run_method("ReAct", _task("calc-1"), script, REGISTRY, max_steps=2)
    assert (run.answer, run.success, run.steps, run.format_errors) == (None, False, 2, 0)
    assert (run.prompt_tokens, run.completion_tokens) == (None, None)   # nothing counted them
    with pytest.raises(ValueError, match="ReAct, Act, CoT"):
        methods.run_method("Reflexion", _task("calc-1"), script, REGISTRY)


def test_compare_summarise_and_show_the_papers_figures():
    replies = {"ReAct": [" Look.\nAction: calculate[17 * 23]", " Done.\nAction: finish[391]",
                         " Look.\nAction: get_weather[Madrid]", " Done.\nAction: finish[24]"],
               "Act": [" finish[391]", " finish[12 degrees]"],
               "CoT": [" 17 * 23 = 391.\nAction: finish[391]", " no idea"]}
    made = {}

    def make(method):
        made[method] = CountedScript(replies[method])
        return made[method]

    tasks = [_task("calc-1"), _task("diff-Madrid-Berlin")]
    runs = methods.compare_methods(tasks, make, REGISTRY, max_steps=1)
    assert [(r.method, r.task, r.success) for r in runs] == [
        ("ReAct", "calc-1", False), ("ReAct", "diff-Madrid-Berlin", False),
        ("Act", "calc-1", True), ("Act", "diff-Madrid-Berlin", True),
        ("CoT", "calc-1", True), ("CoT", "diff-Madrid-Berlin", False)]
    summary = methods.summary(runs)
    assert summary["Act"] == {"tasks": 2, "successes": 2, "steps": 2, "format_errors": 0,
                              "prompt_tokens": 100 + 200, "completion_tokens": 1 + 2}
    assert summary["CoT"]["format_errors"] == 1
    table = methods.summary_table(runs)
    assert "Act       2 / 2" in table and "27.4" in table and "25.7" in table and "29.4" in table


def test_the_lab_cell_reaches_the_reference_in_views():
    """Lab 2's D.2 cell takes the course's loop from lreact/views/methods.py (a module in a
    subpackage): a private copy, not the public object."""
    from lreact.labchecks import reference

    compare = reference("views.methods", "compare_methods")
    assert compare is not methods.compare_methods and compare.__name__ == "compare_methods"
    with pytest.raises(ValueError):
        reference("views._private", "x")
