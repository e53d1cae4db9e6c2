"""The second lab's Part D (MCP, text ReAct, code actions): its cells, their nbgrader metadata,
its catalogue and its links from the lecture, checked without a kernel.  Grading it
(source full marks, student version zero, every wrong answer caught) is the grader's job;
tests/test_mcp.py, test_textreact.py and test_codeact.py test the machinery it uses."""
import pathlib
import re

import nbformat
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOURCE = ROOT / "solutions" / "lecture-ReAct-lab2" / "lecture-ReAct-lab2.ipynb"
STUDENT = ROOT / "lab" / "lecture-ReAct-lab2.ipynb"
GRADED = {"tool_schemas_from_mcp": 3, "call_mcp_tool": 3, "parse_react_step": 3,
          "run_react_text": 5, "calculate": 3, "code_tool_schema": 3, "run_code_action": 3}
LINKS = {"lecture-ReAct-2-cot-react.ipynb": ["lab2-link-react-format"],
         "lecture-ReAct-3-tools.ipynb": ["lab2-link-codeact", "lab2-link-mcp"]}


@pytest.fixture(scope="module")
def nb():
    return nbformat.read(SOURCE, as_version=4)


def part_d(nb):
    """Part D's cells: after its heading, up to the lab's closing section on grading."""
    ids = [c.id for c in nb.cells]
    return nb.cells[ids.index("part-d-intro") + 1:ids.index("lab2-when-graded")]


def meta(cell):
    return cell.metadata.get("nbgrader") or {}


def test_part_d_is_at_the_end_and_all_its_cells_are_d_cells(nb):
    cells = part_d(nb)
    assert cells and all(c.id.startswith("d-") for c in cells)
    assert not [c.id for c in nb.cells if c.id.startswith("d-") and c not in cells]
    assert all(c.outputs == [] and c.execution_count is None for c in cells if c.cell_type == "code")


def test_graded_functions_points_and_hidden_tests(nb):
    cells = part_d(nb)
    answers = {meta(c)["grade_id"]: c for c in cells if meta(c).get("solution")}
    assert set(answers) == set(GRADED)
    for name, points in GRADED.items():
        src = answers[name].source
        assert f"def {name}(" in src and "### BEGIN SOLUTION" in src and "### END SOLUTION" in src
        tests = [c for c in cells if meta(c).get("grade") and
                 (meta(c)["grade_id"] == f"test_{name}" or meta(c)["grade_id"].startswith(f"test_{name}__"))]
        assert meta(tests[0])["grade_id"] == f"test_{name}" and "HIDDEN" not in tests[0].source
        assert any("### BEGIN HIDDEN TESTS" in t.source for t in tests[1:]), name
        assert sum(meta(t)["points"] for t in tests) == points, name
        for t in tests:
            assert meta(t)["locked"] and meta(t)["schema_version"] == 3 and not meta(t)["solution"]
    assert sum(GRADED.values()) == 23        # calculate, the first lab's B.1, graded here since the week's issue
    overview = next(c for c in cells if c.id == "d-overview").source
    assert "23\npoints" in overview or "23 points" in overview


def test_test_cells_use_students_names_only_by_calling_them(nb):
    for c in part_d(nb):
        if meta(c).get("grade"):
            for bad in ("__code__", "inspect.", "getsource", "type(got)", "isinstance(result,"):
                assert bad not in c.source, (c.id, bad)


def test_the_student_version_has_stubs_that_name_their_function():
    student = nbformat.read(STUDENT, as_version=4)
    answers = {meta(c)["grade_id"]: c.source for c in student.cells if meta(c).get("solution")}
    for name in GRADED:
        assert "NotImplementedError" in answers[name] and name in answers[name]
        assert "### BEGIN SOLUTION" not in answers[name]
    hidden = [c for c in student.cells if "### BEGIN HIDDEN TESTS" in c.source]
    assert not hidden


def test_catalogue_has_at_least_three_wrong_answers_per_function_and_they_apply():
    """python -m autograder check-course: each graded function has three catalogued wrong
    answers that apply (the rule lives there, for every assignment)."""
    from autograder.proofs.course_rules import Course, catalogue_covers_answers
    assert not catalogue_covers_answers(Course(ROOT, ["lecture-ReAct-lab2"]))


def test_the_lecture_links_to_part_d():
    lab = nbformat.read(SOURCE, as_version=4)
    anchors = {"D.1-Tools-from-an-MCP-server", "D.2-ReAct-in-plain-text", "D.3-Code-as-the-action"}
    headings = {m.replace(" ", "-") for c in lab.cells if c.cell_type == "markdown"
                for m in re.findall(r"^### (.+)$", c.source, re.M)}
    assert anchors <= headings
    for name, ids in LINKS.items():
        cells = {c.id: c for c in nbformat.read(ROOT / "lectures" / name, as_version=4).cells}
        for cid in ids:
            text = cells[cid].source
            target = re.search(r"\]\(\.\./lab/lecture-ReAct-lab2\.ipynb#([^)]+)\)", text)
            assert target and target.group(1) in anchors, (name, cid)

