"""What a student edition must not hold, and a search for it (``student-edition`` and its proof).

A student edition (``autograder/instructor/edition.py``) is refused if any of these appears in
any file of it:

- a line of a hidden test (a distinctive line, 30 characters or more) or one of its string
  constants (10 characters or more);
- a solution block's line (a distinctive line of a ``### BEGIN SOLUTION`` region);
- the body of a reference implementation of a graded function, up to renamed variables: every
  ``@reference_implementation`` function of ``lreact``, every ``@near_copy_of`` one (a near
  copy of a graded answer, shipped compiled like them) and every function a model answer
  defines.  Code is compared as normalised statements (``shape``: the syntax tree with every
  local name and argument renamed in order of appearance, attribute and global names kept), and
  a run of ``RUN`` consecutive statements of a body found in the same order in any function or
  cell of the edition counts (a body shorter than that counts whole), unless the run is
  trivial (``TRIVIAL``: returns, passes, plain names).

Source text is searched in ``.py`` files and in notebooks' cells; byte code is not source and is
not searched (the edition ships the modules the lecture's views need compiled, not as source:
README, "Who gets what").  Lecture connection: none (``autograder/README.md``, "Two editions").
"""
from __future__ import annotations

import ast
import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path

from .. import cells, paths

RUN = 3                 # consecutive statements of a body that make a copy
MIN_LINE = 30           # characters of a distinctive line
MIN_STRING = 10         # characters of a distinctive string constant
TRIVIAL = re.compile(r"^(Return\((value=)?(Name\(id='v\d+'\)|Constant\(.*\))?\)|Pass\(\)|"
                     r"Expr\(value=Constant\(.*\)\))$")


@dataclass(frozen=True)
class Leak:
    path: str          # the file in the edition
    what: str          # hidden test / solution / reference implementation, and which
    text: str          # what was found (capped)

    def __str__(self):
        return f"{self.path}: {self.what}: {self.text[:160]}"


# --- code as shapes ----------------------------------------------------------------------------

class _Rename(ast.NodeTransformer):
    """Local names and arguments become v0, v1, ... in order of appearance."""

    def __init__(self, local: set):
        self.local, self.names = local, {}

    def _name(self, n):
        if n not in self.local:
            return n
        return self.names.setdefault(n, f"v{len(self.names)}")

    def visit_Name(self, node):
        return ast.copy_location(ast.Name(id=self._name(node.id), ctx=ast.Load()), node)

    def visit_arg(self, node):
        return ast.copy_location(ast.arg(arg=self._name(node.arg)), node)


