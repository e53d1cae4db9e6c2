"""The lecture's pictures: the panels its widgets redraw and the static figures drawn from them
(the fallback images in ``lectures/figures/``, written by ``scripts/make_lecture_figures.py``).

- ``TemperaturePlot``, ``temperature_figure``        Part I, "Temperature scaling"
- ``truncation_panel``, ``truncation_figure``        Part I, "Truncated sampling: top-k and top-p"
- ``constrained_panel``, ``constrained_figure``      Part I, "Constrained decoding"
- ``budget_bars``, ``context_budget_figure``         Part IV, "The context budget"
- ``sampling_panel``                                 Part I with a real model's first token
"""
from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from .. import grammar
from ..sampling import entropy, softmax, temperature_softmax, top_k_filter, top_p_filter
from ..traces import CONTEXT_WINDOW, TRACES, context_segments, model_calls
from .canvas import new_figure
from .examples import FLAT, PEAKED, WEATHER_20

KEPT, DROPPED, NATIVE, ARGMAX, MASKED = "#1f77b4", "#d9d9d9", "#444444", "#d62728", "#f4a582"
SEGMENT_COLOURS = {"system": "#7f7f7f", "tools": "#bcbd22", "user": "#2ca02c",
                   "assistant": "#1f77b4", "tool": "#ff7f0e", "open": "#17becf",
                   "retrieved": "#9467bd", "free": "#f0f0f0"}


def token_label(token: str) -> str:
    """A token as a tick label: shown as is, or escaped when it has surrounding spaces."""
    return repr(token)[1:-1] if token.strip() != token or not token else token


def count(n: int, what: str = "token") -> str:
    """'1 token', '5 tokens'."""
    return f"{n} {what}" if n == 1 else f"{n} {what}s"


# ---------------------------------------------------------------------------------------------
# Temperature
# ---------------------------------------------------------------------------------------------
class TemperaturePlot:
    """Bars of P_T over the tokens; the argmax in red; T = 1 as black ticks; entropy in the title.
    ``update(T)`` changes bar heights and texts only (fast)."""

    def __init__(self, ax, dist, T=1.0, show_prompt=True):
        self.ax, self.dist, self.show_prompt = ax, dist, show_prompt
        tokens, z = dist["tokens"], np.asarray(dist["logits"], float)
        x = np.arange(len(tokens))
        self.bars = ax.bar(x, np.zeros(len(tokens)), color=KEPT)
        self.native = ax.scatter(x, softmax(z), marker="_", s=300, color=NATIVE, zorder=3,
                                 label="T = 1 (native)")
        self.argmax = int(np.argmax(z))
        self.bars[self.argmax].set_color(ARGMAX)
        many = len(tokens) > 6
        ax.set_xticks(x, [token_label(t) for t in tokens], rotation=60 if many else 0,
                      ha="right" if many else "center", fontsize=9)
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("probability")
        ax.legend(loc="upper right", fontsize=9, frameon=False)
        self.note = ax.text(self.argmax, 0, "argmax", ha="center", color=ARGMAX, fontsize=9)
        self.update(T)

    def changing_artists(self):
        """What ``update`` changes, in drawing order (bars first, the native ticks on top)."""
        return [*self.bars, self.native, self.note, self.ax.title]

    def update(self, T):
        z = np.asarray(self.dist["logits"], float)
        p = temperature_softmax(z, T)
        for bar, h in zip(self.bars, p):
            bar.set_height(h)
        top = float(p[self.argmax])
        if top > 0.85:  # a tall bar: the label goes beside its top, inside the frame
            self.note.set(x=self.argmax + 0.5, y=top, ha="left", va="top")
        else:
            self.note.set(x=self.argmax, y=top + 0.01, ha="center", va="bottom")
        h, hmax = entropy(p) + 0.0, np.log2(len(p))
        kind = " (one-hot: greedy)" if T == 0 else ""
        prompt = f"“{self.dist['prompt']} …”   " if self.show_prompt else ""
        self.ax.set_title(f"{prompt}T = {T:.2f}{kind}\n"
                          f"entropy H = {h:.2f} bits (uniform: {hmax:.2f})   "
                          f"P(argmax) = {top:.2f}", fontsize=10)
        return p


