"""``python -m autograder selfcheck``: every grading proof, as pytest tests (CI runs it).

The proofs are the tests ``tests/test_selfcheck_*.py`` (marker ``selfcheck``); this command runs
that selection with pytest and returns its exit status, nothing more:

- ``test_selfcheck_release``: the committed student versions are what release generates;
- ``test_selfcheck_grading``: for every assignment in ``solutions/``, the source scores full
  marks, the student version zero, and every wrong answer of the catalogue runs, loses marks
  on its ``test_<grade_id>*`` cells and on no other cell (no cascade: each test passes the
  course's version of the functions it builds on; a deliberate exception is declared in the
  entry, ``# CASCADE:``);
- ``test_selfcheck_hostile``: honest students and every ``autograder/proofs/hostile/`` entry graded
  together in the sandbox: each hostile one scores zero, honest grades equal their graded-alone
  grades, no protected file changes, no hidden test reaches a feedback notebook, no connection
  reaches the grader.

The helpers below are what those tests share (which assignments exist, the hostile entries, a
notebook cut after a function's tests or trimmed for one wrong answer, the points lost outside a
function's tests, a TCP listener, digests of protected folders).
"""
from __future__ import annotations

import ast
import builtins
import os
import sys
from pathlib import Path

from .. import cells, paths

TESTS = ("tests/test_selfcheck_release.py", "tests/test_selfcheck_grading.py",
         "tests/test_selfcheck_hostile.py")


def selfcheck(jobs: int = 2, quick: bool = False, state=None, extra=()) -> int:
    """Run the proofs with pytest; its exit status (0: every proof holds)."""
    import pytest
    os.environ["LREACT_SELFCHECK_JOBS"] = str(max(1, int(jobs)))
    if state is not None:
        os.environ["LREACT_SELFCHECK_STATE"] = str(state)
    files = [str(paths.ROOT / t) for t in TESTS if not (quick and "hostile" in t)]
    args = ["-m", "selfcheck", "-p", "no:cacheprovider", "-q", "-rfE",
            f"--rootdir={paths.ROOT}", *files, *extra]
    return int(pytest.main(args))


# --- shared by the selfcheck tests ------------------------------------------------------------

def assignments(root: Path = paths.ROOT) -> list[str]:
    """Every assignment with a source notebook ``solutions/<id>/<id>.ipynb``, sorted."""
    return sorted(p.parent.name for p in (Path(root) / "solutions").glob("*/*.ipynb")
                  if p.stem == p.parent.name)


def tests_of(nb, gid: str) -> list[str]:
    """The autograded test cells of answer ``gid``: ``test_<gid>`` and ``test_<gid>__*``."""
    return [cells.grade_id(c) for c in nb.cells if cells.is_autograded_test(c)
            and (cells.grade_id(c) == f"test_{gid}"
                 or cells.grade_id(c).startswith(f"test_{gid}__"))]


def cut_after(nb, test_ids):
    """The notebook up to its last cell in ``test_ids`` (later cells cannot change them)."""
    wanted = set(test_ids)
    last = max(i for i, c in enumerate(nb.cells) if cells.grade_id(c) in wanted)
    out = cells.load(nb)
    out.cells = out.cells[: last + 1]
    return out


def for_entry(nb, gid: str):
    """The source notebook trimmed to grade one wrong answer of ``gid``: without the test cells
    before its answer cell (they ran before it: it cannot change them) and without the cells after
    the last test cell.  Sound because no test cell reads a name that only another test cell
    binds (``borrowed_names``)."""
    out = cut_after(nb, [cells.grade_id(c) for c in nb.cells if cells.is_autograded_test(c)])
    at = next((i for i, c in enumerate(out.cells) if cells.grade_id(c) == gid), None)
    if at is None:
        raise ValueError(f"no answer cell {gid!r} before the last test cell")
    out.cells = [c for i, c in enumerate(out.cells) if i > at or not cells.is_autograded_test(c)]
    return out


def lost_elsewhere(nb, gid: str, scores: dict) -> dict:
    """{test grade_id: points lost} of the autograded tests in ``scores`` that are not ``gid``'s
    own (``tests_of``): what a wrong answer of ``gid`` costs elsewhere (a cascade)."""
    own = set(tests_of(nb, gid))
    return {t: p - a for t, (a, p) in scores.items() if t not in own and a < p}


