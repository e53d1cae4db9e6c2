"""The catalogue of wrong answers: small edits of a solution cell, each naming one mistake.

Public API (selfcheck and the tests use only this):

    from autograder.proofs import catalogue
    for e in catalogue.entries("lecture-ReAct-lab"):
        e.assignment, e.grade_id, e.slug   # where it belongs: the answer cell ``grade_id``
        e.mistake                          # the one line after ``# WRONG:``
        e.source                           # the complete cell source a student would submit
        e.path, e.kind                     # the file, "edit" or "cell"
        e.cascades                         # ((test grade_id, reason), ...): declared exceptions

``entries`` raises ``CatalogueError`` (a ValueError) naming the file and the hunk when an edit
does not apply, when its answer cell does not exist, or when a file is malformed.

Files, in ``autograder/proofs/wrong_answers/<assignment_id>/``:

- ``<grade_id>__<slug>.edit``: first line ``# WRONG: <the mistake>``, then one or more hunks
  separated by a line ``@@``. In a hunk, ``-`` lines are lines of the solution cell (exact text
  after the ``-``, indentation included) that must occur exactly once, one after the other;
  ``+`` lines replace them (no ``+`` line deletes them). Every hunk is located in the unedited
  solution, hunks must not overlap. Example::

      # WRONG: forgets to subtract the maximum, so large logits overflow to nan
      -    e = np.exp(z - top)
      +    e = np.exp(z)

- ``<grade_id>__<slug>.py``: first line ``# WRONG: ...``, then the whole replacement cell;
  only for a genuinely different approach, where an edit would rewrite most of the cell.

A wrong answer loses points in its own function's tests only (``test_<grade_id>*``: every test
passes the course's version of the functions it builds on; the selfcheck proves it).  A deliberate
exception is declared right after the ``# WRONG:`` line, one line per test cell, with its reason:

      # CASCADE: test_run_agent__bad_calls: <why this cell may lose points too>

Right answers, in ``autograder/proofs/right_answers/<assignment_id>/``, are the other side of the same
promise: answers that follow the task's text literally in a way the model solution does not (a
different tolerance, layout or draw).  Same two formats, first line ``# RIGHT: <the reading>``
and no ``# CASCADE:`` line; ``right_entries(assignment_id)`` loads them and the selfcheck proves
each scores full marks (every correct literal reading of a task earns its points).

"The solution cell" is the source notebook's answer cell as a student who got it right would
have written it: the cell with its ``### BEGIN SOLUTION`` / ``### END SOLUTION`` lines removed.
The resulting ``source`` keeps the ``# WRONG:`` line at its top (a comment, so the cell runs the
same), which makes every graded copy say which mistake it models.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from pathlib import Path

import nbformat

from .. import paths
from ..instructor.submissions import assignments

WRONG_PREFIX = "# WRONG: "
RIGHT_PREFIX = "# RIGHT: "
KINDS = {WRONG_PREFIX: "wrong_answers", RIGHT_PREFIX: "right_answers"}
CASCADE_PREFIX = "# CASCADE: "
HUNK_SEPARATOR = "@@"
SLUG = re.compile(r"^[A-Za-z0-9_]+$")
_MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")


class CatalogueError(ValueError):
    """A catalogue file that is malformed or does not apply to its solution cell."""


@dataclass(frozen=True)
class Entry:
    assignment: str
    grade_id: str
    slug: str
    mistake: str
    source: str
    path: Path
    kind: str  # "edit" or "cell"
    cascades: tuple = ()  # ((test grade_id, reason), ...): other tests it may cost, declared


def folder(assignment_id: str, root: Path = paths.ROOT, prefix: str = WRONG_PREFIX) -> Path:
    return Path(root) / "autograder" / "proofs" / KINDS[prefix] / assignment_id


def files(assignment_id: str, root: Path = paths.ROOT, prefix: str = WRONG_PREFIX) -> list[Path]:
    """Every catalogue file of an assignment (``.edit`` and ``.py``), sorted by name."""
    d = folder(assignment_id, root, prefix)
    if not d.is_dir():
        return []
    return sorted(p for p in d.iterdir() if p.suffix in (".edit", ".py") and p.is_file())


def solution_text(cell_source: str) -> str:
    """An answer cell's source with nbgrader's solution marker lines removed."""
    return "\n".join(line for line in cell_source.splitlines()
                     if line.strip() not in _MARKERS)


def solution_cells(source_notebook) -> dict:
    """{grade_id: solution text} of every answer cell (nbgrader ``solution: true``)."""
    nb = source_notebook
    if isinstance(nb, (str, Path)):
        nb = nbformat.read(nb, as_version=4)
    out = {}
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {}) or {}
        if meta.get("solution") and meta.get("grade_id"):
            out[meta["grade_id"]] = solution_text(cell.source)
    return out


def _split_name(path: Path) -> tuple[str, str]:
    gid, sep, slug = path.stem.partition("__")
    if not sep or not gid or not SLUG.match(slug):
        raise CatalogueError(f"{path.name}: the file name must be <grade_id>__<slug> with a "
                             f"slug of letters, digits and _")
    return gid, slug


def _mistake(path: Path, text: str, prefix: str = WRONG_PREFIX) -> tuple[str, str]:
    first, _, rest = text.partition("\n")
    if not first.startswith(prefix) or len(first.strip()) <= len(prefix) + 5:
        what = "the mistake" if prefix == WRONG_PREFIX else "the reading of the task"
        raise CatalogueError(f"{path.name}: the first line must be '{prefix}<{what}>', "
                             f"{what} said in more than 5 characters")
    return first[len(prefix):].strip(), rest


def _cascades(path: Path, rest: str) -> tuple[tuple, str]:
    """The ``# CASCADE: <test grade_id>: <reason>`` lines right after the ``# WRONG:`` line, and
    the text after them."""
    found, lines = [], rest.split("\n")
    while lines and lines[0].startswith(CASCADE_PREFIX.rstrip()):
        line = lines.pop(0)
        test, sep, reason = line[len(CASCADE_PREFIX):].partition(":")
        test, reason = test.strip(), reason.strip()
        if not sep or not re.fullmatch(r"test_\w+", test) or len(reason) < 10:
            raise CatalogueError(f"{path.name}: a cascade is declared as '{CASCADE_PREFIX}"
                                 f"<test grade_id>: <the reason>', got {line[:80]!r}")
        found.append((test, reason))
    return tuple(found), "\n".join(lines)


def parse_hunks(text: str, name: str = "edit") -> list[tuple[list[str], list[str]]]:
    """The hunks of an edit body (everything after its ``# WRONG:`` line)."""
    hunks, minus, plus = [], [], []

    def close(n):
        if not minus:
            raise CatalogueError(f"{name}: hunk {n} has no '-' line: every hunk replaces lines "
                                 f"of the solution (repeat a neighbouring line to insert)")
        hunks.append((minus[:], plus[:]))
        minus.clear()
        plus.clear()

    lines = text.split("\n")
    while lines and lines[-1] == "":
        lines.pop()
    for number, line in enumerate(lines, start=2):
        if line == HUNK_SEPARATOR:
            close(len(hunks) + 1)
        elif line.startswith("-"):
            if plus:
                raise CatalogueError(f"{name}, line {number}: a '-' line after '+' lines; start "
                                     f"a new hunk with a line '{HUNK_SEPARATOR}'")
            minus.append(line[1:])
        elif line.startswith("+"):
            plus.append(line[1:])
        else:
            raise CatalogueError(f"{name}, line {number}: every line of an edit starts with "
                                 f"'-', '+' or is '{HUNK_SEPARATOR}', got {line[:60]!r}")
    close(len(hunks) + 1)
    return hunks


def apply_edit(solution: str, hunks, name: str = "edit") -> str:
    """``solution`` with every hunk applied; CatalogueError when a hunk does not fit."""
    lines = solution.split("\n")
    spans = []
    for n, (minus, plus) in enumerate(hunks, start=1):
        k = len(minus)
        at = [i for i in range(len(lines) - k + 1) if lines[i:i + k] == minus]
        if len(at) != 1:
            where = "does not occur" if not at else f"occurs {len(at)} times"
            raise CatalogueError(
                f"{name}: hunk {n}: its '-' lines {where} in the solution cell (they must occur "
                f"exactly once, consecutively, indentation included); first of them: "
                f"{minus[0]!r}")
        spans.append((at[0], at[0] + k, plus, n))
    spans.sort()
    for (a0, a1, _, n1), (b0, _, _, n2) in zip(spans, spans[1:]):
        if b0 < a1:
            raise CatalogueError(f"{name}: hunks {n1} and {n2} overlap")
    for start, end, plus, _ in reversed(spans):
        lines[start:end] = plus
    return "\n".join(lines)


def load_entry(path: Path, assignment_id: str, solutions: dict,
               prefix: str = WRONG_PREFIX) -> Entry:
    """One catalogue file as an Entry (see the module docstring); ``prefix`` RIGHT_PREFIX for a
    right answer."""
    path = Path(path)
    gid, slug = _split_name(path)
    text = path.read_text(encoding="utf-8")
    mistake, body = _mistake(path, text, prefix)
    cascades, body = _cascades(path, body)
    if cascades and prefix != WRONG_PREFIX:
        raise CatalogueError(f"{path.name}: a right answer declares no cascade")
    if gid not in solutions:
        raise CatalogueError(f"{path.name}: no answer cell with grade_id {gid!r} in "
                             f"{assignment_id}")
    own = [t for t, _ in cascades if t == f"test_{gid}" or t.startswith(f"test_{gid}__")]
    if own:
        raise CatalogueError(f"{path.name}: {own[0]} is a test of {gid} itself, not a cascade")
    header = "\n".join([f"{prefix}{mistake}"]
                       + [f"{CASCADE_PREFIX}{t}: {r}" for t, r in cascades])
    if path.suffix == ".edit":
        edited = apply_edit(solutions[gid], parse_hunks(body, path.name), path.name)
        source, kind = f"{header}\n{edited}", "edit"
    else:
        source, kind = text, "cell"
    if source.strip() == f"{header}\n{solutions[gid]}".strip():
        raise CatalogueError(f"{path.name}: the answer is identical to the solution")
    return Entry(assignment_id, gid, slug, mistake, source, path, kind, cascades)


def entries(assignment_id: str, *, root: Path = paths.ROOT, source=None) -> list[Entry]:
    """Every wrong answer of ``assignment_id``, applied to its solution cell, sorted by file.

    ``source`` overrides the solution notebook (a path or a NotebookNode; default
    ``solutions/<id>/<id>.ipynb`` under ``root``). Raises CatalogueError on the first bad file.
    """
    solutions = solution_cells(source if source is not None
                               else paths.source_path(assignment_id, root))
    return [load_entry(p, assignment_id, solutions) for p in files(assignment_id, root)]


def right_entries(assignment_id: str, *, root: Path = paths.ROOT, source=None) -> list[Entry]:
    """Every right answer of ``assignment_id`` (``autograder/proofs/right_answers/<id>/``), applied to
    its solution cell, sorted by file; ``mistake`` holds the reading of the task it follows."""
    solutions = solution_cells(source if source is not None
                               else paths.source_path(assignment_id, root))
    return [load_entry(p, assignment_id, solutions, RIGHT_PREFIX)
            for p in files(assignment_id, root, RIGHT_PREFIX)]


# --- writing edits (used to convert whole cells, ``python -m autograder catalogue``) -----

def make_edit(solution: str, wrong: str) -> str:
    """The hunks (text) that turn ``solution`` into ``wrong``, each unique in the solution."""
    a, b = solution.split("\n"), wrong.split("\n")
    while a and a[-1] == "":
        a.pop()
    while b and b[-1] == "":
        b.pop()
    ops = [op for op in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
           if op[0] != "equal"]
    if not ops:
        raise CatalogueError("the wrong answer is identical to the solution")
    spans = [_widen(a, list(op[1:])) for op in ops]
    spans.sort()
    merged = []
    for s in spans:
        if merged and s[0] <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], s[1])
            merged[-1][3] = max(merged[-1][3], s[3])
        else:
            merged.append(s)
    text = _hunks_text(a, b, merged)
    if apply_edit("\n".join(a), parse_hunks(text)) != "\n".join(b):
        # overlapping context: fall back to one hunk from the first change to the last
        first, last = ops[0], ops[-1]
        text = _hunks_text(a, b, [_widen(a, [first[1], last[2], first[3], last[4]])])
    if apply_edit("\n".join(a), parse_hunks(text)) != "\n".join(b):
        raise CatalogueError("internal error: the computed edit does not reproduce the cell")
    return text


