"""Checks for the lab's graded tests on the agent loop and on sampling frequencies.

The lab's test cells import these *inside each cell* (like ``lreact.checks``).  They turn a
student's history into plain tuples of plain ``str`` before comparing (never an object's own
``__eq__``), check what a ``ScriptedLLM`` received on each call (the whole history re-sent, the
tools advertised every time), check the pairing of calls and results independently of the
student's ``check_pairing``, and check the frequencies of seeded draws against exact binomial
bounds.
Nothing here prints or warns.  Lecture: Part II "The execution loop", Part IV "Message types: what the loop stores".
"""
from __future__ import annotations

import json
import math

from .checks import fail
from .messages import AssistantMessage, SystemMessage, ToolResultMessage, UserMessage
from .reference import RULE

# Each frequency check fails a correct sampler with probability at most ALPHA, whatever way it
# draws: every token's count is compared with exact binomial bounds (union bound over tokens).
ALPHA = 1e-9


def text(value, name="answer", hint="") -> str:
    """``value`` as a plain ``str`` (a str subclass is copied through JSON)."""
    if not isinstance(value, str):
        fail(f"{name} must be a str, got {type(value).__name__}", hint)
    return json.loads(json.dumps(value))


def plain_message(m, hint=""):
    """One lecture message as a tuple of plain strings:
    ``("system", content)``, ``("user", content)``, ``("tool", tool_call_id, content)``,
    ``("assistant", text, ((id, name, arguments), ...))``."""
    if isinstance(m, SystemMessage):
        return ("system", text(m.content, "SystemMessage.content", hint))
    if isinstance(m, UserMessage):
        return ("user", text(m.content, "UserMessage.content", hint))
    if isinstance(m, ToolResultMessage):
        return ("tool", text(m.tool_call_id, "ToolResultMessage.tool_call_id", hint),
                text(m.content, "ToolResultMessage.content", hint))
    if isinstance(m, AssistantMessage):
        calls = tuple((text(c.id, "ToolCall.id", hint), text(c.name, "ToolCall.name", hint),
                       text(c.arguments, "ToolCall.arguments", hint)) for c in m.tool_calls)
        return ("assistant", text(m.text, "AssistantMessage.text", hint), calls)
    fail(f"the history holds a {type(m).__name__}, not one of the lecture's message types "
          "(SystemMessage, UserMessage, AssistantMessage, ToolResultMessage)", hint)


def plain(history, hint="") -> list:
    """A history (a list of lecture messages) as a list of plain tuples."""
    if not isinstance(history, list):
        fail(f"the history must be a list, got {type(history).__name__}", hint)
    return [plain_message(m, hint) for m in history]


def roles(history, hint="") -> list:
    return [m[0] for m in plain(history, hint)]


def tool_names(tools) -> list | None:
    """The names of advertised tool schemas, in order (None when no tools were sent)."""
    if tools is None:
        return None
    try:
        return [str(t["function"]["name"]) for t in tools]
    except (TypeError, KeyError):
        return ["<not a tool schema>"]


def assert_model_calls(llm, history, tools, hint=""):
    """Each call the ScriptedLLM received carried the whole history up to the assistant turn it
    produced, and the full tool list; and each response was appended to the history unchanged.

    The responses of this run are the last ``len(llm.calls)`` assistant messages of ``history``.
    """
    h = plain(history, hint)
    n = len(llm.calls)
    answers = [i for i, m in enumerate(h) if m[0] == "assistant"]
    if n == 0:
        fail("the model was never called", hint)
    if len(answers) < n:
        fail(f"the model was called {n} times but the history holds only {len(answers)} "
              "assistant turns: is every response appended to the history?", hint)
    answers = answers[-n:]
    expected_tools = tool_names(tools)
    for k, (call, at) in enumerate(zip(llm.calls, answers), start=1):
        sent = plain(list(call["messages"]), hint)
        if sent != h[:at]:
            fail(f"model call {k} did not receive the whole history so far (it got "
                  f"{len(sent)} messages; the history before that answer has {at}): the model "
                  "is stateless, so every call re-sends everything", hint)
        if tool_names(call["tools"]) != expected_tools:
            fail(f"model call {k} was sent tools {tool_names(call['tools'])}, expected all the "
                  "tools on every call", hint)
        if h[at] != plain_message(llm.responses[k - 1], hint):
            fail(f"the response of model call {k} is not appended to the history unchanged",
                  hint)


