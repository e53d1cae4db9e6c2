"""OpenAICompatLLM against recorded exchanges with llama-server and vLLM (tests/fixtures/openai/),
no engine needed.  Each test checks what the official ``openai`` client SENT (path, body, key,
number of attempts) as well as what the model object made of the answer."""
import json
import pathlib
import re

import pytest

import lreact
from lreact import (AssistantMessage, EngineError, ModelError, OpenAICompatLLM, SystemMessage,
                    ToolCall, ToolResultMessage, UserMessage)
from lreact.engines.openai_compat import messages_to_openai
from lreact.tools import TOOLS

FIXTURES = pathlib.Path(__file__).parent / "fixtures" / "openai"
LS = "http://127.0.0.1:8080/v1"
VL = "http://127.0.0.1:8000/v1"
LSM = "qwen2.5-1.5b-instruct-q4_k_m.gguf"
VLM = "Qwen/Qwen2.5-1.5B-Instruct"
SAMPLING = dict(temperature=0, top_p=0.9, seed=42)
SYSTEM = SystemMessage("You are a helpful assistant. Use the tools when they help.")
BERLIN = UserMessage("What's the weather in Berlin?")


def load(name):
    return json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))


class Engine:
    """A recorded engine: the HTTP transport under the openai client (which runs on ``httpx2``,
    so respx, which patches ``httpx``, cannot see its requests).  Routes map (method, URL) to a
    recorded answer, a list of answers in turn, or a transport failure; every request is kept."""

    def __init__(self):
        import httpx2
        self.httpx2 = httpx2
        self.routes = {}
        self.requests = []

    def route(self, method, url, answer):
        self.routes[(method, url)] = answer
        return self

    def handler(self, request):
        self.requests.append(request)
        key = (request.method, str(request.url))
        if key not in self.routes:
            raise AssertionError(f"unexpected request {key}")
        answer = self.routes[key]
        if isinstance(answer, list):
            answer = answer.pop(0)
        if isinstance(answer, str):     # a transport failure, by httpx2 exception name
            raise getattr(self.httpx2, answer)("recorded failure", request=request)
        status, body = answer
        if isinstance(body, str):
            return self.httpx2.Response(status, text=body)
        return self.httpx2.Response(status, json=body)

    def client(self):
        return self.httpx2.Client(transport=self.httpx2.MockTransport(self.handler))

    def calls_to(self, path):
        return [r for r in self.requests if r.url.path == path]


def replay(engine, name):
    fx = load(name)
    host = fx["host"].rsplit("/v1", 1)[0]
    answer = fx["raises"] if "raises" in fx else (fx["response"]["status"], fx["response"]["json"])
    engine.route(fx["request"]["method"], host + fx["request"]["path"], answer)
    return fx


def sent(engine, i=-1):
    return json.loads(engine.requests[i].content)


def sent_today(fx):
    """The body lreact sends now for a recorded request.  Two changes since the recordings, found
    on a real llama-cpp-python server (issue 17), neither of which changes llama-server's or
    vLLM's answer: tools come with ``tool_choice: "auto"`` spelled out (their default; without
    it llama-cpp-python's server never shows the model the tools), and a call-only assistant turn
    has ``content: ""`` (it was ``null``, which llama-cpp-python's server refuses).  A third:
    every reply is capped (``max_tokens`` 512 unless the request set one), as on every backend."""
    body = json.loads(json.dumps(fx["request"]["json"]))
    body.setdefault("max_tokens", 512)
    if body.get("tools"):
        body["tool_choice"] = "auto"
    for m in body.get("messages", []):
        if m["role"] == "assistant" and m.get("content") is None:
            m["content"] = ""
    return body


