"""The lecture's interactive widgets (ipywidgets), one function call each.

- ``temperature_explorer()``         Part I, "Temperature scaling"
- ``truncation_explorer()``          Part I, "Truncated sampling: top-k and top-p"
  (both also on a real model's distribution: the source "real model: your prompt",
  ``lreact.views.next_token``)
- ``constrained_decoding_stepper()`` Part I, "Constrained decoding"
- ``context_budget_explorer()``      Part IV, "A Concrete Trace" and "The context budget"
- ``sampling_explorer(tokens, logits)`` and ``qwen_logprobs_explorer()``  Part I with a real
  model's first-token distribution (the latter needs a usable model: ``lreact.check_setup()``)

The pictures come from ``lreact.views.figures`` and are drawn with ``lreact.views.canvas`` (PNG bytes in an
``ipywidgets.Image``).  Each figure is drawn once; a slider move or a button changes only the
artists that move and blits them (``canvas.Blitter``), well under the 100 ms a redraw may take
in the browser (tests/test_browser.py measures every widget).
"""
from __future__ import annotations

import html

import numpy as np

from .. import grammar
from ..engines import setup
from ..engines.backends import configured_llm
from ..engines.models import ModelError
from ..messages import UserMessage
from ..traces import CONTEXT_WINDOW, TRACES, context_segments, message_label, model_calls
from .canvas import Blitter, image_widget, new_figure
from .examples import DISTRIBUTIONS
from .figures import BudgetPlot, ConstrainedPlot, SamplingPlot, TemperaturePlot, TruncationPlot
from .next_token import DEFAULT_PROMPT, REAL, RealSource, RealTemperaturePlot, RealTruncationPlot

EXAMPLES = "examples: peaked and flat"


def temperature_explorer(distribution: str = "weather (20 tokens)", T: float = 1.0,
                         prompt: str = DEFAULT_PROMPT):
    """A T slider (0 to 5) over a next-token distribution; bars, entropy and the argmax update.
    T = 0 shows the one-hot argmax (what temperature=0.0 does).  The source "real model: your
    prompt" asks the configured model once for the token after ``prompt`` (``lreact.views.next_token``);
    without a model the status line says so and the example stays."""
    import ipywidgets as w

    choose = w.Dropdown(options=[*DISTRIBUTIONS, REAL], value=distribution, description="tokens")
    slider = w.FloatSlider(value=T, min=0.0, max=5.0, step=0.05, description="T",
                           continuous_update=True, readout_format=".2f")
    slider.add_class("lreact-temperature-slider")
    image = image_widget(7.5)
    real = RealSource(prompt)
    state = {"example": distribution if distribution != REAL else "weather (20 tokens)"}

    def build(*_):
        real.show(choose.value == REAL)
        dist = real.distribution() if choose.value == REAL else None
        if choose.value == REAL and dist is None:
            choose.value = state["example"]      # observed: builds the example again
            return
        fig = new_figure(7.5, 4.3 if dist else 4.0)
        ax = fig.add_subplot()
        if dist is None:
            state["example"] = choose.value
            plot = TemperaturePlot(ax, DISTRIBUTIONS[choose.value], slider.value)
        else:
            plot = RealTemperaturePlot(ax, dist, slider.value)
        fig.tight_layout()
        state["plot"], state["blit"] = plot, Blitter(fig, plot.changing_artists())
        image.value = state["blit"].png()

    def redraw(change):
        state["plot"].update(change["new"])
        image.value = state["blit"].png()

    build()
    choose.observe(build, "value")
    real.button.on_click(build)
    real.text.observe(build, "value")
    slider.observe(redraw, "value")
    box = w.VBox([w.HBox([choose, slider]), real.box, image])
    box.add_class("lreact-temperature")
    return box


