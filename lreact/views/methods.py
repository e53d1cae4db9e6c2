"""ReAct against its two baselines, Act and CoT, measured in miniature (lecture Part II, "From CoT
to ReAct", "The core definition of ReAct" and "The execution loop"; second lab, Part D.2).

Yao et al. (2023) compare three ways of prompting the same model, all in plain text:

- **ReAct**: Thought, Action, Observation, ... (the augmented action space A ∪ L);
- **Act**: the same trajectories with the thoughts removed: Action, Observation, ...;
- **CoT**: thoughts only, no tools: the model reasons in one Thought and answers with
  ``finish[...]`` from what it knows (open loop: nothing comes back from the world).

Here all three run on small tasks of the lab's tools (``tasks(n, registry)``: weather lookups,
temperature differences and arithmetic, each expected answer computed by the tools themselves).
``compare_methods`` runs each method on each task with a ``complete(prompt, stop) -> str`` and
returns one ``MethodRun`` per (method, task): success, model calls (steps), format errors, and
the engine's token counts when ``complete`` keeps them (``lreact.views.context_budget.
CountingCompletion``).  ``summary_table`` prints them beside the paper's figures (``PAPER``).

The loop is the course's (``run_method``), so it is a reference implementation: the lab's cell
takes it through ``lreact.labchecks.reference``.  The size of the run: ``LREACT_METHODS_TASKS``.
"""

from __future__ import annotations

import os
import re
from typing import NamedTuple

from ..reference import reference_implementation
from ..textreact import EXEMPLAR, STOP
from ..tools import WEATHER

METHODS = ("ReAct", "Act", "CoT")
TASKS_ENV_VAR = "LREACT_METHODS_TASKS"
DEFAULT_TASKS = 3      # per method; the lab's cell says what more cost (lreact.views.waiting)
MAX_TASKS = 20
STOPS = [STOP, "\nQuestion:"]
_ACTIONS = EXEMPLAR.split("\n\nQuestion:")[0].split("An Action is exactly one of:\n")[1] \
    .split("\nAfter each Action")[0]
_TRAJECTORY = "Question:" + EXEMPLAR.split("\n\nQuestion:", 1)[1]


def _act_exemplar() -> str:
    steps = [line for line in _TRAJECTORY.splitlines() if not line.startswith("Thought:")]
    return "\n".join(["Solve the question with Action and Observation lines, without thoughts.",
                      "An Action is exactly one of:", _ACTIONS,
                      "After each Action you get an Observation. Write one Action per step.",
                      "", *steps])


def _cot_exemplar() -> str:
    a, b = "Vienna", "London"
    ta, tb = WEATHER[a]["temp_c"], WEATHER[b]["temp_c"]
    warmer, colder = (a, b) if ta > tb else (b, a)
    return "\n".join([
        "Answer the question by reasoning step by step in one Thought, then end with",
        "Action: finish[answer]. There are no tools: use what you know.", "",
        f"Question: How many degrees warmer is it in {warmer} than in {colder}?",
        f"Thought: {a} has {ta}°C and {b} has {tb}°C. The difference is {max(ta, tb)} - "
        f"{min(ta, tb)} = {abs(ta - tb)}.",
        f"Action: finish[{warmer} is {abs(ta - tb)} degrees warmer than {colder}.]"])


EXEMPLARS = {"ReAct": EXEMPLAR, "Act": _act_exemplar(), "CoT": _cot_exemplar()}
OPENER = {"ReAct": "Thought:", "Act": "Action:", "CoT": "Thought:"}


class Task(NamedTuple):
    key: str
    question: str
    expected: str      # what the answer must contain (a number or a word), from the tools


