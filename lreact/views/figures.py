"""The lecture's pictures: the panels its widgets redraw and the static figures drawn from them
(the fallback images in ``lectures/figures/``, written by ``scripts/make_lecture_figures.py``).
Each ``...Plot`` draws its axes once and says which artists an ``update`` changes
(``changing_artists``), so a widget redraws by a blit (``lreact.views.canvas.Blitter``).

- ``TemperaturePlot``, ``temperature_figure``        Part I, "Temperature scaling"
- ``TruncationPlot``, ``truncation_figure``          Part I, "Truncated sampling: top-k and top-p"
- ``ConstrainedPlot``, ``constrained_figure``        Part I, "Constrained decoding"
- ``BudgetPlot``, ``context_budget_figure``          Part IV, "The context budget"
- ``SamplingPlot``                                   Part I with a real model's first token
"""
from __future__ import annotations

import numpy as np
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from .. import grammar
from ..sampling import entropy, softmax, temperature_softmax, top_k_filter, top_p_filter
from ..traces import CONTEXT_WINDOW, TRACES, context_segments, model_calls
from .canvas import Bars, new_figure
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
def _truncated(dist, T, rule, value):
    """(P_T, the kept distribution) of an example distribution after temperature and ``rule``."""
    p = temperature_softmax(np.asarray(dist["logits"], float), T)
    return p, (top_k_filter(p, value) if rule == "k" else top_p_filter(p, value))


def _truncation_title(p, q, rule, value):
    """The changing line over a truncation panel, and the number of kept tokens."""
    kept = q > 0
    n, mass = int(kept.sum()), p[kept].sum()
    what = f"top-k, k = {value}: keeps" if rule == "k" else f"top-p, p = {value:.2f}: nucleus ="
    return f"{what} {count(n)} (mass {mass:.2f})", n


def panel_headline(ax, static, fontsize=9):
    """A two-line axes title whose first line, ``static``, is drawn once (the title) and whose
    second line is a Text returned for ``update`` to change: a blit then renders only the short
    changing line (text is the slow part of a redraw)."""
    from matplotlib.transforms import offset_copy

    ax.set_title(static + "\n", fontsize=fontsize)
    return ax.figure.text(0.5, 1.0, "", transform=offset_copy(ax.transAxes, fig=ax.figure, y=6,
                                                              units="points"),
                          ha="center", va="bottom", fontsize=fontsize)


class TruncationPlot:
    """The 2 x 2 truncation explorer (rows: peaked, flat; columns: top-k, top-p), drawn once;
    ``update(T, k, p)`` changes bar heights, colours and titles only (a blit)."""

    def __init__(self, fig, T=1.0, k=5, p=0.9, dists=(PEAKED, FLAT)):
        self.dists = dists
        self.axes = fig.subplots(len(dists), 2, sharey=True, squeeze=False)
        self.sets, self.lines = [], []
        for row, dist in zip(self.axes, dists):
            x = np.arange(len(dist["tokens"]))
            for ax in row:
                self.sets.append((Bars(ax, x, DROPPED), Bars(ax, x, KEPT, width=0.5)))
                self.lines.append(panel_headline(ax, f"“{dist['prompt']} …”"))
                ax.set_xticks(x, [token_label(t) for t in dist["tokens"]], rotation=70,
                              ha="right", fontsize=8)
                ax.set_xlim(-0.6, len(x) - 0.4)
                ax.set_ylim(0, 1.05)
        handles = [Patch(color=c, label=t) for c, t in
                   ((DROPPED, "P_T (before)"), (KEPT, "kept, renormalised"), (MASKED, "dropped"))]
        self.axes[0, 0].legend(handles=handles, fontsize=8, frameon=False, loc="upper right")
        self.title = fig.suptitle("", fontsize=10)
        self.update(T, k, p)

    def changing_artists(self):
        return [b.artist for pair in self.sets for b in pair] + self.lines + [self.title]

    def update(self, T, k, p):
        """Redraw for temperature ``T``, top-k ``k`` and top-p ``p``; returns the kept counts."""
        kept_counts = []
        panels = [(ax, dist, rule, value) for row, dist in zip(self.axes, self.dists)
                  for ax, rule, value in zip(row, ("k", "p"), (k, p))]
        for (ax, dist, rule, value), (before, kept), line in zip(panels, self.sets, self.lines):
            P, Q = _truncated(dist, T, rule, value)
            before.set(P, [DROPPED if q > 0 else MASKED for q in Q])
            kept.set(Q)
            text, n = _truncation_title(P, Q, rule, value)
            line.set_text(text)
            kept_counts.append(n)
        self.title.set_text(f"T = {T:.2f} first, then truncation")
        return kept_counts


