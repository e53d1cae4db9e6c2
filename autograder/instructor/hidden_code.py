"""Answers that bring code they do not show: a flag for the instructor (issue 28).

A student edition ships compiled reference code (the lectures run on it), and compiled code
can be read back and handed in as data: a base64 blob turned into a function, a second Python
started on it.  The student process refuses the plain routes while grading
(``autograder/inside/guard.py``), but a guard inside a process is not a boundary, so the
answers' *source* is also read here, on the instructor's side, for what an honest answer to
this unit never needs:

- the machinery that turns data into running code or reaches around the interpreter
  (``MECHANISMS``: ``marshal``, ``types.CodeType``, ``__code__``, ``ctypes``, starting programs),
  named in code or in a string (``getattr(f, "__code__")``);
- a large encoded payload: a run of base64 or hex of at least ``MIN_ENCODED`` characters in a
  string, bytes of at least ``MIN_BYTES``, a literal of at least ``MIN_NUMBERS`` whole numbers,
  or many short encoded strings that together make one.

``findings(source)`` lists what it found (plain words); ``grade.flag_copies`` adds
"brings code it does not show: ..." to the record's ``reason`` and the run's summary.  The score
stays what the tests gave: the judgement is the instructor's.
"""
from __future__ import annotations

import ast
import re

MECHANISMS = {
    "marshal": "marshal (compiled code as data)",
    "CodeType": "types.CodeType (a code object built by hand)",
    "FunctionType": "types.FunctionType (a function from a code object)",
    "__code__": "a function's __code__",
    "co_code": "raw byte code",
    "ctypes": "ctypes (the interpreter's memory)",
    "pythonapi": "ctypes.pythonapi",
    "_posixsubprocess": "_posixsubprocess (starting programs)",
    "subprocess": "subprocess (starting programs)",
    "system": None,         # only as os.system, see _attribute
    "posix_spawn": "os.posix_spawn (starting programs)",
    "execv": "os.exec* (starting programs)",
    "execve": "os.exec* (starting programs)",
    "fork": None,           # only as os.fork
}
MIN_ENCODED = 200        # characters of base64 / hex in one run
ENCODED = re.compile(rf"[A-Za-z0-9+/=_-]{{{MIN_ENCODED},}}")
MIN_BYTES = 150          # bytes in one bytes literal
MIN_NUMBERS = 150        # whole numbers in one list / tuple / set literal
MIN_PIECES_TOTAL = 400   # characters of short encoded strings in one cell, together
PIECE = re.compile(r"^[A-Za-z0-9+/=]{8,}$")


def findings(source: str) -> list[str]:
    """What ``source`` (one answer cell) holds that brings code it does not show, in words."""
    try:
        tree = ast.parse(_python(source))
    except (SyntaxError, ValueError):
        return _by_text(source)
    found, pieces = set(), 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            _name(node.id, found)
        elif isinstance(node, ast.Attribute):
            _attribute(node, found)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                _name(alias.name.split(".")[0], found)
            if isinstance(node, ast.ImportFrom) and node.module:
                _name(node.module.split(".")[0], found)
        elif isinstance(node, ast.Constant):
            value = node.value
            if isinstance(value, str):
                if value.strip() in MECHANISMS and MECHANISMS[value.strip()]:
                    found.add(MECHANISMS[value.strip()] + ", named in a string")
                if ENCODED.search(value):
                    found.add(f"an encoded payload ({len(value):,} characters)")
                elif PIECE.match(value):
                    pieces += len(value)
            elif isinstance(value, bytes) and len(value) >= MIN_BYTES:
                found.add(f"a bytes literal of {len(value):,} bytes")
        elif isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            numbers = sum(1 for e in node.elts
                          if isinstance(e, ast.Constant) and type(e.value) is int)
            if numbers >= MIN_NUMBERS:
                found.add(f"a literal of {numbers:,} whole numbers")
    if pieces >= MIN_PIECES_TOTAL:
        found.add(f"encoded strings of {pieces:,} characters in all")
    return sorted(found)


def _name(name: str, found: set) -> None:
    what = MECHANISMS.get(name)
    if what:
        found.add(what)


def _attribute(node: ast.Attribute, found: set) -> None:
    base = node.value.id if isinstance(node.value, ast.Name) else None
    if node.attr in ("system", "fork", "forkpty", "execv", "execve", "execl", "spawnv",
                     "posix_spawn") and base == "os":
        found.add(f"os.{node.attr} (starting programs)")
    elif node.attr in MECHANISMS and MECHANISMS[node.attr]:
        found.add(MECHANISMS[node.attr])


def _by_text(source: str) -> list[str]:
    found = {what for name, what in MECHANISMS.items() if what and re.search(
        rf"\b{re.escape(name)}\b", source)}
    if ENCODED.search(source):
        found.add("an encoded payload")
    return sorted(found)


def _python(source: str) -> str:
    """The cell as Python: IPython's magics and shell escapes turned into calls."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager
        return TransformerManager().transform_cell(source)
    except Exception:  # noqa: BLE001 - no IPython: read the cell as it is
        return source