def tasks(n, registry) -> list:
    """The first ``n`` (1 to 20) tasks, kinds taken in turn; expected answers from ``registry``
    (the course's ``get_weather`` and ``calculate``, one argument each)."""
    weather, calc = registry["get_weather"], registry["calculate"]

    def temp(city):
        return int(str(weather(city)).split("°")[0])

    kinds = [
        [Task(f"temp-{c}", f"What is the temperature in {c} right now, in °C?", str(temp(c)))
         for c in ("Paris", "Oslo", "Cairo", "Tokyo", "Rome")],
        [Task(f"diff-{a}-{b}", f"How many degrees warmer is it in {a} than in {b}?",
              calc(f"{temp(a)} - {temp(b)}"))
         for a, b in (("Madrid", "Berlin"), ("Cairo", "Oslo"), ("Rome", "Paris"),
                      ("Tokyo", "New York"))],
        [Task(f"calc-{i}", f"What is {e}?", calc(e))
         for i, e in enumerate(("17 * 23", "(48 + 12) / 4", "7 ** 3", "1000 - 387"), 1)],
        [Task(f"sky-{c}", f"What is the weather condition in {c} (one word)?",
              str(weather(c)).split(", ")[1]) for c in ("Berlin", "Oslo", "Rome", "Madrid")],
        [Task(f"sum-{a}-{b}", f"What is the sum of the temperatures in {a} and {b}?",
              calc(f"{temp(a)} + {temp(b)}"))
         for a, b in (("Rome", "Cairo"), ("Berlin", "Oslo"), ("Paris", "Tokyo"))],
    ]
    ordered = [k[i] for i in range(max(map(len, kinds))) for k in kinds if i < len(k)]
    if not isinstance(n, int) or not 1 <= n <= len(ordered):
        raise ValueError(f"the number of tasks must be a whole number from 1 to {len(ordered)}, "
                         f"got {n!r}")
    return ordered[:n]


def task_count() -> int:
    """``$LREACT_METHODS_TASKS`` (default 3, at most 20): how many tasks the lab's cell runs."""
    raw = os.environ.get(TASKS_ENV_VAR, "").strip() or str(DEFAULT_TASKS)
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_TASKS:
        raise ValueError(f"{TASKS_ENV_VAR}={raw!r}: set it to a whole number from 1 to "
                         f"{MAX_TASKS} (the tasks per method), or unset it for {DEFAULT_TASKS}")
    return int(raw)


def answer_matches(answer, expected: str) -> bool:
    """Whether ``answer`` states ``expected``: the number as a whole number (``12`` is not in
    ``112`` or ``12.5``), a word as a whole word, case ignored.  An answer that still holds an
    unevaluated expression (``24 - 12``) does not count: the task asks for the value; one that
    shows its working and the value (``17 * 23 = 391``) does."""
    if answer is None:
        return False
    text, value = str(answer), rf"{re.escape(expected)}(?![\w]|\.\d)"
    if re.search(r"\d\s*[-+*/]\s*\d", text):
        return re.search(rf"=\s*{value}", text, flags=re.IGNORECASE) is not None
    return re.search(rf"(?<![\w.-]){value}", text, flags=re.IGNORECASE) is not None


_ACTION = re.compile(r"^\s*([A-Za-z_]\w*)\[(.*)\]\s*$")


@reference_implementation
def parse_step(method: str, continuation: str):
    """``(action, argument)`` of one continuation (already cut at the stop sequences), or a
    ValueError whose message starts with ``Invalid action``."""
    if method == "Act":
        line = continuation.strip().splitlines()[0] if continuation.strip() else ""
    else:
        found = [ln for ln in continuation.splitlines() if ln.strip().startswith("Action:")]
        if not found:
            raise ValueError("Invalid action: no line 'Action: tool[argument]' after the thought")
        line = found[0].strip()[len("Action:"):]
    match = _ACTION.match(line)
    if match is None:
        raise ValueError(f"Invalid action: {line.strip()[:60]!r} is not tool[argument]")
    return match.group(1).lower(), match.group(2).strip()


class MethodRun(NamedTuple):
    method: str
    task: str
    answer: object          # the finish argument, or None when the run hit the step cap
    success: bool
    steps: int              # model calls
    format_errors: int      # continuations that did not parse, and unknown tools
    prompt_tokens: object   # summed over the calls, as the engine counted; None if not counted
    completion_tokens: object


def _sum(calls, key):
    values = [c.get(key) for c in calls]
    return sum(values) if calls and all(isinstance(v, int) for v in values) else None


