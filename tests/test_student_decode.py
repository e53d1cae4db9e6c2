"""The student's sampler and constrained decoder drive a real model (lreact.views.student_decode,
issue 18 §3; lab 1, Part A, after A.7).

- ``generate_with`` hands every step's full logits to the given picker and appends its choice;
  a picker that returns no token id gets a plain error; without a full-logits backend the same
  loop runs on the toy model and says why;
- on the real small model: greedy reruns repeat, the text is printed as it grows, the grammar
  bridge scores a piece with the model's own log-probabilities, and a constrained decoder
  written as the lab asks makes every reply parse (the measured rates are printed).
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from lreact import grammar
from lreact.views import student_decode as sd
from lreact.sampling import sample_token, softmax
from test_embedded import NO_OLLAMA, embedded_env, real_model  # noqa: F401 (a fixture)


def generate_constrained(logits_fn, rng):
    """The lab's A.7 answer, written here as a student would."""
    state, ids = grammar.start(), []
    while not grammar.is_done(state):
        z = np.asarray(logits_fn(ids), float)
        mask = np.zeros(len(z), bool)
        mask[grammar.allowed_tokens(state)] = True
        p = softmax(np.where(mask, z, -np.inf))
        ids.append(int(rng.choice(len(p), p=p)))
        state = grammar.advance(state, ids[-1])
    return ids


def test_the_picker_gets_every_logit_and_its_choice_is_appended(capsys):
    seen = []

    def pick(z):
        seen.append(np.array(z))
        return int(np.argmax(z))

    out = sd.generate_with(None, "ignored", pick, max_tokens=30)
    assert all(len(z) == len(grammar.VOCAB) for z in seen)
    assert out.token_ids == [int(np.argmax(grammar.toy_logits(out.token_ids[:i])))
                             for i in range(len(out.token_ids))]
    assert out.stopped == "end of turn" and grammar.parses(out.text)
    assert capsys.readouterr().out.strip() == out.text


@pytest.mark.parametrize("bad", [None, 1.5, -1, 10**6, True, "3"])
def test_a_picker_that_returns_no_token_id_gets_a_plain_error(bad):
    with pytest.raises(ValueError, match="must return one token id, an int from 0 to"):
        sd.generate_with(None, "", lambda z: bad, echo=False)


def test_without_the_embedded_backend_the_cells_say_why_and_use_the_toy(monkeypatch, capsys):
    for var in ("LREACT_BACKEND", "LREACT_BASE_URL", "LREACT_GGUF"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("OLLAMA_HOST", NO_OLLAMA)
    assert sd.full_logits_model() is None
    said = capsys.readouterr().out
    assert "only the embedded backend" in said and "toy model" in said
    rates = sd.parse_rates(None, sample_token=sample_token,
                           generate_constrained=generate_constrained, seeds=range(5))
    assert rates.rate("constrained") == (20, 20)
    assert rates.rate("unconstrained")[0] < 20


@real_model
def test_greedy_reruns_repeat_and_the_text_grows_on_screen(embedded_env, capsys):
    llm = sd.full_logits_model()
    assert llm is not None
    runs = [sd.generate_with(llm, "The capital of France is", lambda z: sample_token(
        z, temperature=0.0, rng=np.random.default_rng(0)), max_tokens=8) for _ in range(2)]
    assert runs[0] == runs[1] and len(runs[0].token_ids) == 8
    printed = capsys.readouterr().out
    assert printed.count(runs[0].text) == 2
    rng = np.random.default_rng(1)
    hot = sd.generate_with(llm, "The capital of France is", lambda z: sample_token(
        z, temperature=1.5, rng=rng), max_tokens=8, echo=False)
    assert hot.text != runs[0].text


@real_model
def test_the_bridge_scores_pieces_with_the_models_own_logprobs(embedded_env):
    from lreact.messages import SystemMessage, UserMessage

    llm = sd.full_logits_model()
    messages = [SystemMessage(sd.TOOL_SYSTEM), UserMessage("What's the weather in Berlin?")]
    whole = llm.next_token_logprobs(messages)
    with sd.ModelStream(llm, messages) as stream:
        bridge = sd.GrammarLogits(stream)
        z0 = bridge([])
        brace = grammar.TOKEN_ID["{"]
        assert z0[brace] == pytest.approx(whole[bridge.pieces[brace][0]], abs=1e-4)
        prefix = [grammar.TOKEN_ID[t] for t in ["{", '"name"', ":"]]
        z3 = bridge(prefix)
    for name in ('"get_weather"', '"calculate"'):   # the second is scored after the first
        tool = grammar.TOKEN_ID[name]
        with sd.ModelStream(llm, messages) as fresh:  # the chain rule, token by token, by hand
            for i in prefix:
                fresh.feed(bridge.pieces[i])
            total = 0.0
            for t in bridge.pieces[tool]:
                z = fresh.logits()
                total += z[t] - np.log(np.exp(z - z.max()).sum()) - z.max()
                fresh.feed([t])
        assert len(bridge.pieces[tool]) > 1 and z3[tool] == pytest.approx(total, abs=1e-3)


@real_model
def test_the_students_mask_makes_every_real_reply_parse(embedded_env):
    llm = sd.full_logits_model()
    rates = sd.parse_rates(llm, sample_token=sample_token,
                           generate_constrained=generate_constrained,
                           prompts=sd.TOOL_PROMPTS[:2], seeds=range(2), max_tokens=40)
    ok, n = rates.rate("constrained")
    assert (ok, n) == (4, 4)
    # the engine's own grammar (structured outputs) on the same prompts and seeds: every reply
    # parses, or stopped at max_tokens inside the call (its schema lets a string run on)
    ok, n = rates.rate("engine")
    assert n == 4 and ok + len(rates.cut) == 4
    for prompt, seed, how, text, parses in rates.rows:
        if how == "engine" and not parses:
            assert (prompt, seed) in rates.cut and text.lstrip().startswith("{")
    assert rates.rate("unconstrained")[1] == 4
    print("\n" + rates.summary())


def test_the_call_schema_admits_exactly_the_grammars_calls():
    import jsonschema

    for text in ('{"name": "get_weather", "arguments": {"city": "Oslo"}}',
                 '{"name": "calculate", "arguments": {"expression": "2+2"}}'):
        assert grammar.parses(text)
        jsonschema.validate(json.loads(text), sd.CALL_SCHEMA)
    for text in ('{"name": "get_weather", "arguments": {"expression": "2+2"}}',
                 '{"name": "search", "arguments": {"q": "x"}}',
                 '{"name": "calculate", "arguments": {"expression": 4}}'):
        assert not grammar.parses(text)
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(json.loads(text), sd.CALL_SCHEMA)