def truncation_figure(k=5, p=0.9, T=1.0) -> Figure:
    """2 x 2 panels: rows peaked / flat distribution, columns top-k / top-p."""
    fig = new_figure(11, 7.2)
    TruncationPlot(fig, T, k, p)
    fig.tight_layout()
    return fig


class SamplingPlot:
    """Temperature, then top-k, then top-p on any (tokens, logits): what can still be drawn.
    Drawn once; ``update(T, k, p)`` changes bar heights and the title only (a blit)."""

    def __init__(self, ax, tokens, logits, prompt, T=1.0, k=20, p=1.0):
        self.ax, self.logits, self.prompt = ax, np.asarray(logits, float), prompt
        x = np.arange(len(self.logits))
        self.before = Bars(ax, x, DROPPED, label="after temperature")
        self.kept = Bars(ax, x, KEPT, width=0.5, label="after top-k and top-p")
        ax.set_xticks(x, [repr(t) for t in tokens], rotation=70, ha="right", fontsize=8)
        ax.set_xlim(-0.6, len(x) - 0.4)
        ax.set_ylim(0, 1.05)
        ax.legend(fontsize=8, frameon=False, loc="upper right")
        self.update(T, k, p)

    def changing_artists(self):
        return [self.before.artist, self.kept.artist, self.ax.title]

    def update(self, T, k, p):
        P = temperature_softmax(self.logits, T)
        Q = top_p_filter(top_k_filter(P, k), p)
        self.before.set(P)
        self.kept.set(Q)
        self.ax.set_title(f"“{self.prompt[-50:]} …”  T = {T:.2f}, k = {k}, p = {p:.2f}: "
                          f"{count(int((Q > 0).sum()))} can be drawn, H = {entropy(Q):.2f} bits",
                          fontsize=9)
        return Q


def sampling_panel(ax, tokens, logits, prompt, T, k, p):
    """``SamplingPlot`` at one setting (a static picture)."""
    return SamplingPlot(ax, tokens, logits, prompt, T, k, p).update(T, k, p)


# ---------------------------------------------------------------------------------------------
# Constrained decoding over lreact.grammar
# ---------------------------------------------------------------------------------------------
class ConstrainedPlot:
    """P with A(s_t) marked (top, log scale) and the masked P' (bottom), drawn once;
    ``update(prefix_ids)`` shows the step after ``prefix_ids`` by changing bar heights, colours
    and texts only; when the grammar is done it says so instead of drawing an empty P'."""

    FLOOR = 1e-4    # the log axis starts here, and so do its bars

    def __init__(self, fig, prefix_ids=()):
        self.ax1, self.ax2 = fig.subplots(2, 1, sharex=True)
        x = np.arange(len(grammar.VOCAB))
        self.P = Bars(self.ax1, x, KEPT, bottom=self.FLOOR)
        self.P_prime = Bars(self.ax2, x, KEPT)
        self.ax1.set_yscale("log")
        self.ax1.set_ylim(self.FLOOR, 1.5)
        self.ax1.set_xlim(-0.6, len(x) - 0.4)
        self.ax1.set_ylabel("P (model, log scale)")
        self.ax2.set_ylim(0, 1.05)
        self.ax2.set_ylabel("P' (masked)")
        self.finished = self.ax2.text(0.5, 0.5, "finished: the grammar allows no further token",
                                      ha="center", va="center", transform=self.ax2.transAxes,
                                      fontsize=11, color=NATIVE)
        self.ax1.legend(handles=[Patch(color=KEPT, label="in A(s_t)"),
                                 Patch(color=MASKED, label="masked out")], fontsize=8,
                        frameon=False, loc="upper right")
        self.ax2.set_xticks(x, [repr(t)[1:-1] for t in grammar.VOCAB], rotation=70, ha="right",
                            fontsize=8)
        self.update(list(prefix_ids))

    def changing_artists(self):
        return [self.P.artist, self.P_prime.artist, self.finished, self.ax1.title]

    def update(self, prefix_ids):
        self.step = step = grammar.constrained_step(list(prefix_ids))
        allowed = set(step["allowed"])
        self.P.set(step["P"], [KEPT if i in allowed else MASKED
                               for i in range(len(grammar.VOCAB))])
        self.finished.set_visible(step["done"])
        if step["done"]:
            self.P_prime.set(np.zeros(len(grammar.VOCAB)))
            self.ax1.set_title(f"step t = {len(prefix_ids)}   <eos> emitted: the text is one "
                               "complete tool call, so nothing is left to sample", fontsize=9)
        else:
            self.P_prime.set(step["P_prime"])
            self.ax1.set_title(f"step t = {len(prefix_ids)}   state s_t = {step['state']}   "
                               f"|A(s_t)| = {len(step['allowed'])}   mass removed by the mask = "
                               f"{step['removed_mass']:.2f}", fontsize=9)
        return step