@reference_implementation
def run_method(method, task, complete, registry, *, max_steps=6) -> MethodRun:
    """One run of ``method`` on ``task``: the text loop of Part D.2, with the method's exemplar
    and opener; CoT gets no tools.  ``finish[answer]`` ends the run."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    tools = {} if method == "CoT" else dict(registry)
    prompt = f"{EXEMPLARS[method]}\n\nQuestion: {task.question}\n{OPENER[method]}"
    before = len(getattr(complete, "calls", []))
    answer, errors, steps = None, 0, 0
    while steps < max_steps:
        steps += 1
        continuation = complete(prompt, list(STOPS))
        for stop in STOPS:
            continuation = continuation.split(stop)[0]
        prompt += continuation
        try:
            action, argument = parse_step(method, continuation)
        except ValueError as e:
            errors, observation = errors + 1, str(e)
        else:
            if action == "finish":
                answer = argument
                break
            if action not in tools:
                errors += 1
                known = ", ".join(f"{name}[...]" for name in tools) or "no tools"
                observation = (f"Invalid action: unknown tool {action!r}; this method has "
                               f"{known} and finish[answer]")
            else:
                try:
                    observation = str(tools[action](argument))
                except Exception as e:  # noqa: BLE001 - a failing tool is an observation
                    observation = f"ERROR: {e}"
        prompt += f"\nObservation: {observation}\n{OPENER[method]}"
    calls = list(getattr(complete, "calls", []))[before:]
    return MethodRun(method, task.key, answer, answer_matches(answer, task.expected), steps,
                     errors, _sum(calls, "prompt_tokens"), _sum(calls, "completion_tokens"))


def compare_methods(task_list, make_complete, registry, *, methods=METHODS, max_steps=6) -> list:
    """Every method on every task: ``make_complete(method)`` gives the ``complete`` of a method
    (one per method, so an engine can reuse the exemplar's cached prefix across tasks)."""
    runs = []
    for method in methods:
        complete = make_complete(method)
        runs += [run_method(method, t, complete, registry, max_steps=max_steps)
                 for t in task_list]
    return runs


def summary(runs) -> dict:
    """Per method: tasks, successes, steps, format errors, prompt and generated tokens (None
    where the engine's counts are missing)."""
    out = {}
    for method in dict.fromkeys(r.method for r in runs):
        mine = [r for r in runs if r.method == method]
        tokens = [r.prompt_tokens for r in mine], [r.completion_tokens for r in mine]
        out[method] = {"tasks": len(mine), "successes": sum(r.success for r in mine),
                       "steps": sum(r.steps for r in mine),
                       "format_errors": sum(r.format_errors for r in mine),
                       **{k: (sum(v) if all(isinstance(x, int) for x in v) else None)
                          for k, v in zip(("prompt_tokens", "completion_tokens"), tokens)}}
    return out


# Yao et al. (2023), ICLR, arXiv:2210.03629: PaLM-540B, few-shot prompts, greedy decoding.
# Table 1: HotpotQA exact match and FEVER accuracy (%); Table 3: ALFWorld success rate (%, best
# of 6 prompts; CoT has no row); Table 4: WebShop success rate (%; no CoT row).
PAPER = {"ReAct": {"HotpotQA EM": 27.4, "FEVER acc": 60.9, "ALFWorld": 71, "WebShop SR": 40.0},
         "Act": {"HotpotQA EM": 25.7, "FEVER acc": 58.9, "ALFWorld": 45, "WebShop SR": 30.1},
         "CoT": {"HotpotQA EM": 29.4, "FEVER acc": 56.3, "ALFWorld": None, "WebShop SR": None}}


def summary_table(runs) -> str:
    """The measured figures per method beside the paper's (``PAPER``), as text."""
    def cell(value, width):
        return f"{'-' if value is None else value:>{width}}"

    head = (f"{'method':<6} {'success':>9} {'steps':>6} {'format err':>10} {'prompt tok':>10} "
            f"{'gen tok':>8} | paper: {'HotpotQA':>8} {'FEVER':>6} {'ALFWorld':>8} {'WebShop':>7}")
    lines = [head, "-" * len(head)]
    for method, s in summary(runs).items():
        p = PAPER[method]
        lines.append(f"{method:<6} {s['successes']:>4} / {s['tasks']:<2} {s['steps']:>6} "
                     f"{s['format_errors']:>10} {cell(s['prompt_tokens'], 10)} "
                     f"{cell(s['completion_tokens'], 8)} | {'':>6} {cell(p['HotpotQA EM'], 8)} "
                     f"{cell(p['FEVER acc'], 6)} {cell(p['ALFWorld'], 8)} "
                     f"{cell(p['WebShop SR'], 7)}")
    return "\n".join(lines)
