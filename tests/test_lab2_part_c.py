"""The second lab's Part C (solutions/lecture-ReAct-lab2/): its cells, their nbgrader metadata,
its fixtures and its catalogue, checked without running a kernel.  Grading it (source full marks,
student version zero, every wrong answer caught) is the grader's selfcheck."""
import json
import pathlib
import re

import nbformat
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOURCE = ROOT / "solutions" / "lecture-ReAct-lab2" / "lecture-ReAct-lab2.ipynb"
CATALOGUE = ROOT / "autograder" / "proofs" / "wrong_answers" / "lecture-ReAct-lab2"
GRADED = {"check_pairing": 3, "render_chatml": 3, "format_error": 3, "repeat_count": 2,
          "run_agent_hardened": 11, "compact_history": 4, "split_reasoning": 2, "parse_xml_call": 3}


@pytest.fixture(scope="module")
def nb():
    return nbformat.read(SOURCE, as_version=4)


def part_c(nb):
    ids = [c.id for c in nb.cells]
    start, end = ids.index("part-c-intro"), ids.index("part-d-intro")
    return nb.cells[start + 1:end]


def meta(cell):
    return cell.metadata.get("nbgrader") or {}


def test_part_c_sits_between_its_intro_and_part_d(nb):
    cells = part_c(nb)
    assert cells and all(c.id.startswith("c-") for c in cells)
    assert not [c.id for c in nb.cells if c.id.startswith("c-") and c not in cells]
    assert all(c.outputs == [] for c in cells if c.cell_type == "code")


def test_graded_functions_points_and_hidden_tests(nb):
    cells = part_c(nb)
    answers = {meta(c)["grade_id"] for c in cells if meta(c).get("solution")}
    assert set(GRADED) <= answers
    for name, points in GRADED.items():
        tests = [c for c in cells if meta(c).get("grade") and
                 (meta(c)["grade_id"] == f"test_{name}" or
                  meta(c)["grade_id"].startswith(f"test_{name}__"))]
        assert tests[0].metadata["nbgrader"]["grade_id"] == f"test_{name}"     # visible first
        assert "### BEGIN HIDDEN TESTS" not in tests[0].source
        assert all("### BEGIN HIDDEN TESTS" in t.source for t in tests[1:]) and len(tests) >= 2
        assert sum(meta(t)["points"] for t in tests) == points, name
        for t in tests:
            assert meta(t)["locked"] and meta(t)["schema_version"] == 3
            # the hints' lecture headings: tests/test_hint_headings.py
    answer = {meta(c)["grade_id"]: c for c in cells if meta(c).get("solution")}
    for name in GRADED:
        src = answer[name].source
        assert f"def {name}(" in src and "### BEGIN SOLUTION" in src and "### END SOLUTION" in src


def part_points(nb):
    """{"C": points, "D": points} summed from the nbgrader metadata of each part's test cells."""
    ids = [c.id for c in nb.cells]
    c, d = ids.index("part-c-intro"), ids.index("part-d-intro")
    total = lambda cells: sum(meta(x).get("points", 0) for x in cells if meta(x).get("grade"))
    assert total(nb.cells[:c]) == 0
    return {"C": total(nb.cells[c:d]), "D": total(nb.cells[d:])}


def test_the_introduction_states_the_points_of_the_metadata(nb):
    points = part_points(nb)
    title = next(c for c in nb.cells if c.id == "lab2-title").source
    flat = " ".join(title.split())
    for part, n in points.items():
        stated = re.findall(rf"\*\*Part {part}, [^*]+\*\* \((\d+) points\)", flat)
        assert stated == [str(n)], f"the introduction gives Part {part} {stated}, the metadata {n}"
    assert re.findall(r"(\d+) points in all", flat) == [str(sum(points.values()))]
    assert points["C"] == sum(GRADED.values())
    closing = next(c for c in nb.cells if c.id == "c-closing").source
    assert f"**Points.** {points['C']}: " in closing
    for name, n in GRADED.items():
        assert f"`{name}` {n}" in closing, name


