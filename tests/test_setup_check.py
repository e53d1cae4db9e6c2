"""check_setup() against recorded /api/tags and /api/show answers: it answers in plain words and
never raises, whatever the server does (tests/fixtures/ollama/, no server needed)."""
import json

import httpx
import pytest

from conftest import replay_recording

from lreact import check_setup
from lreact.engines.setup import SetupReport

HOST = "http://127.0.0.1:11434"


def replay(router, name):
    return replay_recording(router, name)[1]


def test_server_down(router):
    replay(router, "tags_connection_refused")
    report = check_setup("qwen2.5:7b", host=HOST)
    assert isinstance(report, SetupReport)
    assert not report and not report.ok
    assert (report.server, report.model_pulled, report.tools_supported) == (False, False, False)
    text = str(report)
    assert "ollama serve" in text and "ollama pull qwen2.5:7b" in text and HOST in text


def test_server_down_for_real_never_raises():
    # port 9 (discard) on loopback: nothing listens, the connection is refused at once
    report = check_setup("qwen2.5:7b", host="http://127.0.0.1:9", timeout=2)
    assert not report.server and "ollama serve" in str(report)


def test_server_times_out(router):
    router.get(HOST + "/api/tags").mock(side_effect=httpx.ReadTimeout("slow"))
    report = check_setup("qwen2.5:7b", host=HOST, timeout=3)
    text = str(report)
    assert not report.server
    # it is running (it took the connection) but stuck: say so, with the timeout
    assert "accepted the connection but did not answer within 3 s" in text
    assert "Start one" not in text


@pytest.mark.parametrize("response", [
    httpx.Response(200, text="<html>not ollama</html>"),
    httpx.Response(200, json={"unexpected": True}),
    httpx.Response(500, json={"error": "internal"}),
])
def test_something_else_on_the_port_never_raises(router, response):
    router.get(HOST + "/api/tags").mock(return_value=response)
    report = check_setup("qwen2.5:7b", host=HOST)
    assert not report.ok and not report.server
    assert "did not answer like Ollama" in str(report)
    assert_plain_words(report)


def assert_plain_words(report):
    """No library dump in a setup report: no pydantic validation text, no traceback."""
    text = str(report)
    for word in ("Traceback", "pydantic", "validation error", "ValidationError", "errors.pydantic",
                 "input_value", "File \""):
        assert word not in text, text


@pytest.mark.parametrize("body", [{"models": [{"size": "big"}]}, {"models": "none"},
                                  {"models": [None, 3, {"model": "qwen2.5:7b"}]}])
def test_odd_model_lists_are_read_without_a_library_dump(router, body):
    router.get(HOST + "/api/tags").mock(return_value=httpx.Response(200, json=body))
    router.post(HOST + "/api/show").mock(return_value=httpx.Response(
        200, json={"capabilities": ["completion", "tools"]}))
    report = check_setup("qwen2.5:7b", host=HOST)
    assert_plain_words(report)
    assert report.ok == (body["models"] == [None, 3, {"model": "qwen2.5:7b"}])


def test_model_missing(router):
    replay(router, "tags_empty")
    show = router.post(HOST + "/api/show")
    report = check_setup("qwen2.5:0.5b", host=HOST)
    assert report.server and not report.model_pulled and not report.ok
    text = str(report)
    assert "`ollama pull qwen2.5:0.5b`" in text and "pulled: none" in text
    assert show.call_count == 0


def test_other_model_pulled(router):
    replay(router, "tags_with_qwen")
    report = check_setup("qwen2.5:1.5b", host=HOST)
    assert report.server and not report.model_pulled
    assert "gemma:2b, qwen2.5:7b" in str(report) and "ollama pull qwen2.5:1.5b" in str(report)


