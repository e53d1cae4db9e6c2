"""The lab's real-model cells of Part A (A.6 ``sweep`` and ``first-token``) with a server that
passes the set-up check and then fails: Run All must not stop in Part A.

A fake Ollama on loopback answers ``/api/tags`` and ``/api/show`` like a server with the model
pulled, then, per mode:
- ``http500``  ``/api/chat`` answers HTTP 500 (the model runner crashed);
- ``timeout``  ``/api/chat`` never answers within the cell's timeout;
- ``stopped``  the server stops listening right after the set-up check (connection refused);
- ``ok``       ``/api/chat`` answers (a control: the sweep and the real-token plot run).
The cells run in a real kernel (nbclient), in the lab's order: the setup cell, the four sampling
solutions the plot uses, ``sweep``, ``first-token``.  In the ``http500`` mode the whole source
notebook also runs top to bottom.
"""
from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "solutions" / "lecture-ReAct-lab" / "lecture-ReAct-lab.ipynb"
MODEL = "qwen2.5:7b"
PART_A = ["setup", "softmax", "temperature_softmax", "top_k_filter", "top_p_filter", "sweep",
          "first-token"]

pytestmark = pytest.mark.slow


class FakeOllama:
    """A one-connection-at-a-time HTTP server on 127.0.0.1 that speaks just enough Ollama."""

    def __init__(self, mode: str):
        self.mode, self.paths = mode, []
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def close(self):
        try:
            self.listener.close()
        except OSError:
            pass

    def _serve(self):
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return  # closed
            with conn:
                conn.settimeout(10)
                try:
                    self._handle(conn)
                except OSError:
                    pass

    def _handle(self, conn):
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, path, _ = lines[0].split(" ", 2)
        length = next((int(v) for k, _, v in (ln.partition(":") for ln in lines[1:])
                       if k.strip().lower() == "content-length"), 0)
        while len(body) < length:
            body += conn.recv(65536)
        self.paths.append(path)
        if path == "/v1/models":          # an OpenAI-compatible engine (llama-server's shape)
            return self._reply(conn, 200, {"object": "list", "data": [
                {"id": MODEL, "object": "model", "created": 1764576000, "owned_by": "llamacpp"}]})
        if path == "/v1/chat/completions":
            request = json.loads(body or b"{}")
            fruit = "Apple" if request.get("temperature") == 0 else \
                ["Apple", "Banana", "Mango"][int(request.get("seed") or 0) % 3]
            return self._reply(conn, 200, {
                "id": "chatcmpl-1", "object": "chat.completion", "created": 1764576000,
                "model": MODEL, "choices": [{"index": 0, "finish_reason": "stop",
                                             "message": {"role": "assistant", "content": fruit}}]})
        if path == "/api/tags":
            return self._reply(conn, 200, {"models": [{"name": MODEL, "model": MODEL}]})
        if path == "/api/show":
            if self.mode == "stopped":
                self.listener.close()  # from now on every new connection is refused
            return self._reply(conn, 200, {"capabilities": ["completion", "tools"]})
        if path == "/api/chat":
            if self.mode == "http500":
                return self._reply(conn, 500, {"error": "llama runner process has terminated"})
            if self.mode == "timeout":
                time.sleep(4)  # longer than the cell's timeout (set to 1 s by the test)
                return None
            request = json.loads(body or b"{}")
            if request.get("logprobs"):
                top = [{"token": t, "logprob": lp} for t, lp in
                       [("Apple", -0.2), ("Banana", -1.9), ("Mango", -2.6), ("apple", -3.1)]]
                return self._reply(conn, 200, {"model": MODEL, "done": True,
                                               "message": {"role": "assistant", "content": "Apple"},
                                               "logprobs": [{"token": "Apple", "logprob": -0.2,
                                                             "top_logprobs": top}]})
            seed = request.get("options", {}).get("seed", 0)
            fruit = "Apple" if request.get("options", {}).get("temperature") == 0 else \
                ["Apple", "Banana", "Mango"][seed % 3]
            return self._reply(conn, 200, {"model": MODEL, "done": True,
                                           "message": {"role": "assistant", "content": fruit}})
        return self._reply(conn, 404, {"error": f"no route {path}"})

    @staticmethod
    def _reply(conn, status, payload):
        body = json.dumps(payload).encode()
        conn.sendall(f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n"
                     f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)


