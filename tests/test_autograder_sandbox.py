"""The sandbox and the in-kernel guard, on the tiny fixture (the full hostile class is in
`python -m autograder selfcheck`)."""
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from autograder import sandbox  # noqa: E402
from autograder.engine import grade_notebook, load, replace_cell  # noqa: E402

TINY = ROOT / "tests" / "fixtures" / "autograder" / "solutions" / "tiny" / "tiny.ipynb"
needs_bwrap = pytest.mark.skipif(not sandbox.bwrap_works(), reason="bubblewrap not usable")

TRANSFORMER = ("get_ipython().input_transformers_cleanup.append(lambda lines: [])\n"
               "def double(x):\n    return 0\n")
PATCH = ("import lreact.checks, numpy\n"
         "lreact.checks.assert_close = lambda *a, **k: None\n"
         "numpy.allclose = lambda *a, **k: True\n"
         "def double(x):\n    return 0\n")


def _grade(source, **kw):
    return grade_notebook("tiny", replace_cell(load(TINY), "double", source), timeout=20,
                          source=TINY, **kw)


@pytest.mark.slow
@pytest.mark.parametrize("cheat", [TRANSFORMER, PATCH], ids=["transformer", "patch"])
def test_guard_is_what_stops_in_kernel_cheats(cheat):
    assert _grade(cheat, guard=False).scores["test_double"] == (2.0, 2.0)   # the cheat works
    assert _grade(cheat).scores["test_double"] == (0.0, 2.0)                # ... not with us


@pytest.mark.slow
@needs_bwrap
def test_sandbox_hides_the_repository_and_the_network():
    # a listener on the host's loopback: from inside the sandbox (its own network namespace)
    # it must be unreachable.  Only loopback is ever probed.
    import socket
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    probe = ("import os, socket, pathlib\n"
             "seen = sorted(os.listdir('/work/main')) if os.path.isdir('/work/main') else []\n"
             f"try:\n    socket.create_connection(('127.0.0.1', {port}), timeout=2); net = 'open'\n"
             "except OSError:\n    net = 'closed'\n"
             "print('SEEN', seen, 'NET', net, 'UID', os.getuid())\n"
             "def double(x):\n    return 2 * x\n")
    try:
        r = _grade(probe, sandbox="require")
    finally:
        listener.close()
    out = [o for c in r.executed.cells if c.get("id") == "double" for o in c.outputs]
    text = "".join(o.get("text", "") for o in out)
    root = str(ROOT)
    if root.startswith("/work/main"):
        assert "SEEN ['.venv', 'lreact'] NET closed" in text
    assert "NET closed" in text and "UID 0" not in text
    assert r.scores["test_double"] == (2.0, 2.0)


def test_require_sandbox_env_turns_the_fallback_into_an_error(monkeypatch, tmp_path):
    monkeypatch.setattr(sandbox, "bwrap_works", lambda: False)
    monkeypatch.setenv("LREACT_REQUIRE_SANDBOX", "1")
    with pytest.raises(sandbox.SandboxUnavailable):
        sandbox.launch(tmp_path, sys.executable, [], mode="auto")
    monkeypatch.delenv("LREACT_REQUIRE_SANDBOX")
    run = sandbox.launch(tmp_path, sys.executable, [], mode="auto", scratch_base=tmp_path)
    try:
        assert run.notes and "CAN read solutions/" in run.notes[0]
    finally:
        run.cleanup()


def test_hostile_catalogue_is_complete_and_labelled():
    folder = ROOT / "autograder" / "hostile"
    names = {p.stem for p in folder.glob("*.py")}
    assert {"infinite_loop", "sys_exit", "os_exit", "memory_bomb", "fork_bomb", "huge_output",
            "always_equal", "input_transformer", "patch_checks", "read_solutions",
            "write_gradebook", "network"} <= names
    for p in folder.glob("*.py"):
        head = p.read_text().splitlines()[0]
        assert head.startswith("# HOSTILE: lecture-ReAct-"), p.name


# --- the guard against borrowed answers: shadowed builtins, patched test helpers, references ---

def _mini_source(tmp_path):
    """A small assignment whose tests use a builtin inline, lreact.labchecks, and a reference."""
    import nbformat

    def answer(gid, source):
        return nbformat.v4.new_code_cell(source, id=gid, metadata={"nbgrader": {
            "solution": True, "grade": False, "locked": False, "grade_id": gid,
            "schema_version": 3}})

    def test(gid, source, points=1):
        return nbformat.v4.new_code_cell(source, id=gid, metadata={"nbgrader": {
            "solution": False, "grade": True, "locked": True, "grade_id": gid, "points": points,
            "schema_version": 3}})

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("import numpy as np", id="setup"),
        answer("double", "def double(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n"
                         "    ### END SOLUTION\n"),
        test("test_double", 'from lreact.labchecks import text\nassert text(double("ab")) == "abab"\n'),
        test("test_double__len", 'assert len(double("ab")) == 4 and sum([double(1)]) == 2\n'),
        answer("softmax", "def softmax(z):\n    ### BEGIN SOLUTION\n    e = np.exp(np.asarray(z, "
                          "dtype=float) - np.max(z))\n    return e / e.sum()\n"
                          "    ### END SOLUTION\n"),
        test("test_softmax", "from lreact.checks import assert_close\n"
                             "from lreact.labchecks import reference\n"
                             "oracle = reference('sampling', 'softmax')\n"
                             "assert_close(softmax([1.0, 2.0, 0.5]), oracle([1.0, 2.0, 0.5]), "
                             "tol=1e-12)\n", points=2),
    ]
    path = tmp_path / "mini.ipynb"
    nbformat.write(nb, str(path))
    return path


