"""``python -m autograder check-course``: the rules a course's source notebooks follow, one
command (autograder/proofs/course_rules.py); the other tests call it instead of keeping lists.

On this repository every rule holds; on a small course that breaks each rule once, each break is
named with its cell and the fix.
"""
import subprocess
import sys
from pathlib import Path

import nbformat

from autograder.proofs.course_rules import check

ROOT = Path(__file__).resolve().parent.parent
TINY = ROOT / "tests" / "fixtures" / "autograder" / "solutions" / "tiny" / "tiny.ipynb"


def test_every_rule_holds_for_this_course():
    problems = check(ROOT)
    assert not problems, "\n".join(map(str, problems))


def _broken_course(root: Path) -> Path:
    nb = nbformat.read(str(TINY), as_version=4)
    cells = {c.metadata.get("nbgrader", {}).get("grade_id"): c for c in nb.cells}
    cells["test_double"].source += "\nimport inspect\ninspect.getsource(double)\n"   # introspects
    cells["test_double__array"].source = cells["test_double__array"].source.replace(
        "### END HIDDEN TESTS", "")                                                     # unpaired
    cells["halve"].source = "### BEGIN SOLUTION\ndef halve(x):\n    return x / 2\nlen = 3\n" \
                            "### END SOLUTION"                                            # shadows
    cells["test_halve"].outputs = [nbformat.v4.new_output("stream", text="x")]          # not clean
    stray = nbformat.v4.new_code_cell("assert True", id="test_triple", metadata={"nbgrader": {
        "grade": True, "solution": False, "locked": True, "points": 1,
        "grade_id": "test_triple", "schema_version": 3}})                                # no answer
    nb.cells.append(stray)
    dest = root / "solutions" / "tiny" / "tiny.ipynb"
    dest.parent.mkdir(parents=True)
    nbformat.write(nb, str(dest))
    return root


def test_each_broken_rule_is_named_with_its_cell_and_fix(tmp_path):
    root = _broken_course(tmp_path)
    found = {(p.cell, p.rule): p for p in check(root)}
    assert ("test_double", "both-processes") in found
    assert ("test_double__array", "test-cells") in found
    assert ("halve", "no-shadowing") in found and "'len'" in found[("halve", "no-shadowing")].message
    assert ("test_halve", "clean") in found
    assert ("test_triple", "tests-per-answer") in found
    assert ("double", "catalogue") in found                # no catalogued wrong answers here
    kinds = {p.rule: p.kind for p in found.values()}
    assert kinds["both-processes"] == kinds["no-shadowing"] == "grading"
    assert kinds["clean"] == kinds["catalogue"] == "house"
    grading = check(root, grading_only=True)
    assert grading and all(p.kind == "grading" for p in grading)


def test_the_command_prints_each_problem_and_fails(tmp_path):
    root = _broken_course(tmp_path)
    done = subprocess.run([sys.executable, "-m", "autograder", "check-course", "--root", str(root)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "tiny/test_double: [both-processes, grading]" in done.stdout
    assert "check-course:" in done.stdout.splitlines()[-1]
    ok = subprocess.run([sys.executable, "-m", "autograder", "check-course"], cwd=ROOT,
                        capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0 and "every rule holds" in ok.stdout, ok.stdout[-2000:]


def test_selfcheck_names_the_cell_the_error_and_the_cause():
    from autograder.proofs.selfcheck import diagnose
    from autograder.run.engine import GradeResult
    r = GradeResult("tiny", scores={"test_a": (0.0, 1.0), "test_b": (0.0, 2.0), "test_c": (1.0, 1.0)},
                    errors={"test_a": "ValueUnavailable: counts cannot be used by the tests: a "
                                      "Foo object is not plain data",
                            "test_b": "NameError: name 'squares' is not defined"})
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("del squares\nf()", metadata={"nbgrader": {
        "grade": True, "grade_id": "test_b", "points": 2, "solution": False}})]
    lines = diagnose(r, nb)
    assert len(lines) == 2
    assert lines[0].startswith("test_a: ValueUnavailable") and "did not cross" in lines[0]
    assert lines[1].startswith("test_b: NameError") and "finally" in lines[1]
