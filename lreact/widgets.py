"""The lecture's interactive widgets (ipywidgets + matplotlib), one function call each.

- ``temperature_explorer()``       Part I, "Temperature Scaling"
- ``truncation_explorer()``        Part I, "Truncated Sampling"
- ``constrained_decoding_stepper()`` Part I, "Constrained Decoding"
- ``context_budget_explorer()``    Part IV, "A Concrete Trace" and "The Context Budget"
- ``qwen_logprobs_explorer()``     Part I with a real model (needs a running Ollama)

Every plot is drawn with matplotlib's Agg canvas (no pyplot, so nothing is displayed twice) into
PNG bytes shown by an ``ipywidgets.Image``; a slider change redraws only what changed and swaps
the bytes.  The ``*_figure`` functions draw the same pictures for the static fallback images in
``lectures/figures/`` (``scripts/make_lecture_figures.py``).
"""
from __future__ import annotations

import html
import io

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from . import grammar
from .sampling import entropy, softmax, temperature_softmax, top_k_filter, top_p_filter
from .traces import (CONTEXT_WINDOW, TRACES, context_segments, message_label, model_calls)

# ---------------------------------------------------------------------------------------------
# Example next-token distributions (made-up but realistic logits, named tokens)
# ---------------------------------------------------------------------------------------------
# The lecture's worked example: probabilities (0.4, 0.3, 0.25, 0.03, 0.02); logits = log p.
SEED_EXAMPLE = {
    "prompt": "The weather in Berlin is",
    "tokens": [" rainy", " cloudy", " cold", " sunny", " purple"],
    "logits": np.log([0.4, 0.3, 0.25, 0.03, 0.02]),
}
WEATHER_20 = {
    "prompt": "Tomorrow the weather in Berlin will be",
    "tokens": [" rainy", " cloudy", " cold", " sunny", " windy", " grey", " mild", " warm",
               " wet", " foggy", " nice", " similar", " better", " snowy", " stormy", " hot",
               " terrible", " perfect", " purple", " banana"],
    "logits": np.array([3.1, 2.8, 2.4, 2.0, 1.7, 1.5, 1.2, 1.0, 0.9, 0.6, 0.4, 0.1, -0.2, -0.5,
                        -0.8, -1.2, -1.5, -1.9, -3.0, -4.0]),
}
PEAKED = {
    "prompt": "The capital of France is",
    "tokens": [" Paris", " a", " located", " the", " known", " one", " not", " also", " Lyon",
               " called", " in", " home", " famous", " beautiful", " France", " Marseille",
               " big", " an", " London", " Berlin"],
    "logits": np.array([9.0, 5.2, 4.6, 4.3, 3.9, 3.5, 3.0, 2.8, 2.2, 2.0, 1.8, 1.6, 1.5, 1.2,
                        1.0, 0.8, 0.5, 0.3, 0.0, -0.5]),
}
FLAT = {
    "prompt": "My favourite colour is",
    "tokens": [" blue", " green", " red", " purple", " black", " yellow", " orange", " pink",
               " white", " grey", " teal", " brown", " navy", " gold", " turquoise", " silver",
               " lavender", " maroon", " beige", " cyan"],
    "logits": np.linspace(2.2, 0.3, 20),
}
DISTRIBUTIONS = {
    "seed example (5 tokens)": SEED_EXAMPLE,
    "weather (20 tokens)": WEATHER_20,
    "peaked: capital of France (20 tokens)": PEAKED,
    "flat: favourite colour (20 tokens)": FLAT,
}

KEPT, DROPPED, NATIVE, ARGMAX = "#1f77b4", "#d9d9d9", "#444444", "#d62728"
DPI = 80


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    return buf.getvalue()


def _new_figure(w, h):
    fig = Figure(figsize=(w, h), dpi=DPI)
    FigureCanvasAgg(fig)
    return fig