def temperature_figure(dist=WEATHER_20, temperatures=(0.0, 0.5, 1.0, 3.0)) -> Figure:
    """One panel per temperature."""
    cols = 2 if len(temperatures) == 4 else len(temperatures)
    rows = -(-len(temperatures) // cols)
    fig = new_figure(5.2 * cols, 3.4 * rows + 0.4)
    axes = fig.subplots(rows, cols, sharey=True)
    for ax, T in zip(np.ravel(axes), temperatures):
        TemperaturePlot(ax, dist, T, show_prompt=False)
    fig.suptitle(f"next token after “{dist['prompt']} …”", fontsize=11)
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------------------------------------
# Truncation: top-k and top-p
# ---------------------------------------------------------------------------------------------
def truncation_panel(ax, dist, T, rule, value):
    """P_T in grey, what ``rule`` ("k" or "p") keeps in blue (renormalised), the rest in orange;
    returns how many tokens are kept."""
    z = np.asarray(dist["logits"], float)
    p = temperature_softmax(z, T)
    q = top_k_filter(p, value) if rule == "k" else top_p_filter(p, value)
    kept = q > 0
    x = np.arange(len(p))
    ax.bar(x, p, color=DROPPED, label="P_T (before)")
    ax.bar(x[kept], q[kept], width=0.5, color=KEPT, label="kept, renormalised")
    ax.bar(x[~kept], p[~kept], color=MASKED, label="dropped")
    ax.set_xticks(x, [token_label(t) for t in dist["tokens"]], rotation=70, ha="right",
                  fontsize=8)
    ax.set_ylim(0, 1.05)
    n = int(kept.sum())
    if rule == "k":
        title = f"top-k, k = {value}: keeps {count(n)} (mass {p[kept].sum():.2f})"
    else:
        title = f"top-p, p = {value:.2f}: nucleus = {count(n)} (mass {p[kept].sum():.2f})"
    ax.set_title(f"“{dist['prompt']} …”\n{title}", fontsize=9)
    return n


def truncation_figure(k=5, p=0.9, T=1.0) -> Figure:
    """2 x 2 panels: rows peaked / flat distribution, columns top-k / top-p."""
    fig = new_figure(11, 7.2)
    axes = fig.subplots(2, 2, sharey=True)
    for row, dist in enumerate([PEAKED, FLAT]):
        truncation_panel(axes[row, 0], dist, T, "k", k)
        truncation_panel(axes[row, 1], dist, T, "p", p)
    axes[0, 0].legend(fontsize=8, frameon=False, loc="upper right")
    fig.suptitle(f"temperature T = {T:.2f} applied first, then truncation", fontsize=10)
    fig.tight_layout()
    return fig


def sampling_panel(ax, tokens, logits, prompt, T, k, p):
    """Temperature, then top-k, then top-p on any (tokens, logits): what can still be drawn."""
    P = temperature_softmax(np.asarray(logits, float), T)
    Q = top_p_filter(top_k_filter(P, k), p)
    x = np.arange(len(P))
    kept = Q > 0
    ax.bar(x, P, color=DROPPED, label="after temperature")
    ax.bar(x[kept], Q[kept], width=0.5, color=KEPT, label="after top-k and top-p")
    ax.set_xticks(x, [repr(t) for t in tokens], rotation=70, ha="right", fontsize=8)
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=8, frameon=False)
    ax.set_title(f"“{prompt[-50:]} …”  T = {T:.2f}, k = {k}, p = {p:.2f}: "
                 f"{count(int(kept.sum()))} can be drawn, H = {entropy(Q):.2f} bits", fontsize=9)


