"""How long a live cell makes you wait, said before it starts (issue: "waiting that is worth it").

A live cell runs a real model.  Its first line says how long it will take, estimated from what
it took in CI, so a student can decide to run it now, later, or larger.  The rule, stated so
that anyone can check it:

- ``MEASURED`` holds each live cell's seconds with the notebook's defaults on SmolLM2-135M
  (Q4_1, 98 MB, the model of the course's tests) in CI: the CPU seconds of the kernel process
  (all its threads), which is what the cell takes on a CI machine with nothing else running
  there (llama-cpp-python runs on half the cores: one thread on CI's two).
  tests/test_notebooks_real_model.py measures them again on every CI run, holds the scaled sums
  to ``BUDGET_S`` and fails when a cell takes more than twice its entry here.
- On another model file the time scales with the file's size: a model twice as large reads
  twice the weights per token (an estimate: the kinds of quantisation differ too).
- A laptop with ``LAPTOP_CORES`` = 4 cores gives llama.cpp two threads, twice CI's one; we assume
  that halves the time (an estimate: memory bandwidth, not cores, limits generation on some
  machines).

So the default model of the course, Qwen2.5-0.5B-Instruct Q4_K_M (491 MB), takes
``491 / 98 / 2 = 2.5`` times the CI seconds.  ``BUDGET_S``: the core path's live cells (lecture
and first lab) at most about 2 minutes in all, the second lab's at most about 10.
"""
from __future__ import annotations

import os

SMOLLM2_BYTES = 98_362_432          # SmolLM2-135M-Instruct.Q4_1.gguf (the tests' model)
DEFAULT_BYTES = 491_000_000         # qwen2.5-0.5b-instruct-q4_k_m.gguf, about 491 MB (the default)
CI_THREADS, LAPTOP_CORES = 1, 4     # llama-cpp-python's default: half the cores
BUDGET_S = {"core": 120, "lab2": 600}
ABOUT = 1.1                         # "at most about": the budget, give or take 10 %

# Seconds per live cell on SmolLM2 in CI with the defaults (kernel CPU seconds; see above):
# notebook -> {cell id: seconds}.  "core" is the lecture and the first lab.
MEASURED = {
    "lecture-overview": {"setup-check": 0.5},
    "lecture-sampling": {"qwen-widget": 1.0, "lens-widget": 3.5},
    "lecture-messages": {"budget-engine-count": 0.5, "kv-reuse": 10.5},
    "lab1": {"sweep": 3.0, "first-token": 1.0, "real-sampler": 1.5, "real-mask": 6.0,
             "round-trip": 7.0, "full-loop": 14.5},
    "lab2": {"c-live-setup": 0.5, "c-drift": 6.5, "c-live-run": 27.5, "c-rates-grid": 60.0,
             "c-structured": 19.0, "d-mcp-live": 4.5, "d-compare": 17.0, "d-methods": 25.0,
             "d-ex11-live": 12.0},
}
CORE = ("lecture-overview", "lecture-sampling", "lecture-messages", "lab1")
WHERE = {cell: notebook for notebook, cells in MEASURED.items() for cell in cells}


def factor(model_bytes: int | None = None) -> float:
    """CI seconds -> seconds on a 4-core laptop with a model file of ``model_bytes``."""
    size = DEFAULT_BYTES if model_bytes is None else model_bytes
    return size / SMOLLM2_BYTES * CI_THREADS / (LAPTOP_CORES // 2)


def seconds(cell: str, model_bytes: int | None = None, scale: float = 1.0) -> float:
    """The estimate for ``cell`` (an id of ``MEASURED``); ``scale``: the run's size against the
    default (2.0 for twice the questions)."""
    return MEASURED[WHERE[cell]][cell] * scale * factor(model_bytes)


def budget_seconds(part: str, measured: dict | None = None,
                   model_bytes: int | None = None) -> float:
    """The scaled sum of a part's live cells (``"core"`` or ``"lab2"``), from ``measured``
    ({cell: CI seconds}; default ``MEASURED``)."""
    notebooks = CORE if part == "core" else ("lab2",)
    cells = [c for nb in notebooks for c in MEASURED[nb]]
    table = {c: MEASURED[WHERE[c]][c] for c in cells}
    table.update({c: s for c, s in (measured or {}).items() if c in table})
    return sum(table.values()) * factor(model_bytes)


def _configured_model():
    """(file name, bytes) of the embedded model this kernel would use, or (None, None) when the
    backend is a server."""
    from ..engines.backends import configured_backend
    from ..engines.gguf import DEFAULT_GGUF_FILE, GGUF_ENV_VAR

    try:
        if configured_backend() != "embedded":
            return None, None
    except ValueError:
        return None, None
    path = os.environ.get(GGUF_ENV_VAR, "").strip()
    if path and os.path.isfile(path):
        return os.path.basename(path), os.path.getsize(path)
    return DEFAULT_GGUF_FILE, DEFAULT_BYTES


def _say(s: float) -> str:
    return f"{s:.0f} s" if s < 90 else f"{s / 60:.0f} min"


def announce(cell: str, *, scale: float = 1.0, larger: str = "", larger_scale: float = 0.0):
    """Print, before a live cell starts, how long it will take here: the estimate for the
    configured embedded model on a 4-core laptop, and what it was measured from; ``larger``
    (a setting) and ``larger_scale`` (its size against this run) say what a larger run costs."""
    name, size = _configured_model()
    base = MEASURED[WHERE[cell]][cell] * scale
    if name is None:
        line = (f"Wait: {_say(base * factor())} on the embedded default model on a 4-core "
                f"laptop; on a server it depends on the server's machine.")
    else:
        line = (f"Wait: about {_say(seconds(cell, size, scale))} with {name} on a 4-core laptop "
                f"(estimated: {base:.0f} s measured in CI on SmolLM2-135M, scaled by the model "
                f"file, {size / 1e6:.0f} MB against 98 MB, and halved for 4 cores against 2).")
    if larger:
        line += (f" Larger: {larger}, about "
                 f"{_say(seconds(cell, size, larger_scale) if name else base / scale * larger_scale * factor())}.")
    print(line, flush=True)


class Narrated:
    """``llm`` that prints one line per model call as it returns, so a long live cell shows
    its progress: the call's number, what came back, the time, and on an engine that says so,
    the prompt tokens and how many of them the engine's cache kept (``EmbeddedLLM.last``)."""

    def __init__(self, llm, label: str = ""):
        self.llm, self.label, self.calls = llm, label, 0

    def __getattr__(self, name):
        return getattr(self.llm, name)

    def __call__(self, messages, tools=None):
        import time

        started = time.perf_counter()
        reply = self.llm(messages, tools)
        self.calls += 1
        what = (f"{len(reply.tool_calls)} tool call(s)" if reply.tool_calls
                else f"text ({len(reply.text)} characters)")
        last = getattr(self.llm, "last", None) or {}
        tokens = ""
        if isinstance(last.get("prompt_tokens"), int):
            tokens = f", {last['prompt_tokens']} prompt tokens"
            if isinstance(last.get("reused"), int):
                tokens += f" ({last['reused']} kept in the engine's cache)"
        print(f"  {self.label}model call {self.calls}: {what}, "
              f"{time.perf_counter() - started:.1f} s{tokens}", flush=True)
        return reply