def _unique(a: list, block: list) -> bool:
    k = len(block)
    return bool(block) and sum(1 for i in range(len(a) - k + 1) if a[i:i + k] == block) == 1


def _widen(a: list, span: list) -> list:
    """Add unchanged neighbouring lines until the '-' block is non-empty, unique, not blank."""
    i1, i2, j1, j2 = span
    while not (_unique(a, a[i1:i2]) and any(line.strip() for line in a[i1:i2])):
        if i1 > 0:
            i1, j1 = i1 - 1, j1 - 1
        elif i2 < len(a):
            i2, j2 = i2 + 1, j2 + 1
        else:
            break
    return [i1, i2, j1, j2]


def _hunks_text(a: list, b: list, spans) -> str:
    parts = []
    for i1, i2, j1, j2 in spans:
        parts.append("\n".join([f"-{line}" for line in a[i1:i2]]
                               + [f"+{line}" for line in b[j1:j2]]))
    return f"\n{HUNK_SEPARATOR}\n".join(parts) + "\n"


def edit_size(edit_text: str) -> tuple[int, int]:
    """(number of '-' lines, number of '+' lines) of an edit body."""
    minus = sum(1 for line in edit_text.splitlines() if line.startswith("-"))
    plus = sum(1 for line in edit_text.splitlines() if line.startswith("+"))
    return minus, plus


