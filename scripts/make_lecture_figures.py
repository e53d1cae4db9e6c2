"""Regenerate the static fallback images of the lecture (``lectures/figures/*.png``).

Each widget of the lecture has a picture drawn by the same package code (``lreact.views.figures``), so the notebooks read
on GitHub and nbviewer where widgets do not run; the evidence figures of Part I and II are drawn
from the numbers the lecture cites.  Run:  python scripts/make_lecture_figures.py
"""
from __future__ import annotations

import sys
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

from lreact.views import figures

OUT = Path(__file__).resolve().parent.parent / "lectures" / "figures"
DPI = 100


def _figure(w, h):
    fig = Figure(figsize=(w, h))
    FigureCanvasAgg(fig)
    return fig


def speedups_figure():
    """Speculative decoding, measured wall-clock speed-ups (Leviathan et al., 2023: T5-XXL with a
    T5-small drafter, 2.3x to 3.4x; Chen et al., 2023: Chinchilla 70B, 2x to 2.5x)."""
    fig = _figure(6.5, 2.6)
    ax = fig.add_subplot()
    rows = [("Leviathan et al. 2023\nT5-XXL + T5-small drafter", 2.3, 3.4),
            ("Chen et al. 2023\nChinchilla 70B", 2.0, 2.5)]
    for i, (name, lo, hi) in enumerate(rows):
        ax.barh(i, hi - lo, left=lo, color="#1f77b4", height=0.5)
        ax.text(hi + 0.05, i, f"{lo:g}x – {hi:g}x", va="center")
    ax.set_yticks(range(len(rows)), [r[0] for r in rows])
    ax.set_xlim(1, 4)
    ax.axvline(1, color="black")
    ax.set_xlabel("speed-up of generation vs the large model alone (same output distribution)")
    ax.invert_yaxis()
    fig.tight_layout()
    return fig


def _box(ax, xy, text, colour):
    x, y = xy
    ax.add_patch(FancyBboxPatch((x - 0.5, y - 0.25), 1.0, 0.5, boxstyle="round,pad=0.05",
                                fc=colour, ec="black"))
    ax.text(x, y, text, ha="center", va="center", fontsize=11)


def _arrow(ax, a, b, text="", rad=0.35, colour="black"):
    ax.add_patch(FancyArrowPatch(a, b, connectionstyle=f"arc3,rad={rad}", arrowstyle="-|>",
                                 mutation_scale=15, color=colour, lw=1.5))
    mx, my = (a[0] + b[0]) / 2, (a[1] + b[1]) / 2
    if text:
        ax.text(mx + (0.25 if rad > 0 else -0.25) * (1 if a[1] < b[1] else -1), my, text,
                fontsize=9, ha="center", va="center", color=colour)


def three_loops_figure():
    """Reason only, Act only, ReAct: which arrows leave the LM and which pass the environment
    (redrawn after Yao et al., 2023, Fig. 1 idea)."""
    fig = _figure(11, 3.4)
    titles = ["Reason only (CoT)", "Act only", "ReAct"]
    for i, title in enumerate(titles):
        ax = fig.add_subplot(1, 3, i + 1)
        ax.set_xlim(-1.3, 1.3)
        ax.set_ylim(-1.2, 1.4)
        ax.axis("off")
        ax.set_title(title)
        _box(ax, (0, 0.9), "LM", "#c6dbef")
        if i in (1, 2):
            _box(ax, (0, -0.8), "Env", "#fdd0a2")
            _arrow(ax, (-0.3, 0.62), (-0.3, -0.52), "action", rad=0.3)
            _arrow(ax, (0.3, -0.52), (0.3, 0.62), "observation", rad=0.3)
        if i in (0, 2):
            _arrow(ax, (0.55, 1.0), (0.55, 0.75), "", rad=-2.5, colour="#2ca02c")
            ax.text(1.28, 1.3, "thought (no observation)", fontsize=9, color="#2ca02c",
                    ha="right")  # ends inside the panel, not at the edge of the picture
    fig.tight_layout()
    return fig


def thought_ablation_figure():
    """Trajectory tuning with and without the thought in every step (Song et al., 2024, Tab. 7:
    unweighted mean of task scores 0-100, three fine-tuned models), and the MMLU cost of leaving
    out general instruction data (Tab. 6)."""
    fig = _figure(11, 3.6)
    ax1, ax2, ax3 = fig.subplots(1, 3, gridspec_kw={"width_ratios": [3, 3, 1.4]})
    held_out = [(29.5, 22.8), (30.0, 27.5), (36.1, 31.8)]
    held_in = [(41.6, 41.2), (45.2, 45.5), (45.4, 43.6)]
    for ax, data, title in ((ax1, held_out, "held-out tasks (5, unseen in training)"),
                            (ax2, held_in, "held-in tasks")):
        for j, (with_t, without_t) in enumerate(data):
            ax.bar(j - 0.18, with_t, 0.36, color="#1f77b4",
                   label="with thought" if j == 0 else None)
            ax.bar(j + 0.18, without_t, 0.36, color="#ff7f0e",
                   label="without thought" if j == 0 else None)
            ax.text(j - 0.18, with_t + 0.8, f"{with_t}", ha="center", fontsize=8)
            ax.text(j + 0.18, without_t + 0.8, f"{without_t}", ha="center", fontsize=8)
        ax.set_xticks(range(3), ["model 1", "model 2", "model 3"])
        ax.set_ylim(0, 55)
        ax.set_title(title, fontsize=10)
    ax1.set_ylabel("mean task score (0–100)")
    ax1.legend(fontsize=8, frameon=False, loc="upper left")
    ax3.bar([0, 1], [47.7, 23.1], color=["#1f77b4", "#d62728"])
    ax3.set_xticks([0, 1], ["with general\ndata", "trajectories\nonly"], fontsize=8)
    ax3.set_ylim(0, 55)  # room above the tallest bar for its label
    ax3.set_title("MMLU accuracy (%)", fontsize=10)
    for j, v in enumerate([47.7, 23.1]):
        ax3.text(j, v + 0.8, f"{v}", ha="center", fontsize=8)
    fig.suptitle("Song et al. (2024), AgentBank: what the thought and the data mixture buy",
                 fontsize=10)
    fig.tight_layout()
    return fig


FIGURES = {
    "temperature.png": lambda: figures.temperature_figure(),
    "truncation.png": lambda: figures.truncation_figure(k=5, p=0.9, T=1.0),
    "constrained-decoding.png": lambda: figures.constrained_figure(3),
    "context-budget-multi-tool.png": lambda: figures.context_budget_figure(
        "multi-tool run (5 tool calls)"),
    "speculative-speedups.png": speedups_figure,
    "three-loops.png": three_loops_figure,
    "thought-ablation.png": thought_ablation_figure,
}


def main(out=OUT):
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for name, make in FIGURES.items():
        fig = make()
        fig.savefig(out / name, dpi=DPI, bbox_inches="tight",
                    metadata={"Software": None})  # no version stamp: stable bytes
        print("wrote", out / name)


if __name__ == "__main__":
    main(*sys.argv[1:])