def _execute(nb, url, monkeypatch, tmp_path, backend="ollama"):
    from nbclient import NotebookClient

    monkeypatch.setenv("OLLAMA_HOST", url)
    monkeypatch.setenv("LREACT_MODEL", MODEL)
    monkeypatch.setenv("MPLBACKEND", "agg")
    for var in ("LREACT_BACKEND", "LREACT_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    if backend == "openai":
        monkeypatch.setenv("LREACT_BACKEND", "openai")
        monkeypatch.setenv("LREACT_BASE_URL", url + "/v1")
    NotebookClient(nb, timeout=180, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()  # raises on error
    problems = [(c.id, o.get("ename") or o.get("text", "")[:300]) for c in nb.cells
                if c.cell_type == "code" for o in c.outputs
                if o.output_type == "error" or (o.output_type == "stream" and o.name == "stderr")]
    assert problems == []
    return {c.id: "".join(o.get("text", "") for o in c.outputs if o.output_type == "stream")
            for c in nb.cells if c.cell_type == "code"}


def _part_a(timeout_s: float):
    nb = nbformat.read(SOURCE, as_version=4)
    cells = {c.id: c for c in nb.cells}
    nb.cells = [cells[i] for i in PART_A]
    sweep = nb.cells[PART_A.index("sweep")]
    assert "SWEEP_TIMEOUT = 60" in sweep.source
    sweep.source = sweep.source.replace("SWEEP_TIMEOUT = 60", f"SWEEP_TIMEOUT = {timeout_s}")
    return nb


@pytest.mark.parametrize("mode", ["http500", "timeout", "stopped", "ok"])
def test_part_a_real_model_cells_survive_a_failing_server(mode, monkeypatch, tmp_path):
    server = FakeOllama(mode)
    try:
        out = _execute(_part_a(1), server.url, monkeypatch, tmp_path)
    finally:
        server.close()
    assert "/api/show" in server.paths  # the set-up check passed first
    assert "✓ Model" in out["sweep"] and "supports tool calling" in out["sweep"]
    if mode == "ok":
        assert "T = 0.0  top_p = 1.0   1 distinct of 3: ['Apple']" in out["sweep"]
        assert "distinct of 3: ['Apple', 'Banana', 'Mango']" in out["sweep"]
        assert "could not give" not in out["first-token"]
        return
    assert "The sweep stopped: the model could not answer." in out["sweep"]
    assert "The rest of the lab does not need it." in out["sweep"]
    expected = {"http500": "HTTP 500", "timeout": "did not answer within the timeout of 1 s",
                "stopped": "Cannot reach an Ollama server"}[mode]
    assert expected in out["sweep"], out["sweep"]
    assert out["first-token"] == ""  # the plot falls back to the worked example, silently


def test_part_a_real_model_cells_follow_an_openai_compatible_backend(monkeypatch, tmp_path):
    # LREACT_BACKEND=openai (llama-server, vLLM): the sweep goes to /v1/chat/completions with
    # each setting; the first-token plot asks the engine for logprobs, and this one sends none:
    # the cell says so and goes on with the worked example
    server = FakeOllama("ok")
    try:
        out = _execute(_part_a(5), server.url, monkeypatch, tmp_path, backend="openai")
    finally:
        server.close()
    assert "/v1/models" in server.paths and not any(p.startswith("/api/") for p in server.paths)
    assert "T = 0.0  top_p = 1.0   1 distinct of 3: ['Apple']" in out["sweep"]
    assert "distinct of 3: ['Apple', 'Banana', 'Mango']" in out["sweep"]
    assert "could not give the first-token log-probabilities" in out["first-token"]
    assert "does not support logprobs" in out["first-token"]


def test_first_token_cell_alone_survives_a_server_that_fails_after_the_sweep(monkeypatch,
                                                                              tmp_path):
    """The sweep worked, then the server crashed: the plot says why and uses the example."""
    server = FakeOllama("ok")
    try:
        nb = _part_a(5)
        first = nb.cells[PART_A.index("first-token")]
        first.source = "server_mode_switch()\n" + first.source
        nb.cells.insert(PART_A.index("first-token"), nbformat.v4.new_code_cell(
            "import urllib.request\n"
            "def server_mode_switch():\n"
            f"    urllib.request.urlopen({server.url!r} + '/switch-to-500', timeout=5).read()\n"))
        nb.cells[-2].id = "switch"
        original = server._handle

        def handle(conn):
            peek = conn.recv(65536, socket.MSG_PEEK)
            if b"/switch-to-500" in peek:
                conn.recv(65536)
                server.mode = "http500"
                return server._reply(conn, 200, {})
            return original(conn)

        server._handle = handle
        out = _execute(nb, server.url, monkeypatch, tmp_path)
    finally:
        server.close()
    assert "distinct of 3" in out["sweep"]
    assert "The model could not give the first-token log-probabilities" in out["first-token"]
    assert "HTTP 500" in out["first-token"]


def test_whole_lab_runs_to_the_end_when_the_server_fails_after_the_check(monkeypatch, tmp_path):
    server = FakeOllama("http500")
    try:
        out = _execute(nbformat.read(SOURCE, as_version=4), server.url, monkeypatch, tmp_path)
    finally:
        server.close()
    assert "The sweep stopped" in out["sweep"]
    assert "The model could not answer" in out["full-loop"]  # Part B says so too, and goes on
    assert "constrained:   0% of 200 samples fail to parse" in out["measure"]
