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