def collaborator_gaps(nb) -> list[str]:
    """Where a test cell could grade another answer than its own (the fast, static half of the
    no-cascade proof): a test cell that reads a name an answer cell of another function binds, or
    a call of its own function that leaves out one of its keyword parameters ``..._fn`` (the
    collaborators the tests pass; a ``**mapping`` counts as passing them)."""
    owner, collaborators = {}, {}
    for cell in nb.cells:
        if not (cells.is_answer(cell) and cell.cell_type == "code"):
            continue
        for node in ast.parse(cell.source).body:
            if isinstance(node, ast.FunctionDef):
                owner[node.name] = cells.grade_id(cell)
                collaborators[node.name] = [a.arg for a in node.args.kwonlyargs
                                            if a.arg.endswith("_fn")]
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        owner.setdefault(target.id, cells.grade_id(cell))
    gaps = []
    for cell in nb.cells:
        if not cells.is_autograded_test(cell):
            continue
        test = cells.grade_id(cell)
        mine = test[len("test_"):].split("__")[0]
        for node in ast.walk(ast.parse(cell.source)):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) \
                    and owner.get(node.id, mine) != mine:
                gaps.append(f"{test} uses {node.id} (the answer {owner[node.id]})")
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
                continue
            called = node.func.id if node.func.id in collaborators else next(
                (a.id for a in node.args[:2] if isinstance(a, ast.Name) and a.id in collaborators
                 and node.func.id in ("quiet", "assert_raises", "repeat")), None)
            passed = {k.arg for k in node.keywords}
            if called and None not in passed and set(collaborators[called]) - passed:
                gaps.append(f"{test}, line {node.lineno}: {called}(...) without "
                            f"{sorted(set(collaborators[called]) - passed)}")
    return sorted(set(gaps))


def _bound(tree) -> set:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            found.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            found.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.arg):
            found.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            found.add(node.name)
    return found


def borrowed_names(nb) -> dict:
    """{test grade_id: names it reads without binding them that another test cell binds}: a test
    cell that leans on an earlier one (every test cell must stand alone, ``for_entry``)."""
    tests = [c for c in nb.cells if cells.is_autograded_test(c)]
    trees = {cells.grade_id(c): ast.parse(c.source) for c in tests}
    binds = {g: _bound(t) for g, t in trees.items()}
    found = {}
    for gid, tree in trees.items():
        reads = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)
                 and isinstance(n.ctx, ast.Load)} - binds[gid] - set(dir(builtins))
        others = set().union(set(), *(b for g, b in binds.items() if g != gid))
        if reads & others:
            found[gid] = sorted(reads & others)
    return found


def hostile_entries():
    """(name, assignment id, grade_id, source text) for every file in autograder/proofs/hostile/."""
    out = []
    for f in sorted(paths.HOSTILE_DIR.glob("*.py")):
        text = f.read_text(encoding="utf-8")
        head = text.splitlines()[0] if text else ""
        if head.startswith("# HOSTILE:"):
            aid, gid = head[len("# HOSTILE:"):].split(":")[0].split()
            out.append((f.stem, aid, gid, text))
    return out


# --- why a source does not score full marks ---------------------------------------------------

CAUSES = (   # (words of the error, the cause this grader knows, what to do)
    ("cannot be used by the tests", "a value that did not cross to the tests (it is not plain "
     "data, or too large)", "return or set plain data, or a type autograder/README.md lists "
     "under \"Writing test cells for this grader\""),
    ("the answer returned something the tests cannot receive", "an answer returned a value "
     "that is not plain data", "return plain data (see the same README section)"),
    ("would run the student's own __eq__", "a test compares objects of a class the notebook "
     "defines with ==", "compare their attributes"),
    ("catching classes that do not inherit from BaseException", "a test catches a class that "
     "did not cross as an exception class", "define the exception class in an answer or set-up "
     "cell, deriving from Exception"),
    ("is the course's reference implementation", "an answer calls a reference implementation",
     "the model answer must not call lreact's reference code"),
    ("cannot be changed by a test", "a test sets an attribute of the student's object",
     "build a new object by calling the class instead"),
)


def diagnose(graded, source_nb=None) -> list[str]:
    """One line per test cell that lost points: the cell, its error and, where this grader
    recognises it, the cause and what to do (a name a test deleted: a NameError in a cell that
    has ``del``)."""
    tests = {cells.grade_id(c): c.source for c in (source_nb.cells if source_nb else [])}
    out = []
    for gid, (got, most) in sorted(graded.scores.items()):
        if got >= most:
            continue
        error = graded.errors.get(gid) or graded.failure or "failed"
        line = f"{gid}: {error}"
        for words, cause, fix in CAUSES:
            if words in error:
                line += f" -- cause: {cause}; {fix}"
                break
        else:
            if error.startswith("NameError") and "del " in tests.get(gid, ""):
                line += (" -- cause: the test deletes a name and a function it calls needs it: "
                         "restore it in a finally block, as nbgrader's \"uses\" test does")
        out.append(line)
    return out


if __name__ == "__main__":
    sys.exit(selfcheck())
