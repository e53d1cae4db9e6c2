"""OllamaLLM against recorded HTTP exchanges (tests/fixtures/ollama/*.json), no server needed.

Each fixture holds the exact request the client must send and the server's recorded answer in
Ollama's ``/api/chat`` wire format (shared/notes/ollama-and-qwen.md).  respx stands in for the
network: a test checks what ``OllamaLLM`` SENT as well as what it made of the answer.
"""
import json
import re

import httpx
import pytest
from conftest import OLLAMA_FIXTURES, load_recording, replay_recording

from lreact import (AssistantMessage, OllamaError, OllamaLLM, SystemMessage, ToolCall,
                    ToolResultMessage, UserMessage)
from lreact.tools import TOOLS

FIXTURES = OLLAMA_FIXTURES
HOST = "http://127.0.0.1:11434"
OPTIONS = dict(temperature=0, top_k=40, top_p=0.9, seed=42)
SYSTEM = SystemMessage("You are a helpful assistant. Use the tools when they help.")
BERLIN = UserMessage("What's the weather in Berlin?")


load = load_recording
replay = replay_recording



def sent_json(route, i=-1):
    return json.loads(route.calls[i].request.content)


def make_llm(model="qwen2.5:7b", **kw):
    return OllamaLLM(model, host=HOST, timeout=kw.pop("timeout", 30), **{**OPTIONS, **kw})



def test_every_fixture_is_well_formed():
    names = sorted(p.stem for p in FIXTURES.glob("*.json"))
    assert len(names) >= 12
    for name in names:
        fx = load(name)
        assert fx["description"] and fx["host"] == HOST
        assert fx["request"]["method"] in ("GET", "POST")
        assert ("response" in fx) != ("raises" in fx), name
        if fx["request"]["path"] == "/api/chat":
            assert fx["request"]["json"]["stream"] is False, name


# -- what the client sends ------------------------------------------------------------------------

def test_request_body_is_exactly_the_recorded_one(router):
    fx, route = replay(router, "chat_tool_call_with_id")
    make_llm()([SYSTEM, BERLIN], TOOLS)
    assert route.call_count == 1
    request = route.calls[0].request
    assert request.method == "POST" and request.url.path == "/api/chat"
    body = sent_json(route)
    assert body == fx["request"]["json"]
    assert body["stream"] is False
    assert body["model"] == "qwen2.5:7b"
    assert body["options"] == {"temperature": 0, "top_k": 40, "top_p": 0.9, "seed": 42,
                               "num_predict": 512}      # every backend's reply cap
    assert [t["function"]["name"] for t in body["tools"]] == ["get_weather", "calculate"]


def test_history_goes_out_in_wire_format_with_ids_and_tool_name(router):
    fx, route = replay(router, "chat_text_answer")
    history = [SYSTEM, BERLIN,
               AssistantMessage(tool_calls=[ToolCall("call_ab12cd34", "get_weather",
                                                     '{"city": "Berlin"}')]),
               ToolResultMessage("call_ab12cd34", "12°C, rainy")]
    reply = make_llm()(history, TOOLS)
    body = sent_json(route)
    assert body == fx["request"]["json"]
    call = body["messages"][2]["tool_calls"][0]
    assert call["id"] == "call_ab12cd34"
    assert call["function"]["arguments"] == {"city": "Berlin"}  # an object on /api/chat
    result = body["messages"][3]
    assert (result["role"], result["tool_call_id"], result["tool_name"]) == \
        ("tool", "call_ab12cd34", "get_weather")
    assert isinstance(reply, AssistantMessage)
    assert reply.text == "It's 12°C and rainy in Berlin." and reply.tool_calls == []


def test_no_tools_and_no_options_are_left_out(router):
    _, route = replay(router, "chat_text_answer")
    OllamaLLM("qwen2.5:7b", host=HOST, timeout=30)([BERLIN], None)
    body = sent_json(route)
    assert "tools" not in body and body["options"] == {"num_predict": 512}   # only the cap
    assert body["messages"] == [{"role": "user", "content": "What's the weather in Berlin?"}]