# --- ``python -m autograder catalogue`` --------------------------------------------------

def command(assignment_ids=(), *, show=None, convert=None, root: Path = paths.ROOT,
            out=print) -> int:
    """List (and check) the catalogue; ``show`` one entry's cell; ``convert`` a .py entry."""
    known = assignments(root)
    if convert is not None:
        path = Path(convert)
        aid = path.parent.name
        if aid not in known:
            out(f"catalogue: {path} is not in autograder/proofs/wrong_answers/<assignment>/")
            return 1
        gid, _ = _split_name(path)
        mistake, body = _mistake(path, path.read_text(encoding="utf-8"))
        cascades, body = _cascades(path, body)
        solutions = solution_cells(known[aid])
        if gid not in solutions:
            out(f"catalogue: no answer cell {gid!r} in {aid}")
            return 1
        header = "".join([f"{WRONG_PREFIX}{mistake}\n"]
                         + [f"{CASCADE_PREFIX}{t}: {r}\n" for t, r in cascades])
        out(f"{header}{make_edit(solutions[gid], body)}", end="")
        return 0
    status = 0
    for aid in assignment_ids or list(known):
        if aid not in known:
            out(f"catalogue: no assignment {aid!r} (known: {', '.join(known)})")
            status = 1
            continue
        solutions = solution_cells(known[aid])
        listed = files(aid, root)
        out(f"{aid}: {len(listed)} wrong answer(s)")
        for path in listed:
            try:
                e = load_entry(path, aid, solutions)
            except CatalogueError as err:
                out(f"  BROKEN {err}")
                status = 1
                continue
            if show and show in (path.name, path.stem):
                out(e.source)
            else:
                out(f"  {e.grade_id:22s} {e.kind:4s} {e.slug}: {e.mistake}")
                for test, reason in e.cascades:
                    out(f"  {'':22s} also costs {test}: {reason}")
    return status