def assert_paired(history, hint=""):
    """Every tool call of the history is answered once, in order, right after its assistant turn,
    by a result carrying its id; no other tool results."""
    h = plain(history, hint)
    i = 0
    while i < len(h):
        m = h[i]
        if m[0] == "tool":
            fail(f"message {i} is a tool result ({m[1]!r}) that does not follow the calls of "
                  "an assistant turn", hint)
        i += 1
        if m[0] == "assistant" and m[2]:
            ids = [c[0] for c in m[2]]
            got = [x[1] for x in h[i:i + len(ids)] if x[0] == "tool"]
            if got != ids:
                fail(f"the assistant turn at message {i - 1} asked for calls {ids}; the results "
                      f"that follow carry ids {got}", hint)
            i += len(ids)


def repeat(fn, n: int, *args, **kwargs) -> list:
    """``[fn(*args, **kwargs) for _ in range(n)]``: the same object arguments (an rng keeps
    drawing) on every call.  Where the lab is graded, ``fn`` is your function running in
    another process, and the ``n`` calls go there in one request (the frequency tests make
    thousands); the values and the rng's draws are the same as here."""
    batch = getattr(type(fn), "lreact_repeat", None)
    if batch is None:
        return [fn(*args, **kwargs) for _ in range(int(n))]
    values = batch(fn, int(n), args, kwargs)
    if type(values) is not list or len(values) != int(n):     # one value per call, as a list
        raise TypeError(f"repeat: {int(n)} calls gave "
                        f"{len(values) if type(values) is list else 'no list of'} values")
    return values


def token_index(token, n: int, *, name="sample_token", hint="") -> int:
    """``token`` as an int, if it is a token index in ``0..n-1`` (a Python or numpy integer,
    not a bool, a float or a string); otherwise an AssertionError that says what came back.
    The frequency tests count draws with it, so that only real token indices are counted."""
    import numpy as np

    ok = isinstance(token, (int, np.integer)) and not isinstance(token, (bool, np.bool_)) \
        and 0 <= int(token) < n
    assert ok, (f"{name} must return a token index in 0..{n - 1} (an int), got {token!r}"
                + (f"\nHint: {hint}" if hint else ""))
    return int(token)


def binomial_bounds(n: int, p: float, tail: float) -> tuple:
    """``(lo, hi, mass)`` for X ~ Binomial(n, p): the widest ``lo``, ``hi`` with P(X < lo) <= tail
    and P(X > hi) <= tail, and ``mass`` = P(X < lo) + P(X > hi), computed exactly (in floats)."""
    n, p = int(n), float(p)
    if p <= 0 or p >= 1:
        return (0, 0, 0.0) if p <= 0 else (n, n, 0.0)
    head = math.lgamma(n + 1)
    lp, lq = math.log(p), math.log1p(-p)

    def log_pmf(k):
        return head - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * lp + (n - k) * lq

    def first_nonzero(k):     # the terms beyond it are 0.0 in floats (log pmf < -745)
        mode = min(n, int((n + 1) * p))
        a, b = k, mode                 # log pmf is monotone between k and the mode
        while abs(b - a) > 1:
            m = (a + b) // 2
            a, b = (m, b) if log_pmf(m) < -745 else (a, m)
        return a if log_pmf(a) >= -745 else b

    lo, below = first_nonzero(0), 0.0
    while lo <= n and below + (term := math.exp(log_pmf(lo))) <= tail:
        below += term
        lo += 1
    hi, above = first_nonzero(n), 0.0
    while hi >= 0 and above + (term := math.exp(log_pmf(hi))) <= tail:
        above += term
        hi -= 1
    return lo, hi, below + above


def _tail(probs, alpha):
    inside = sum(1 for p in probs if 0 < p < 1)
    return alpha / (2 * max(inside, 1))


def failure_bound(n: int, probs, alpha: float = ALPHA) -> float:
    """The probability that ``assert_frequencies`` fails a correct sampler on ``n`` draws from
    ``probs`` is at most this sum of tail masses (<= ``alpha``)."""
    probs = [float(p) for p in probs]
    tail = _tail(probs, alpha)
    return sum(binomial_bounds(n, p, tail)[2] for p in probs)


