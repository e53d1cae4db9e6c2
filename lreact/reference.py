"""The rule for the course's reference implementations (lab introduction, "The rule").

``lreact.sampling``, ``lreact.chatml`` and ``lreact.tools`` hold the course's own versions of
functions the lab asks students to write.  Each is decorated ``@reference_implementation``:

- in a normal Python session nothing changes (the lecture's widgets use them);
- after ``engage()`` (the lab's setup cell calls it) a call raises ``ReferenceUnavailable``
  saying why, so a student's visible tests fail exactly as the grader would fail them;
- at grading time the process that runs the answers gets a copy of ``lreact`` in which these
  functions have no body at all (``strip_references``, used by ``autograder/sandbox/kit.py``).

Test and demo cells that need the real thing ask ``lreact.labchecks.reference(module, name)``,
which builds a private copy of the module with the rule switched off for that copy only.

A function of ``lreact`` that is not a reference implementation but holds a near copy of a
graded answer (the lecture's executor, the MCP example server's weather tool, the engines'
ChatML renderer, the tool-call-rate view's validator) is decorated ``@near_copy_of(<grade id>)``:
nothing changes where it runs (it is callable with the rule engaged and kept whole in the
grader's copy, which needs it), but the student edition ships its module compiled, without
source, as it ships the modules of the reference implementations (``ships_compiled`` of the
instructor's ``autograder/instructor/edition.py``).
"""
from __future__ import annotations

import ast
import functools
import threading


class ReferenceUnavailable(RuntimeError):
    """An answer called one of the course's reference implementations."""


def message(name: str) -> str:
    return (f"{name} is the course's reference implementation; answers must not call it "
            "(the grader runs answers without it): write your own")


class Rule:
    """Whether the rule is engaged, and whether a private copy is being built right now."""

    def __init__(self):
        self.engaged = False
        self._building = threading.local()

    def building(self) -> bool:
        return getattr(self._building, "depth", 0) > 0

    def build(self):
        rule = self

        class _Building:
            def __enter__(self):
                rule._building.depth = getattr(rule._building, "depth", 0) + 1

            def __exit__(self, *exc):
                rule._building.depth -= 1

        return _Building()


RULE = Rule()
REGISTERED: list = []   # "module.name" of every decorated function, in definition order


def reference_implementation(fn):
    """Mark ``fn`` as a reference implementation (see the module docstring)."""
    if RULE.building():
        return fn                       # a private copy for labchecks.reference: unlocked
    name = f"{fn.__module__}.{fn.__qualname__}"
    if name not in REGISTERED:
        REGISTERED.append(name)

    @functools.wraps(fn)
    def guarded(*args, **kwargs):
        if RULE.engaged:
            raise ReferenceUnavailable(message(name))
        return fn(*args, **kwargs)

    guarded.__reference_implementation__ = name
    return guarded


# the decorators that make the student edition ship a module compiled, without source
# (autograder/instructor/edition.py) and that the edition's leak search strips (proofs/edition_leaks.py)
COMPILED_MARKS = ("reference_implementation", "near_copy_of")
NEAR_COPIES: dict = {}   # "module.name" of every function marked near_copy_of -> grade ids


def near_copy_of(*answers: str):
    """Mark a function that holds a near copy of the graded answers ``answers`` (grade ids) but
    is no reference implementation (see the module docstring): returned unchanged."""
    def mark(fn):
        NEAR_COPIES[f"{fn.__module__}.{fn.__qualname__}"] = answers
        fn.__near_copy_of__ = answers
        return fn
    return mark


def engage(*, anywhere: bool = False) -> bool:
    """From now on, in this notebook's kernel, calling a reference implementation raises
    ``ReferenceUnavailable``.  Outside an IPython kernel (a script or a test that runs the lab's
    setup cell) nothing changes unless ``anywhere=True``.  Returns whether the rule is on."""
    if not anywhere:
        try:
            from IPython import get_ipython
        except ImportError:
            return RULE.engaged
        if get_ipython() is None:
            return RULE.engaged
    RULE.engaged = True
    return True


def disengage() -> None:
    RULE.engaged = False


# --- the grader's copy: bodies removed ----------------------------------------------------

def _is_marker(decorator, name: str = "reference_implementation") -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return (isinstance(target, ast.Name) and target.id == name) or \
        (isinstance(target, ast.Attribute) and target.attr == name)


def marked(node, *names: str) -> bool:
    """Whether the function ``node`` (ast) carries one of the decorators ``names`` (default:
    ``reference_implementation``)."""
    return isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
        _is_marker(d, n) for d in node.decorator_list for n in names or ("reference_implementation",))


def strip_references(source: str, module: str,
                     marks: tuple = ("reference_implementation",)) -> str:
    """``source`` of ``lreact.<module>`` with every ``@reference_implementation`` function's
    body replaced by ``raise ReferenceUnavailable(...)``: the code is not in the copy at all.
    ``marks``: the decorators whose functions lose their body (the grader's copy: only the
    reference implementations; the near copies stay, the grader's copy runs them)."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if marked(node, *marks):
            node.decorator_list = []
            text = message(f"lreact.{module}.{node.name}")
            node.body = ast.parse(
                "from lreact.reference import ReferenceUnavailable\n"
                f"raise ReferenceUnavailable({text!r})").body
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"