@pytest.fixture
def engine(monkeypatch):
    for var in ("LREACT_MODEL", "LREACT_BASE_URL", "LREACT_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    return Engine()


def llama(engine, **kw):
    return OpenAICompatLLM(LSM, base_url=LS, timeout=kw.pop("timeout", 30),
                           http_client=engine.client(), **{**SAMPLING, **kw})


def vllm(engine, model=VLM, **kw):
    return OpenAICompatLLM(model, base_url=VL, timeout=kw.pop("timeout", 30),
                           http_client=engine.client(), **{**SAMPLING, **kw})


def test_every_fixture_is_well_formed():
    names = sorted(p.stem for p in FIXTURES.glob("*.json"))
    assert len(names) >= 14
    for name in names:
        fx = load(name)
        assert fx["description"] and fx["host"].endswith("/v1")
        assert fx["request"]["path"].startswith("/v1/")
        assert ("response" in fx) != ("raises" in fx), name


ANSWER = load("llama_server_text_answer")["response"]["json"]
CHAT = LS + "/chat/completions"


# -- what the client sends ------------------------------------------------------------------------

def test_llama_server_turn_1_request_and_answer(engine):
    fx = replay(engine, "llama_server_tool_call")
    reply = llama(engine)([SYSTEM, BERLIN], TOOLS)
    assert len(engine.requests) == 1
    request = engine.requests[0]
    assert request.method == "POST" and request.url.path == "/v1/chat/completions"
    assert sent(engine) == sent_today(fx)
    assert request.headers["authorization"] == "Bearer not-needed"   # local engines need no key
    assert isinstance(reply, AssistantMessage) and reply.text == ""
    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == [
        ("nDr1pVq8tMz3kLw5Yb7cHs2Jx9Fg4Ae6", "get_weather", '{"city":"Berlin"}')]


def test_turn_2_sends_the_history_in_openai_form(engine):
    fx = replay(engine, "llama_server_text_answer")
    call = ToolCall("nDr1pVq8tMz3kLw5Yb7cHs2Jx9Fg4Ae6", "get_weather", '{"city":"Berlin"}')
    history = [SYSTEM, BERLIN, AssistantMessage(tool_calls=[call]),
               ToolResultMessage(call.id, "12°C, rainy")]
    reply = llama(engine)(history, TOOLS)
    body = sent(engine)
    assert body == sent_today(fx)
    assert body["messages"][2]["content"] == ""              # a call-only turn: "", not null
    assert body["tool_choice"] == "auto"                    # the API's default, spelled out
    assert body["messages"][2]["tool_calls"][0]["function"]["arguments"] == '{"city":"Berlin"}'
    assert body["messages"][3] == {"role": "tool", "tool_call_id": call.id, "content": "12°C, rainy"}
    assert reply == AssistantMessage("It's 12°C and rainy in Berlin.")
    assert history[2].tool_calls == [call]                  # the history is not touched


def test_malformed_arguments_go_back_exactly_as_the_model_wrote_them(engine):
    engine.route("POST", CHAT, (200, ANSWER))
    bad = ToolCall("c1", "get_weather", '{"city": Berlin}')
    llama(engine)([BERLIN, AssistantMessage("Let me see.", [bad]),
                   ToolResultMessage("c1", "ERROR: x")], TOOLS)
    out = sent(engine)["messages"][1]
    assert out["content"] == "Let me see."
    assert out["tool_calls"] == [{"id": "c1", "type": "function", "function": {
        "name": "get_weather", "arguments": '{"city": Berlin}'}}]


def test_sampling_options_and_no_tools(engine):
    engine.route("POST", CHAT, (200, ANSWER))
    OpenAICompatLLM(LSM, base_url=LS, temperature=0.7, seed=None, top_k=20, max_tokens=50,
                    stop=["\n\n"], http_client=engine.client())([BERLIN])
    assert sent(engine) == {"model": LSM, "messages": [{"role": "user", "content": BERLIN.content}],
                            "temperature": 0.7, "max_tokens": 50, "stop": ["\n\n"], "top_k": 20}
    with pytest.raises(TypeError, match="temprature"):
        OpenAICompatLLM(LSM, base_url=LS, temprature=0.7)


def test_the_model_comes_from_the_engine_when_not_given(engine):
    replay(engine, "llama_server_models")
    replay(engine, "llama_server_text_answer")
    llm = OpenAICompatLLM(base_url=LS, http_client=engine.client())
    assert llm.model is None
    llm([BERLIN])
    llm([BERLIN])
    assert len(engine.calls_to("/v1/models")) == 1 and llm.model == LSM     # asked once
    assert sent(engine)["model"] == LSM


def test_base_url_model_and_key_from_the_environment(engine, monkeypatch):
    monkeypatch.setenv("LREACT_BASE_URL", "http://gpu-box:8000/v1/")
    monkeypatch.setenv("LREACT_MODEL", VLM)
    monkeypatch.setenv("LREACT_API_KEY", "s3cret")
    engine.route("POST", "http://gpu-box:8000/v1/chat/completions", (200, ANSWER))
    llm = OpenAICompatLLM(http_client=engine.client())
    assert (llm.base_url, llm.model) == ("http://gpu-box:8000/v1", VLM)
    llm([BERLIN])
    assert engine.requests[0].headers["authorization"] == "Bearer s3cret"
    assert sent(engine)["model"] == VLM


# -- what it makes of the answer ------------------------------------------------------------------

def test_vllm_hermes_parallel_calls_keep_their_ids(engine):
    fx = replay(engine, "vllm_hermes_parallel")
    reply = vllm(engine)([SYSTEM, UserMessage("Compare the weather in Berlin and Paris.")], TOOLS)
    assert sent(engine) == sent_today(fx)
    assert [(c.id, c.arguments) for c in reply.tool_calls] == [
        ("chatcmpl-tool-6f1c0b9e2a4d4e7f8a3b5c6d7e8f9012", '{"city": "Berlin"}'),
        ("chatcmpl-tool-0a9b8c7d6e5f40312a1b2c3d4e5f6a7b", '{"city": "Paris"}')]


def test_calls_without_ids_get_unique_ones(engine):
    none = (200, load("llama_server_no_ids")["response"]["json"])
    par = (200, load("vllm_hermes_parallel")["response"]["json"])
    engine.route("POST", CHAT, [none, none, par, par])
    llm = llama(engine)
    ids = [c.id for _ in range(4) for c in llm([SYSTEM, BERLIN], TOOLS).tool_calls]
    assert len(ids) == 6 and len(set(ids)) == 6, ids
    assert all(re.fullmatch(r"call_\w+", i) for i in ids[:2])
    # the engine's ids are kept the first time; the same id again would break the pairing
    assert ids[2:4] == ["chatcmpl-tool-6f1c0b9e2a4d4e7f8a3b5c6d7e8f9012",
                        "chatcmpl-tool-0a9b8c7d6e5f40312a1b2c3d4e5f6a7b"]
    assert not set(ids[4:]) & set(ids[2:4])


def test_two_model_objects_assign_different_ids(engine):
    none = (200, load("llama_server_no_ids")["response"]["json"])
    engine.route("POST", CHAT, [none, none])
    a = llama(engine)([BERLIN], TOOLS).tool_calls[0].id
    b = llama(engine)([BERLIN], TOOLS).tool_calls[0].id
    assert a != b


def test_truncated_arguments_stay_truncated(engine):
    fx = replay(engine, "llama_server_malformed_arguments")
    reply = llama(engine, max_tokens=12)([SYSTEM, BERLIN], TOOLS)
    assert sent(engine) == sent_today(fx)
    assert reply.tool_calls[0].arguments == '{"city": "Berl'   # not repaired, not re-encoded


def test_an_unparsed_tool_call_block_arrives_as_text(engine):
    replay(engine, "vllm_hermes_unparsed_block")
    reply = vllm(engine)([SYSTEM, BERLIN], TOOLS)
    assert reply.tool_calls == []
    assert reply.text == ('<tool_call>\n{"name": "get_weather", "arguments": {"city": Berlin}}'
                          '\n</tool_call>')


def test_object_arguments_from_a_nonconforming_server_become_a_string(engine):
    body = load("llama_server_tool_call")["response"]["json"]
    body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = {"city": "Berlin"}
    engine.route("POST", CHAT, (200, body))
    call = llama(engine)([BERLIN], TOOLS).tool_calls[0]
    assert isinstance(call.arguments, str) and json.loads(call.arguments) == {"city": "Berlin"}


def test_structured_output_sends_response_format(engine):
    fx = replay(engine, "llama_server_structured_output")
    schema = fx["request"]["json"]["response_format"]["json_schema"]["schema"]
    text = llama(engine).chat_text([SYSTEM, BERLIN], json_schema=schema)
    assert sent(engine) == sent_today(fx)
    assert json.loads(text)["arguments"] == {"city": "Berlin"}


def test_raw_completion(engine):
    fx = replay(engine, "llama_server_completion")
    text = llama(engine).complete(fx["request"]["json"]["prompt"], stop=["\nObservation:"],
                                  max_tokens=64)
    assert sent(engine) == sent_today(fx)
    assert text.endswith("Action: get_weather[Berlin]") and "Observation" not in text


@pytest.mark.parametrize("body", [{"choices": []}, {"object": "chat.completion"},
                                  {"choices": [{"index": 0, "finish_reason": "stop"}]}])
def test_200_without_a_message_is_an_error(engine, body):
    engine.route("POST", CHAT, (200, body))
    with pytest.raises(EngineError, match="without a message"):
        llama(engine)([BERLIN], TOOLS)


# -- errors in plain words, no retries ------------------------------------------------------------

def explain(engine, name, llm=None):
    replay(engine, name)
    with pytest.raises(EngineError) as e:
        (llm or llama(engine))([SYSTEM, BERLIN], TOOLS)
    assert len(engine.requests) == 1, "max_retries=0: one attempt, no silent retries"
    assert isinstance(e.value, ModelError) and e.value.__cause__ is None
    text = str(e.value)
    assert "Traceback" not in text and "openai." not in text
    return text


def test_4xx_unknown_model_on_vllm(engine):
    text = explain(engine, "vllm_unknown_model", vllm(engine, "qwen2.5:7b"))
    assert "does not serve the model 'qwen2.5:7b'" in text and "LREACT_MODEL" in text
    assert VL + "/models" in text and "does not exist" in text


def test_4xx_context_too_long(engine):
    replay(engine, "vllm_context_too_long")
    with pytest.raises(EngineError) as e:
        OpenAICompatLLM(VLM, base_url=VL, http_client=engine.client())([BERLIN])
    assert "context window" in str(e.value) and "4096 tokens" in str(e.value)


def test_5xx_llama_server_without_jinja(engine):
    assert "restart it with `--jinja`" in explain(engine, "llama_server_no_jinja")


def test_5xx_runner_failed(engine):
    text = explain(engine, "llama_server_runner_failed")
    assert "HTTP 500" in text and "crashed" in text and "smaller model" in text
    assert "KV cache" in text


def test_503_still_loading(engine):
    assert "loading the model" in explain(engine, "llama_server_loading")


def test_connection_refused_says_what_to_start(engine):
    text = explain(engine, "connection_refused")
    assert LS in text and "llama-server" in text and "--jinja" in text
    assert "--enable-auto-tool-choice --tool-call-parser hermes" in text


def test_timeout_names_the_seconds(engine):
    text = explain(engine, "timeout", llama(engine, timeout=4.5))
    assert "within the timeout of 4.5 s" in text and "accepted" in text
    assert "llama-server -m" not in text   # it is running: do not say start it


def test_the_client_has_the_timeout_and_no_retries():
    llm = OpenAICompatLLM(LSM, base_url=LS, timeout=4.5)
    assert llm.client.max_retries == 0 and llm.client.timeout == 4.5
    with pytest.raises(ValueError, match="timeout"):
        OpenAICompatLLM(LSM, base_url=LS, timeout=None)
    with pytest.raises(ValueError, match="max_retries"):
        OpenAICompatLLM(LSM, base_url=LS, max_retries=10)


def test_a_dropped_connection_names_the_context_window(engine):
    engine.route("POST", CHAT, "RemoteProtocolError")
    with pytest.raises(EngineError) as e:
        llama(engine)([UserMessage("x" * 40000)])
    assert "dropped the connection" in str(e.value) and "--ctx-size" in str(e.value)
    assert "about 10000 tokens" in str(e.value)


def _free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_dropped_short_request_with_nothing_listening_is_a_stopped_engine(engine):
    """A server killed mid-reply (issue 17): a 68-token input is not the context window."""
    base = f"http://127.0.0.1:{_free_port()}/v1"     # nothing listens there
    engine.route("POST", base + "/chat/completions", "RemoteProtocolError")
    llm = OpenAICompatLLM(LSM, base_url=base, http_client=engine.client())
    with pytest.raises(EngineError) as e:
        llm([SYSTEM, BERLIN], TOOLS)
    text = str(e.value)
    assert "stopped while answering" in text and "nothing listens there now" in text
    assert "context window" not in text and "--ctx-size" not in text


def test_a_dropped_short_request_with_the_engine_back_is_not_the_window(engine):
    import socket
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    base = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    engine.route("POST", base + "/chat/completions", "ReadError")
    try:
        with pytest.raises(EngineError) as e:
            OpenAICompatLLM(LSM, base_url=base, http_client=engine.client())([BERLIN])
    finally:
        listener.close()
    text = str(e.value)
    assert "listening again" in text and "not the context window" in text
    assert "about 7 tokens" in text


def test_a_refused_feature_is_named_not_called_a_crash(engine):
    """llama-cpp-python's server answers HTTP 500 to a request field it cannot validate."""
    fx = replay(engine, "llama_cpp_server_json_schema_refused")
    schema = fx["request"]["json"]["response_format"]["json_schema"]["schema"]
    with pytest.raises(EngineError) as e:
        OpenAICompatLLM(fx["request"]["json"]["model"], base_url=fx["host"],
                        http_client=engine.client()).chat_text([BERLIN], json_schema=schema)
    text = str(e.value)
    assert "does not support structured output (response_format of type json_schema)" in text
    assert "HTTP 500" in text and "nothing crashed" in text and "Restart" not in text
    # the engine's reason in one line, not pydantic's dump with the server's file paths
    assert "invalid request: response_format.type: Input should be 'text' or 'json_object'" in text
    assert "'loc'" not in text and "site-packages" not in text
    assert sent_today(fx) == sent(engine)


def test_a_500_without_a_crash_word_is_not_called_a_crash(engine):
    engine.route("POST", CHAT, (500, {"error": {"code": 500, "message": "boom",
                                                "type": "server_error"}}))
    with pytest.raises(EngineError) as e:
        llama(engine)([BERLIN], TOOLS)
    assert "HTTP 500" in str(e.value) and "still running" in str(e.value)
    assert "crashed" not in str(e.value) and "boom" in str(e.value)


def test_a_refused_port_for_real_fails_fast():
    import time
    start = time.monotonic()
    with pytest.raises(EngineError, match="Cannot reach"):
        OpenAICompatLLM(LSM, base_url="http://127.0.0.1:9/v1", timeout=5)([BERLIN])
    assert time.monotonic() - start < 5


def test_a_server_that_never_answers_for_real_is_a_timeout():
    import socket
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    try:
        llm = OpenAICompatLLM(LSM, base_url=f"http://127.0.0.1:{server.getsockname()[1]}/v1",
                              timeout=0.5)
        with pytest.raises(EngineError, match="within the timeout of 0.5 s"):
            llm([BERLIN])
    finally:
        server.close()


def test_wire_conversion_refuses_non_messages():
    with pytest.raises(TypeError):
        messages_to_openai([{"role": "user", "content": "hi"}])


# -- the backend switch ---------------------------------------------------------------------------

def test_configured_llm_follows_the_environment(monkeypatch):
    for var in ("LREACT_BASE_URL", "LREACT_MODEL", "OLLAMA_HOST"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("LREACT_BACKEND", "ollama")
    llm = lreact.configured_llm(temperature=0, max_tokens=30)
    assert isinstance(llm, lreact.OllamaLLM) and llm.backend == "ollama"
    assert llm.options == {"temperature": 0, "num_predict": 30}
    monkeypatch.setenv("LREACT_BACKEND", "vllm")
    monkeypatch.setenv("LREACT_BASE_URL", VL)
    llm = lreact.configured_llm(seed=1, timeout=9)
    assert isinstance(llm, OpenAICompatLLM) and llm.backend == "openai"
    assert (llm.base_url, llm.timeout, llm.options) == (VL, 9.0, {"seed": 1})
    with pytest.raises(TypeError, match="only for Ollama"):
        lreact.configured_llm(num_ctx=8192)
    assert "backend openai at " + VL in lreact.describe_backend()
    monkeypatch.setenv("LREACT_BACKEND", "ollama")
    monkeypatch.setenv("LREACT_BASE_URL", "127.0.0.1:11500")
    assert lreact.configured_llm().host == "http://127.0.0.1:11500"
    monkeypatch.setenv("LREACT_BACKEND", "tgi")
    with pytest.raises(ValueError, match="LREACT_BACKEND='tgi'"):
        lreact.configured_llm()
    # a notebook's first cell prints describe_backend(): an unknown name is said, not raised
    line = lreact.describe_backend()
    assert "LREACT_BACKEND='tgi'" in line and "scripted models" in line


# -- API keys (issue 30: a class server gives each student one) ------------------------------------
# Red on the code before: it said "set LREACT_API_KEY to the key it was started with" whatever
# was sent, and never "ask your instructor".

def test_401_a_wrong_key_says_ask_your_instructor(engine):
    replay(engine, "llama_server_invalid_api_key")
    llm = OpenAICompatLLM(LSM, base_url=LS, api_key="lr-not-mine", http_client=engine.client())
    with pytest.raises(EngineError) as e:
        llm([SYSTEM, BERLIN], TOOLS)
    text = str(e.value)
    assert text.startswith(f"The server at {LS} refused this key (HTTP 401); ask your "
                           "instructor for yours and set LREACT_API_KEY to it"), text
    assert "Invalid API Key" in text and "lr-not-mine" not in text
    assert e.value.__cause__ is None and len(engine.requests) == 1
    assert engine.requests[0].headers["authorization"] == "Bearer lr-not-mine"


def test_401_with_no_key_set_says_which_to_set(engine):
    replay(engine, "llama_server_invalid_api_key")
    with pytest.raises(EngineError) as e:
        llama(engine)([SYSTEM, BERLIN], TOOLS)
    assert "wants an API key (HTTP 401) and none is set: set LREACT_API_KEY to the key your " \
           "instructor gave you" in str(e.value)


# -- the lens on llama-server: /v1/completions logprobs in the chat shape ---------------------------

def _entry(token, logprob, *top):
    return {"id": 0, "token": token, "bytes": list(token.encode()), "logprob": logprob,
            "top_logprobs": [{"id": 0, "token": t, "bytes": list(t.encode()), "logprob": lp}
                             for t, lp in top]}


# llama-server (llama.cpp 0c1e570) answers /v1/completions with "logprobs": k in the shape of
# chat completions, logprobs.content[], not the legacy tokens/token_logprobs/top_logprobs
LLAMA_SERVER_TEXT_LOGPROBS = {
    "choices": [{"text": " Paris.", "index": 0, "finish_reason": "length", "logprobs": {
        "content": [_entry(" Paris", -0.2589, (" Paris", -0.2589), (" the", -2.7646)),
                    _entry(".", -0.9, (",", -0.5), (".", -0.9))]}}],
    "object": "text_completion", "model": "smollm2", "id": "chatcmpl-1",
    "usage": {"completion_tokens": 2, "prompt_tokens": 5, "total_tokens": 7}}


def test_the_lens_reads_llama_servers_logprobs(engine):
    """Red before: the lens read only the legacy shape and said "sent no logprobs"."""
    from lreact.views import lens, lens_reading

    engine.route("POST", LS + "/completions", (200, LLAMA_SERVER_TEXT_LOGPROBS))
    llm = OpenAICompatLLM("smollm2", base_url=LS, http_client=engine.client())
    reply = lens_reading.read_reply_engine(llm, lens.LENS_MESSAGES, TOOLS, prefill=lens.PREFILL,
                                           temperature=0, max_tokens=2, top=2)
    assert sent(engine)["logprobs"] == 2
    assert reply["text"] == " Paris." and [r["token"] for r in reply["tokens"]] == [" Paris", "."]
    assert [r["rank"] for r in reply["tokens"]] == [1, 2]
    assert reply["tokens"][1]["top"] == [[",", -0.5], [".", -0.9]]