def _locals(fn) -> set:
    found = {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)} if \
        hasattr(fn, "args") else set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and \
                node is not fn:
            found |= {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)}
        elif isinstance(node, ast.comprehension):
            found |= {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
    return found


def shape(statements, local: set) -> list[str]:
    """Each statement of ``statements`` as a normalised string (docstrings dropped)."""
    rename = _Rename(local)
    out = []
    for i, stmt in enumerate(statements):
        if i == 0 and isinstance(stmt, ast.Expr) and isinstance(getattr(stmt, "value", None),
                                                                 ast.Constant) \
                and isinstance(stmt.value.value, str):
            continue                                  # a docstring
        out.append(ast.dump(rename.visit(ast.fix_missing_locations(
            ast.parse(ast.unparse(stmt)).body[0])), annotate_fields=True,
            include_attributes=False))
    return out


def bodies(source: str) -> list[tuple[str, list[str]]]:
    """(function name, shape of its body) for every function in ``source``; the module level
    as "<module>" (a notebook cell's statements)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    out = [("<module>", shape([s for s in tree.body if not isinstance(
        s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))], _locals(tree)))]
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.append((node.name, shape(node.body, _locals(node))))
    return out


def _copied(reference: list[str], found: list[str], run: int = RUN, whole: bool = True) -> bool:
    """Whether ``run`` consecutive statements of ``reference`` (a body shorter than that: all of
    it, if ``whole``) appear in order in ``found``, not all of them trivial."""
    meaningful = [s for s in reference if not TRIVIAL.match(s)]
    if not meaningful:
        return False
    if len(reference) <= run:
        if not whole:
            return False
        window = [reference]
    else:
        window = [reference[i:i + run] for i in range(len(reference) - run + 1)]
    for part in window:
        if all(TRIVIAL.match(s) for s in part):
            continue
        for i in range(len(found) - len(part) + 1):
            if found[i:i + len(part)] == part:
                return True
    return False


COPY_RUN = 4     # statements in a row that flag an answer as copied (a canonical short body
#                  written independently stays below it)


def copied_answers(answer_sources: dict, root: Path = paths.ROOT) -> dict:
    """``{grade id: [what it copies]}`` for the answers (``{grade id: source}``) that hold
    ``COPY_RUN`` consecutive statements of a reference implementation or of a model answer
    (variables renamed or not): a flag for the instructor, never a score."""
    refs = _references(str(root))
    out = {}
    for gid, source in answer_sources.items():
        shapes = [b for _, b in bodies(source)]
        found = sorted({what for what, ref in refs
                        if any(_copied(ref, b, COPY_RUN, whole=False) for b in shapes)})
        if found:
            out[gid] = found
    return out


@functools.lru_cache(maxsize=4)
def _references(root: str) -> tuple:
    return tuple(secrets(Path(root)).references)


# --- what must not leak ------------------------------------------------------------------------

@dataclass
class Secrets:
    lines: dict            # distinctive line -> what it is
    strings: dict          # distinctive string constant -> what it is
    references: list       # (what, shape of the body)


def public_text(root: Path = paths.ROOT) -> str:
    """What the course shows students anyway: the released notebooks, the lecture, and lreact's
    source with the reference implementations' bodies removed.  A line or string of a hidden
    test or a solution that is also here is no secret (a hint the visible test repeats, the
    weather table, a tool's description)."""
    from lreact.reference import strip_references

    from lreact.reference import COMPILED_MARKS
    root = Path(root)
    parts = []
    for path in sorted(root.glob("exercises/*.ipynb")) + sorted(root.glob("lab/*.ipynb")) + \
            sorted(root.glob("lectures/*.ipynb")):
        nb = json.loads(path.read_text(encoding="utf-8"))
        parts += ["".join(c["source"]) for c in nb["cells"]]
    for path in sorted((root / "lreact").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if any(f"@{m}" in text for m in COMPILED_MARKS) and path.name != "reference.py":
            text = strip_references(text, path.stem, marks=COMPILED_MARKS)
        parts.append(text)
    return "\n".join(parts)


def secrets(root: Path = paths.ROOT) -> Secrets:
    """Everything of the instructor's repository that a student edition must not hold."""
    lines, strings, references = {}, {}, []
    public = public_text(root)
    shown = {ln.strip() for ln in public.splitlines()}
    for path in sorted((Path(root) / "solutions").glob("*/*.ipynb")):
        nb = cells.load(path)
        for c in nb.cells:
            gid = cells.grade_id(c) or c.get("id")
            for block, kind in ((_between(c.source, "HIDDEN TESTS"), "hidden test"),
                                (_between(c.source, "SOLUTION"), "solution")):
                for line in block.splitlines():
                    text = line.strip()
                    if len(text) >= MIN_LINE and not text.startswith("#") and text not in shown:
                        lines.setdefault(text, f"{kind} of {gid}")
                if kind == "hidden test":
                    for s in _strings(block):
                        if len(s.strip()) >= MIN_STRING and s not in public:
                            strings.setdefault(s, f"a string of the hidden tests of {gid}")
            if cells.is_answer(c) and c.cell_type == "code":
                given = dict(bodies(cells.stub_source(c)))    # what the student is given
                for name, body in bodies(cells_solution(c.source)):
                    body = [st for st in body if st not in given.get(name, [])]
                    if name != "<module>" and body:
                        references.append((f"the model answer {name} ({gid})", body))
    from lreact.reference import marked
    for path in sorted((Path(root) / "lreact").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if "@reference_implementation" not in text and "@near_copy_of" not in text:
            continue
        tree = ast.parse(text)
        for node in ast.walk(tree):
            for mark, what in (("reference_implementation", "the reference implementation"),
                               ("near_copy_of", "the near copy of an answer")):
                if marked(node, mark):
                    references.append((f"{what} {path.relative_to(root)}:{node.name}",
                                       shape(node.body, _locals(node))))
    return Secrets(lines, strings, references)


def cells_solution(source: str) -> str:
    """A code answer with its solution region's markers dropped (the code as it runs)."""
    return "\n".join(ln for ln in source.splitlines()
                     if ln.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION"))


def _between(source: str, marker: str) -> str:
    out, inside = [], False
    for line in source.splitlines():
        if f"### BEGIN {marker}" in line:
            inside = True
        elif f"### END {marker}" in line:
            inside = False
        elif inside:
            out.append(line)
    return "\n".join(out)


def _strings(source: str) -> list:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return re.findall(r"""["']([^"'\n]{10,})["']""", source)
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
            and isinstance(n.value, str)]


# --- the search ----------------------------------------------------------------------------------

def _texts(folder: Path):
    """(relative path, text, python sources) of every readable file in ``folder``."""
    for path in sorted(Path(folder).rglob("*")):
        if not path.is_file() or path.suffix in (".pyc", ".png", ".gguf", ".zip"):
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        rel = str(path.relative_to(folder))
        if path.suffix == ".ipynb":
            nb = json.loads(text)
            sources = ["".join(c["source"]) if isinstance(c["source"], list) else c["source"]
                       for c in nb.get("cells", [])]
            yield rel, "\n".join(sources), [s for s, c in zip(sources, nb["cells"])
                                           if c.get("cell_type") == "code"]
        else:
            yield rel, text, [text] if path.suffix == ".py" else []


def leaks(folder: Path, root: Path = paths.ROOT) -> list[Leak]:
    """Every secret of the instructor's repository ``root`` found in ``folder``."""
    secret = secrets(root)
    found = []
    for rel, text, sources in _texts(folder):
        stripped = {ln.strip() for ln in text.splitlines()}
        for line, what in secret.lines.items():
            if line in stripped:
                found.append(Leak(rel, what, line))
        for s, what in secret.strings.items():
            if s in text:
                found.append(Leak(rel, what, s))
        shapes = [b for src in sources for _, b in bodies(src)]
        for what, reference in secret.references:
            if any(_copied(reference, b) for b in shapes):
                found.append(Leak(rel, what, " | ".join(reference[:2])))
    return found