def test_model_without_tools_capability(router):
    replay(router, "tags_with_qwen")
    show = replay(router, "show_gemma_no_tools")
    report = check_setup("gemma:2b", host=HOST)
    assert json.loads(show.calls[0].request.content) == {"model": "gemma:2b"}
    assert report.server and report.model_pulled and not report.tools_supported
    assert not report
    assert "does not support tool calling" in str(report)
    assert "completion" in str(report)


def test_all_good(router):
    tags = replay(router, "tags_with_qwen")
    show = replay(router, "show_qwen_tools")
    report = check_setup("qwen2.5:7b", host=HOST)
    assert tags.call_count == 1 and show.call_count == 1
    assert report.ok and bool(report)
    assert (report.server, report.model_pulled, report.tools_supported) == (True, True, True)
    assert report.model == "qwen2.5:7b" and report.host == HOST
    assert len(report.lines) == 3 and all(line.startswith("✓") for line in report.lines)


def test_old_server_without_capabilities_trusts_qwen(router):
    replay(router, "tags_with_qwen")
    replay(router, "show_qwen_no_capabilities")
    report = check_setup("qwen2.5:7b", host=HOST)
    assert report.ok and "does not report capabilities" in str(report)


def test_show_failing_is_reported_not_raised(router):
    replay(router, "tags_with_qwen")
    router.post(HOST + "/api/show").mock(side_effect=httpx.ConnectError("gone"))
    report = check_setup("qwen2.5:7b", host=HOST)
    assert report.model_pulled and not report.tools_supported and not report.ok
    assert str(report).splitlines()[-1].startswith("?")


def test_default_model_comes_from_lreact_model(router, monkeypatch):
    replay(router, "tags_empty")
    monkeypatch.setenv("LREACT_MODEL", "qwen2.5:0.5b")
    report = check_setup(host=HOST)
    assert report.model == "qwen2.5:0.5b" and "ollama pull qwen2.5:0.5b" in str(report)


def test_host_comes_from_ollama_host(router, monkeypatch):
    monkeypatch.setenv("LREACT_BACKEND", "ollama")
    monkeypatch.setenv("OLLAMA_HOST", "127.0.0.1:11500")
    route = router.get("http://127.0.0.1:11500/api/tags").mock(
        return_value=httpx.Response(200, json={"models": []}))
    report = check_setup("qwen2.5:7b")
    assert route.call_count == 1 and report.host == "http://127.0.0.1:11500"


def test_verbose_prints_the_report(router, capsys):
    replay(router, "tags_connection_refused")
    report = check_setup("qwen2.5:7b", host=HOST, verbose=True)
    out, err = capsys.readouterr()
    assert out.strip() == str(report) and err == ""


def test_quiet_by_default(router, capsys):
    replay(router, "tags_connection_refused")
    check_setup("qwen2.5:7b", host=HOST)
    assert capsys.readouterr() == ("", "")


def test_show_answering_an_error_is_reported(router):
    replay(router, "tags_with_qwen")
    router.post(HOST + "/api/show").mock(return_value=httpx.Response(500, json={"error": "x"}))
    report = check_setup("qwen2.5:7b", host=HOST)
    assert not report.ok and "HTTP 500" in str(report)
    assert_plain_words(report)


def test_a_server_that_never_answers_for_real_is_reported_with_the_timeout():
    """A real socket that accepts connections and never answers: the check ends after its
    timeout and says so (and does not tell the student to start a server that is running)."""
    import socket
    import time
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    port = server.getsockname()[1]
    try:
        start = time.monotonic()
        report = check_setup("qwen2.5:7b", host=f"http://127.0.0.1:{port}", timeout=0.5)
        elapsed = time.monotonic() - start
    finally:
        server.close()
    assert not report.server and elapsed < 10
    assert "did not answer within 0.5 s" in str(report) and "Start one" not in str(report)


# -- the backend switch ---------------------------------------------------------------------------

BASE = "http://127.0.0.1:8080/v1"


def models_list(*ids, owned_by="llamacpp"):
    return {"object": "list", "data": [{"id": i, "object": "model", "created": 1764576000,
                                        "owned_by": owned_by} for i in ids]}