def test_the_introduction_says_how_to_work_without_a_server(nb):
    """Issue 19, section 4: the extension lab, parts usable alone, at most about 250 words to start;
    the engines' variables live in C.0, how answers run when graded in the last section."""
    cells = {c.id: c.source for c in nb.cells}
    title = cells["lab2-title"]
    assert len(re.findall(r"\S+", title.split("\n", 1)[1])) <= 250     # below the heading
    assert "extension lab" in title.splitlines()[0] and "Part C or Part D alone" in title
    for needed in ("validate_tool_call", "execute_tool_call", "run_agent", "scripted models",
                   "Hidden tests", "C.0", "last section"):
        assert needed in title, needed
    for needed in ("LREACT_BACKEND", "LREACT_BASE_URL", "LREACT_MODEL", "check_setup()"):
        assert needed in cells["c-engines-intro"], needed
    from lreact.views.workload import words_before_first_task
    assert words_before_first_task(SOURCE) <= 250
    flat = " ".join(title.split())
    assert "stderr" in flat and "warnings" in flat        # what to avoid, said before the tasks
    # the backend's default as the code has it (lreact.engines.backends: auto), not "ollama"
    from lreact.engines.backends import ALIASES
    import os
    saved = os.environ.pop("LREACT_BACKEND", None)
    try:
        from lreact.engines.backends import requested_backend
        assert requested_backend() == "auto"
    finally:
        if saved is not None:
            os.environ["LREACT_BACKEND"] = saved
    table = " ".join(cells["c-engines-table"].split())
    assert "| `LREACT_BACKEND` |" in table and "| `auto`: Ollama when its server answers, otherwise the embedded engine |" in table
    assert "| `ollama` |" not in table and "auto" in ALIASES
    # the drift check is instructor tooling: README, not a cell before the first graded task
    assert not [c.id for c in nb.cells if "drift" in c.id]
    assert "check_drift" not in "\n".join(c.source for c in nb.cells)
    assert "python -m lreact.views.drift" in (ROOT / "README.md").read_text(encoding="utf-8")
    assert nb.cells[-1].id == "lab2-when-graded"
    for needed in ("ReferenceUnavailable", "GRADING.md", "isinstance", "repeat("):
        assert needed in cells["lab2-when-graded"], needed
    setup = next(c for c in nb.cells if c.id == "lab2-setup").source
    assert "lreact.reference.engage()" in setup


def test_test_cells_use_students_names_only_by_calling_them(nb):
    """No identity checks or introspection of what a student's function returns."""
    for c in part_c(nb):
        if meta(c).get("grade"):
            assert " is not h" not in c.source and "__code__" not in c.source
            assert "inspect." not in c.source


def test_the_notebooks_small_model_replies_are_the_fixtures(nb):
    fixtures = json.loads((ROOT / "tests" / "fixtures" / "small_model_replies.json")
                          .read_text(encoding="utf-8"))["replies"]
    cell = next(c for c in nb.cells if c.id == "c-format-replies").source
    ns = {}
    exec(cell.split("for what, reply")[0], ns)
    texts = [text for _, text in ns["SMALL_MODEL_REPLIES"]]
    from lreact.views import recordings  # rows read from a recorded real run (issue 18 §5)

    known = {r["text"] for r in fixtures} | {recordings.reply_text(n) for n in recordings.names()}
    assert set(texts) <= known
    assert texts[0] == fixtures[0]["text"] and "captured" in fixtures[0]["source"]


def test_catalogue_has_at_least_three_per_graded_function():
    """python -m autograder check-course: each graded function has three catalogued wrong
    answers that apply (the rule lives there, for every assignment)."""
    from autograder.proofs.course_rules import Course, catalogue_covers_answers
    assert not catalogue_covers_answers(Course(ROOT, ["lecture-ReAct-lab2"]))