def truncation_explorer(k: int = 5, p: float = 0.9, T: float = 1.0, source: str = EXAMPLES,
                        prompt: str = DEFAULT_PROMPT):
    """top-k and top-p side by side on a peaked and a flat distribution; temperature first.
    The source "real model: your prompt" shows them on the configured model's distribution
    of the token after ``prompt`` (asked once per prompt; the rest of the vocabulary is one bar)."""
    import ipywidgets as w

    choose = w.Dropdown(options=[EXAMPLES, REAL], value=source, description="source")
    ks = w.IntSlider(value=k, min=1, max=20, description="top-k k")
    ps = w.FloatSlider(value=p, min=0.05, max=1.0, step=0.01, description="top-p p")
    ts = w.FloatSlider(value=T, min=0.05, max=5.0, step=0.05, description="T (first)")
    image = image_widget(11)
    real = RealSource(prompt)
    state = {}

    def build(*_):
        real.show(choose.value == REAL)
        dist = real.distribution() if choose.value == REAL else None
        if choose.value == REAL and dist is None:
            choose.value = EXAMPLES
            return
        if dist is None:
            fig = new_figure(11, 7.2)
            state["plot"] = TruncationPlot(fig, ts.value, ks.value, ps.value)
        else:
            fig = new_figure(11, 4.6)
            state["plot"] = RealTruncationPlot(fig, dist, ts.value, ks.value, ps.value)
        fig.tight_layout()
        state["blit"] = Blitter(fig, state["plot"].changing_artists())
        image.value = state["blit"].png()

    def redraw(*_):
        state["plot"].update(ts.value, ks.value, ps.value)
        image.value = state["blit"].png()

    build()
    choose.observe(build, "value")
    real.button.on_click(build)
    real.text.observe(build, "value")
    for s in (ks, ps, ts):
        s.observe(redraw, "value")
    box = w.VBox([w.HBox([choose]), real.box, w.HBox([ts, ks, ps]), image])
    box.add_class("lreact-truncation")
    return box


def constrained_decoding_stepper(seed: int = 0):
    """Step through constrained decoding of a JSON tool call: A(s_t), P and P', the text so far.
    "step" draws the next token from P' (with ``numpy.random.default_rng([seed, t])``), "back"
    undoes it, "reset" starts over with the next seed."""
    import ipywidgets as w

    rng_seed = [seed]
    prefix = []
    image = image_widget(10)
    text = w.HTML()
    forward, back, reset = (w.Button(description=d) for d in ("step ▶", "◀ back", "reset"))

    fig = new_figure(10, 5.2)
    plot = ConstrainedPlot(fig)
    fig.tight_layout()
    blit = Blitter(fig, plot.changing_artists())

    def show():
        step = plot.update(prefix)
        image.value = blit.png()
        allowed = ", ".join(html.escape(grammar.VOCAB[i]) for i in step["allowed"]) or "(done)"
        so_far = html.escape(grammar.detokenize(prefix)) or "(empty)"
        verdict = (f" — parses: <b>{grammar.parses(grammar.detokenize(prefix))}</b>"
                   if step["done"] else "")
        text.value = (f"<code>text so far: {so_far}</code>{verdict}<br>"
                      f"A(s_t) = {{ <code>{allowed}</code> }}")
        forward.disabled = step["done"]
        back.disabled = not prefix

    def on_forward(_):
        step = grammar.constrained_step(prefix)
        rng = np.random.default_rng([rng_seed[0], len(prefix)])
        prefix.append(int(rng.choice(len(step["P_prime"]), p=step["P_prime"])))
        show()

    def on_back(_):
        if prefix:
            prefix.pop()
        show()

    def on_reset(_):
        prefix.clear()
        rng_seed[0] += 1
        show()

    forward.on_click(on_forward)
    back.on_click(on_back)
    reset.on_click(on_reset)
    show()
    box = w.VBox([w.HBox([back, forward, reset]), text, image])
    box.add_class("lreact-constrained")
    return box


def _history_html(history, calls, k):
    """The history as seen by call k (1-based): re-sent messages in grey, new ones bold, the
    model's answer to that call below the line."""
    sent = calls[k - 1]
    before = len(calls[k - 2]) + 1 if k > 1 else 0
    rows = []
    for i, m in enumerate(sent):
        style = "font-weight:bold" if i >= before else "color:#777"
        tag = "new" if i >= before else "re-sent"
        rows.append(f"<div style='{style}'>[{i}] {html.escape(message_label(m))} "
                    f"<small>({tag})</small></div>")
    reply = history[len(sent)]
    rows.append("<hr style='margin:2px'>")
    rows.append(f"<div style='color:#1f77b4'>model answers: {html.escape(message_label(reply))}"
                "</div>")
    return ("<div style='font-family:monospace;font-size:12px;line-height:1.35'>"
            + "".join(rows) + "</div>")