def test_none_options_are_dropped_and_unknown_ones_refused(router):
    _, route = replay(router, "chat_text_answer")
    OllamaLLM("qwen2.5:7b", host=HOST, timeout=30, temperature=0.7, seed=None)([BERLIN], None)
    assert sent_json(route)["options"] == {"temperature": 0.7, "num_predict": 512}
    with pytest.raises(TypeError, match="temprature"):
        OllamaLLM("qwen2.5:7b", host=HOST, temprature=0.7)


def test_model_comes_from_the_environment_variable(router, monkeypatch):
    _, route = replay(router, "chat_text_answer")
    monkeypatch.setenv("LREACT_MODEL", "qwen2.5:0.5b")
    llm = OllamaLLM(host=HOST, timeout=30)
    assert llm.model == "qwen2.5:0.5b"
    llm([BERLIN], None)
    assert sent_json(route)["model"] == "qwen2.5:0.5b"


def test_history_is_not_modified_by_a_call(router):
    replay(router, "chat_tool_call_with_id")
    history = [SYSTEM, BERLIN]
    make_llm()(history, TOOLS)
    assert history == [SYSTEM, BERLIN]


# -- what the client makes of the answer ----------------------------------------------------------

def test_tool_call_keeps_the_server_id(router):
    replay(router, "chat_tool_call_with_id")
    reply = make_llm()([SYSTEM, BERLIN], TOOLS)
    assert reply.text == ""
    assert len(reply.tool_calls) == 1
    call = reply.tool_calls[0]
    assert isinstance(call, ToolCall)
    assert (call.id, call.name) == ("call_ab12cd34", "get_weather")
    assert isinstance(call.arguments, str)  # arguments as a JSON string, as the lecture says
    assert json.loads(call.arguments) == {"city": "Berlin"}


def test_tool_call_without_id_gets_one(router):
    replay(router, "chat_tool_call_without_id")
    call = make_llm()([SYSTEM, BERLIN], TOOLS).tool_calls[0]
    assert re.fullmatch(r"call_\w+", call.id)
    assert json.loads(call.arguments) == {"city": "Berlin"}


def test_parallel_calls_get_distinct_ids_in_order(router):
    replay(router, "chat_parallel_calls")
    reply = make_llm()([SYSTEM, UserMessage("Compare the weather in Berlin and Paris.")], TOOLS)
    assert [json.loads(c.arguments)["city"] for c in reply.tool_calls] == ["Berlin", "Paris"]
    assert [c.name for c in reply.tool_calls] == ["get_weather", "get_weather"]
    ids = [c.id for c in reply.tool_calls]
    assert len(set(ids)) == 2 and all(ids)


def test_assigned_ids_are_unique_across_a_run(router):
    fx_none = load("chat_tool_call_without_id")
    fx_two = load("chat_parallel_calls")
    fx_id = load("chat_tool_call_with_id")
    answers = [fx_none, fx_two, fx_none, fx_id, fx_id, fx_two]
    router.post(HOST + "/api/chat").mock(side_effect=[
        httpx.Response(200, json=fx["response"]["json"]) for fx in answers])
    llm = make_llm()
    ids = [c.id for _ in answers for c in llm([SYSTEM, BERLIN], TOOLS).tool_calls]
    assert len(ids) == 8
    assert len(set(ids)) == 8, ids
    # the first server id is kept; the same id sent again would break the pairing: replaced
    assert ids.count("call_ab12cd34") == 1


def test_assigned_ids_differ_between_two_models(router):
    fx = load("chat_tool_call_without_id")
    router.post(HOST + "/api/chat").mock(return_value=httpx.Response(200, json=fx["response"]["json"]))
    a = make_llm()([SYSTEM, BERLIN], TOOLS).tool_calls[0].id
    b = make_llm()([SYSTEM, BERLIN], TOOLS).tool_calls[0].id
    assert a != b


