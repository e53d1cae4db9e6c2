"""Comparison helpers for graded tests (the exercises' and the lab's test cells use them).

Rules that keep tests honest (how a test cell is scored: ``autograder/README.md``):
- compare plain numbers after converting them (``float``, ``int``, sorted lists of ``str``), never
  an answer object's own ``__eq__``;
- a failing check raises AssertionError with a hint that names the lecture section to reread,
  never the expected value (``reveal=False``, the default for visible tests);
- nothing here prints or warns: any stderr in a test cell would zero it under nbgrader;
- a failed check shows its message and hint alone, not a traceback through this module
  (``CheckFailed``): that is what a student reads under the test cell and in the list nbgrader's
  *Validate* shows.  The cell still ends with an error, as a failing test must.

Test cells import these names *inside each cell*, so the grader can reload this module before
every test cell and a student cannot swap them out.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from .actions import codeact


class CheckFailed(AssertionError):
    """What a course check raises when an answer fails it: an AssertionError whose text (the
    message, then ``Hint: ...``) is all a student needs to see.  IPython shows it that way
    (``_render_traceback_``: its hook for exceptions that format themselves), so neither the
    cell's output nor nbgrader's *Validate* list walks through this module's frames."""

    def _render_traceback_(self):
        return [f"\x1b[31mTest not passed\x1b[39m: {self}"]


# by name too it is the AssertionError a failing test raises: nbgrader, the grader's feedback
# ("a failed check") and a reader all go by the name
CheckFailed.__name__ = CheckFailed.__qualname__ = "AssertionError"


def fail(message: str, hint: str = ""):
    """Raise the AssertionError a graded test fails with: the message, then ``Hint: ...``
    (every check module of the course fails this way)."""
    raise CheckFailed(message if not hint else f"{message}\nHint: {hint}")


def as_float_list(value, name="answer", hint="") -> list:
    """``value`` as a list of plain Python floats (a scalar becomes a one-element list)."""
    if value is None or value is Ellipsis:
        fail(f"{name} is not set yet", hint)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            arr = np.asarray(value, dtype=float).ravel()
    except (TypeError, ValueError):
        fail(f"{name} must be a number or a list of numbers, got {type(value).__name__}", hint)
    return [float(x) for x in arr.tolist()]


def as_float(value, name="answer", hint="") -> float:
    """``value`` as one plain float."""
    values = as_float_list(value, name, hint)
    if len(values) != 1:
        fail(f"{name} must be a single number, got {len(values)} values", hint)
    return values[0]


def as_int(value, name="answer", hint="") -> int:
    """``value`` as a plain int (a float that is not whole is refused)."""
    if isinstance(value, bool) or value is None or value is Ellipsis:
        fail(f"{name} must be a whole number, got {value!r}", hint)
    try:
        f = float(value)
    except (TypeError, ValueError):
        fail(f"{name} must be a whole number, got {type(value).__name__}", hint)
    if not math.isfinite(f) or f != int(f):
        fail(f"{name} must be a whole number, got {f}", hint)
    return int(f)


def as_str_set(value, name="answer", hint="") -> list:
    """``value`` (an iterable of strings) as a sorted list of distinct plain ``str``."""
    if isinstance(value, str) or value is None or value is Ellipsis:
        fail(f"{name} must be a list or set of strings, got {value!r}", hint)
    try:
        items = [str(x) for x in list(value)]
    except TypeError:
        fail(f"{name} must be a list or set of strings, got {type(value).__name__}", hint)
    return sorted(set(items))


def assert_close(actual, expected, *, tol=1e-6, name="answer", hint="", reveal=False):
    """Every entry of ``actual`` within ``tol`` of ``expected`` (same length)."""
    a = as_float_list(actual, name, hint)
    e = [float(x) for x in np.asarray(expected, dtype=float).ravel().tolist()]
    if len(a) != len(e):
        fail(f"{name} has {len(a)} values, expected {len(e)}", hint)
    for i, (x, y) in enumerate(zip(a, e)):
        ok = (x == y) or (math.isfinite(x) and math.isfinite(y) and abs(x - y) <= tol)
        if not ok:
            where = f" at index {i}" if len(a) > 1 else ""
            detail = f": got {x!r}, expected {y!r}" if reveal else f": got {x!r}"
            fail(f"{name} is wrong{where}{detail}", hint)