def context_budget_explorer(trace: str = "Berlin trace (1 tool call)", window=CONTEXT_WINDOW):
    """Step through an agent run call by call: the history each call sends (re-sent vs new), the
    model's reply, and a bar per call of how much of the context window it fills.  The
    "retrieved" slider adds retrieved documents to every call to show the budget squeeze."""
    import ipywidgets as w

    choose = w.Dropdown(options=list(TRACES), value=trace, description="run")
    step = w.IntSlider(value=1, min=1, max=2, description="model call")
    windows = w.Dropdown(options=[1024, 2048, 4096, 8192, 32768], value=window,
                         description="window")
    retrieved = w.IntSlider(value=0, min=0, max=3000, step=100, description="retrieved")
    listing = w.HTML()
    image = image_widget(9)
    chatml = w.Textarea(layout=w.Layout(width="100%", height="180px"))
    state = {}

    def load(*_):
        history, tools = TRACES[choose.value]()
        state.update(history=history, tools=tools, calls=model_calls(history))
        step.max = len(state["calls"])
        step.value = 1
        build()

    def build(*_):
        """Draw every call's bar once for this run, window and retrieved size."""
        fig = new_figure(9, 1.3 + 0.5 * len(state["calls"]))
        state["plot"] = BudgetPlot(fig.add_subplot(), state["calls"], state["tools"],
                                   windows.value, retrieved.value, upto=step.value)
        fig.tight_layout()
        state["blit"] = Blitter(fig, state["plot"].changing_artists())
        show()

    def show(*_):
        calls, k = state["calls"], step.value
        listing.value = _history_html(state["history"], calls, k)
        state["totals"] = state["plot"].update(k, retrieved.value)
        image.value = state["blit"].png()
        chatml.value = "".join(s[2] for s in context_segments(calls[k - 1], state["tools"]))

    choose.observe(load, "value")
    step.observe(show, "value")
    windows.observe(build, "value")
    retrieved.observe(lambda _: show() if state["plot"].fits(retrieved.value) else build(),
                      "value")
    load()
    accordion = w.Accordion(children=[chatml], titles=("ChatML text of this call",))
    accordion.selected_index = None
    box = w.VBox([w.HBox([choose, step]), w.HBox([windows, retrieved]), listing, image,
                  accordion])
    box.add_class("lreact-context")
    return box


def sampling_explorer(tokens, logits, prompt="", T=1.0, k=20, p=1.0):
    """Temperature, then top-k, then top-p on any (tokens, logits): the pipeline of
    ``lreact.sampling.sample_token`` before the draw."""
    import ipywidgets as w

    tokens, logits = list(tokens), np.asarray(logits, float)
    ts = w.FloatSlider(value=T, min=0.0, max=5.0, step=0.05, description="T")
    ks = w.IntSlider(value=min(k, len(tokens)), min=1, max=len(tokens), description="top-k")
    ps = w.FloatSlider(value=p, min=0.05, max=1.0, step=0.01, description="top-p")
    image = image_widget(9)
    fig = new_figure(9, 4.0)
    plot = SamplingPlot(fig.add_subplot(), tokens, logits, prompt, ts.value, ks.value, ps.value)
    fig.tight_layout()
    blit = Blitter(fig, plot.changing_artists())

    def redraw(*_):
        plot.update(ts.value, ks.value, ps.value)
        image.value = blit.png()

    redraw()
    for s in (ts, ks, ps):
        s.observe(redraw, "value")
    box = w.VBox([w.HBox([ts, ks, ps]), image])
    box.add_class("lreact-sampling")
    return box


def qwen_logprobs_explorer(prompt: str = "The capital of France is", model=None,
                           prediction=None):
    """The real top-20 first-token log-probabilities of the configured model for ``prompt``
    (``lreact.engines.backends``: Qwen through Ollama, llama.cpp in this process, or an
    OpenAI-compatible engine), with the same sliders.  ``model``: the backend's model name (a
    GGUF path for the embedded engine).  Without a usable model it says what to start or
    download and returns None.  ``prediction`` (the student's, written before the cell ran) is
    printed beside the model's favourite (``lreact.views.predict``)."""
    import os

    from . import predict

    report = setup.check_setup(model=model)
    if not report.server or not report.model_pulled:
        print("The real-model cell is skipped: no model can be used yet.")
        print(report)
        print("Everything else in this notebook works without it.")
        return None
    llm = configured_llm(model if report.backend == "embedded" else report.model)
    try:
        pairs = llm.first_token_logprobs([UserMessage(prompt)], 20)
    except ModelError as e:
        print(f"The real-model cell is skipped: {e}")
        return None
    tokens, logprobs = zip(*pairs)
    print(f"{os.path.basename(report.model)} ({report.backend} backend): top-{len(tokens)} first "
          f"tokens for {prompt!r}; their logprobs are used as logits (the softmax renormalises "
          "over these 20).")
    predict.show(prediction, f"{tokens[0]!r} first, with probability {np.exp(logprobs[0]):.2f}",
                 "even a model's favourite leaves real mass to the others, and that mass is what "
                 "the sliders below reshape.")
    return sampling_explorer(tokens, logprobs, prompt=prompt)
