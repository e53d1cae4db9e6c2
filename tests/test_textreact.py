"""The plain-text ReAct format helpers (Part II, "The core definition of ReAct")."""
import json

import httpx
import pytest

from lreact.labchecks import reference
from lreact.textreact import (EXEMPLAR, STOP, RecordingCompletion, ScriptedCompletion,
                              ScriptExhaustedError, configured_complete, first_prompt,
                              observations)


def test_the_stop_sequence_ends_where_an_observation_would_begin():
    assert STOP == "\nObservation:"
    assert STOP not in EXEMPLAR.split("Question:")[0]       # the instructions never trigger it


def test_the_exemplar_observations_are_what_the_tools_return():
    weather, calculate = reference("tools", "get_weather"), reference("tools", "calculate")
    lines = EXEMPLAR.splitlines()
    assert lines[-1].startswith("Action: finish[") and lines[-1].endswith("]")
    for action, observation in zip(lines, lines[1:]):
        if observation.startswith("Observation: "):
            name, argument = action[len("Action: "):-1].split("[", 1)
            tool = {"get_weather": weather, "calculate": calculate}[name]
            assert observation == "Observation: " + tool(argument)
    # every step has a thought, an action and (but the last) an observation
    kinds = [line.split(":")[0] for line in lines[lines.index(next(l for l in lines if l.startswith("Question:"))) + 1:]]
    assert kinds == ["Thought", "Action", "Observation"] * 3 + ["Thought", "Action"]


def test_first_prompt_layout():
    p = first_prompt("Is it raining in Berlin?")
    assert p == EXEMPLAR + "\n\nQuestion: Is it raining in Berlin?\nThought:"


def test_scripted_completion_replays_and_records():
    c = ScriptedCompletion([" a\nAction: finish[x]\nObservation: made up"])
    assert c("p1", [STOP]) == " a\nAction: finish[x]\nObservation: made up"   # stop not honoured
    assert c.calls == [{"prompt": "p1", "stop": [STOP]}] and c.prompts == ["p1"]
    with pytest.raises(ScriptExhaustedError, match="step cap"):
        c("p2", [STOP])
    with pytest.raises(TypeError):
        ScriptedCompletion([1])


def test_recording_completion_and_observations():
    rec = RecordingCompletion(lambda prompt, stop: prompt[-3:])
    assert rec("abcdef", [STOP]) == "def"
    assert rec.calls == [{"prompt": "abcdef", "stop": [STOP], "reply": "def"}]
    text = "Question: q\nThought: t\nAction: x[1]\nObservation: Invalid action: no\nThought:"
    assert observations(text) == ["Invalid action: no"]


def test_configured_complete_sends_a_raw_prompt_with_stop_to_ollama(monkeypatch):
    monkeypatch.setenv("LREACT_BACKEND", "ollama")
    monkeypatch.setenv("LREACT_BASE_URL", "http://127.0.0.1:11434")
    monkeypatch.setenv("LREACT_MODEL", "qwen2.5:7b")
    seen = []

    def handler(request):
        seen.append((request.url.path, json.loads(request.content)))
        return httpx.Response(200, json={"model": "qwen2.5:7b", "response": " I look it up.\n"
                                         "Action: get_weather[Berlin]", "done": True})

    complete = configured_complete(max_tokens=64, temperature=0)
    complete.llm.http = httpx.Client(base_url="http://127.0.0.1:11434",
                                     transport=httpx.MockTransport(handler), timeout=5)
    assert complete("Question: q\nThought:", [STOP]) == " I look it up.\nAction: get_weather[Berlin]"
    path, body = seen[0]
    assert path == "/api/generate"
    assert body["raw"] is True and body["stream"] is False and body["prompt"].endswith("Thought:")
    assert body["options"]["stop"] == [STOP] and body["options"]["num_predict"] == 64
    assert body["options"]["temperature"] == 0


def test_configured_complete_uses_the_completions_endpoint_of_an_openai_engine(monkeypatch):
    import httpx2
    import openai

    monkeypatch.setenv("LREACT_BACKEND", "llama-server")
    monkeypatch.setenv("LREACT_BASE_URL", "http://127.0.0.1:8080/v1")
    monkeypatch.setenv("LREACT_MODEL", "qwen2.5-1.5b-instruct")
    seen = []

    def handler(request):       # the openai client runs on httpx2: a mock transport under it
        seen.append(request)
        return httpx2.Response(200, json={
            "id": "cmpl-1", "object": "text_completion", "created": 0,
            "model": "qwen2.5-1.5b-instruct",
            "choices": [{"index": 0, "text": " Oslo is cold.\nAction: get_weather[Oslo]",
                         "finish_reason": "stop", "logprobs": None}]})

    complete = configured_complete(max_tokens=50, temperature=0, timeout=5)
    complete.llm.client = openai.OpenAI(
        base_url="http://127.0.0.1:8080/v1", api_key="x", max_retries=0, timeout=5,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))
    assert complete("Question: q\nThought:", [STOP]) == " Oslo is cold.\nAction: get_weather[Oslo]"
    assert seen[0].url.path == "/v1/completions"
    body = json.loads(seen[0].content)
    assert body["prompt"] == "Question: q\nThought:" and body["stop"] == [STOP]
    assert body["max_tokens"] == 50 and body["temperature"] == 0
    assert body["model"] == "qwen2.5-1.5b-instruct"
