"""``python -m autograder check-course``: every rule a source notebook's cell breaks, with the fix.

The rules an instructor's notebooks follow so that this grader grades them right and the proofs
(``selfcheck``) can prove it, read from the notebooks themselves (``solutions/<id>/<id>.ipynb``)
and their catalogues; no list of functions is kept anywhere else.  Two kinds:

- ``grading``: without it a right answer can lose points or a test cannot be attributed (the
  grader runs answers and tests in two processes: autograder/README.md, "Writing test cells for
  this grader");
- ``house``: this unit's conventions for students (every hint names a lecture section, a check
  names the function it tests, a hidden block is announced, three catalogued wrong answers per
  graded function, notebooks committed clean).  An adopter may keep or drop them
  (``--grading-only``).

Each rule is a small function ``(course) -> [Problem]``; ``check`` runs them all.  The tests of
this repository call ``check`` instead of keeping their own lists (``tests/test_check_course.py``).
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import nbformat

from .. import cells, paths
from . import catalogue

ID = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
CHECKS = re.compile(r"\b(assert_close|assert_probability_vector|assert_frequencies|"
                    r"assert_int_equal|assert_same_set|assert_raises)\(")
HINT = re.compile(r"""reread (?:Part (?P<part>[IV]+), )?(?P<q>["'])(?P<heading>.+?)(?P=q)""")
PARTS = {"I": 1, "II": 2, "III": 3, "IV": 4}
INTROSPECTION = ("inspect.", "__code__", "__globals__", "__closure__", "__defaults__",
                 "get_ipython", "globals()[")
MIN_WRONG = 3


@dataclass(frozen=True)
class Problem:
    assignment: str
    cell: str
    rule: str
    kind: str          # "grading" or "house"
    message: str       # what is wrong, then the fix

    def __str__(self):
        return f"{self.assignment}/{self.cell}: [{self.rule}, {self.kind}] {self.message}"


class Course:
    """The source notebooks of a course folder, read once."""

    def __init__(self, root: Path = paths.ROOT, assignments=()):
        self.root = Path(root)
        ids = assignments or sorted(p.parent.name for p in (self.root / "solutions").glob(
            "*/*.ipynb") if p.stem == p.parent.name)
        self.notebooks = {aid: cells.load(paths.source_path(aid, self.root)) for aid in ids}

    def answers(self, aid):
        return [c for c in self.notebooks[aid].cells if cells.is_answer(c) and cells.grade_id(c)]

    def autograded(self, aid):
        """Answer cells whose points come from test cells (code, not graded by hand, with at
        least one test cell named after them); a code answer no test names is a cell the
        student fills for later tasks (lab 2 pastes lab 1's functions), graded through those."""
        named = {_subject(cells.grade_id(t)) for t in self.tests(aid)}
        return [c for c in self.answers(aid) if c.cell_type == "code" and not cells.is_manual(c)
                and cells.grade_id(c) in named]

    def tests(self, aid):
        return [c for c in self.notebooks[aid].cells if cells.is_autograded_test(c)]

    def headings(self) -> dict:
        found = {}
        for path in sorted((self.root / "lectures").glob("*.ipynb")):
            number = re.match(r"lecture-ReAct-(\d)-", path.name)
            part = int(number.group(1)) if number else 0
            for c in nbformat.read(path, as_version=4).cells:
                if c.cell_type == "markdown":
                    text = re.sub(r"```.*?```", "", c.source, flags=re.S)
                    for heading in re.findall(r"^#+ (.+?)\s*$", text, re.M):
                        found.setdefault(heading, part)
        return found


def _subject(test_id: str) -> str:
    return test_id[len("test_"):].split("__")[0] if test_id.startswith("test_") else ""


# --- the rules ---------------------------------------------------------------------------------

def ids_and_outputs(course):
    out = []
    for aid, nb in course.notebooks.items():
        seen = set()
        for c in nb.cells:
            cid = c.get("id") or ""
            if not ID.match(cid) or cid in seen:
                out.append(Problem(aid, cid or "?", "cell-ids", "house",
                                   f"the cell id {cid!r} is missing, repeated or not made of "
                                   "a-z, 0-9, - and _: give it a short unique id"))
            seen.add(cid)
            if c.cell_type == "code" and (c.outputs or c.execution_count is not None):
                out.append(Problem(aid, cid, "clean", "house",
                                   "committed with outputs: clear them (Kernel > Restart and "
                                   "Clear Outputs) before committing"))
    return out


def cell_metadata(course):
    out = []
    for aid in course.notebooks:
        for c in course.answers(aid):
            gid = cells.grade_id(c)
            meta = cells.nbgrader_meta(c)
            if meta.get("locked"):
                out.append(Problem(aid, gid, "answer-cells", "grading",
                                   "an answer cell is locked: set locked to false"))
            if c.cell_type == "code" and ("### BEGIN SOLUTION" not in c.source
                                          or "### END SOLUTION" not in c.source):
                out.append(Problem(aid, gid, "answer-cells", "grading",
                                   "a code answer has no ### BEGIN SOLUTION / ### END SOLUTION "
                                   "region: put the model answer between them"))
        for c in course.tests(aid):
            gid = cells.grade_id(c)
            meta = cells.nbgrader_meta(c)
            if not meta.get("locked") or not cells.points(c) > 0:
                out.append(Problem(aid, gid, "test-cells", "grading",
                                   "a test cell must be locked and give points > 0"))
            if c.source.count("### BEGIN HIDDEN TESTS") != c.source.count("### END HIDDEN TESTS"):
                out.append(Problem(aid, gid, "test-cells", "grading",
                                   "### BEGIN HIDDEN TESTS and ### END HIDDEN TESTS do not pair "
                                   "up: close every hidden block"))
    return out


def tests_name_their_answer(course):
    """A test cell is named after the answer it grades, ``test_<grade_id>`` or
    ``test_<grade_id>__<what>``, and comes after it: selfcheck proves each catalogued wrong
    answer costs points in its own tests only, and finds them by that name."""
    out = []
    for aid, nb in course.notebooks.items():
        order = {cells.grade_id(c): i for i, c in enumerate(nb.cells) if cells.grade_id(c)}
        answers = {cells.grade_id(c) for c in course.answers(aid)}
        for gid in {cells.grade_id(c) for c in course.autograded(aid)}:
            mine = [t for t in course.tests(aid) if _subject(cells.grade_id(t)) == gid]
            if any(order[cells.grade_id(t)] < order[gid] for t in mine):
                out.append(Problem(aid, gid, "tests-per-answer", "grading",
                                   "a test cell of this answer comes before it: move it below"))
        for t in course.tests(aid):
            tid = cells.grade_id(t)
            if _subject(tid) not in answers:
                out.append(Problem(aid, tid, "tests-per-answer", "grading",
                                   f"this test names no answer cell ({_subject(tid) or tid!r}): "
                                   "name it test_<answer grade_id>[__<what>]"))
    return out


def test_cells_work_in_both_processes(course):
    """A test cell uses a student's name only by calling it or reading its value: the student's
    code runs in another process, so introspecting it (``inspect``, ``__code__``,
    ``get_ipython``) works in a kernel and fails when graded."""
    out = []
    for aid in course.notebooks:
        for t in course.tests(aid):
            for bad in INTROSPECTION:
                if bad in t.source:
                    out.append(Problem(
                        aid, cells.grade_id(t), "both-processes", "grading",
                        f"uses {bad.rstrip('.([')}: a test cell may call a student's function "
                        "or read its value, not look inside it (autograder/README.md, "
                        "\"Writing test cells for this grader\"); test its behaviour instead"))
    return out


def answers_do_not_shadow(course):
    """A name an answer defines is not a builtin and not a name the set-up cells bound: the tests
    keep theirs, and the student's would be silently ignored."""
    import builtins
    out = []
    for aid, nb in course.notebooks.items():
        setup_names = set()
        for index, role in cells.roles(nb):
            c = nb.cells[index]
            names = _bound(c.source)
            if role == "setup":
                setup_names |= names
            elif cells.is_answer(c):
                for name in sorted(names & (set(dir(builtins)) | setup_names)):
                    out.append(Problem(aid, cells.grade_id(c), "no-shadowing", "grading",
                                       f"the answer binds {name!r}, a builtin or a name the "
                                       "set-up cells bound: rename it in the model answer "
                                       "and the task"))
    return out


def _bound(source: str) -> set:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        for target in getattr(node, "targets", []) + [getattr(node, "target", None)]:
            if isinstance(target, ast.Name):
                names.add(target.id)
    return names


def hidden_blocks_are_announced(course):
    """A test cell with hidden tests says so just before them (a print or a comment that says
    they are hidden and run when the work is graded), so a student knows a silent pass is not
    all."""
    out = []
    for aid in course.notebooks:
        for t in course.tests(aid):
            if "### BEGIN HIDDEN TESTS" not in t.source:
                continue
            before = [ln for ln in t.source.partition("### BEGIN HIDDEN TESTS")[0].splitlines()
                      if ln.strip()]
            last = before[-1].lower() if before else ""
            if "hidden" not in last or "graded" not in last:
                out.append(Problem(aid, cells.grade_id(t), "hidden-announced", "house",
                                   "the line before ### BEGIN HIDDEN TESTS must say that the "
                                   "tests below are hidden and run when the work is graded "
                                   "(a print(...) or a # comment)"))
    return out


def checks_name_their_function(course):
    """Every ``lreact.checks`` call of a lab's test cell passes a ``name=`` that contains the
    function under test, so a failure's first line names it."""
    out = []
    for aid in course.notebooks:
        functions = {cells.grade_id(c) for c in course.autograded(aid)
                     if re.search(rf"^def {re.escape(cells.grade_id(c))}\(", c.source, re.M)}
        for t in course.tests(aid):
            subject = _subject(cells.grade_id(t))
            if subject not in functions:
                continue                      # a variable (exercises), not a function
            lines = t.source.splitlines()
            for number, line in enumerate(lines, 1):
                if not CHECKS.search(line) or line.lstrip().startswith(("from ", "import ", "def ")):
                    continue
                statement = line if line.rstrip().endswith(")") else \
                    line + "".join(lines[number:number + 2])
                m = re.search(r'name=f?"([^"]*)"', statement)
                if not m or subject not in m.group(1):
                    out.append(Problem(aid, cells.grade_id(t), "check-names", "house",
                                       f"line {number}: give the check name=\"{subject}(...)\" "
                                       "so its failure names the function"))
    return out


def hints_cite_the_lecture(course):
    """A test cell's hints send the student to a lecture section by its exact heading:
    ``reread Part II, "The execution loop"``."""
    headings = course.headings()
    if not headings:
        return []
    out = []
    for aid in course.notebooks:
        for t in course.tests(aid):
            cited = [(m.group("part"), m.group("heading")) for text in _strings(t.source)
                     for m in HINT.finditer(text)]
            if not cited:
                out.append(Problem(aid, cells.grade_id(t), "hints", "house",
                                   "no hint names a lecture section: add hint = 'reread Part "
                                   "N, \"<heading>\": ...'"))
            for part, heading in cited:
                if heading not in headings:
                    out.append(Problem(aid, cells.grade_id(t), "hints", "house",
                                       f'"{heading}" is not a heading of lectures/*.ipynb: '
                                       "quote a heading character for character"))
                elif part is not None and PARTS[part] != headings[heading]:
                    out.append(Problem(aid, cells.grade_id(t), "hints", "house",
                                       f'"{heading}" is in Part {headings[heading]}, not '
                                       f"Part {part}"))
    return out


def _strings(source: str) -> list:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.append(node.value)
        elif isinstance(node, ast.JoinedStr):
            out.append("".join(v.value for v in node.values if isinstance(v, ast.Constant)))
    return out


def catalogue_covers_answers(course):
    """Each autograded answer has catalogued wrong answers that apply (``catalogue.entries``):
    selfcheck proves the tests catch each one."""
    out = []
    for aid in course.notebooks:
        try:
            entries = catalogue.entries(aid, root=course.root)
        except catalogue.CatalogueError as e:
            out.append(Problem(aid, "catalogue", "catalogue", "grading",
                               f"{e}: fix the entry or remove it"))
            continue
        counts = {}
        for e in entries:
            counts[e.grade_id] = counts.get(e.grade_id, 0) + 1
        for c in course.autograded(aid):
            gid = cells.grade_id(c)
            if counts.get(gid, 0) < MIN_WRONG:
                out.append(Problem(
                    aid, gid, "catalogue", "house",
                    f"{counts.get(gid, 0)} catalogued wrong answer(s), at least {MIN_WRONG}: add "
                    f"autograder/proofs/wrong_answers/{aid}/{gid}__<mistake>.edit (format: "
                    "autograder/README.md, \"Catalogues\")"))
    return out


RULES = (ids_and_outputs, cell_metadata, tests_name_their_answer,
         test_cells_work_in_both_processes, answers_do_not_shadow, hidden_blocks_are_announced,
         checks_name_their_function, hints_cite_the_lecture, catalogue_covers_answers)


def check(root: Path = paths.ROOT, assignments=(), *, grading_only: bool = False) -> list:
    """Every problem of the course's source notebooks (``Problem``s, in rule order)."""
    course = Course(root, assignments)
    found = [p for rule in RULES for p in rule(course)]
    return [p for p in found if p.kind == "grading"] if grading_only else found


def command(assignments=(), *, root: Path = paths.ROOT, grading_only: bool = False,
            out=print) -> int:
    problems = check(root, assignments, grading_only=grading_only)
    for p in problems:
        out(str(p))
    rules = ", ".join(r.__name__ for r in RULES)
    out(f"check-course: {len(problems)} problem(s) ({rules})" if problems else
        f"check-course: every rule holds ({rules})")
    return 1 if problems else 0
