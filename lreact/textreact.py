"""ReAct in plain text, as in the paper's reference implementation (Part II, "The core definition
of ReAct" and "In-context learning vs trajectory tuning"; Yao et al., 2023).

Before native tool calling, the model wrote its turns as text and the runtime parsed them::

    Thought: <free reasoning>
    Action: <tool>[<argument>]          (or finish[<answer>], the only way to end the run)
    Observation: <what the runtime got back: written by the runtime, never by the model>

This module holds the format, not the loop (the lab's ``parse_react_step`` and
``run_react_text`` are the student's):

- ``STOP``: the stop sequence ``"\\nObservation:"``: generation ends where the observation would
  start, so the model cannot write its own (a backend that ignores it gets cut by the runtime);
- ``EXEMPLAR``: the instructions and one worked trajectory (few-shot in-context learning), built
  from the offline weather table so its observations are the tools' real outputs;
- the prompt layout: ``EXEMPLAR + "\\n\\nQuestion: " + question + "\\nThought:"``, then after
  each step ``continuation + "\\nObservation: " + observation + "\\nThought:"``;
- ``ScriptedCompletion``: a scripted ``complete(prompt, stop) -> str`` for tests and the offline
  path (it records every prompt and replays its replies verbatim, stop sequences ignored);
- ``configured_complete()``: the live ``complete`` of the configured backend (Ollama's
  ``/api/generate`` with a raw prompt, or an OpenAI-compatible ``/v1/completions``), with a
  timeout on every HTTP call (see ``lreact.engines.backends``).
"""
from __future__ import annotations

import copy

from .engines.backends import configured_llm
from .engines.models import ScriptExhaustedError  # also what a ScriptedCompletion raises
from .tools import WEATHER

STOP = "\nObservation:"


def _report(city: str) -> str:

    row = WEATHER[city]
    return f"{row['temp_c']}°C, {row['condition']}"


def _exemplar() -> str:

    a, b = "Vienna", "London"
    ta, tb = WEATHER[a]["temp_c"], WEATHER[b]["temp_c"]
    warmer, colder = (a, b) if ta > tb else (b, a)
    diff = abs(ta - tb)
    expression = f"{max(ta, tb)} - {min(ta, tb)}"
    return "\n".join([
        "Solve the question with interleaved Thought, Action and Observation lines.",
        "A Thought is your reasoning about what to do next. An Action is exactly one of:",
        "  get_weather[city]: the current weather in a city, e.g. get_weather[Berlin]",
        "  calculate[expression]: the value of an arithmetic expression, e.g. calculate[(2 + 3) * 4]",
        "  finish[answer]: ends the task with your answer",
        "After each Action you get an Observation. Write one Thought and one Action per step.",
        "",
        f"Question: How many degrees warmer is it in {warmer} than in {colder}?",
        f"Thought: I need both temperatures. I start with {a}.",
        f"Action: get_weather[{a}]",
        f"Observation: {_report(a)}",
        f"Thought: {a} has {ta}°C. Now {b}.",
        f"Action: get_weather[{b}]",
        f"Observation: {_report(b)}",
        f"Thought: {b} has {tb}°C. The difference is {expression}.",
        f"Action: calculate[{expression}]",
        f"Observation: {diff}",
        f"Thought: It is {diff} degrees warmer in {warmer}.",
        f"Action: finish[{warmer} is {diff} degrees warmer than {colder}.]",
    ])


EXEMPLAR = _exemplar()


def first_prompt(question: str, exemplar: str = EXEMPLAR) -> str:
    """The layout of the first prompt, for demo cells: exemplar, question, an open Thought."""
    return f"{exemplar}\n\nQuestion: {question}\nThought:"


class ScriptedCompletion:
    """A text-completion model that replays ``replies`` in order: ``complete(prompt, stop)``.

    Every call is recorded in ``.calls`` as ``{"prompt": str, "stop": <as passed>}``.  The replies
    are returned verbatim, as a backend that does not honour stop sequences would: a reply that
    runs on into an invented ``Observation:`` line reaches the runtime, which must cut it.
    """

    def __init__(self, replies):
        replies = list(replies)
        for i, r in enumerate(replies):
            if not isinstance(r, str):
                raise TypeError(f"replies[{i}] must be a str, got {type(r).__name__}")
        self.replies = replies
        self.calls = []

    def __call__(self, prompt, stop=None) -> str:
        if not isinstance(prompt, str):
            raise TypeError(f"prompt must be a str, got {type(prompt).__name__}")
        self.calls.append({"prompt": prompt, "stop": copy.deepcopy(stop)})
        n = len(self.calls)
        if n > len(self.replies):
            raise ScriptExhaustedError(
                f"ScriptedCompletion has {len(self.replies)} replies but was called {n} times: "
                "the loop asked again after the script ended (does finish[...] end the run, and "
                "is there a step cap?)")
        return self.replies[n - 1]

    @property
    def prompts(self) -> list:
        return [c["prompt"] for c in self.calls]

    def __repr__(self):
        return f"ScriptedCompletion({len(self.replies)} replies, {len(self.calls)} calls made)"


class RecordingCompletion:
    """Wraps any ``complete(prompt, stop)`` and records each call and its reply in ``.calls``
    (``{"prompt", "stop", "reply"}``): for counting steps and format errors in a live run."""

    def __init__(self, complete):
        self.complete = complete
        self.calls = []

    def __call__(self, prompt, stop=None) -> str:
        reply = self.complete(prompt, stop)
        self.calls.append({"prompt": prompt, "stop": copy.deepcopy(stop), "reply": reply})
        return reply


def observations(prompt: str, start: int = 0) -> list:
    """The observations the runtime wrote into ``prompt`` after position ``start``: the text
    after each ``"\nObservation: "`` up to the next ``"\nThought:"``."""
    parts = prompt[start:].split("\nObservation: ")[1:]
    return [part.split("\nThought:")[0] for part in parts]


def configured_complete(*, max_tokens=200, timeout=None, **options):
    """``complete(prompt, stop) -> str`` on the configured backend (``LREACT_BACKEND``): Ollama's
    ``/api/generate`` with ``raw: true``, or an OpenAI-compatible ``/v1/completions``.

    ``options`` (temperature, seed, ...) go to ``lreact.configured_llm``; ``max_tokens`` caps each
    continuation.  Every HTTP call has the backend's timeout (pass ``timeout=`` to change it).
    """

    if timeout is not None:
        options["timeout"] = timeout
    llm = configured_llm(**options)

    def complete(prompt, stop=None):
        return llm.complete(prompt, stop=stop, max_tokens=max_tokens)

    complete.llm = llm
    return complete
