"""The rule for reference implementations holds in the student's own kernel and when graded.

An answer that calls ``lreact.sampling.softmax`` fails its visible test in a normal Jupyter
kernel with a message that says why (the lab's setup cell engages ``lreact.reference``), and
scores 0 on every softmax test when graded (the answers run with a copy of lreact that has no
reference code).  The rule itself: ``lreact/reference.py``.
"""
import nbformat
import pytest

from autograder import cells, paths
from autograder.run.engine import grade_notebook
from autograder.instructor.release import generate
from lreact import labchecks, reference, sampling

BORROWS = ("import lreact.sampling\n\n"
           "def softmax(z):\n"
           "    return lreact.sampling.softmax(z)\n")
LAB = "lecture-ReAct-lab"


def _up_to_visible_softmax_test(nb):
    """The notebook's cells up to the visible test of softmax (what a student runs first)."""
    ids = [c.get("id") for c in nb.cells]
    nb.cells = nb.cells[: ids.index("test_softmax") + 1]
    return nb


def test_outside_a_kernel_the_setup_cell_changes_nothing():
    assert reference.engage() is False
    assert list(sampling.softmax([0.0, 0.0])) == [0.5, 0.5]


def test_engaged_rule_names_the_function_and_says_why():
    try:
        assert reference.engage(anywhere=True)
        with pytest.raises(reference.ReferenceUnavailable,
                           match="lreact.sampling.softmax is the course's reference "
                                 "implementation; answers must not call it"):
            sampling.softmax([0.0, 1.0])
        # the tests' private copies stay usable
        assert list(labchecks.reference("sampling", "softmax")([0.0, 0.0])) == [0.5, 0.5]
    finally:
        reference.disengage()
    assert list(sampling.softmax([0.0, 0.0])) == [0.5, 0.5]


def test_the_graders_copy_has_no_reference_code():
    source = (paths.ROOT / "lreact" / "sampling.py").read_text()
    stripped = reference.strip_references(source, "sampling")
    assert "np.exp" not in stripped and "z.max()" not in stripped
    ns = {"__name__": "lreact.copy", "__package__": "lreact"}
    exec(compile(stripped, "copy", "exec"), ns)
    with pytest.raises(reference.ReferenceUnavailable):
        ns["softmax"]([0.0])


@pytest.mark.slow
def test_borrowing_the_reference_fails_the_visible_test_in_a_normal_kernel(tmp_path):
    from nbclient import NotebookClient
    student = nbformat.reads(generate(paths.source_path(LAB)), as_version=4)
    nb = _up_to_visible_softmax_test(cells.replace_cell(student, "softmax", BORROWS))
    NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    test = [c for c in nb.cells if c.get("id") == "test_softmax"][0]
    errors = [o for o in test.outputs if o.output_type == "error"]
    assert errors and errors[0].ename == "ReferenceUnavailable", test.outputs
    assert "the grader runs answers without it" in errors[0].evalue


@pytest.mark.slow
def test_borrowing_the_reference_scores_zero_when_graded(tmp_path):
    src = cells.load(paths.source_path(LAB))
    nb = cells.replace_cell(src, "softmax", BORROWS)
    tests = [cells.grade_id(c) for c in src.cells if cells.is_autograded_test(c)
             and cells.grade_id(c).startswith("test_softmax")]
    cut = _cut(nb, tests)
    r = grade_notebook(LAB, cut, 60, source=_cut(src, tests), state=paths.State(tmp_path))
    assert r.answers_ran["softmax"] is True
    assert all(r.scores[t][0] == 0 for t in tests), r.scores
    assert "reference implementation" in r.errors["test_softmax"]


def _cut(nb, test_ids):
    last = max(i for i, c in enumerate(nb.cells) if cells.grade_id(c) in set(test_ids))
    out = cells.load(nb)
    out.cells = out.cells[: last + 1]
    return out


# the tester's finding: functions of lreact that are not reference implementations but hold
# near copies of graded answers of lab 1, shipped as source in the student edition
NEAR_COPIES = {"views/tool_call_rates.py": ("call_problem", "validate_tool_call"),
               "actions/mcp_server.py": ("get_weather", "get_weather"),
               "engines/engine_text.py": ("chatml_prompt", "render_chatml"),
               "traces.py": ("run_tool", "execute_tool_call")}


def test_a_near_copy_of_an_answer_is_marked_and_its_module_ships_compiled():
    """A function close to a graded answer carries ``@near_copy_of(<grade id>)``: nothing changes
    where it runs (callable with the rule engaged, kept whole in the grader's copy), and the
    student edition compiles its module, as it compiles a reference implementation's."""
    import ast

    from autograder.instructor.edition import ships_compiled
    for module, (name, answer) in NEAR_COPIES.items():
        path = paths.ROOT / "lreact" / module
        fn = next(n for n in ast.walk(ast.parse(path.read_text()))
                  if isinstance(n, ast.FunctionDef) and n.name == name)
        assert [ast.unparse(d) for d in fn.decorator_list
                if "near_copy_of" in ast.unparse(d)] == [f"near_copy_of({answer!r})"], module
        assert ships_compiled(path), module
        stripped = reference.strip_references(path.read_text(), module[:-3].replace("/", "."))
        assert ast.dump(next(n for n in ast.walk(ast.parse(stripped))
                             if isinstance(n, ast.FunctionDef) and n.name == name).body[-1]) \
            == ast.dump(fn.body[-1]), module                 # the grader's copy keeps the body
    assert not ships_compiled(paths.ROOT / "lreact" / "messages.py")
    from lreact import traces
    try:
        reference.engage(anywhere=True)
        call = traces.ToolCall("c1", "echo", '{"text": "hi"}')
        assert traces.run_tool(call, {"echo": lambda text: text}).content == "hi"   # callable
    finally:
        reference.disengage()
    assert traces.run_tool.__near_copy_of__ == ("execute_tool_call",)
