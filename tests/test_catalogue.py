"""The wrong-answer catalogue (autograder/proofs/catalogue.py): edits of the solution cell that apply
exactly, fail loudly when they do not, and read as one mistake each."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from autograder import paths
from autograder.proofs import catalogue
from autograder.proofs.catalogue import CatalogueError, apply_edit, make_edit, parse_hunks

ROOT = Path(__file__).resolve().parent.parent

SOLUTION = """def softmax(z):
    z = np.asarray(z, dtype=float)
    top = z.max()
    e = np.exp(z - top)
    return e / e.sum()"""


def test_an_edit_replaces_its_lines_once():
    hunks = parse_hunks("-    e = np.exp(z - top)\n+    e = np.exp(z)\n")
    assert apply_edit(SOLUTION, hunks).splitlines()[3] == "    e = np.exp(z)"
    two = parse_hunks("-    top = z.max()\n@@\n-    return e / e.sum()\n+    return e\n")
    out = apply_edit(SOLUTION, two).splitlines()
    assert "    top = z.max()" not in out and out[-1] == "    return e"


@pytest.mark.parametrize("body, message", [
    ("-    e = np.exp(z)\n+    e = 1\n", "does not occur"),
    ("-    return e / e.sum()\n-    z = 1\n+    x\n", "does not occur"),      # not consecutive
    ("-e = np.exp(z - top)\n+e = 1\n", "does not occur"),                  # indentation counts
    ("+    e = 1\n", "no '-' line"),
    ("-    top = z.max()\n+    top = 0\n-    e = 1\n", "a '-' line after '+' lines"),
    ("    e = 1\n", "every line of an edit starts with"),
    ("-    top = z.max()\n-    e = np.exp(z - top)\n+x\n@@\n-    e = np.exp(z - top)\n+y\n",
     "overlap"),
])
def test_an_edit_that_does_not_fit_fails_loudly(body, message):
    with pytest.raises(CatalogueError, match=re.escape(message)):
        apply_edit(SOLUTION, parse_hunks(body, "x.edit"), "x.edit")


def test_a_line_found_twice_is_refused():
    twice = SOLUTION + "\n    top = z.max()"
    with pytest.raises(CatalogueError, match="occurs 2 times"):
        apply_edit(twice, parse_hunks("-    top = z.max()\n+    top = 0\n"))


@pytest.mark.parametrize("wrong", [
    SOLUTION.replace("z - top", "z"),
    SOLUTION.replace("    top = z.max()\n", ""),
    SOLUTION + "\n    # a trailing note",
    "import math\n" + SOLUTION,
    SOLUTION.replace("return e / e.sum()", "return e").replace("z - top", "z"),
])
def test_make_edit_reproduces_the_wrong_cell(wrong):
    text = make_edit(SOLUTION, wrong)
    assert apply_edit(SOLUTION, parse_hunks(text)) == wrong
    minus, _ = catalogue.edit_size(text)
    assert minus <= 3


def test_solution_text_drops_the_marker_lines_only():
    src = "def f(x):\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION\n"
    assert catalogue.solution_text(src) == "def f(x):\n    return x"


def test_a_stale_entry_names_its_file(tmp_path):
    folder = tmp_path / "autograder" / "proofs" / "wrong_answers" / "tiny"
    folder.mkdir(parents=True)
    (folder / "double__stale.edit").write_text("# WRONG: a line the solution no longer has\n"
                                               "-    return 3 * x\n+    return x\n")
    (tmp_path / "solutions" / "tiny").mkdir(parents=True)
    tiny = ROOT / "tests" / "fixtures" / "autograder" / "solutions" / "tiny" / "tiny.ipynb"
    (tmp_path / "solutions" / "tiny" / "tiny.ipynb").write_bytes(tiny.read_bytes())
    with pytest.raises(CatalogueError, match=r"double__stale\.edit: hunk 1"):
        catalogue.entries("tiny", root=tmp_path)
    (folder / "double__stale.edit").write_text("# WRONG: adds instead of multiplying\n"
                                               "-    return 2 * x\n+    return 2 + x\n")
    (folder / "nothing__x.py").write_text("# WRONG: an answer cell that does not exist\nx = 1\n")
    with pytest.raises(CatalogueError, match="no answer cell with grade_id 'nothing'"):
        catalogue.entries("tiny", root=tmp_path)
    (folder / "nothing__x.py").unlink()
    [entry] = catalogue.entries("tiny", root=tmp_path)
    assert entry.source == ("# WRONG: adds instead of multiplying\ndef double(x):\n"
                            "    return 2 + x")
    assert (entry.grade_id, entry.slug, entry.kind) == ("double", "stale", "edit")


@pytest.mark.parametrize("aid", [a for a in paths.ASSIGNMENTS
                                 if paths.source_path(a).exists()])
def test_every_catalogued_entry_applies_and_most_are_small_edits(aid):
    entries = catalogue.entries(aid)
    if not entries:
        pytest.skip(f"{aid} has no catalogue yet")
    solutions = catalogue.solution_cells(paths.source_path(aid))
    assert all(e.source.splitlines()[0] == f"# WRONG: {e.mistake}" for e in entries)
    assert all(e.source.split("\n", 1)[1] != solutions[e.grade_id] for e in entries)
    edits = [e for e in entries if e.kind == "edit"]
    assert len(edits) >= 0.8 * len(entries), "whole cells only for different approaches"
    for e in edits:
        minus, plus = catalogue.edit_size(e.path.read_text(encoding="utf-8"))
        assert minus + plus <= 24, f"{e.path.name} rewrites too much to be one mistake"


def test_the_command_lists_and_checks(capsys):
    from autograder.__main__ import main
    assert main(["catalogue"]) == 0
    out = capsys.readouterr().out
    assert "lecture-ReAct-lab:" in out and "edit" in out
