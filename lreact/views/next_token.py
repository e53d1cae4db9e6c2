"""A real model's next-token distribution for the lecture's widgets (Part I, "Temperature
scaling" and "Truncated sampling: top-k and top-p", on a real model instead of an example).

``ask_model(prompt)`` asks the configured backend once for the distribution of the token after
``prompt``:

- the embedded backend (llama.cpp in this kernel) gives the log-probability of every token of
  the vocabulary after the raw text: temperature, top-k and top-p act on all of them exactly;
- Ollama and OpenAI-compatible engines give at most the top 20 log-probabilities of the first
  token of a reply (the prompt is sent as a user message): the controls then act on those 20,
  renormalised, and ``note`` says so, with the mass the rest had.

A ``NextToken`` shows the 20 most probable tokens by name plus one bar for the rest of the
vocabulary.  ``RealTemperaturePlot`` and ``RealTruncationPlot`` draw it; only bar heights and
titles change on a slider move, so a redraw is a blit (``lreact.views.canvas.Blitter``).
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
from matplotlib.patches import Patch

from ..engines.backends import configured_llm
from ..engines.models import ModelError
from ..messages import UserMessage
from ..sampling import entropy, temperature_softmax
from .canvas import Bars
from .figures import ARGMAX, DROPPED, KEPT, MASKED, NATIVE, count, token_label
from .student_decode import full_logits_model

REAL = "real model: your prompt"
DEFAULT_PROMPT = "Tomorrow the weather in Berlin will be"   # the lecture's 20-token example
SHOWN = 20
ASK_TIMEOUT = 60.0


class ModelUnavailable(RuntimeError):
    """No model could give the distribution; the message says why, in plain words."""


@dataclass
class NextToken:
    """The distribution of the token after ``prompt``: ``logprobs`` over the whole vocabulary
    (``complete``) or over the top tokens a server sent; ``names`` of the ``SHOWN`` most
    probable (``top``: their indices)."""
    prompt: str
    logprobs: np.ndarray
    names: list
    top: np.ndarray
    complete: bool
    source: str
    note: str = ""

    def __post_init__(self):
        # temperature never changes the order, so one sort serves every slider move
        self.order = np.argsort(-self.logprobs, kind="stable")

    def truncate(self, P, k=None, p=None):
        """top-k, then top-p, of ``P`` (this distribution after a temperature), renormalised:
        the rules of ``lreact.sampling.top_k_filter`` and ``top_p_filter`` (ties: lower index
        first; the token that crosses p is kept), on the order sorted once."""
        keep = self.order if k is None else self.order[:int(k)]
        if p is not None:
            cumulative = np.cumsum(P[keep])
            n = int(np.searchsorted(cumulative, p * cumulative[-1] - 1e-12, side="left")) + 1
            keep = keep[:min(n, keep.size)]
        out = np.zeros_like(P)
        out[keep] = P[keep]
        return out / out.sum()

    def bars(self, T, k=None, p=None):
        """(P_T, kept) for the named tokens plus one last entry for the rest: P_T after
        temperature, ``kept`` after top-k then top-p (renormalised), as ``sample_token``."""
        P = temperature_softmax(self.logprobs, T)
        return self.with_rest(P), self.with_rest(self.truncate(P, k, p))

    def with_rest(self, probs):
        """The named tokens' probabilities, then the sum of all the others."""
        named = probs[self.top]
        return np.append(named, max(1.0 - named.sum(), 0.0))

    @property
    def rest_label(self) -> str:
        n = len(self.logprobs) - len(self.top)
        return f"rest ({n} tokens)" if self.complete else "rest (not sent)"


def ask_model(prompt: str, llm=None) -> NextToken:
    """The configured backend's next-token distribution after ``prompt`` (see the module
    docstring); ``ModelUnavailable`` in plain words when no model can answer."""

    if not isinstance(prompt, str) or not prompt.strip():
        raise ValueError("type a prompt first: the model continues that text")
    if llm is None:
        try:
            from ..engines.backends import configured_backend
            backend = configured_backend()
        except ValueError as e:
            raise ModelUnavailable(f"no model backend: {e}") from None
        llm = full_logits_model(echo=False, download=False) if backend == "embedded" else \
            configured_llm(timeout=ASK_TIMEOUT)
        if llm is None:
            raise ModelUnavailable("the embedded backend is configured but its model cannot "
                                   "load here (llama-cpp-python and the model file are needed: "
                                   "`make model`)")
    try:
        if hasattr(llm, "next_token_logprobs"):
            lp = np.asarray(llm.next_token_logprobs(prompt), float)
            top = np.argsort(-lp, kind="stable")[:SHOWN]
            m = llm.loaded()
            return NextToken(prompt, lp, [m.token_text(int(i)) for i in top], top, True,
                             f"{os.path.basename(m.path)} (embedded): the token after the text")
        if not hasattr(llm, "first_token_logprobs"):
            raise ModelUnavailable(f"the {type(llm).__name__} backend gives no log-probabilities")
        pairs = llm.first_token_logprobs([UserMessage(prompt)], SHOWN)
    except ModelError as e:
        raise ModelUnavailable(str(e)) from None
    if not pairs:
        raise ModelUnavailable("the backend sent no log-probabilities for this prompt")
    names, lp = [t for t, _ in pairs], np.array([v for _, v in pairs], float)
    mass = float(np.exp(lp).sum())
    return NextToken(prompt, lp, names, np.arange(len(names)), False,
                     f"{getattr(llm, 'model', type(llm).__name__)}: the first token of a reply",
                     f"This backend sends only the top {len(names)} log-probabilities (their "
                     f"mass at T = 1: {mass:.2f}); the controls act on those {len(names)}, "
                     "renormalised.")


