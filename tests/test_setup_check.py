"""check_setup() against recorded /api/tags and /api/show answers: it answers in plain words and
never raises, whatever the server does (tests/fixtures/ollama/, no server needed)."""
import json

import httpx
import pytest

from conftest import replay_recording

from lreact import check_setup
from lreact.setup import SetupReport

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
    report = check_setup("qwen2.5:7b", host=HOST)
    assert not report.server and "ollama serve" in str(report)


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