def test_string_arguments_from_a_server_are_kept_as_they_are(router):
    body = {"model": "qwen2.5:7b", "done": True, "message": {
        "role": "assistant", "content": "", "tool_calls": [
            {"id": "call_1", "function": {"name": "get_weather", "arguments": '{"city": "Ber'}}]}}
    router.post(HOST + "/api/chat").mock(return_value=httpx.Response(200, json=body))
    call = make_llm()([BERLIN], TOOLS).tool_calls[0]
    assert call.arguments == '{"city": "Ber'  # malformed: validation is the runtime's job


def test_first_token_logprobs(router):
    fx, route = replay(router, "chat_logprobs")
    pairs = make_llm().first_token_logprobs([SYSTEM, BERLIN], top_logprobs=5)
    assert sent_json(route) == fx["request"]["json"]
    assert [t for t, _ in pairs] == ["It", "The", "In", "Berlin", "Currently"]
    assert all(isinstance(lp, float) and lp <= 0 for _, lp in pairs)
    assert pairs[0] == ("It", -0.0412)
    assert [lp for _, lp in pairs] == sorted((lp for _, lp in pairs), reverse=True)


def test_first_token_logprobs_checks_its_range_before_asking():
    llm = make_llm()
    with pytest.raises(ValueError, match="0 to 20"):
        llm.first_token_logprobs([BERLIN], top_logprobs=21)


def test_first_token_logprobs_on_an_old_server(router):
    fx = load("chat_text_answer")
    router.post(HOST + "/api/chat").mock(return_value=httpx.Response(200, json=fx["response"]["json"]))
    with pytest.raises(OllamaError, match="v0.12.11"):
        make_llm().first_token_logprobs([BERLIN])


# -- errors that say what to do -------------------------------------------------------------------

def test_model_not_pulled_names_the_exact_pull_command(router):
    fx, route = replay(router, "chat_model_not_found")
    llm = make_llm("qwen2.5:0.5b")
    with pytest.raises(OllamaError) as e:
        llm([SYSTEM, BERLIN], TOOLS)
    assert sent_json(route) == fx["request"]["json"]
    assert "`ollama pull qwen2.5:0.5b`" in str(e.value)
    assert "not found" in str(e.value)  # the server's own words are kept


def test_connection_refused_says_start_ollama_serve(router):
    replay(router, "chat_connection_refused")
    with pytest.raises(OllamaError) as e:
        make_llm()([SYSTEM, BERLIN], TOOLS)
    assert "ollama serve" in str(e.value)
    assert HOST in str(e.value)


def test_timeout_is_a_clear_error_and_the_client_has_a_timeout(router):
    replay(router, "chat_timeout")
    llm = make_llm(timeout=7.5)
    timeout = llm.http.timeout
    assert (timeout.connect, timeout.read, timeout.write, timeout.pool) == (7.5, 7.5, 7.5, 7.5)
    with pytest.raises(OllamaError) as e:
        llm([SYSTEM, BERLIN], TOOLS)
    text = str(e.value)
    assert "7.5 s" in text and "timeout" in text and "smaller model" in text
    # the server accepted the request: telling the student to start it would mislead
    assert "accepted" in text and "ollama serve" not in text


@pytest.mark.parametrize("timeout", [None, 0, -1])
def test_a_timeout_is_required(timeout):
    with pytest.raises(ValueError, match="timeout"):
        OllamaLLM("qwen2.5:7b", host=HOST, timeout=timeout)


def test_model_without_tool_support(router):
    fx, route = replay(router, "chat_model_without_tools")
    with pytest.raises(OllamaError) as e:
        make_llm("gemma:2b")([SYSTEM, BERLIN], TOOLS)
    assert sent_json(route)["model"] == "gemma:2b"
    text = str(e.value)
    assert "does not support tool calling" in text and "ollama pull qwen2.5" in text