def _axes_setup(ax, dist: NextToken):
    x = np.arange(len(dist.names) + 1)
    ax.set_xticks(x, [token_label(t) for t in dist.names] + [dist.rest_label], rotation=60,
                  ha="right", fontsize=8)
    ax.get_xticklabels()[-1].set_fontstyle("italic")
    ax.set_xlim(-0.6, len(x) - 0.4)
    ax.set_ylim(0, 1.05)
    return x


class RealTemperaturePlot:
    """P_T of a ``NextToken``: named tokens (the argmax in red), the rest of the vocabulary as
    one grey bar, the T = 1 ticks; ``update(T)`` changes heights and the title only."""

    def __init__(self, ax, dist: NextToken, T=1.0):
        self.ax, self.dist = ax, dist
        x = _axes_setup(ax, dist)
        self.bars = Bars(ax, x, [ARGMAX] + [KEPT] * (len(x) - 2) + [DROPPED])
        native, _ = dist.bars(1.0)
        ax.scatter(x, native, marker="_", s=250, color=NATIVE, zorder=3, label="T = 1 (native)")
        ax.set_ylabel("probability")
        ax.legend(loc="upper right", fontsize=9, frameon=False)
        self.update(T)

    def changing_artists(self):
        return [self.bars.artist, self.ax.title]

    def update(self, T):
        full = temperature_softmax(self.dist.logprobs, T)
        P = self.dist.with_rest(full)
        self.bars.set(P)
        kind = " (one-hot: greedy)" if T == 0 else ""
        self.ax.set_title(f"“{self.dist.prompt[-60:]} …”   T = {T:.2f}{kind}\n"
                          f"H = {entropy(full):.2f} bits over all {len(full)} tokens   "
                          f"P(argmax) = {P[0]:.2f}   rest = {P[-1]:.2f}", fontsize=10)
        return P


class RealTruncationPlot:
    """top-k (left) and top-p (right) after temperature on a ``NextToken``: P_T in grey, kept
    and renormalised in blue, dropped in orange; ``update(T, k, p)`` changes heights, colours
    and titles only."""

    def __init__(self, fig, dist: NextToken, T=1.0, k=5, p=0.9):
        self.dist = dist
        self.axes = fig.subplots(1, 2, sharey=True)
        self.sets = []
        for ax in self.axes:
            x = _axes_setup(ax, dist)
            self.sets.append((Bars(ax, x, DROPPED, label="P_T (before)"),
                              Bars(ax, x, KEPT, width=0.5, label="kept, renormalised")))
        handles = [Patch(color=c, label=t) for c, t in
                   ((DROPPED, "P_T (before)"), (KEPT, "kept, renormalised"), (MASKED, "dropped"))]
        self.axes[0].legend(handles=handles, fontsize=8, frameon=False, loc="upper right")
        self.title = fig.suptitle("", fontsize=10)
        self.update(T, k, p)

    def changing_artists(self):
        return [b.artist for s in self.sets for b in s] + [ax.title for ax in self.axes] + \
            [self.title]

    def update(self, T, k, p):
        full = temperature_softmax(self.dist.logprobs, T)
        P = self.dist.with_rest(full)
        for ax, (before, kept), rule in zip(self.axes, self.sets, ("k", "p")):
            filt = self.dist.truncate(full, k=k) if rule == "k" else \
                self.dist.truncate(full, p=p)
            Q = self.dist.with_rest(filt)
            before.set(P, [DROPPED if q > 1e-12 else MASKED for q in Q])
            kept.set(Q)
            n, mass = int((filt > 0).sum()), float(full[filt > 0].sum())
            what = f"top-k, k = {k}: keeps" if rule == "k" else f"top-p, p = {p:.2f}: nucleus ="
            ax.set_title(f"{what} {count(n)} (mass {mass:.2f})", fontsize=9)
        self.title.set_text(f"“{self.dist.prompt[-60:]} …”: temperature T = {T:.2f} first, "
                            "then truncation")


class RealSource:
    """The controls of the "real model" source of a widget: a prompt box, an "ask the model"
    button and a status line.  The model is asked once per prompt (``cache``); a slider move
    only redraws."""

    def __init__(self, prompt: str = DEFAULT_PROMPT, ask=None):
        import ipywidgets as w

        self.text = w.Text(value=prompt, description="prompt", continuous_update=False,
                           layout=w.Layout(width="480px"))
        self.button = w.Button(description="ask the model")
        self.status = w.HTML()
        self.row = w.HBox([self.text, self.button])
        self.row.add_class("lreact-real-source")
        self.box = w.VBox([self.row, self.status])
        self.cache, self._ask = {}, ask     # None: ask_model (looked up at each ask)
        self.show(False)

    def show(self, on: bool):
        self.row.layout.display = None if on else "none"

    def distribution(self):
        """The distribution after the typed prompt (asked now unless already asked), or None
        after saying why in the status line."""
        import html

        prompt = self.text.value
        if prompt not in self.cache:
            try:
                self.cache[prompt] = (self._ask or ask_model)(prompt)
            except (ModelUnavailable, ValueError) as e:
                self.status.value = (f"<span style='color:#b00'>No real distribution: "
                                     f"{html.escape(str(e))}. The example stays on; everything "
                                     "else works without a model.</span>")
                return None
        d = self.cache[prompt]
        self.status.value = html.escape(d.source + (". " + d.note if d.note else ""))
        return d