@pytest.fixture
def openai_env(monkeypatch):
    monkeypatch.setenv("LREACT_BACKEND", "openai")
    monkeypatch.delenv("LREACT_BASE_URL", raising=False)
    monkeypatch.delenv("LREACT_MODEL", raising=False)
    monkeypatch.delenv("LREACT_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def chat_answer(message):
    return {"choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", **message}}]}


WEATHER_CALL = {"content": "", "tool_calls": [{"id": "c1", "type": "function", "function": {
    "name": "get_weather", "arguments": '{"city": "Berlin"}'}}]}


def test_openai_backend_all_good_on_llama_server(router, openai_env):
    listed = router.get(BASE + "/models").mock(return_value=httpx.Response(
        200, json=models_list("qwen2.5-1.5b-instruct-q4_k_m.gguf")))
    probe = router.post(BASE + "/chat/completions").mock(
        return_value=httpx.Response(200, json=chat_answer(WEATHER_CALL)))
    report = check_setup()
    assert report.backend == "openai" and report.host == BASE
    assert report.ok and listed.call_count == 1 and probe.call_count == 1
    assert report.tool_call_seen and report.slow == 0.0
    assert report.model == "qwen2.5-1.5b-instruct-q4_k_m.gguf"  # the engine's first model
    sent = json.loads(probe.calls[0].request.content)
    # the probe is a question that needs the tool, sent as the agent sends tools
    assert sent["tools"][0]["function"]["name"] == "get_weather"
    assert sent["tool_choice"] == "auto" and "weather" in sent["messages"][0]["content"]
    assert 1 < sent["max_tokens"] <= 64 and sent["temperature"] == 0
    assert sent["model"] == "qwen2.5-1.5b-instruct-q4_k_m.gguf"
    assert all(line.startswith("✓") for line in report.lines)
    assert "Tool calling works" in str(report) and 'get_weather({"city": "Berlin"})' in str(report)


def test_openai_backend_text_instead_of_a_call_is_said_plainly(router, openai_env):
    router.get(BASE + "/models").mock(return_value=httpx.Response(200, json=models_list("m")))
    router.post(BASE + "/chat/completions").mock(return_value=httpx.Response(
        200, json=chat_answer({"content": "I cannot check the weather."})))
    report = check_setup()
    assert report.ok and report.tools_supported and not report.tool_call_seen
    assert "accepts tools but did not call one" in str(report)
    assert "'I cannot check the weather.'" in str(report)


def test_openai_backend_serving_any_name_is_not_reported_as_missing(router, openai_env,
                                                                    monkeypatch):
    """llama-cpp-python's server lists its model by path (owned_by "me") and answers any name."""
    monkeypatch.setenv("LREACT_MODEL", "qwen2.5:7b")
    router.get(BASE + "/models").mock(return_value=httpx.Response(
        200, json=models_list("/models/smollm2.gguf", owned_by="me")))
    probe = router.post(BASE + "/chat/completions").mock(
        return_value=httpx.Response(200, json=chat_answer(WEATHER_CALL)))
    report = check_setup()
    assert report.ok and report.model_pulled and report.model == "qwen2.5:7b"
    assert json.loads(probe.calls[0].request.content)["model"] == "qwen2.5:7b"
    assert "answers requests for 'qwen2.5:7b'" in str(report)
    assert "'/models/smollm2.gguf'" in str(report) and "does not serve" not in str(report)


def test_openai_backend_slow_probe_is_slow_not_missing(router, openai_env):
    import time

    def slow(request):
        time.sleep(0.3)
        return httpx.Response(200, json=chat_answer(WEATHER_CALL))

    router.get(BASE + "/models").mock(return_value=httpx.Response(200, json=models_list("m")))
    router.post(BASE + "/chat/completions").mock(side_effect=slow)
    report = check_setup(timeout=0.1)
    assert report.ok and report.slow >= 0.3       # a slow answer is an answer: use the engine
    assert "The engine is slow" in str(report) and "the live cells use it" in str(report)
    assert "0.1 s" in str(report)