def test_other_http_errors_keep_the_status_and_text(router):
    router.post(HOST + "/api/chat").mock(return_value=httpx.Response(
        400, json={"error": "top_logprobs must be between 0 and 20"}))
    with pytest.raises(OllamaError, match=r"HTTP 400: top_logprobs must be between 0 and 20"):
        make_llm()([BERLIN], TOOLS)


def test_a_broken_connection_becomes_an_ollama_error(router):
    router.post(HOST + "/api/chat").mock(side_effect=httpx.RemoteProtocolError("peer closed"))
    with pytest.raises(OllamaError, match="ollama serve"):
        make_llm()([BERLIN], TOOLS)


def test_a_non_ollama_server_becomes_an_ollama_error(router):
    router.post(HOST + "/api/chat").mock(return_value=httpx.Response(200, text="<html>hi</html>"))
    with pytest.raises(OllamaError, match="OLLAMA_HOST"):
        make_llm()([BERLIN], TOOLS)


def test_bad_histories_are_refused_before_any_request(router):
    route = router.post(HOST + "/api/chat")
    llm = make_llm()
    with pytest.raises(TypeError):
        llm([{"role": "user", "content": "hi"}], TOOLS)
    with pytest.raises(TypeError):
        llm("hi", TOOLS)
    with pytest.raises(TypeError):
        llm([BERLIN], TOOLS[0])
    assert route.call_count == 0


# -- the faults a run against a real small model showed ---------------------------------------

def test_no_private_client_api_is_needed(router, monkeypatch):
    """OllamaLLM speaks the documented REST API itself: it works without the ollama package."""
    import sys
    monkeypatch.setitem(sys.modules, "ollama", None)   # `import ollama` would now fail
    replay(router, "chat_tool_call_with_id")
    assert make_llm()([SYSTEM, BERLIN], TOOLS).tool_calls[0].id == "call_ab12cd34"


def test_http_500_says_the_runner_crashed(router):
    fx, route = replay(router, "chat_runner_crashed")
    with pytest.raises(OllamaError) as e:
        make_llm("qwen2.5:0.5b")([SYSTEM, BERLIN], TOOLS)
    assert sent_json(route) == fx["request"]["json"]
    text = str(e.value)
    assert "HTTP 500" in text and "crashed" in text and "Restart" in text
    assert "smaller model" in text and "LREACT_MODEL=qwen2.5:1.5b" in text
    assert "llama runner process has terminated" in text   # the server's words are kept


def test_http_200_without_message_is_an_error_not_an_empty_answer(router):
    replay(router, "chat_done_without_message")
    with pytest.raises(OllamaError) as e:
        make_llm()([SYSTEM, BERLIN], TOOLS)
    text = str(e.value)
    assert "without a `message`" in text and "not an empty answer" in text


@pytest.mark.parametrize("body", [{"message": None, "done": True}, {"message": "hi"}, []])
def test_other_answers_without_a_message_object(router, body):
    router.post(HOST + "/api/chat").mock(return_value=httpx.Response(200, json=body))
    with pytest.raises(OllamaError, match="message|like Ollama"):
        make_llm()([BERLIN], TOOLS)


def test_a_dropped_connection_on_a_long_input_names_the_context_window(router):
    replay(router, "chat_connection_dropped")
    long_history = [SYSTEM, UserMessage("Summarise this: " + "lorem ipsum dolor " * 1200)]
    with pytest.raises(OllamaError) as e:
        make_llm()(long_history, TOOLS)
    text = str(e.value)
    assert "dropped the connection" in text and "context window" in text and "num_ctx" in text
    size = sum(len(m.content) for m in long_history)
    assert f"about {size // 4} tokens ({size} characters)" in text and size // 4 > 4096


