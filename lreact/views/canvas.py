"""Drawing for the lecture's widgets: matplotlib's Agg canvas into PNG bytes, without pyplot (so
nothing is displayed twice), and a blitter that redraws only what a slider changes.

``new_figure(w, h)`` is a figure with its own Agg canvas; ``png(fig)`` its PNG bytes;
``Blitter(fig, artists).png()`` the same picture after ``artists`` changed, in a few ms (the rest
is kept as a background bitmap); ``Bars`` a set of bars as one such artist; ``image_widget(w)``
the ``ipywidgets.Image`` that shows it at the figure's own pixel width.  Every widget draws its
figure once and then changes only its artists: a slider move costs a blit, not a draw.
"""
from __future__ import annotations

import io

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure

DPI = 80


def new_figure(width: float, height: float) -> Figure:
    """A figure of ``width`` x ``height`` inches on its own Agg canvas."""
    fig = Figure(figsize=(width, height), dpi=DPI)
    FigureCanvasAgg(fig)
    return fig


def png(fig: Figure) -> bytes:
    """The figure as PNG bytes."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    return buf.getvalue()


class Blitter:
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


class Bars:
    """Bars drawn as one collection (one artist: a blit draws it in one go).  ``bottom``: where
    the bars start (above 0 on a log axis)."""

    def __init__(self, ax, x, colors, width=0.8, label=None, bottom=0.0):
        self.x, self.half, self.bottom = np.asarray(x, float), width / 2, bottom
        self.artist = PolyCollection(self._verts(np.full(len(self.x), bottom)),
                                     facecolors=colors, label=label)
        ax.add_collection(self.artist)

    def _verts(self, heights):
        b = self.bottom
        return [[(x - self.half, b), (x - self.half, max(h, b)), (x + self.half, max(h, b)),
                 (x + self.half, b)] for x, h in zip(self.x, heights)]

    def set(self, heights, colors=None):
        self.artist.set_verts(self._verts(heights))
        if colors is not None:
            self.artist.set_facecolor(colors)


def image_widget(fig_width_inches: float, cls: str = "lreact-plot"):
    """An ipywidgets.Image shown at the figure's own pixel width (not stretched, so crisp)."""
    import ipywidgets as w

    image = w.Image(format="png", width=f"{round(fig_width_inches * DPI)}px")
    image.add_class(cls)
    return image
