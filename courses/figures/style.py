"""Look and SVG output shared by every figure.

Figures are drawn on `matplotlib.figure.Figure` objects directly (never pyplot), so renders in
different threads share no global figure state. They must read in light and dark mode alike:
transparent background, mid-grey text and axes, and series colours of middle luminance.
"""

from __future__ import annotations

import html
import io
import re
import textwrap
from typing import Any

import matplotlib
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.legend import Legend

# Set once at import, never toggled per render. An explicit backend stops matplotlib from
# importing pyplot to pick one the first time anything iterates rcParams (boxplot does); text
# stays <text> (small, selectable, in the page's font); ids derive from a fixed salt.
matplotlib.use("Agg")
matplotlib.rcParams["svg.fonttype"] = "none"
matplotlib.rcParams["svg.hashsalt"] = "prefill"
matplotlib.rcParams["font.family"] = "sans-serif"

GREY = "#808080"
GRID = "#80808040"
BLUE = "#3b82f6"
ORANGE = "#f59e0b"
GREEN = "#10b981"
RED = "#ef4444"
PURPLE = "#a855f7"
TEAL = "#14b8a6"
PINK = "#ec4899"
SERIES = (BLUE, ORANGE, GREEN, PURPLE, RED, TEAL, PINK)

FONT_SIZE = 10


def new_figure(
    *, width: float = 7.0, height: float = 4.2, rows: int = 1, cols: int = 1, **grid: Any
) -> tuple[Figure, Any]:
    """A transparent figure and its axes (an array when rows x cols > 1)."""
    figure = Figure(figsize=(width, height), layout="constrained")
    figure.patch.set_alpha(0)
    axes = figure.subplots(rows, cols, squeeze=True, **grid)
    for ax in getattr(axes, "flat", [axes]):
        style_axes(ax=ax)
    return figure, axes


def style_axes(*, ax: Axes) -> None:
    ax.set_facecolor("none")
    for spine in ax.spines.values():
        spine.set_color(GREY)
    ax.spines["top"].set_visible(False)
    ax.spines["right"].set_visible(False)
    ax.tick_params(colors=GREY, labelsize=FONT_SIZE - 1, which="both")
    ax.xaxis.label.set_color(GREY)
    ax.yaxis.label.set_color(GREY)
    ax.title.set_color(GREY)
    ax.title.set_fontsize(FONT_SIZE + 1)
    ax.xaxis.label.set_fontsize(FONT_SIZE)
    ax.yaxis.label.set_fontsize(FONT_SIZE)
    ax.grid(True, color=GRID, linewidth=0.6, which="major")
    ax.set_axisbelow(True)


def legend(*, ax: Axes, **options: object) -> Legend:
    options.setdefault("fontsize", FONT_SIZE - 1)
    options.setdefault("frameon", False)
    chart_legend = ax.legend(**options)
    for text in chart_legend.get_texts():
        text.set_color(GREY)
    return chart_legend


def note(*, figure: Figure, text: str) -> None:
    """A small grey footnote under the plot (assumptions, sources), wrapped to the figure width."""
    characters = int(figure.get_figwidth() * 15)
    figure.supxlabel(textwrap.fill(text, width=characters), fontsize=FONT_SIZE - 2, color=GREY)


_XML_PROLOGUE = re.compile(r"^.*?(?=<svg\b)", re.DOTALL)
_METADATA = re.compile(r"\s*<metadata>.*?</metadata>", re.DOTALL)
_SIZE_ATTRIBUTE = re.compile(r'\s(width|height)="[^"]*"')
_ID = re.compile(r'\bid="([^"]+)"')
_REFERENCE = re.compile(r'(url\(#|href="#)([^)"]+)')


def to_svg(*, figure: Figure, alt: str, id_prefix: str) -> str:
    """Inline-ready SVG: no XML prologue, scalable, titled and labelled with the alt text.

    Ids are prefixed so several figures inlined on one page never share a clip-path id.
    """
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", transparent=True, metadata={"Date": None})
    svg = _XML_PROLOGUE.sub("", buffer.getvalue(), count=1)
    # The RDF metadata block only repeats matplotlib's name; the alt text goes in <title>.
    svg = _METADATA.sub("", svg, count=1)
    svg = _ID.sub(lambda match: f'id="{id_prefix}-{match.group(1)}"', svg)
    svg = _REFERENCE.sub(lambda match: f"{match.group(1)}{id_prefix}-{match.group(2)}", svg)
    # matplotlib's stylesheet uses a bare `*` selector; inlined in a page it would reach every
    # other SVG, so scope it to this figure.
    svg = svg.replace('<style type="text/css">*{', f'<style type="text/css">#{id_prefix} *{{', 1)
    opening_end = svg.index(">")
    opening = _SIZE_ATTRIBUTE.sub("", svg[:opening_end])
    label = html.escape(alt, quote=True)
    opening += f' id="{id_prefix}" role="img" aria-label="{label}" class="figure-svg"'
    # The drawn width in points (the viewBox's unit), for the phone layout's minimum width.
    width_points = figure.get_figwidth() * 72
    opening += f' style="height:auto;--figure-width:{width_points:g}px"'
    title = f'<title id="{id_prefix}-title">{html.escape(alt, quote=False)}</title>'
    return f"{opening}>{title}{svg[opening_end + 1 :]}".strip()
