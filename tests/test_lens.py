"""The per-token probability lens (lreact.views.lens, issue 18 §2).

- every token text is escaped (a model can write any markup);
- the recorded reply (lreact/views/recorded/) names the model file's digest and the engine, and is
  what the lens shows without a model;
- on the real small model, the lens reproduces the recorded reply token for token, and the
  chosen token's rank agrees with its alternatives.
"""
from __future__ import annotations

import json
import re

import pytest

from lreact.views import lens
from test_embedded import MODEL, NO_OLLAMA, embedded_env, real_model  # noqa: F401 (a fixture)


def _reply(tokens):
    return {"model": {"file": "m.gguf", "sha256": "0" * 64, "engine": "x", "n_vocab": 100},
            "prefill": "<tool_call>\n", "settings": {"temperature": 0, "seed": 0},
            "text": "".join(t for t, _ in tokens),
            "tokens": [{"token": t, "logprob": lp, "rank": 1 + i % 3,
                        "top": [[t, lp], ["<b>x</b>", -3.0]]} for i, (t, lp) in enumerate(tokens)]}


def test_every_token_text_is_escaped():
    page = lens.lens_html(_reply([("<script>alert(1)</script>", -0.1), ("&amp;", -2.0),
                                  ("\n", -0.01)]))
    assert "<script>" not in page and "<b>x</b>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "&amp;amp;" in page
    assert "&lt;b&gt;x&lt;/b&gt;" in page and "↵" in page


def test_each_token_is_coloured_by_its_probability_with_rank_and_alternatives():
    page = lens.lens_html(_reply([("sure", -0.01), ("unsure", -2.3)]))
    colours = re.findall(r"class='lens-tok' style='background:hsl\((\d+),", page)[:2]
    assert [int(c) for c in colours] == [119, 12]     # p = 0.99 green, p = 0.10 red
    assert "p = 0.990, rank 1 of 100" in page and "p = 0.100, rank 2 of 100" in page
    assert "least sure: token 2 <code>unsure</code> (p = 0.10, rank 2)" in page


def test_the_recorded_reply_names_its_model_and_engine():
    reply = lens.load_recorded()
    assert re.fullmatch(r"[0-9a-f]{64}", reply["model"]["sha256"])
    assert reply["model"]["engine"].startswith("llama-cpp-python ")
    assert reply["model"]["file"] == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert reply["text"] == "".join(t["token"] for t in reply["tokens"])
    for t in reply["tokens"]:
        assert t["logprob"] <= 0 and t["rank"] >= 1
        assert (t["rank"] == 1) == (t["top"][0][0] == t["token"])


def test_without_a_model_the_lens_shows_the_recorded_reply(monkeypatch):
    for var in ("LREACT_BACKEND", "LREACT_BASE_URL", "LREACT_GGUF"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("OLLAMA_HOST", NO_OLLAMA)
    box = lens.probability_lens()
    assert "recorded: SmolLM2-135M-Instruct.Q4_1.gguf" in box.value
    assert box.value.count("class='lens-tok'") >= len(lens.load_recorded()["tokens"])


def test_a_missing_recording_says_what_to_do(tmp_path):
    with pytest.raises(FileNotFoundError, match="run the lens with the embedded model"):
        lens.load_recorded(tmp_path / "none.json")


@real_model
def test_the_real_model_reproduces_the_recorded_reply(embedded_env):
    recorded = lens.load_recorded()
    if lens.file_digest(MODEL) != recorded["model"]["sha256"]:
        pytest.skip("another model file than the recorded one")
    from lreact.engines.embedded import EmbeddedLLM

    live = lens.read_reply(EmbeddedLLM(MODEL), **lens.SETTINGS)
    assert live["text"] == recorded["text"]
    assert [t["token"] for t in live["tokens"]] == [t["token"] for t in recorded["tokens"]]
    for a, b in zip(live["tokens"], recorded["tokens"]):
        assert a["logprob"] == pytest.approx(b["logprob"], abs=1e-3) and a["rank"] == b["rank"]
    box = lens.probability_lens()
    assert "live: SmolLM2-135M-Instruct.Q4_1.gguf" in box.value
    print("\nlens reply:", json.dumps(live["text"]))
