"""Shared pytest fixtures: replaying the recorded Ollama exchanges of tests/fixtures/ollama/."""
import json
import pathlib

import httpx
import pytest
import respx

OLLAMA_FIXTURES = pathlib.Path(__file__).parent / "fixtures" / "ollama"

# No test may use the network or this machine's model files: huggingface_hub stays offline and
# sees an empty cache, so LREACT_BACKEND=auto never finds the embedded model by accident (the
# tests that run a real model name its file: tests/test_embedded.py).  Notebook kernels inherit it.
import os as _os
import tempfile as _tempfile

_os.environ["HF_HUB_OFFLINE"] = "1"
_os.environ["HF_HUB_CACHE"] = _tempfile.mkdtemp(prefix="lreact-test-hf-cache-")
_os.environ.pop("LREACT_GGUF", None)


def load_recording(name):
    """One recorded exchange (see tests/fixtures/ollama/README.md)."""
    return json.loads((OLLAMA_FIXTURES / f"{name}.json").read_text(encoding="utf-8"))


def replay_recording(router, name):
    """Route the recording's request to its recorded response (or transport failure);
    returns (recording, route)."""
    fx = load_recording(name)
    req = fx["request"]
    route = router.route(method=req["method"], url=fx["host"] + req["path"])
    if "raises" in fx:
        route.side_effect = getattr(httpx, fx["raises"])("recorded failure")
    else:
        route.return_value = httpx.Response(fx["response"]["status"], json=fx["response"]["json"])
    return fx, route


@pytest.fixture
def router():
    """respx in place of the network: every request must match a recorded route."""
    with respx.mock(assert_all_mocked=True, assert_all_called=False) as r:
        yield r



_SESSION_START = []


def pytest_sessionstart(session):
    import time
    _SESSION_START.append(time.time())


def pytest_terminal_summary(terminalreporter):
    """Print the browser test's measured redraw latency (a benchmark figure, never asserted)."""
    figure = (pathlib.Path(__file__).resolve().parent.parent / "artifacts" / "browser"
              / "redraw-latency.txt")
    if figure.exists() and _SESSION_START and figure.stat().st_mtime >= _SESSION_START[0]:
        terminalreporter.write_sep("-", "browser benchmark")
        terminalreporter.write_line(figure.read_text(encoding="utf-8").strip())