def constrained_panel(fig, prefix_ids):
    """``ConstrainedPlot`` at the step after ``prefix_ids`` (a static picture); returns the
    step (``grammar.constrained_step``)."""
    step = ConstrainedPlot(fig, prefix_ids).step
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
class BudgetPlot:
    """One horizontal stacked bar per model call: what that call sent (system prompt, tool
    schemas, retrieved documents, messages), the free rest of the ``window``, and a label with
    the total.  Every call is drawn once; ``update(upto, retrieved)`` shows calls 1..upto with
    ``retrieved`` tokens of documents in each (a blit, while the axis still fits: see
    ``fits``).  The axis reaches past the longest bar, so a call larger than the window keeps
    every segment visible; its label turns red."""

    def __init__(self, ax, calls, tools, window, retrieved=0, upto=None):
        self.ax, self.window = ax, window
        self.segments = [context_segments(msgs, tools) for msgs in calls]
        self.rows = [PolyCollection([], edgecolors="white", linewidths=0.5) for _ in calls]
        for bar in self.rows:
            ax.add_collection(bar)
        self.xmax = self._xmax(retrieved)
        self.labels = [ax.text(0, k, "", va="center", fontsize=8) for k in range(len(calls))]
        self.line = ax.axvline(window, color=ARGMAX, lw=1.5)
        ax.set_xlim(0, self.xmax)
        ax.set_ylim(len(calls) - 0.5, -0.5)
        ax.set_yticks(range(len(calls)), [f"call {k + 1}" for k in range(len(calls))], fontsize=9)
        ax.set_xlabel(f"approximate tokens (characters / 4); red line = context window {window}")
        kinds = [k for k in ("system", "tools", "retrieved", "user", "assistant", "tool")
                 if k != "retrieved" or retrieved]
        ax.legend(handles=[Patch(color=SEGMENT_COLOURS[k], label=k) for k in kinds], fontsize=8,
                  ncol=6, loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False)
        self.update(len(calls) if upto is None else upto, retrieved)

    def _segs(self, k, retrieved):
        segs = self.segments[k]
        if retrieved:
            segs = segs[:2] + [("retrieved documents", "retrieved", "", retrieved)] + segs[2:]
        return segs

    def _xmax(self, retrieved):
        totals = [sum(n for *_, n in self._segs(k, retrieved)) for k in range(len(self.segments))]
        return max([self.window, *totals]) * 1.25

    def fits(self, retrieved) -> bool:
        """Whether ``retrieved`` keeps the axis (and the legend) as drawn; if not, draw anew."""
        return self._xmax(retrieved) == self.xmax and (retrieved > 0) == self.with_retrieved

    def changing_artists(self):
        return [*self.rows, *self.labels, self.line, self.ax.title]

    def update(self, upto, retrieved=0):
        """Show calls 1..upto with ``retrieved`` tokens of documents each; their totals."""
        self.with_retrieved = retrieved > 0
        self.totals = []
        for k, (bar, label) in enumerate(zip(self.rows, self.labels)):
            segs = self._segs(k, retrieved)
            total = sum(n for *_, n in segs)
            lefts = np.cumsum([0] + [n for *_, n in segs])
            ends = [(left, n) for left, (*_, n) in zip(lefts, segs)]
            ends.append((total, max(self.window - total, 0)))
            bar.set_verts([[(x, k - 0.4), (x, k + 0.4), (x + n, k + 0.4), (x + n, k - 0.4)]
                           for x, n in ends])
            bar.set_facecolor([SEGMENT_COLOURS[kind] for _, kind, _, _ in segs]
                              + [SEGMENT_COLOURS["free"]])
            over = total > self.window
            label.set(x=total + self.xmax * 0.01, text=f"{total} tok "
                      f"({100 * total / self.window:.0f} %)", color=ARGMAX if over else "black",
                      fontweight="bold" if over else "normal")
            bar.set_visible(k < upto)
            label.set_visible(k < upto)
            self.totals.append(total)
        shown = self.totals[:upto]
        self.ax.set_title(f"tokens sent so far, summed over calls 1..{upto}: {sum(shown)}",
                          fontsize=10, pad=26)
        return shown


def budget_bars(ax, calls, tools, upto, window, retrieved=0):
    """``BudgetPlot`` showing calls 1..upto; returns their totals."""
    return BudgetPlot(ax, calls, tools, window, retrieved, upto).totals[:upto]


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