def test_openai_backend_stuck_probe_is_not_usable(router, openai_env, monkeypatch):
    import lreact.engines.setup_openai
    monkeypatch.setattr(lreact.engines.setup_openai, "PROBE_PATIENCE", 7.0)
    router.get(BASE + "/models").mock(return_value=httpx.Response(200, json=models_list("m")))
    router.post(BASE + "/chat/completions").mock(side_effect=httpx.ReadTimeout("stuck"))
    report = check_setup(timeout=2)
    assert report.server and report.model_pulled and not report.ok
    assert "running but did not answer" in str(report) and "within 7 s" in str(report)


def test_openai_backend_refusing_tool_choice_is_not_a_crash(router, openai_env):
    router.get(BASE + "/models").mock(return_value=httpx.Response(200, json=models_list("m")))
    router.post(BASE + "/chat/completions").mock(return_value=httpx.Response(500, json={
        "error": {"message": "1 validation error: ('body', 'tool_choice') Input should be 'none'",
                  "type": "internal_server_error"}}))
    report = check_setup()
    assert not report.ok and "does not support tool_choice" in str(report)
    assert "nothing crashed" in str(report) and "restart" not in str(report).lower()


def test_openai_backend_refused(router, openai_env):
    router.get(BASE + "/models").mock(side_effect=httpx.ConnectError("refused"))
    report = check_setup()
    text = str(report)
    assert not report.server and "llama-server" in text and "--jinja" in text
    assert "vllm serve" in text and "LREACT_BASE_URL" in text


INVALID_KEY = {"error": {"message": "Invalid API Key", "type": "authentication_error",
                         "code": 401}}   # llama-server --api-key-file, a key not in the file


def test_openai_backend_a_refused_key_is_said_plainly(router, openai_env, monkeypatch):
    """A class server (issue 30): it answers, and refuses this key. Red before: the report said
    only "wants an API key ... the key it was started with", not that the server answers."""
    monkeypatch.setenv("LREACT_API_KEY", "lr-typo")
    listed = router.get(BASE + "/models").mock(return_value=httpx.Response(401, json=INVALID_KEY))
    report = check_setup()
    text = str(report)
    assert report.server and not report.ok and listed.call_count == 1
    assert listed.calls[0].request.headers["authorization"] == "Bearer lr-typo"
    assert report.lines[0] == f"✓ The server at {BASE} answers."
    assert report.lines[1].startswith(f"✗ The server at {BASE} refused this key (HTTP 401); ask "
                                      "your instructor for yours"), text
    assert "lr-typo" not in text and "Invalid API Key" in text


def test_openai_backend_wants_a_key_and_none_is_set(router, openai_env):
    router.get(BASE + "/models").mock(return_value=httpx.Response(401, json=INVALID_KEY))
    report = check_setup()
    assert report.server and not report.ok
    assert "wants an API key (HTTP 401) and none is set: set LREACT_API_KEY" in str(report)


def test_openai_backend_an_accepted_key_is_said(router, openai_env, monkeypatch):
    monkeypatch.setenv("LREACT_API_KEY", "lr-mine")
    router.get(BASE + "/models").mock(return_value=httpx.Response(200, json=models_list("m")))
    router.post(BASE + "/chat/completions").mock(
        return_value=httpx.Response(200, json=chat_answer(WEATHER_CALL)))
    report = check_setup()
    assert report.ok and "✓ It accepts the API key in LREACT_API_KEY." in report.lines
    assert "lr-mine" not in str(report)