# ---------------------------------------------------------------------------------------------
# Constrained decoding over lreact.grammar
# ---------------------------------------------------------------------------------------------
def constrained_panel(fig, prefix_ids):
    """P with A(s_t) marked, and the masked P' (lecture formula), for the step after
    ``prefix_ids``; when the grammar is done, says so instead of drawing an empty P'."""
    step = grammar.constrained_step(prefix_ids)
    ax1, ax2 = fig.subplots(2, 1, sharex=True)
    x = np.arange(len(grammar.VOCAB))
    colours = [KEPT if i in step["allowed"] else MASKED for i in x]
    ax1.bar(x, step["P"], color=colours)
    ax1.set_yscale("log")
    ax1.set_ylim(1e-4, 1.5)
    ax1.set_ylabel("P (model, log scale)")
    ax2.set_ylim(0, 1.05)
    ax2.set_ylabel("P' (masked)")
    if step["done"]:
        ax1.set_title(f"step t = {len(prefix_ids)}   <eos> emitted: the text is one complete "
                      "tool call, so nothing is left to sample", fontsize=9)
        ax2.text(0.5, 0.5, "finished: the grammar allows no further token", ha="center",
                 va="center", transform=ax2.transAxes, fontsize=11, color=NATIVE)
    else:
        ax1.set_title(f"step t = {len(prefix_ids)}   state s_t = {step['state']}   "
                      f"|A(s_t)| = {len(step['allowed'])}   mass removed by the mask = "
                      f"{step['removed_mass']:.2f}", fontsize=9)
        ax2.bar(x, step["P_prime"], color=KEPT)
    ax1.legend(handles=[Patch(color=KEPT, label="in A(s_t)"),
                        Patch(color=MASKED, label="masked out")], fontsize=8, frameon=False,
               loc="upper right")
    ax2.set_xticks(x, [repr(t)[1:-1] for t in grammar.VOCAB], rotation=70, ha="right",
                   fontsize=8)
    fig.tight_layout()
    return step


def constrained_figure(n_steps: int = 3) -> Figure:
    """The step after the greedy constrained prefix of ``n_steps`` tokens."""
    prefix = []
    for _ in range(n_steps):
        prefix.append(int(np.argmax(grammar.constrained_step(prefix)["P_prime"])))
    fig = new_figure(10, 5.5)
    constrained_panel(fig, prefix)
    fig.suptitle("text so far: " + (grammar.detokenize(prefix) or "(empty)"), fontsize=10, y=1.0)
    return fig


# ---------------------------------------------------------------------------------------------
# The context budget
# ---------------------------------------------------------------------------------------------
def budget_bars(ax, calls, tools, upto, window, retrieved=0):
    """One horizontal stacked bar per model call 1..upto: what that call sent.  The axis always
    reaches past the longest bar, so a call larger than the window keeps every segment visible;
    its label turns red."""
    totals = []
    for k, msgs in enumerate(calls[:upto]):
        left = 0
        segs = context_segments(msgs, tools)
        if retrieved:
            segs = segs[:2] + [("retrieved documents", "retrieved", "", retrieved)] + segs[2:]
        for _, kind, _, n in segs:
            ax.barh(k, n, left=left, color=SEGMENT_COLOURS[kind], edgecolor="white",
                    linewidth=0.5)
            left += n
        ax.barh(k, max(window - left, 0), left=left, color=SEGMENT_COLOURS["free"])
        totals.append(left)
    xmax = max([window, *totals]) * 1.25
    for k, left in enumerate(totals):
        over = left > window
        ax.text(left + xmax * 0.01, k,
                f"{left} tok ({100 * left / window:.0f} %)", va="center", fontsize=8,
                color=ARGMAX if over else "black", fontweight="bold" if over else "normal")
    ax.axvline(window, color=ARGMAX, lw=1.5)
    ax.set_xlim(0, xmax)
    ax.set_ylim(len(calls) - 0.5, -0.5)
    ax.set_yticks(range(len(calls)), [f"call {k + 1}" for k in range(len(calls))], fontsize=9)
    ax.set_xlabel(f"approximate tokens (characters / 4); red line = context window {window}")
    kinds = [k for k in ("system", "tools", "retrieved", "user", "assistant", "tool")
             if k != "retrieved" or retrieved]
    ax.legend(handles=[Patch(color=SEGMENT_COLOURS[k], label=k) for k in kinds], fontsize=8,
              ncol=6, loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False)
    return totals


def context_budget_figure(trace="multi-tool run (5 tool calls)", window=CONTEXT_WINDOW) -> Figure:
    """Every call of a trace as a stacked bar of what it re-sent."""
    history, tools = TRACES[trace]()
    calls = model_calls(history)
    fig = new_figure(10, 1.2 + 0.6 * len(calls))
    ax = fig.add_subplot()
    budget_bars(ax, calls, tools, len(calls), window)
    total = sum(sum(s[3] for s in context_segments(c, tools)) for c in calls)
    ax.set_title(f"{trace}: {len(calls)} model calls, {total} tokens sent in total", fontsize=10,
                 pad=28)
    fig.tight_layout()
    return fig
