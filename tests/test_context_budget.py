"""The context budget counted by the engine and the prompt cache (lreact/views/context_budget.py;
lecture Part IV, "The context budget"; second lab, Part D.2's methods table).

Offline: the estimate-only view, the plain message without a model, the counts read from an
Ollama answer (a mock transport with the documented fields) and from an OpenAI-style usage.
On the real small model (``real_model``, as in tests/test_embedded.py): the engine's counts are
its tokenizer's, a second call whose prefix is byte-identical evaluates only the new tokens and
one whose start was rewritten evaluates from the rewrite on (llama.cpp's own counters; times are
printed, never asserted), and the methods runner gets the engine's counts.
"""
from __future__ import annotations

import types

import httpx
import pytest

from lreact import OllamaLLM, ScriptedLLM
from lreact.views import context_budget, methods
from lreact.chatml import render_chatml
from lreact.engines.models import ModelError
from lreact.tools import REGISTRY
from lreact.traces import context_tokens, model_calls, multi_tool_trace
from test_embedded import MODEL, real_model


def test_without_an_engine_the_view_is_the_estimate():
    lines = context_budget.budget_lines(None)
    history, tools = multi_tool_trace()
    sizes = [context_tokens(sent, tools) for sent in model_calls(history)]
    assert [ln for ln in lines if "call" in ln][-4:] == [
        f"  call {k}: {n:>4} tokens (characters / 4)" for k, n in enumerate(sizes, 1)]


def test_no_model_file_is_a_plain_reason(monkeypatch):
    monkeypatch.setenv("LREACT_BACKEND", "embedded")
    monkeypatch.setenv("LREACT_GGUF", "/nonexistent.gguf")
    llm, why = context_budget.configured_engine()
    assert llm is None and "LREACT_GGUF='/nonexistent.gguf': no such file" in why


def test_the_counting_completion_needs_an_engine_and_checks_its_input():
    with pytest.raises(TypeError, match="EmbeddedLLM, OllamaLLM or OpenAICompatLLM"):
        context_budget.CountingCompletion(ScriptedLLM([]))
    with pytest.raises(ValueError, match="byte for byte"):
        context_budget.prefix_reuse(None, "abc", {"same": "abX", "other": "xyz"})
    with pytest.raises(ValueError, match="change the start"):
        context_budget.prefix_reuse(None, "abc", {"same": "abcd", "other": "abcX"})


def test_ollama_counts_come_from_its_answer():
    seen = []

    def handler(request):
        seen.append(request)
        return httpx.Response(200, json={"model": "qwen2.5:7b", "response": " get_weather[Oslo]",
                                         "done": True, "prompt_eval_count": 312,
                                         "prompt_eval_duration": 41_000_000, "eval_count": 6})

    llm = OllamaLLM("qwen2.5:7b", host="http://ollama.test")
    llm.http = httpx.Client(base_url=llm.host, transport=httpx.MockTransport(handler))
    complete = context_budget.CountingCompletion(llm, max_tokens=50)
    assert complete("Question: cold?\nAction:", ["\nObservation:"]) == " get_weather[Oslo]"
    assert complete.calls == [{"prompt_tokens": 312, "completion_tokens": 6, "evaluated": None,
                               "prompt_ms": 41.0}]
    body = seen[0].read().decode()
    assert '"raw":true' in body.replace(" ", "") and '"num_predict":50' in body.replace(" ", "")


def test_openai_usage_with_and_without_the_engines_extras():
    details = types.SimpleNamespace(cached_tokens=200)
    usage = types.SimpleNamespace(prompt_tokens=250, completion_tokens=7,
                                  prompt_tokens_details=details)
    plain = types.SimpleNamespace(usage=usage, model_extra={})
    assert context_budget._openai_usage(plain) == {"prompt_tokens": 250, "completion_tokens": 7,
                                                   "evaluated": 50, "prompt_ms": None}
    timed = types.SimpleNamespace(usage=usage, model_extra={"timings": {"prompt_n": 48,
                                                                        "prompt_ms": 12.5}})
    assert context_budget._openai_usage(timed)["evaluated"] == 48
    assert context_budget._openai_usage(timed)["prompt_ms"] == 12.5


# -- on the real small model -------------------------------------------------------------------

@pytest.fixture(scope="module")
def llm():
    from lreact.engines.embedded import EmbeddedLLM

    return EmbeddedLLM(MODEL, timeout=300)