class _Blitter:
    """Fast redraws for a figure whose only changing parts are ``artists``: the rest is drawn
    once and kept as a background bitmap; each frame restores it, draws the changing artists
    on top and encodes the pixels as a quickly compressed PNG (a few ms instead of a full
    draw)."""

    def __init__(self, fig: Figure, artists):
        self.fig, self.artists = fig, list(artists)
        for a in self.artists:
            a.set_animated(True)
        fig.canvas.draw()
        self.background = fig.canvas.copy_from_bbox(fig.bbox)

    def png(self) -> bytes:
        from PIL import Image

        canvas = self.fig.canvas
        canvas.restore_region(self.background)
        for a in self.artists:
            self.fig.draw_artist(a)
        pixels = np.asarray(canvas.buffer_rgba())
        buf = io.BytesIO()
        Image.fromarray(pixels[..., :3]).save(buf, format="png", compress_level=1)
        return buf.getvalue()


def _image(fig_width_inches: float, cls: str = "lreact-plot"):
    """An ipywidgets.Image shown at the figure's own pixel width (not stretched, so crisp)."""
    import ipywidgets as w

    image = w.Image(format="png", width=f"{round(fig_width_inches * DPI)}px")
    image.add_class(cls)
    return image


def _label(token: str) -> str:
    return repr(token)[1:-1] if token.strip() != token or not token else token


# ---------------------------------------------------------------------------------------------
# Temperature
# ---------------------------------------------------------------------------------------------
class _TemperaturePlot:
    """Bars of P_T over the tokens; the argmax in red; T = 1 as black ticks; entropy in the title.
    ``update(T)`` changes bar heights and texts only (fast)."""

    def __init__(self, ax, dist, T=1.0, show_prompt=True):
        self.ax, self.dist, self.show_prompt = ax, dist, show_prompt
        tokens, z = dist["tokens"], np.asarray(dist["logits"], float)
        x = np.arange(len(tokens))
        self.bars = ax.bar(x, np.zeros(len(tokens)), color=KEPT)
        native = softmax(z)
        self.native = ax.scatter(x, native, marker="_", s=300, color=NATIVE, zorder=3,
                                 label="T = 1 (native)")
        self.argmax = int(np.argmax(z))
        self.bars[self.argmax].set_color(ARGMAX)
        ax.set_xticks(x, [_label(t) for t in tokens], rotation=60 if len(tokens) > 6 else 0,
                      ha="right" if len(tokens) > 6 else "center", fontsize=9)
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("probability")
        ax.legend(loc="upper right", fontsize=9, frameon=False)
        self.note = ax.text(self.argmax, 0, "argmax", color=ARGMAX, ha="center", va="bottom",
                            fontsize=9)
        self.update(T)

    def changing_artists(self):
        """What ``update`` changes, in drawing order (bars first, the native ticks on top)."""
        return [*self.bars, self.native, self.note, self.ax.title]

    def update(self, T):
        z = np.asarray(self.dist["logits"], float)
        p = temperature_softmax(z, T)
        for bar, h in zip(self.bars, p):
            bar.set_height(h)
        self.note.set_y(p[self.argmax] + 0.01)
        h, hmax = entropy(p) + 0.0, np.log2(len(p))
        kind = " (one-hot: greedy)" if T == 0 else ""
        prompt = f"“{self.dist['prompt']} …”   " if self.show_prompt else ""
        self.ax.set_title(f"{prompt}T = {T:.2f}{kind}\n"
                          f"entropy H = {h:.2f} bits (uniform: {hmax:.2f})   "
                          f"P(argmax) = {p[self.argmax]:.2f}", fontsize=10)
        return p