def test_a_refused_connect_and_an_unreachable_host_differ(router):
    router.post(HOST + "/api/chat").mock(side_effect=httpx.ConnectTimeout("no route"))
    with pytest.raises(OllamaError) as e:
        make_llm(timeout=3)([BERLIN], TOOLS)
    assert "accepted a connection within 3 s" in str(e.value) and "OLLAMA_HOST" in str(e.value)


def test_something_else_on_the_port(router):
    router.post(HOST + "/api/chat").mock(return_value=httpx.Response(200, text="<html>hi</html>"))
    with pytest.raises(OllamaError, match="did not answer like Ollama"):
        make_llm()([BERLIN], TOOLS)


@pytest.mark.parametrize("host, expected", [
    (None, "http://127.0.0.1:11434"), ("127.0.0.1:11500", "http://127.0.0.1:11500"),
    ("http://gpu-box:11434/", "http://gpu-box:11434"), ("gpu-box", "http://gpu-box:11434"),
    (":11435", "http://127.0.0.1:11435")])
def test_host_forms(monkeypatch, host, expected):
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    assert OllamaLLM("qwen2.5:7b", host=host).host == expected


def test_host_from_ollama_host(monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", "0.0.0.0:11999")
    assert OllamaLLM("qwen2.5:7b").host == "http://0.0.0.0:11999"


def test_structured_output_sends_the_schema_as_format(router):
    fx, route = replay(router, "chat_structured_output")
    schema = fx["request"]["json"]["format"]
    text = make_llm().chat_text([SYSTEM, BERLIN], json_schema=schema)
    assert sent_json(route) == fx["request"]["json"]
    assert "tools" not in sent_json(route)
    assert json.loads(text) == {"name": "get_weather", "arguments": {"city": "Berlin"}}


def test_raw_completion_uses_generate_with_raw_and_stop(router):
    fx, route = replay(router, "generate_raw_with_stop")
    llm = make_llm()
    text = llm.complete(fx["request"]["json"]["prompt"], stop=["\nObservation:"], max_tokens=64)
    body = sent_json(route)
    assert body == fx["request"]["json"]
    assert body["raw"] is True and body["stream"] is False
    assert body["options"]["stop"] == ["\nObservation:"] and body["options"]["num_predict"] == 64
    assert text == fx["response"]["json"]["response"]


def test_raw_completion_without_response_is_an_error(router):
    router.post(HOST + "/api/generate").mock(return_value=httpx.Response(200, json={"done": True}))
    with pytest.raises(OllamaError, match="without a `response`"):
        make_llm().complete("Thought:")


def test_a_small_models_text_call_reaches_the_harness_unchanged(router):
    """The issue's run, replayed: the text block comes back as a text-only turn, exactly as sent;
    the hardened loop feeds it back (the first lab's loop would have returned it as the answer)."""
    from lreact import RunResult
    from lreact.harness import run_agent_hardened
    from lreact.tools import REGISTRY
    from lreact.traces import run_tool
    fx = load("chat_small_model_text_call")
    calls = load("chat_tool_call_with_id")["response"]["json"]
    answer = load("chat_text_answer")["response"]["json"]
    route = router.post(HOST + "/api/chat").mock(side_effect=[
        httpx.Response(200, json=fx["response"]["json"]), httpx.Response(200, json=calls),
        httpx.Response(200, json=answer)])
    history = [SYSTEM]
    result = run_agent_hardened(BERLIN.content, make_llm("smollm2:135m"), TOOLS,
                                lambda c: run_tool(c, REGISTRY), history=history)
    assert result == RunResult("It's 12°C and rainy in Berlin.", "answered", 3)
    bodies = [json.loads(c.request.content) for c in route.calls]
    assert bodies[0] == fx["request"]["json"]
    block = fx["response"]["json"]["message"]["content"]
    # what went back to the model: its own text, unchanged, then the error observation
    assert bodies[1]["messages"][2] == {"role": "assistant", "content": block}
    assert bodies[1]["messages"][3]["role"] == "user"
    assert bodies[1]["messages"][3]["content"].startswith("FORMAT ERROR: ")
    assert "invalid JSON" in bodies[1]["messages"][3]["content"]
    assert bodies[2]["messages"][-1] == {"role": "tool", "content": "12°C, rainy",
                                         "tool_call_id": "call_ab12cd34", "tool_name": "get_weather"}


# -- the probability lens (issue 18 §2) ------------------------------------------------------------

def test_the_lens_on_ollama_sends_the_raw_qwen_text_and_reads_every_token(router):
    from lreact.views import lens, lens_reading as lens_engines

    fx, route = replay(router, "generate_lens_logprobs")
    reply = lens_engines.read_reply_engine(make_llm(), lens.LENS_MESSAGES, TOOLS,
                                           prefill=lens.PREFILL, temperature=0, seed=42,
                                           max_tokens=48, top=3)
    assert sent_json(route) == fx["request"]["json"]        # raw prompt, prefill, logprobs asked
    wire = fx["response"]["json"]["logprobs"]
    assert [r["token"] for r in reply["tokens"]] == [e["token"] for e in wire]
    assert "".join(r["token"] for r in reply["tokens"]) == reply["text"]
    city = next(r for r in reply["tokens"] if r["token"] == "Ber")
    assert city["rank"] == 1 and city["top"][1] == ["Munich", -1.2]
    html_text = lens.lens_html(reply)
    assert "least sure: token 15 <code>Ber</code>" in html_text
    assert "rank 1 among the top 3 the server sent" in html_text and "of ?" not in html_text
    assert "p = 0.407" in html_text                     # exp(-0.9), the city's probability


def test_the_lens_says_plainly_when_ollama_sends_no_logprobs(router):
    from lreact.views import lens, lens_reading as lens_engines

    fx = load("generate_lens_logprobs")
    answer = {k: v for k, v in fx["response"]["json"].items() if k != "logprobs"}
    router.post(HOST + "/api/generate").mock(return_value=httpx.Response(200, json=answer))
    with pytest.raises(lens_engines.LensUnavailable) as e:
        lens_engines.read_reply_engine(make_llm(), lens.LENS_MESSAGES, TOOLS,
                                       prefill=lens.PREFILL, top=3)
    assert "older than v0.12.11" in str(e.value) and "Update Ollama" in str(e.value)


def test_the_lecture_lens_goes_live_on_ollama_and_says_so(router, monkeypatch):
    from lreact.views import lens

    for var, value in (("LREACT_BACKEND", "ollama"), ("LREACT_MODEL", "qwen2.5:7b"),
                       ("OLLAMA_HOST", HOST)):
        monkeypatch.setenv(var, value)
    monkeypatch.delenv("LREACT_GRADING", raising=False)
    fx, route = replay(router, "generate_lens_logprobs")
    page = lens.probability_lens().value
    assert route.call_count == 1 and sent_json(route)["top_logprobs"] == lens.SETTINGS["top"]
    assert f"live: qwen2.5:7b on Ollama at {HOST}" in page and "recorded:" not in page
    assert "a valid call: get_weather({&quot;city&quot;: &quot;Berlin&quot;})" in page
    assert "rank 1 among the top 3 the server sent" in page


def test_the_lecture_lens_without_a_server_shows_the_recording_and_why(monkeypatch):
    from lreact.views import lens

    for var, value in (("LREACT_BACKEND", "ollama"), ("OLLAMA_HOST", "http://127.0.0.1:9")):
        monkeypatch.setenv(var, value)
    page = lens.probability_lens().value
    assert "recorded: SmolLM2-135M-Instruct" in page
    assert "no live reply: Cannot reach an Ollama server at http://127.0.0.1:9" in page
    assert "ollama serve" in page and "rank 1 of 49152" in page