def assert_frequencies(counts, probs, *, name="the sampled frequencies", hint="", alpha=ALPHA):
    """Observed ``counts`` are consistent with ``probs``: a token of probability 0 never comes out,
    and each other token's count lies within exact binomial bounds, so that a correct sampler, however
    it draws, fails with probability at most ``alpha`` (``failure_bound``)."""
    counts = [int(c) for c in counts]
    probs = [float(p) for p in probs]
    if len(counts) != len(probs):
        fail(f"{name}: {len(counts)} counts for {len(probs)} probabilities", hint)
    n, tail = sum(counts), _tail(probs, alpha)
    for i, (c, p) in enumerate(zip(counts, probs)):
        if p <= 0 and c:
            fail(f"{name}: token {i}, of probability 0, was drawn {c} times", hint)
    for i, (c, p) in enumerate(zip(counts, probs)):
        lo, hi, _ = binomial_bounds(n, p, tail)
        if not lo <= c <= hi:
            fail(f"{name} do not follow the distribution: token {i} (probability {p:.4g}) came "
                  f"out {c} times in {n} draws; a correct sampler gives {lo} to {hi} times (outside "
                  f"that range with probability below {alpha:g})", hint)


# --- reference implementations for the lab's tests and demo cells ------------------------------
# The public functions of lreact.sampling, lreact.chatml and lreact.tools are the answers the lab
# asks for: the lab's setup cell engages the rule of ``lreact.reference`` (calling them raises
# ReferenceUnavailable), and at grading time the answers run with a copy of lreact that has no
# bodies for them.  The tests (and demo cells) take their oracle from a private copy of the module
# file instead: a fresh module object on every call, never in sys.modules, built with the rule
# switched off for that copy only.

def _student_code_on_stack(frame) -> bool:
    """In an IPython kernel: False iff ``frame`` is a cell's top-level code run by the shell,
    with no code of the notebook's namespace above it (a test or demo cell, not a function a
    cell defined).  Outside IPython: False."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    if shell is None:
        return False
    ns = shell.user_ns
    if frame.f_code.co_name != "<module>" or frame.f_globals is not ns:
        return True
    frame = frame.f_back
    while frame is not None:
        if frame.f_globals is ns:
            return True
        frame = frame.f_back
    return False


def reference(module: str, name: str):
    """``name`` from a private copy of ``lreact.<module>`` (e.g. ``reference("chatml",
    "render_chatml")``, or ``reference("views.methods", "compare_methods")``): the same code as the public one, unlocked, and a distinct object that a
    student's ``from lreact.chatml import render_chatml`` does not reach.  Only a cell's top-level
    code may ask (the lab's test and demo cells); a function defined in the notebook may not.
    Where the answers are graded, the copy of lreact has no reference code, so there this
    returns functions that raise ``ReferenceUnavailable``."""
    import importlib
    import os
    import sys


    if _student_code_on_stack(sys._getframe(1)):
        raise RuntimeError("lreact.labchecks.reference serves the lab's test and demo cells only: "
                           "write your own function")
    parts = module.split(".") if isinstance(module, str) else [""]
    if not all(p.isidentifier() and not p.startswith("_") for p in parts):
        raise ValueError(f"not an lreact module: {module!r}")
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, *parts) + ".py"
    if len(parts) == 1 and not os.path.exists(path) and not os.path.exists(path + "c"):
        # a module of a subpackage named alone, e.g. "methods" for lreact.views.methods
        inside = [d for d in sorted(os.listdir(here))
                  if os.path.isfile(os.path.join(here, d, "__init__.py"))
                  and any(os.path.isfile(os.path.join(here, d, module + ext))
                          for ext in (".py", ".pyc"))]
        if len(inside) == 1:
            parts = [inside[0], module]
            module = ".".join(parts)
            path = os.path.join(here, *parts) + ".py"
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            code = compile(f.read(), path, "exec")
    else:                        # the student edition ships this module compiled, no source
        import marshal
        with open(path + "c", "rb") as f:
            code = marshal.loads(f.read()[16:])
    # the public module first, with the rule on: the copy's relative imports then find every
    # public module it needs already guarded (one first imported while building would not be)
    importlib.import_module(f"{__package__}.{module}")
    copy = type(sys)(f"{__package__}._reference_{'_'.join(parts)}")
    # relative imports (.messages) resolve to the shared public modules
    copy.__dict__.update(__file__=path, __package__=".".join([__package__, *parts[:-1]]),
                         __spec__=None)
    with RULE.build():
        exec(code, copy.__dict__)
    found = getattr(copy, name)
    if (module, name) in PURE:
        found.lreact_pure = True      # the grader may reuse its result for the same arguments
    return found


# Functions of the course whose result depends only on their arguments, which they never change:
# where the lab is graded, an answer that calls one of them (handed in by a test, e.g. the
# ``temperature_fn`` of ``sample_token``) gets the result for the same arguments from a cache in
# its own process instead of a round trip per draw (autograder/README.md, "How a submission is
# graded"). The answer learns nothing it did not already receive.
PURE = frozenset(("sampling", n) for n in ("softmax", "temperature_softmax", "top_k_filter",
                                           "top_p_filter", "entropy"))