def temperature_figure(dist=WEATHER_20, temperatures=(0.0, 0.5, 1.0, 3.0)) -> Figure:
    """Static fallback: one panel per temperature."""
    cols = 2 if len(temperatures) == 4 else len(temperatures)
    rows = -(-len(temperatures) // cols)
    fig = _new_figure(5.2 * cols, 3.4 * rows + 0.4)
    axes = fig.subplots(rows, cols, sharey=True)
    for ax, T in zip(np.ravel(axes), temperatures):
        _TemperaturePlot(ax, dist, T, show_prompt=False)
    fig.suptitle(f"next token after “{dist['prompt']} …”", fontsize=11)
    fig.tight_layout()
    return fig


def temperature_explorer(distribution: str = "weather (20 tokens)", T: float = 1.0):
    """A T slider (0 to 5) over a next-token distribution; bars, entropy and the argmax update.
    T = 0 shows the one-hot argmax (what temperature=0.0 does)."""
    import ipywidgets as w

    choose = w.Dropdown(options=list(DISTRIBUTIONS)[:2] + list(DISTRIBUTIONS)[2:],
                        value=distribution, description="tokens")
    slider = w.FloatSlider(value=T, min=0.0, max=5.0, step=0.05, description="T",
                           continuous_update=True, readout_format=".2f")
    slider.add_class("lreact-temperature-slider")
    image = _image(7.5)
    state = {}

    def build(*_):
        fig = _new_figure(7.5, 4.0)
        ax = fig.add_subplot()
        plot = _TemperaturePlot(ax, DISTRIBUTIONS[choose.value], slider.value)
        fig.tight_layout()
        state["plot"], state["blit"] = plot, _Blitter(fig, plot.changing_artists())
        image.value = state["blit"].png()

    def redraw(change):
        state["plot"].update(change["new"])
        image.value = state["blit"].png()

    build()
    choose.observe(build, "value")
    slider.observe(redraw, "value")
    box = w.VBox([w.HBox([choose, slider]), image])
    box.add_class("lreact-temperature")
    return box


# ---------------------------------------------------------------------------------------------
# Truncation: top-k and top-p
# ---------------------------------------------------------------------------------------------
def _truncation_panel(ax, dist, T, rule, value):
    z = np.asarray(dist["logits"], float)
    p = temperature_softmax(z, T)
    q = top_k_filter(p, value) if rule == "k" else top_p_filter(p, value)
    kept = q > 0
    x = np.arange(len(p))
    ax.bar(x, p, color=DROPPED, label="P_T (before)")
    ax.bar(x[kept], q[kept], width=0.5, color=KEPT, label="kept, renormalised")
    ax.bar(x[~kept], p[~kept], color="#f4a582", label="dropped")
    ax.set_xticks(x, [_label(t) for t in dist["tokens"]], rotation=70, ha="right", fontsize=8)
    ax.set_ylim(0, 1.05)
    n = int(kept.sum())
    if rule == "k":
        title = f"top-k, k = {value}: keeps {n} tokens (mass {p[kept].sum():.2f})"
    else:
        title = f"top-p, p = {value:.2f}: nucleus = {n} tokens (mass {p[kept].sum():.2f})"
    ax.set_title(f"“{dist['prompt']} …”\n{title}", fontsize=9)
    return n


def truncation_figure(k=5, p=0.9, T=1.0) -> Figure:
    """2 x 2 panels: rows peaked / flat distribution, columns top-k / top-p."""
    fig = _new_figure(11, 7.2)
    axes = fig.subplots(2, 2, sharey=True)
    for row, dist in enumerate([PEAKED, FLAT]):
        _truncation_panel(axes[row, 0], dist, T, "k", k)
        _truncation_panel(axes[row, 1], dist, T, "p", p)
    axes[0, 0].legend(fontsize=8, frameon=False, loc="upper right")
    fig.suptitle(f"temperature T = {T:.2f} applied first, then truncation", fontsize=10)
    fig.tight_layout()
    return fig


def truncation_explorer(k: int = 5, p: float = 0.9, T: float = 1.0):
    """top-k and top-p side by side on a peaked and a flat distribution; temperature first."""
    import ipywidgets as w

    ks = w.IntSlider(value=k, min=1, max=20, description="top-k k")
    ps = w.FloatSlider(value=p, min=0.05, max=1.0, step=0.01, description="top-p p")
    ts = w.FloatSlider(value=T, min=0.05, max=5.0, step=0.05, description="T (first)")
    image = _image(11)

    def redraw(*_):
        image.value = _png(truncation_figure(ks.value, ps.value, ts.value))

    redraw()
    for s in (ks, ps, ts):
        s.observe(redraw, "value")
    box = w.VBox([w.HBox([ts, ks, ps]), image])
    box.add_class("lreact-truncation")
    return box


# ---------------------------------------------------------------------------------------------
# Constrained decoding over lreact.grammar
# ---------------------------------------------------------------------------------------------
def constrained_step(prefix_ids):
    """One step of constrained decoding after ``prefix_ids``: returns a dict with the state s_t,
    the allowed set A(s_t), the model's P, the masked and renormalised P', and the mass of P
    that the mask removed."""
    state = grammar.start()
    for i in prefix_ids:
        state = grammar.advance(state, i)
    P = softmax(grammar.toy_logits(prefix_ids))
    allowed = grammar.allowed_tokens(state)
    mask = np.zeros(len(P), bool)
    mask[allowed] = True
    P_prime = np.where(mask, P, 0.0)
    P_prime = P_prime / P_prime.sum() if P_prime.sum() > 0 else P_prime
    return {"state": state, "allowed": allowed, "P": P, "P_prime": P_prime,
            "removed_mass": float(P[~mask].sum())}


def _constrained_panel(fig, prefix_ids):
    step = constrained_step(prefix_ids)
    ax1, ax2 = fig.subplots(2, 1, sharex=True)
    x = np.arange(len(grammar.VOCAB))
    colours = [KEPT if i in step["allowed"] else "#f4a582" for i in x]
    ax1.bar(x, step["P"], color=colours)
    ax1.set_yscale("log")
    ax1.set_ylim(1e-4, 1.5)
    ax1.set_ylabel("P (model, log scale)")
    ax1.set_title(f"step t = {len(prefix_ids)}   state s_t = {step['state']}   "
                  f"|A(s_t)| = {len(step['allowed'])}   mass removed by the mask = "
                  f"{step['removed_mass']:.2f}", fontsize=9)
    ax2.bar(x, step["P_prime"], color=KEPT)
    ax2.set_ylabel("P' (masked)")
    ax1.legend(handles=[Patch(color=KEPT, label="in A(s_t)"),
                        Patch(color="#f4a582", label="masked out")], fontsize=8, frameon=False,
               loc="upper right")
    ax2.set_ylim(0, 1.05)
    ax2.set_xticks(x, [repr(t)[1:-1] for t in grammar.VOCAB], rotation=70, ha="right",
                   fontsize=8)
    fig.tight_layout()
    return step


def constrained_figure(n_steps: int = 3) -> Figure:
    """Static fallback: the step after the greedy constrained prefix of ``n_steps`` tokens."""
    prefix = []
    for _ in range(n_steps):
        prefix.append(int(np.argmax(constrained_step(prefix)["P_prime"])))
    fig = _new_figure(10, 5.5)
    _constrained_panel(fig, prefix)
    fig.suptitle("text so far: " + (grammar.detokenize(prefix) or "(empty)"), fontsize=10, y=1.0)
    return fig


def constrained_decoding_stepper(seed: int = 0):
    """Step through constrained decoding of a JSON tool call: A(s_t), P and P', the text so far.
    "step" draws the next token from P' (seeded), "back" undoes it, "reset" starts over."""
    import ipywidgets as w

    rng_seed = [seed]
    prefix = []
    image = _image(10)
    text = w.HTML()
    forward, back, reset = (w.Button(description=d) for d in ("step ▶", "◀ back", "reset"))

    def show():
        fig = _new_figure(10, 5.2)
        step = _constrained_panel(fig, prefix)
        image.value = _png(fig)
        allowed = ", ".join(html.escape(grammar.VOCAB[i]) for i in step["allowed"]) or "(done)"
        done = grammar.is_done(step["state"])
        so_far = html.escape(grammar.detokenize(prefix)) or "(empty)"
        verdict = (f" — parses: <b>{grammar.parses(grammar.detokenize(prefix))}</b>"
                   if done else "")
        text.value = (f"<code>text so far: {so_far}</code>{verdict}<br>"
                      f"A(s_t) = {{ <code>{allowed}</code> }}")
        forward.disabled = done
        back.disabled = not prefix

    def on_forward(_):
        step = constrained_step(prefix)
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


# ---------------------------------------------------------------------------------------------
# ReAct trace and context budget
# ---------------------------------------------------------------------------------------------
SEGMENT_COLOURS = {"system": "#7f7f7f", "tools": "#bcbd22", "user": "#2ca02c",
                   "assistant": "#1f77b4", "tool": "#ff7f0e", "open": "#17becf",
                   "retrieved": "#9467bd", "free": "#f0f0f0"}


def _budget_bars(ax, calls, tools, upto, window, retrieved=0):
    """One horizontal stacked bar per model call 1..upto: what that call sent."""
    for k, msgs in enumerate(calls[:upto]):
        left = 0
        segs = context_segments(msgs, tools)
        if retrieved:
            segs = segs[:2] + [("retrieved documents", "retrieved", "", retrieved)] + segs[2:]
        for label, kind, _, n in segs:
            ax.barh(k, n, left=left, color=SEGMENT_COLOURS[kind], edgecolor="white",
                    linewidth=0.5)
            left += n
        ax.barh(k, max(window - left, 0), left=left, color=SEGMENT_COLOURS["free"])
        ax.text(min(left, window) + window * 0.01, k, f"{left} tok ({100 * left / window:.0f} %)",
                va="center", fontsize=8, color="black" if left <= window else ARGMAX)
    ax.axvline(window, color=ARGMAX, lw=1.5)
    ax.set_xlim(0, window * 1.25)
    ax.set_ylim(len(calls) - 0.5, -0.5)
    ax.set_yticks(range(len(calls)), [f"call {k + 1}" for k in range(len(calls))], fontsize=9)
    ax.set_xlabel(f"approximate tokens (characters / 4); red line = context window {window}")
    kinds = [k for k in ("system", "tools", "retrieved", "user", "assistant", "tool")
             if k != "retrieved" or retrieved]
    ax.legend(handles=[Patch(color=SEGMENT_COLOURS[k], label=k) for k in kinds], fontsize=8,
              ncol=6, loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False)


def context_budget_figure(trace="multi-tool run (5 tool calls)", window=CONTEXT_WINDOW) -> Figure:
    """Static fallback: every call of a trace as a stacked bar of what it re-sent."""
    history, tools = TRACES[trace]()
    calls = model_calls(history)
    fig = _new_figure(10, 1.2 + 0.6 * len(calls))
    ax = fig.add_subplot()
    _budget_bars(ax, calls, tools, len(calls), window)
    total = sum(sum(s[3] for s in context_segments(c, tools)) for c in calls)
    ax.set_title(f"{trace}: {len(calls)} model calls, {total} tokens sent in total", fontsize=10,
                 pad=28)
    fig.tight_layout()
    return fig


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
    image = _image(9)
    chatml = w.Textarea(layout=w.Layout(width="100%", height="180px"))
    state = {}

    def load(*_):
        history, tools = TRACES[choose.value]()
        state.update(history=history, tools=tools, calls=model_calls(history))
        step.max = len(state["calls"])
        step.value = 1
        redraw()

    def redraw(*_):
        calls, k = state["calls"], step.value
        listing.value = _history_html(state["history"], calls, k)
        fig = _new_figure(9, 1.3 + 0.5 * len(calls))
        ax = fig.add_subplot()
        _budget_bars(ax, calls, state["tools"], k, windows.value, retrieved.value)
        sent = sum(sum(s[3] for s in context_segments(c, state["tools"])) + retrieved.value
                   for c in calls[:k])
        ax.set_title(f"tokens sent so far, summed over calls 1..{k}: {sent}", fontsize=10,
                     pad=26)
        fig.tight_layout()
        image.value = _png(fig)
        chatml.value = "".join(s[2] for s in context_segments(calls[k - 1], state["tools"]))

    choose.observe(load, "value")
    for s in (step, windows, retrieved):
        s.observe(redraw, "value")
    load()
    accordion = w.Accordion(children=[chatml], titles=("ChatML text of this call",))
    accordion.selected_index = None
    box = w.VBox([w.HBox([choose, step]), w.HBox([windows, retrieved]), listing, image,
                  accordion])
    box.add_class("lreact-context")
    return box


# ---------------------------------------------------------------------------------------------
# A real model's first-token distribution (optional: needs Ollama)
# ---------------------------------------------------------------------------------------------
def sampling_explorer(tokens, logits, prompt="", T=1.0, k=20, p=1.0):
    """Temperature, then top-k, then top-p on any (tokens, logits): the pipeline of
    ``lreact.sampling.sample_token`` before the draw."""
    import ipywidgets as w

    dist = {"prompt": prompt, "tokens": list(tokens), "logits": np.asarray(logits, float)}
    ts = w.FloatSlider(value=T, min=0.0, max=5.0, step=0.05, description="T")
    ks = w.IntSlider(value=min(k, len(tokens)), min=1, max=len(tokens), description="top-k")
    ps = w.FloatSlider(value=p, min=0.05, max=1.0, step=0.01, description="top-p")
    image = _image(9)

    def redraw(*_):
        fig = _new_figure(9, 4.0)
        ax = fig.add_subplot()
        P = temperature_softmax(dist["logits"], ts.value)
        Q = top_p_filter(top_k_filter(P, ks.value), ps.value)
        x = np.arange(len(P))
        kept = Q > 0
        ax.bar(x, P, color=DROPPED, label="after temperature")
        ax.bar(x[kept], Q[kept], width=0.5, color=KEPT, label="after top-k and top-p")
        ax.set_xticks(x, [repr(t) for t in dist["tokens"]], rotation=70, ha="right", fontsize=8)
        ax.set_ylim(0, 1.05)
        ax.legend(fontsize=8, frameon=False)
        ax.set_title(f"“{prompt[-50:]} …”  T = {ts.value:.2f}, k = {ks.value}, "
                     f"p = {ps.value:.2f}: {int(kept.sum())} tokens can be drawn, "
                     f"H = {entropy(Q):.2f} bits", fontsize=9)
        fig.tight_layout()
        image.value = _png(fig)

    redraw()
    for s in (ts, ks, ps):
        s.observe(redraw, "value")
    return w.VBox([w.HBox([ts, ks, ps]), image])


def qwen_logprobs_explorer(prompt: str = "The capital of France is", model=None):
    """The real top-20 first-token log-probabilities of the local Qwen for ``prompt``, with the
    same sliders.  Without a running Ollama and a pulled model it says so and returns None."""
    from .models import OllamaError, OllamaLLM
    from .messages import UserMessage
    from .setup import check_setup

    report = check_setup(model=model)
    if not report.server or not report.model_pulled:
        print("The real-model cell is skipped: it needs a local Ollama with the model.")
        print(report)
        print("Everything else in this notebook works without it.")
        return None
    try:
        pairs = OllamaLLM(model=report.model).first_token_logprobs([UserMessage(prompt)], 20)
    except OllamaError as e:
        print(f"The real-model cell is skipped: {e}")
        return None
    tokens, logprobs = zip(*pairs)
    print(f"{report.model}: top-{len(tokens)} first tokens for {prompt!r}; their logprobs are "
          "used as logits (the softmax renormalises over these 20).")
    return sampling_explorer(tokens, logprobs, prompt=prompt)