def _grade_mini(source, gid, answer, **kw):
    return grade_notebook("mini", replace_cell(load(source), gid, answer), timeout=30,
                          source=source, **kw)


@pytest.mark.slow
def test_mini_source_scores_full_marks(tmp_path):
    source = _mini_source(tmp_path)
    r = grade_notebook("mini", source, timeout=30, source=source)
    assert (r.total, r.possible) == (4.0, 4.0), r.errors


SHADOW = ("def double(x):\n    return x\n"
          "len = lambda x: 4\n"
          "sum = lambda *a, **k: 2\n")
PATCH_LABCHECKS = ("import lreact.labchecks\n"
                   "lreact.labchecks.text = lambda *a, **k: 'abab'\n"
                   "def double(x):\n    return x\n")


@pytest.mark.slow
def test_shadowed_builtins_gain_nothing(tmp_path):
    source = _mini_source(tmp_path)
    assert _grade_mini(source, "double", SHADOW, guard=False).scores["test_double__len"] == (1.0, 1.0)
    r = _grade_mini(source, "double", SHADOW)
    assert r.scores["test_double__len"] == (0.0, 1.0)
    # a plain value that happens to share a builtin's name is left alone
    r = _grade_mini(source, "double", "max = 10\ndef double(x):\n    return x * (max - 8)\n")
    assert (r.scores["test_double"], r.scores["test_double__len"]) == ((1.0, 1.0), (1.0, 1.0))


@pytest.mark.slow
def test_patched_labchecks_is_restored(tmp_path):
    source = _mini_source(tmp_path)
    assert _grade_mini(source, "double", PATCH_LABCHECKS, guard=False).scores["test_double"] == (1.0, 1.0)
    assert _grade_mini(source, "double", PATCH_LABCHECKS).scores["test_double"] == (0.0, 1.0)


BORROWED = {
    "import": "from lreact.sampling import softmax\n",
    "wrapper": "import lreact.sampling\ndef softmax(z):\n    return lreact.sampling.softmax(z)\n",
    "restored code": ("import lreact.sampling\n_code = lreact.sampling.softmax.__code__\n"
                      "def softmax(z):\n    raise NotImplementedError\n"
                      "softmax.__code__ = _code\n"
                      "softmax.__globals__['_as_1d'] = lreact.sampling._as_1d\n"),
    "private copy at the top": ("from lreact.labchecks import reference\n"
                                "softmax = reference('sampling', 'softmax')\n"),
    "private copy": ("from lreact.labchecks import reference\n"
                     "def softmax(z):\n    return reference('sampling', 'softmax')(z)\n"),
}


@pytest.mark.slow
@pytest.mark.parametrize("answer", list(BORROWED.values()), ids=list(BORROWED))
def test_the_course_reference_is_no_answer_while_grading(tmp_path, answer):
    source = _mini_source(tmp_path)
    if "reference(" not in answer:   # outside grading the public reference works
        assert _grade_mini(source, "softmax", answer, guard=False).scores["test_softmax"] == (2.0, 2.0)
    r = _grade_mini(source, "softmax", answer)
    assert r.scores["test_softmax"] == (0.0, 2.0)
    said = r.errors["test_softmax"] + "".join(
        str(o.get("evalue", "")) for c in r.executed.cells if c.get("id") == "softmax"
        for o in c.get("outputs", []))
    assert "reference" in said and "write your own" in said   # the student is told why


def test_reference_is_a_private_copy_that_works_outside_a_kernel():
    import lreact.chatml
    import lreact.sampling
    import lreact.tools
    from lreact import UserMessage
    from lreact.labchecks import reference

    soft = reference("sampling", "softmax")
    assert soft is not lreact.sampling.softmax
    assert [float(x) for x in soft([0.0, 0.0])] == [0.5, 0.5]
    registry = reference("tools", "REGISTRY")
    assert registry["calculate"] is not lreact.tools.calculate
    assert registry["calculate"]("(17 + 25) * 3") == "126"
    render = reference("chatml", "render_chatml")
    assert render is not lreact.chatml.render_chatml
    assert render([UserMessage("Hi")]) == lreact.chatml.render_chatml([UserMessage("Hi")])
    with pytest.raises(ValueError):
        reference("../autograder/runner", "main")
