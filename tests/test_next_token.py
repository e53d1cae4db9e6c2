"""Part I's widgets on a real model's next-token distribution (lreact.views.next_token, issue 18 §1).

- the real source applies temperature, top-k and top-p exactly as lreact.sampling does, over the
  whole vocabulary, and shows the 20 most probable tokens plus the mass of the rest;
- the model is asked once per prompt: slider moves only redraw;
- a server that sends only the top 20 log-probabilities is said plainly;
- without a model the widget says so and keeps the example source;
- on the real small model (SmolLM2-135M, embedded): the whole vocabulary, and the redraw time
  (printed, never asserted).
"""
from __future__ import annotations

import statistics
import time

import numpy as np
import pytest

from lreact import sampling
from lreact.views import next_token, widgets
from test_embedded import NO_OLLAMA, embedded_env, real_model  # noqa: F401 (a fixture)


def _find(widget, cls):
    found = [widget] if isinstance(widget, cls) else []
    for child in getattr(widget, "children", ()):
        found += _find(child, cls)
    return found


def _fake(n=300, seed=0, prompt="p"):
    z = np.random.default_rng(seed).normal(0, 2.5, n)
    z[7] = z[8] = z.max() + 1             # a tie at the top: the lower index comes first
    lp = z - np.log(np.exp(z).sum())
    top = np.argsort(-lp, kind="stable")[:20]
    return next_token.NextToken(prompt, lp, [f"t{i}" for i in top], top, True, "fake")


@pytest.mark.parametrize("T", [0.0, 0.4, 1.0, 2.5])
@pytest.mark.parametrize("k,p", [(None, None), (1, None), (5, None), (20, 0.9), (None, 0.5),
                                 (3, 0.99), (None, 1.0)])
def test_the_controls_act_on_the_whole_vocabulary_as_the_lectures_functions(T, k, p):
    d = _fake()
    P = sampling.temperature_softmax(d.logprobs, T)
    want = P
    if k is not None:
        want = sampling.top_k_filter(want, k)
    if p is not None:
        want = sampling.top_p_filter(want, p)
    np.testing.assert_allclose(d.truncate(P, k, p), want, atol=1e-12)
    before, after = d.bars(T, k, p)
    assert len(before) == len(after) == 21
    np.testing.assert_allclose(before[:20], P[d.top])
    assert before.sum() == pytest.approx(1.0) and after.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(after[-1], 1 - want[d.top].sum(), atol=1e-12)


def test_the_model_is_asked_once_per_prompt_and_sliders_only_redraw(monkeypatch):
    import ipywidgets as w

    asked = []

    def ask(prompt):
        asked.append(prompt)
        return _fake(prompt=prompt, seed=len(asked))

    monkeypatch.setattr(next_token, "ask_model", ask)
    box = widgets.temperature_explorer(next_token.REAL, prompt="The sky is")
    image, slider = _find(box, w.Image)[0], _find(box, w.FloatSlider)[0]
    seen = {bytes(image.value)}
    for T in (0.0, 0.5, 2.0):
        slider.value = T
        seen.add(bytes(image.value))
    assert asked == ["The sky is"] and len(seen) == 4
    text = _find(box, w.Text)[0]
    text.value = "My cat is"
    text.value = "The sky is"               # asked before: from the cache
    assert asked == ["The sky is", "My cat is"]

    box = widgets.truncation_explorer(source=next_token.REAL, prompt="My cat is")
    image = _find(box, w.Image)[0]
    before = bytes(image.value)
    _find(box, w.IntSlider)[0].value = 1
    assert bytes(image.value) != before and asked[-1] == "My cat is"


def test_a_server_with_only_the_top_20_says_so(monkeypatch):
    class TopOnly:
        model = "qwen2.5:7b"

        def first_token_logprobs(self, messages, top_logprobs=20):
            assert messages[-1].content == "The sky is" and top_logprobs == 20
            return [(f"w{i}", -0.5 - 0.4 * i) for i in range(20)]

    d = next_token.ask_model("The sky is", llm=TopOnly())
    assert not d.complete and d.names[0] == "w0" and "only the top 20" in d.note
    before, _ = d.bars(1.0)
    assert before[-1] == pytest.approx(0.0) and d.rest_label == "rest (not sent)"


def test_without_a_model_the_widget_says_so_and_keeps_the_example(monkeypatch):
    import ipywidgets as w

    for var in ("LREACT_BACKEND", "LREACT_BASE_URL", "LREACT_GGUF"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("OLLAMA_HOST", NO_OLLAMA)
    for box in (widgets.temperature_explorer(), widgets.truncation_explorer()):
        choose = _find(box, w.Dropdown)[0]
        example = choose.value
        choose.value = next_token.REAL
        status = _find(box, w.HTML)[0].value
        assert "No real distribution" in status and "ollama serve" in status
        assert choose.value == example and _find(box, w.Image)[0].value[:4] == b"\x89PNG"


@real_model
def test_the_real_distribution_covers_the_whole_vocabulary(embedded_env):
    import ipywidgets as w

    d = next_token.ask_model(next_token.DEFAULT_PROMPT)
    assert d.complete and len(d.logprobs) == 49152 and len(d.names) == 20
    assert np.exp(d.logprobs).sum() == pytest.approx(1.0)
    assert d.logprobs[d.top[0]] == d.logprobs.max()
    before, after = d.bars(0.7, k=5)
    assert (after[5:20] == 0).all() and after[-1] == 0 and after[:5].sum() == pytest.approx(1)

    box = widgets.temperature_explorer(next_token.REAL)
    slider, image = _find(box, w.FloatSlider)[0], _find(box, w.Image)[0]
    assert "embedded" in _find(box, w.HTML)[0].value
    seconds, cpu, seen = [], [], set()
    for T in (0.2, 0.5, 0.8, 1.2, 2.0, 3.0, 0.0, 1.0):
        start, start_cpu = time.perf_counter(), time.process_time()
        slider.value = T
        seconds.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
        seen.add(bytes(image.value))
    assert len(seen) == 8
    print(f"\nreal-model temperature widget: redraw median {1000 * statistics.median(seconds):.0f}"
          f" ms wall, {1000 * statistics.median(cpu):.0f} ms CPU over {len(seconds)} moves "
          f"(max {1000 * max(seconds):.0f} ms wall)")