@real_model
def test_the_engine_counts_with_its_tokenizer(llm):
    m = llm.loaded()
    history, tools = multi_tool_trace()
    for sent in model_calls(history):
        text = render_chatml(sent, tools)
        assert context_budget.engine_prompt_tokens(llm, sent, tools) == len(m.tokens(text))
    lines = context_budget.budget_lines(llm)
    assert sum("counted by the engine" in ln for ln in lines) == 6
    complete = context_budget.CountingCompletion(llm, max_tokens=4)
    prompt = "Question: What is 2 + 2?\nThought:"
    m.llama.reset()
    complete(prompt)
    assert complete.last["prompt_tokens"] == complete.last["evaluated"] == len(m.tokens(prompt))
    assert 1 <= complete.last["completion_tokens"] <= 4


@real_model
def test_a_byte_identical_prefix_is_not_evaluated_again(llm):
    m = llm.loaded()
    example = context_budget.compaction_example(stamp="2026-01-01 09:00")
    result = context_budget.prefix_reuse(llm, **example, repeats=1)
    first = m.tokens(example["first"])
    tokens = {k: m.tokens(v) for k, v in example["seconds"].items()}

    def common(a, b):
        return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))

    assert list(result) == ["same prefix", "compacted", "stamped"]
    for label, r in result.items():
        # the engine computes only what follows the prefix it still holds from the first call
        assert r["prompt_tokens"] == len(tokens[label])
        assert r["evaluated"] == len(tokens[label]) - common(first, tokens[label])
    same, compacted, stamped = (result[k]["evaluated"] for k in result)
    assert same < compacted < stamped and stamped > 0.9 * len(tokens["stamped"])
    lines = context_budget.reuse_lines(result)
    saved = len(tokens["same prefix"]) - same
    assert context_budget.saving(result) == (saved, len(tokens["same prefix"]))
    assert f"The cached prefix saved {saved} of {len(tokens['same prefix'])}" in "\n".join(lines)
    assert [ln.split()[0] for ln in lines[1:4]] == ["same", "compacted", "stamped"]
    print("\n" + "\n".join(lines))


@real_model
def test_the_embedded_engine_keeps_the_prefix_of_a_grown_history(llm):
    """EmbeddedLLM computes only what a grown history appended; any other prompt starts afresh,
    so a rerun repeats exactly whatever ran in between (issue §4)."""
    from lreact import SystemMessage, UserMessage
    from lreact.engines.embedded import EmbeddedLLM
    from lreact.tools import TOOLS
    from lreact.traces import SYSTEM_PROMPT

    model = EmbeddedLLM(llm.model_path, temperature=0, seed=0, max_tokens=24)

    def conversation():
        history = [SystemMessage(SYSTEM_PROMPT), UserMessage("What's the weather in Berlin?")]
        seen = []
        for _ in range(2):
            reply = model(history, TOOLS)
            seen.append((reply.text, [c.arguments for c in reply.tool_calls],
                         model.last["prompt_tokens"], model.last["reused"]))
            history += [reply, UserMessage("And in Oslo?")]
        return seen

    first = conversation()
    (_, _, n1, reused1), (_, _, n2, reused2) = first
    assert reused1 == 0 and n1 < reused2 < n2        # the second call kept the first's prompt
    model.complete("Something else entirely.", max_tokens=3)
    assert conversation() == first                     # a rerun: the same replies and counts
    history = [SystemMessage(SYSTEM_PROMPT), UserMessage("Hi")]
    history += [model(history, TOOLS), UserMessage("Bye")]
    model.loaded().llama.reset()                       # another path touched the cache
    model(history, TOOLS)
    assert model.last["reused"] == 0


@real_model
def test_the_methods_get_the_engines_counts(llm):
    calls = {}

    def make(method):
        calls[method] = context_budget.CountingCompletion(llm, max_tokens=48)
        return calls[method]

    runs = methods.compare_methods(methods.tasks(1, REGISTRY), make, REGISTRY, max_steps=2)
    assert [r.method for r in runs] == ["ReAct", "Act", "CoT"]
    for run in runs:
        counted = calls[run.method].calls
        assert run.steps == len(counted) and run.prompt_tokens == sum(
            c["prompt_tokens"] for c in counted) > 0
    # the runs' prompts only grow, so each later call reuses the cached start of the one before
    longer = [c for c in calls["ReAct"].calls[1:]]
    assert all(c["evaluated"] < c["prompt_tokens"] for c in longer)
    print("\n" + methods.summary_table(runs))