def assert_int_equal(actual, expected, *, name="answer", hint="", reveal=False):
    a = as_int(actual, name, hint)
    if a != int(expected):
        fail(f"{name} is wrong: got {a}" + (f", expected {int(expected)}" if reveal else ""),
              hint)


def assert_same_set(actual, expected, *, name="answer", hint="", reveal=False):
    a = as_str_set(actual, name, hint)
    e = sorted(set(str(x) for x in expected))
    if a != e:
        fail(f"{name} is wrong: got {a}" + (f", expected {e}" if reveal else ""), hint)


def assert_probability_vector(p, n=None, *, name="probabilities", hint="", tol=1e-9):
    """Non-negative, finite, summing to one (and of length ``n`` if given)."""
    values = as_float_list(p, name, hint)
    if n is not None and len(values) != n:
        fail(f"{name} has {len(values)} entries, expected {n}", hint)
    if any(not math.isfinite(v) or v < 0 for v in values):
        fail(f"{name} has a negative, NaN or infinite entry: {values}", hint)
    if abs(math.fsum(values) - 1.0) > tol:
        fail(f"{name} sum to {math.fsum(values)!r}, not 1", hint)
    return values


def assert_raises(exc_type, fn, *args, name="call", hint="", **kwargs):
    """``fn(*args, **kwargs)`` raises ``exc_type`` (and returns the exception)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn(*args, **kwargs)
    except exc_type as e:
        return e
    except Exception as e:  # noqa: BLE001 - report what was raised instead
        fail(f"{name} raised {type(e).__name__}: {e}, expected {exc_type.__name__}", hint)
    fail(f"{name} did not raise {exc_type.__name__}", hint)


def quiet(fn, *args, **kwargs):
    """Call ``fn`` with warnings silenced (a stray warning in a test cell would zero it)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            return fn(*args, **kwargs)


def run_code_action(code, reports, *, name="code_action", hint="", timeout=20):
    """Run a code action (a string of Python, Exercise 11) in a fresh, limited interpreter
    OUTSIDE this process (``lreact.actions.codeact.run_python``), where ``get_weather(city)`` answers
    from ``reports`` (``{"Berlin": "12°C, rainy", ...}``).  Returns ``(cities looked up, value of
    answer)`` as plain values; what the code prints is discarded.  The code never runs in the
    process that checks it, so it cannot touch the test (Part III, "Specific tools vs a code
    tool")."""
    import json
    import secrets

    if not isinstance(code, str):
        fail(f"{name} must be a string of Python code, got {type(code).__name__}", hint)
    marker = "lreact-result-" + secrets.token_hex(8)
    prelude = "\n".join([
        "import atexit as _atexit, io as _io, json as _json, sys as _sys",
        f"_REPORTS = {json.dumps({str(k): str(v) for k, v in reports.items()})}",
        "_CALLS = []",
        "def get_weather(city, unit='celsius'):",
        "    _CALLS.append(str(city))",
        "    return _REPORTS[str(city)]",
        "def _report():",
        "    a = globals().get('answer')",
        "    a = a if isinstance(a, (str, int, float, bool, type(None))) else repr(a)",
        f"    _sys.__stdout__.write('\\n{marker} ' + _json.dumps({{'calls': _CALLS, 'answer': a}}) + '\\n')",
        "    _sys.__stdout__.flush()",
        "_atexit.register(_report)",
        "_sys.stdout = _io.StringIO()",
        ""])
    # looked up at call time: the grader puts its own sandbox there (autograder/run/code_runs.py)
    done = codeact.run_python(code, timeout=timeout, prelude=prelude, max_output=200_000)
    if done["timed_out"]:
        fail(f"{name} did not finish within {timeout} s", hint)
    if done["exit_code"] != 0:
        last = [line for line in done["stderr"].strip().splitlines() if line.strip()]
        fail(f"{name} raised an error: {last[-1] if last else 'exit status ' + str(done['exit_code'])}",
              hint)
    lines = [line for line in done["stdout"].splitlines() if line.startswith(marker + " ")]
    if not lines:
        fail(f"{name} ended without reaching its end (did it call os._exit?)", hint)
    result = json.loads(lines[-1][len(marker) + 1:])
    return [str(c) for c in result["calls"]], result["answer"]
