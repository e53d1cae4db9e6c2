"""Does sampling break tool calls?  The hardened loop measured over a grid of sampling settings
(second lab, C.4; lecture Part I, "Temperature scaling", "Truncated sampling: top-k and top-p",
"Constrained decoding"; Part III, "Validating tool calls: parsing vs policy").

``run_grid(run_agent, make_llm)`` runs a ``run_agent_hardened``-like loop on a fixed list of
tool-call questions (``tool_call_questions``: each needs one call of a lab tool, and its true
result is computed by that tool, never written here) under every ``Setting`` of ``GRID``:
temperature 0 / 0.7 / 1.0 / 1.5, top-p 1.0 / 0.9, grammar off / on.  Question ``i`` runs with
seed ``base_seed + i`` under every setting, so the grid repeats exactly and the settings are
compared on the same draws.  Per setting it counts, from the replies the model gave:

- ``runs``: runs made;
- ``valid_runs``: runs that did not raise, made at least one tool call, and whose every call
  attempt was valid: each structured call parsed, named a known tool and matched its schema
  (the three checks), and no text reply was a call written as text;
- ``format_errors``: replies with a format error: a text reply the format check flags (the
  course's ``format_error`` unless another is given), or a reply with a structured call that
  fails one of the three checks (a reply counts once); ``replies``: all model replies, the
  denominator of the format-error rate;
- ``correct``: runs that ended with an answer (``RunResult.answer`` not None) in which every
  number of the tool's true result appears as a number (``12`` for ``'12°C, rainy'``, ``391``
  for ``'391'``).  No question's result number occurs in its own text, so echoing the question
  never counts;
- ``failed``: runs that raised (the first message is kept in ``error``).

A setting the backend cannot run (grammar on outside the embedded engine) has ``runs == 0`` and
says why in ``note``.  ``rates_table(rows)`` is a plain-text table, ``rates_figure(rows)`` the
three rates as bars with the number of runs over each setting.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from ..engines.backends import configured_backend, configured_llm
from ..harness import format_error as course_format_error
from ..reference import near_copy_of
from ..tools import TOOLS
from .canvas import new_figure

GRID_QUESTIONS_ENV_VAR = "LREACT_GRID_QUESTIONS"
DEFAULT_QUESTIONS = 1            # 16 settings x 1 question = 16 runs (lreact.views.waiting)
TEMPERATURES = (0.0, 0.7, 1.0, 1.5)
TOP_PS = (1.0, 0.9)
NO_GRAMMAR_HERE = ("grammar on: the {backend} backend is not given a tool-call grammar by this "
                   "course (its structured outputs constrain the whole reply to one JSON "
                   "document, not to 'a call or prose'), so only the grammar-off half runs")

# (question, tool, arguments): the results come from the tools themselves
_QUESTIONS = [
    ("What's the weather in Berlin?", "get_weather", {"city": "Berlin"}),
    ("What is 17 * 23?", "calculate", {"expression": "17 * 23"}),
    ("How warm is it in Madrid right now?", "get_weather", {"city": "Madrid"}),
    ("What is 2 ** 10?", "calculate", {"expression": "2 ** 10"}),
    ("What is the weather like in Tokyo?", "get_weather", {"city": "Tokyo"}),
    ("Compute (48 + 12) / 4.", "calculate", {"expression": "(48 + 12) / 4"}),
    ("Is it cold in Vienna today?", "get_weather", {"city": "Vienna"}),
    ("What is 345 - 78?", "calculate", {"expression": "345 - 78"}),
]
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


@dataclass(frozen=True)
class Question:
    text: str
    tool: str
    arguments: dict
    result: str                 # the tool's true result

    @property
    def numbers(self) -> tuple:
        return tuple(_NUMBER.findall(self.result))


@dataclass(frozen=True)
class Setting:
    temperature: float
    top_p: float
    grammar: bool

    @property
    def label(self) -> str:
        return f"T={self.temperature:g} p={self.top_p:g} {'grammar' if self.grammar else 'free'}"


GRID = tuple(Setting(t, p, g) for g in (False, True) for t in TEMPERATURES for p in TOP_PS)


@dataclass
class SettingCounts:
    setting: Setting
    runs: int = 0
    valid_runs: int = 0
    format_errors: int = 0
    replies: int = 0
    correct: int = 0
    failed: int = 0
    note: str = ""
    error: str = ""
    answers: list = field(default_factory=list, repr=False)

    def rate(self, what: str) -> float:
        """``"valid"``, ``"format_errors"`` (per reply) or ``"correct"``; NaN when nothing ran."""
        num, den = {"valid": (self.valid_runs, self.runs), "correct": (self.correct, self.runs),
                    "format_errors": (self.format_errors, self.replies)}[what]
        return num / den if den else float("nan")


def grid_questions(default: int = DEFAULT_QUESTIONS) -> int:
    """``$LREACT_GRID_QUESTIONS`` as a number of questions (``default`` when unset)."""
    import os

    raw = os.environ.get(GRID_QUESTIONS_ENV_VAR, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or not 1 <= int(raw) <= len(_QUESTIONS):
        raise ValueError(f"{GRID_QUESTIONS_ENV_VAR}={raw!r}: give a whole number from 1 to "
                         f"{len(_QUESTIONS)} (questions per setting), or unset it")
    return int(raw)


def tool_call_questions(n=None, registry=None) -> list:
    """The first ``n`` (all: ``None``) questions, each with its result from ``registry``'s tool
    (default: ``lreact.tools.REGISTRY``; the lab passes its own copy)."""
    if registry is None:
        from ..tools import REGISTRY as registry
    if n is None:
        n = len(_QUESTIONS)
    if not isinstance(n, int) or not 1 <= n <= len(_QUESTIONS):
        raise ValueError(f"n must be a whole number from 1 to {len(_QUESTIONS)}, got {n!r}")
    out = []
    for text, tool, arguments in _QUESTIONS[:n]:
        q = Question(text, tool, arguments, str(registry[tool](**arguments)))
        if not q.numbers or set(q.numbers) & set(_NUMBER.findall(text)):
            raise AssertionError(f"question {text!r}: its result {q.result!r} cannot be told "
                                 "from an echo of the question")
        out.append(q)
    return out


def answer_is_correct(answer, question: Question) -> bool:
    """Every number of the true result appears in ``answer`` as a number of its own."""
    if not isinstance(answer, str):
        return False
    found = {n.rstrip("0").rstrip(".") if "." in n else n
             for n in _NUMBER.findall(answer.replace(",", ""))}
    return all(n in found for n in question.numbers)


@near_copy_of("validate_tool_call")
def call_problem(call, tools):
    """None for a call that passes the three checks (JSON, known tool, schema), else which one
    it failed (lecture Part III, "Validating tool calls: parsing vs policy")."""
    import jsonschema

    try:
        arguments = json.loads(call.arguments)
    except (TypeError, ValueError):
        return "invalid JSON"
    schemas = {t["function"]["name"]: t["function"].get("parameters") or {} for t in tools}
    if call.name not in schemas:
        return "unknown tool"
    try:
        jsonschema.validate(arguments, schemas[call.name])
    except jsonschema.ValidationError:
        return "schema"
    return None


class _Recorder:
    """The model, with every reply it gave kept in ``replies``."""

    def __init__(self, llm):
        self.llm, self.replies = llm, []

    def __call__(self, messages, tools=None):
        reply = self.llm(messages, tools)
        self.replies.append(reply)
        return reply


def run_grid(run_agent, make_llm, *, execute, n_questions=None, settings=GRID, base_seed=0,
             tools=None, registry=None, format_error_fn=None, max_steps=4, progress=None):
    """One ``SettingCounts`` per setting (see the module's docstring).

    ``run_agent(question, llm, tools, execute, max_steps=...)`` returns a ``RunResult``;
    ``make_llm(setting, seed)`` returns the model for one run, or ``None`` when the backend
    cannot run that setting (it may carry a ``reason`` attribute saying why);
    ``execute(call)`` returns the ``ToolResultMessage``; ``progress(text)`` is told of each run."""

    tools = TOOLS if tools is None else tools
    flags = course_format_error if format_error_fn is None else format_error_fn
    questions = tool_call_questions(n_questions, registry)
    rows = []
    for setting in settings:
        row = SettingCounts(setting)
        rows.append(row)
        for i, question in enumerate(questions):
            llm = make_llm(setting, base_seed + i)
            if llm is None:
                row.note = getattr(make_llm, "reason", "") or "this backend cannot run it"
                break
            recorder = _Recorder(llm)
            row.runs += 1
            raised = False
            try:
                result = run_agent(question.text, recorder, tools, execute, max_steps=max_steps)
                answer = getattr(result, "answer", result if isinstance(result, str) else None)
            except Exception as e:  # noqa: BLE001 - a failing run is counted; the grid goes on
                row.failed += 1
                row.error = row.error or f"{type(e).__name__}: {e}"
                answer, raised = None, True
            row.answers.append(answer)
            calls = bad = 0          # bad: replies with a format error (one per reply at most)
            for reply in recorder.replies:
                row.replies += 1
                if reply.tool_calls:
                    calls += len(reply.tool_calls)
                    bad += any(call_problem(c, tools) is not None for c in reply.tool_calls)
                elif flags(reply.text or "", tools) is not None:
                    bad += 1
            row.format_errors += bad
            row.valid_runs += calls > 0 and bad == 0 and not raised
            row.correct += answer_is_correct(answer, question)
            if progress:
                progress(f"{setting.label} q{i + 1}: {len(recorder.replies)} replies, "
                         f"{bad} invalid, answer {answer!r:.60}")
    return rows


def configured_models(*, max_tokens=96, timeout=120.0):
    """A ``make_llm`` for ``run_grid`` on the configured backend (``lreact.configured_llm``).
    Grammar on: the embedded engine's ``EmbeddedLLM(tool_grammar=True)``; other backends give
    ``None`` and ``make_llm.reason`` says so."""

    backend = configured_backend()

    def make_llm(setting, seed):
        options = {"temperature": setting.temperature, "top_p": setting.top_p, "seed": seed,
                   "max_tokens": max_tokens, "timeout": timeout}
        if backend == "embedded":
            options["top_k"] = 0     # no top-k cut (the engine's default is 40): top-p alone
        if not setting.grammar:
            return configured_llm(**options)
        if backend != "embedded":
            return None
        from ..engines.embedded import EmbeddedLLM

        return EmbeddedLLM(tool_grammar=True, **options)

    make_llm.backend = backend
    make_llm.sampler = (
        "sampler: the setting's temperature and top-p, no top-k cut, no repetition penalty"
        if backend == "embedded" else
        f"sampler: the setting's temperature and top-p; every other sampling option is the "
        f"{backend} server's own default (often top-k 40 and a repetition penalty)")
    make_llm.reason = "" if backend == "embedded" else NO_GRAMMAR_HERE.format(backend=backend)
    return make_llm


def _pct(num, den) -> str:
    return f"{num}/{den} ({100 * num / den:.0f}%)" if den else "-"


def rates_table(rows) -> str:
    """The grid as plain text: one short line per setting (counts of runs and replies)."""
    head = f"{'setting':<20} {'valid-call runs':>15} {'format errors':>13} {'correct':>8}"
    lines = [head, "-" * len(head)]
    for r in rows:
        start = f"{r.setting.label:<20}"
        if not r.runs:
            lines.append(f"{start} not run: {r.note}")
            continue
        lines.append(f"{start} {f'{r.valid_runs}/{r.runs}':>15} "
                     f"{f'{r.format_errors}/{r.replies}':>13} {f'{r.correct}/{r.runs}':>8}"
                     + (f"  ({r.failed} failed: {r.error[:60]})" if r.failed else ""))
    return "\n".join(lines)


def first_to_break(rows):
    """The setting, in the grid's order from the mildest, with the lowest valid-call rate (the
    one that broke tool calls most); None when every run of every setting was valid."""
    ran = [r for r in rows if r.runs]
    worst = min(ran, key=lambda r: r.rate("valid"), default=None)
    return None if worst is None or worst.rate("valid") == 1.0 else worst.setting


def rates_figure(rows, title="Does sampling break tool calls?"):
    """Bars of the three rates per setting, with the number of runs (``n=``) over each group."""
    import numpy as np


    fig = new_figure(max(8.0, 0.75 * len(rows)), 4.2)
    ax = fig.add_subplot(1, 1, 1)
    x = np.arange(len(rows))
    series = [("valid", "runs with only valid calls", "#2ca02c"),
              ("format_errors", "format errors per reply", "#d62728"),
              ("correct", "correct answers", "#1f77b4")]
    for k, (what, label, colour) in enumerate(series):
        values = [r.rate(what) if r.runs else 0.0 for r in rows]
        ax.bar(x + (k - 1) * 0.27, values, 0.27, label=label, color=colour)
    runs = {r.runs for r in rows if r.runs}
    for xi, r in zip(x, rows):
        if not r.runs or len(runs) > 1:
            ax.text(xi, 1.02, f"n={r.runs}" if r.runs else "not run", ha="center",
                    va="bottom", fontsize=7)
    ax.set_xticks(x, [r.setting.label.replace(" ", "\n") for r in rows], fontsize=7)
    ax.set_xlim(-0.6, len(rows) - 0.4)
    ax.set_ylim(0, 1.1)
    ax.set_yticks([0, 0.25, 0.5, 0.75, 1.0])
    ax.set_ylabel("rate")
    per = f" ({runs.pop()} runs per setting)" if len(runs) == 1 else ""
    ax.set_title(title + per, fontsize=10, pad=22)
    # above the axes, so no bar and no label can hide under it
    ax.legend(fontsize=7, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3, frameon=False)
    fig.tight_layout()
    return fig