def test_openai_backend_without_jinja(router, openai_env, monkeypatch):
    monkeypatch.setenv("LREACT_BASE_URL", "http://gpu-box:9931/v1/")
    router.get("http://gpu-box:9931/v1/models").mock(return_value=httpx.Response(
        200, json=models_list("model.gguf")))
    router.post("http://gpu-box:9931/v1/chat/completions").mock(return_value=httpx.Response(
        500, json={"error": {"code": 500, "message": "tools param requires --jinja flag",
                             "type": "server_error"}}))
    report = check_setup()
    assert report.host == "http://gpu-box:9931/v1"
    assert report.server and report.model_pulled and not report.tools_supported
    assert "restart it with `--jinja`" in str(report)


def test_openai_backend_vllm_without_the_tool_parser(router, openai_env, monkeypatch):
    monkeypatch.setenv("LREACT_MODEL", "Qwen/Qwen2.5-1.5B-Instruct")
    router.get(BASE + "/models").mock(return_value=httpx.Response(
        200, json=models_list("Qwen/Qwen2.5-1.5B-Instruct", owned_by="vllm")))
    router.post(BASE + "/chat/completions").mock(return_value=httpx.Response(400, json={
        "error": {"message": "\"auto\" tool choice requires --enable-auto-tool-choice and "
                  "--tool-call-parser to be set", "type": "BadRequestError", "param": None,
                  "code": 400}}))
    report = check_setup()
    assert not report.ok and "--enable-auto-tool-choice --tool-call-parser hermes" in str(report)


def test_openai_backend_wrong_model_name_on_vllm(router, openai_env, monkeypatch):
    monkeypatch.setenv("LREACT_MODEL", "qwen2.5:7b")
    router.get(BASE + "/models").mock(return_value=httpx.Response(
        200, json=models_list("Qwen/Qwen2.5-7B-Instruct", owned_by="vllm")))
    router.post(BASE + "/chat/completions").mock(return_value=httpx.Response(404, json={
        "error": {"message": "The model `qwen2.5:7b` does not exist.", "type": "NotFoundError",
                  "param": None, "code": 404}}))
    report = check_setup()
    assert report.server and not report.model_pulled and not report.ok
    assert "does not serve 'qwen2.5:7b'" in str(report)
    assert "Qwen/Qwen2.5-7B-Instruct" in str(report) and "LREACT_MODEL" in str(report)


def test_openai_backend_timeout_and_not_openai(router, openai_env):
    router.get(BASE + "/models").mock(side_effect=httpx.ReadTimeout("slow"))
    assert "did not answer within 2 s" in str(check_setup(timeout=2))
    router.get(BASE + "/models").mock(return_value=httpx.Response(200, text="<html/>"))
    report = check_setup()
    assert "did not answer like an OpenAI-compatible engine" in str(report)
    assert_plain_words(report)


def test_backend_argument_overrides_the_environment(router, openai_env):
    replay(router, "tags_connection_refused")
    report = check_setup("qwen2.5:7b", host=HOST, backend="ollama")
    assert report.backend == "ollama" and "ollama serve" in str(report)


def test_unknown_backend_is_a_plain_sentence(monkeypatch):
    monkeypatch.setenv("LREACT_BACKEND", "tgi")
    report = check_setup()
    assert not report and "LREACT_BACKEND='tgi'" in str(report) and "'openai'" in str(report)


def test_while_grading_no_server_is_asked(monkeypatch):
    """The grader's sandbox has no network and loads no model: check_setup and the automatic
    backend choice say so in plain words and make no request at all."""
    from lreact.engines import backends

    def no_request(*args, **kwargs):
        raise AssertionError("a request was made while grading")

    for var in ("LREACT_BACKEND", "LREACT_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("LREACT_GRADING", "1")
    monkeypatch.setattr(httpx, "get", no_request)
    monkeypatch.setattr(httpx.Client, "send", no_request)
    choice = backends.backend_choice()
    assert choice.backend == "ollama" and "graded" in choice.reason
    report = check_setup(timeout=1)
    assert not report and "graded" in str(report) and "no server is asked" in str(report)

