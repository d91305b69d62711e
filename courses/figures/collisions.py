"""Text and legends clear of a chart's data: find collisions, and place labels and legends
where there are none, measured with matplotlib's own renderer.

A figure is drawn once on the Agg canvas (the same layout engine the SVG output uses; the SVG is
scaled as a whole in the page, so a collision found here is one at every width the page shows
it). Then every visible piece of text (titles, axis and tick labels, annotations, footnotes) and
every legend box is measured in display coordinates and tested against:

- the drawn segments of each data line (its draw style applied, clipped to its axes, so a label
  outside the plot never meets a line that stops at the spine) and each marker's square;
- for legends only, bars, filled areas and scatter points too (a label sitting on its own bar or
  inside a Gantt block is intended; a legend over them hides data);
- every other text and legend (two labels on top of each other read as neither);
- the figure's edge (text cut off by the SVG's view box).

Gridlines, spines and ticks are not data and are not checked. A text is shrunk by
``TOLERANCE_PX`` before testing, so a line that only grazes the empty top of a glyph box is not a
collision. ``find_collisions`` returns one sentence per collision, naming both artists, so a
failing test says what to move.

The same measurements place things while a chart is drawn, so a noisy run's data decides where
its labels go: ``place_legend`` puts a legend in the first clear corner, else under the plot;
``place_labels`` puts each value label at the first clear one of its offsets (``AROUND_A_POINT``,
``OVER_A_BAR``), else on a leader line at the nearest clear spot. Each costs one Agg draw.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.axis import Axis
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.cbook import STEP_LOOKUP_MAP
from matplotlib.collections import Collection, PathCollection
from matplotlib.figure import Figure
from matplotlib.legend import Legend
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.path import Path
from matplotlib.text import Annotation, Text
from matplotlib.transforms import Bbox, BboxTransformTo, ScaledTranslation

from courses.figures.style import legend as styled_legend

# Pixels at the figure's dpi (100): a glyph box's empty margins are about this wide.
TOLERANCE_PX = 1.5
# Placing a label or legend asks for this much clear space around it: the page shows the SVG's
# text in the browser's font, whose widths differ from matplotlib's by a few pixels.
PLACEMENT_MARGIN_PX = 3.0

# Where a legend may sit inside the plot, in the order tried; below the plot when none is clear.
CORNERS = ("upper left", "upper right", "lower right", "lower left", "center right", "center left")


@dataclass(frozen=True, slots=True)
class _Box:
    name: str
    bbox: Bbox
    is_legend: bool
    owner: int  # id() of the artist, so a placement can skip its own old box


@dataclass(frozen=True, slots=True)
class _Area:
    name: str
    path: Path  # in display coordinates


@dataclass(frozen=True, slots=True)
class _Line:
    name: str
    segments: np.ndarray  # (n, 2, 2) display-coordinate segments, already clipped
    markers: list[Bbox]


@dataclass(frozen=True, slots=True)
class Offset:
    """A place for a label, in points from the point it names, and how the text hangs from it."""

    dx: float
    dy: float
    ha: str = "center"
    va: str = "bottom"
    # Far from its point, a label is tied to it by a thin leader line.
    leader: bool = False


@dataclass(frozen=True, slots=True)
class Label:
    """A value label: its text, the data point it names, its colour and the places it may go,
    preferred first."""

    text: str
    xy: tuple[float, float]
    color: str
    offsets: Sequence[Offset]


def leader_offsets(*, reach: float = 160.0, step: float = 12.0) -> tuple[Offset, ...]:
    """Places farther out on a grid, nearest first, each tied to its point by a leader line: the
    fallback when every place beside a crowded point has a line through it."""
    grid = [
        (dx, dy)
        for dx in np.arange(-reach, reach + step, step)
        for dy in np.arange(-reach / 2, reach + step, step)
        if math.hypot(dx, dy) >= 3 * step
    ]
    grid.sort(key=lambda point: math.hypot(*point))
    return tuple(
        Offset(float(dx), float(dy), "left" if dx > 0 else "right", "bottom" if dy > 0 else "top", leader=True)
        for dx, dy in grid
    )


# A value label over its bar, stepping up past a line or marker drawn across the bar's top.
OVER_A_BAR = tuple(Offset(0, 3 + 5 * step) for step in range(10))

# A value label by its point: above, below, to either side, diagonally; then farther out, tied to
# the point by a leader line.
AROUND_A_POINT = (
    Offset(0, 7),
    Offset(0, -7, "center", "top"),
    Offset(7, 0, "left", "center"),
    Offset(-7, 0, "right", "center"),
    Offset(6, 6, "left", "bottom"),
    Offset(-6, 6, "right", "bottom"),
    Offset(6, -6, "left", "top"),
    Offset(-6, -6, "right", "top"),
    *leader_offsets(reach=80.0),
)


class _Scene:
    """A figure drawn once, with every line, filled area and text box measured."""

    def __init__(self, *, figure: Figure) -> None:
        if not isinstance(figure.canvas, FigureCanvasAgg):
            FigureCanvasAgg(figure)
        figure.canvas.draw()
        self.figure = figure
        self.renderer = figure.canvas.get_renderer()
        self.boxes = list(_text_boxes(figure=figure, renderer=self.renderer))
        self.lines = [line for ax in _all_axes(figure) for line in _data_lines(ax=ax)]
        self.fills = [fill for ax in _all_axes(figure) for fill in _filled_areas(ax=ax)]

    def problems(self, *, box: _Box, inner: Bbox, texts: bool = True) -> list[str]:
        found: list[str] = []
        for line in self.lines:
            if _segments_cross(segments=line.segments, box=inner):
                found.append(f"{box.name} is crossed by {line.name}")
            elif any(inner.overlaps(marker) for marker in line.markers):
                found.append(f"{box.name} covers a marker of {line.name}")
        if box.is_legend:
            for area in self.fills:
                if area.path.intersects_bbox(inner, filled=True):
                    found.append(f"{box.name} covers {area.name}")
        if not _inside(inner, self.figure.bbox):
            found.append(f"{box.name} is cut off by the figure's edge")
        if texts:
            for other in self.boxes:
                if other.owner != box.owner and inner.overlaps(_shrunk(other.bbox)):
                    found.append(f"{box.name} overlaps {other.name}")
        return found

    def replace(self, *, box: _Box) -> None:
        self.boxes = [other for other in self.boxes if other.owner != box.owner] + [box]


def find_collisions(*, figure: Figure) -> list[str]:
    """Every collision of a text or legend with data, another text or the figure's edge."""
    scene = _Scene(figure=figure)
    problems: list[str] = []
    for box in scene.boxes:
        problems += scene.problems(box=box, inner=_shrunk(box.bbox), texts=False)
    for index, box in enumerate(scene.boxes):
        for other in scene.boxes[index + 1 :]:
            if _shrunk(box.bbox).overlaps(_shrunk(other.bbox)):
                problems.append(f"{box.name} overlaps {other.name}")
    return problems


def place_legend(*, ax: Axes, below: Axes | None = None, below_columns: int = 2, **options: Any) -> Legend:
    """A legend in the first corner of the plot where it covers no data and no text; when every
    corner is taken, under the plot, below the x axis of `below` (default `ax`): a legend below
    can never cover the data, whatever a noisy run draws. Call it once the titles and footnote
    are in (they move the plot), before place_labels."""
    chart_legend = styled_legend(ax=ax, loc=CORNERS[0], **options)
    scene = _Scene(figure=ax.figure)
    for corner in CORNERS:
        chart_legend.set_loc(corner)
        box = _legend_box(legend=chart_legend, renderer=scene.renderer)
        if not scene.problems(box=box, inner=_grown(box.bbox)):
            return chart_legend
    chart_legend.remove()
    under = below or ax
    axis_box = under.xaxis.get_tightbbox(scene.renderer)
    depth = under.bbox.y0 - axis_box.y0 if axis_box is not None else 0.0
    points = depth * 72 / ax.figure.dpi + 4
    options["ncols"] = min(below_columns, len(ax.get_legend_handles_labels()[0]) or 1)
    return styled_legend(
        ax=ax,
        loc="upper center",
        bbox_to_anchor=(0.5, 0.0),
        bbox_transform=under.transAxes + ScaledTranslation(0, -points / 72, ax.figure.dpi_scale_trans),
        **options,
    )


def place_labels(*, ax: Axes, labels: Sequence[Label], fontsize: float = 8) -> list[Annotation]:
    """Each label at the first of its offsets where it crosses no line, covers no marker or text
    and stays inside the plot; where none is clear, the one with the fewest collisions. Labels
    are placed in order, each avoiding those placed before it. Call it last, once the legend,
    titles and footnote are in: anything added later can move the plot under the labels."""
    placed = []
    for label in labels:
        first = label.offsets[0]
        annotation = ax.annotate(
            label.text,
            xy=label.xy,
            xytext=(first.dx, first.dy),
            textcoords="offset points",
            ha=first.ha,
            va=first.va,
            color=label.color,
            fontsize=fontsize,
            # Outside the layout, so placing it cannot move the axes it was measured in.
            in_layout=False,
            annotation_clip=False,
            arrowprops={"arrowstyle": "-", "color": label.color, "linewidth": 0.8, "shrinkA": 1, "shrinkB": 4},
        )
        annotation.arrow_patch.set_visible(first.leader)
        placed.append(annotation)
    scene = _Scene(figure=ax.figure)
    plot = _shrunk(ax.bbox)
    for annotation, label in zip(placed, labels, strict=True):
        best: tuple[int, Offset] | None = None
        for offset in label.offsets:
            _move(annotation=annotation, offset=offset)
            box = _Box(
                name="label",
                bbox=Text.get_window_extent(annotation, scene.renderer),
                is_legend=False,
                owner=id(annotation),
            )
            grown = _grown(box.bbox)
            count = len(scene.problems(box=box, inner=grown)) + (0 if _inside(box.bbox, plot) else 1)
            if best is None or count < best[0]:
                best = (count, offset)
            if count == 0:
                break
        if best is not None:
            _move(annotation=annotation, offset=best[1])
            scene.replace(
                box=_Box(
                    name=f"text '{annotation.get_text()}'",
                    bbox=Text.get_window_extent(annotation, scene.renderer),
                    is_legend=False,
                    owner=id(annotation),
                )
            )
    return placed


def _move(*, annotation: Annotation, offset: Offset) -> None:
    annotation.xyann = (offset.dx, offset.dy)
    annotation.arrow_patch.set_visible(offset.leader)
    annotation.set_horizontalalignment(offset.ha)
    annotation.set_verticalalignment(offset.va)


def _legend_box(*, legend: Legend, renderer: Any) -> _Box:
    labels = ", ".join(text.get_text() for text in legend.get_texts())
    return _Box(
        name=f"the legend ({_short(labels)})",
        bbox=legend.get_window_extent(renderer),
        is_legend=True,
        owner=id(legend),
    )


def _all_axes(figure: Figure) -> list[Axes]:
    """The figure's axes and their children (a secondary axis naming steps on top)."""
    found = []
    for ax in figure.axes:
        found.append(ax)
        found.extend(getattr(ax, "child_axes", []))
    return found


def _shrunk(bbox: Bbox) -> Bbox:
    if bbox.width <= 2 * TOLERANCE_PX or bbox.height <= 2 * TOLERANCE_PX:
        return bbox
    return Bbox.from_extents(
        bbox.x0 + TOLERANCE_PX, bbox.y0 + TOLERANCE_PX, bbox.x1 - TOLERANCE_PX, bbox.y1 - TOLERANCE_PX
    )


def _grown(bbox: Bbox) -> Bbox:
    margin = PLACEMENT_MARGIN_PX
    return Bbox.from_extents(bbox.x0 - margin, bbox.y0 - margin, bbox.x1 + margin, bbox.y1 + margin)


def _inside(inner: Bbox, outer: Bbox) -> bool:
    return inner.x0 >= outer.x0 and inner.y0 >= outer.y0 and inner.x1 <= outer.x1 and inner.y1 <= outer.y1


# --- what is measured ---------------------------------------------------------------------------


def _text_boxes(*, figure: Figure, renderer: object) -> Iterator[_Box]:
    legends = [artist for artist in figure.findobj(Legend) if artist.get_visible()]
    inside_legends = {id(text) for key in legends for text in key.findobj(Text)}
    for key in legends:
        yield _legend_box(legend=key, renderer=renderer)
    axes = list(figure.findobj(Axis))
    every_tick_label = {id(text) for axis in axes for text in _tick_texts(axis=axis, drawn_only=False)}
    drawn_tick_labels = {id(text) for axis in axes for text in _tick_texts(axis=axis, drawn_only=True)}
    seen: set[int] = set()
    for text in figure.findobj(Text):
        if id(text) in inside_legends or id(text) in seen or not _shown(text):
            continue
        # An axis keeps labels for ticks outside its view; only those in view are drawn.
        if id(text) in every_tick_label and id(text) not in drawn_tick_labels:
            continue
        seen.add(id(text))
        bbox = _text_bbox(text=text, renderer=renderer)
        if bbox is not None:
            yield _Box(name=f"text '{_short(text.get_text())}'", bbox=bbox, is_legend=False, owner=id(text))


def _tick_texts(*, axis: Axis, drawn_only: bool) -> Iterator[Text]:
    if drawn_only:
        if not axis.get_visible() or (axis.axes is not None and not axis.axes.axison):
            return
        ticks = axis._update_ticks()  # the ticks Axis.draw draws: those inside the view
    else:
        ticks = [*axis.majorTicks, *axis.minorTicks]
    for tick in ticks:
        for label in (tick.label1, tick.label2):
            if label.get_visible() or not drawn_only:
                yield label


def _shown(text: Text) -> bool:
    if not text.get_visible() or not text.get_text().strip():
        return False
    return text.axes is None or text.axes.get_visible()


def _text_bbox(*, text: Text, renderer: object) -> Bbox | None:
    # An annotation's own extent includes its arrow; only the words are a label.
    bbox = Text.get_window_extent(text, renderer) if isinstance(text, Annotation) else text.get_window_extent(renderer)
    if not all(math.isfinite(value) for value in bbox.extents) or bbox.width <= 0:
        return None
    return bbox


def _data_lines(*, ax: Axes) -> Iterator[_Line]:
    clip = ax.bbox
    for line in ax.get_lines():
        if not line.get_visible() or (line.get_alpha() is not None and line.get_alpha() == 0):
            continue
        xy = _drawn_points(line=line)
        if len(xy) == 0:
            continue
        segments = np.empty((0, 2, 2))
        if line.get_linestyle() not in ("None", "none", "", " ") and len(xy) >= 2:
            segments = _clipped(segments=np.stack([xy[:-1], xy[1:]], axis=1), box=clip)
        markers: list[Bbox] = []
        if line.get_marker() not in (None, "None", "none", "", " "):
            half = line.get_markersize() * line.figure.dpi / 72 / 2
            points = _marker_points(line=line)
            markers = [
                Bbox.from_extents(x - half, y - half, x + half, y + half)
                for x, y in points
                if clip.x0 <= x <= clip.x1 and clip.y0 <= y <= clip.y1
            ]
        if len(segments) or markers:
            yield _Line(name=_line_name(line), segments=segments, markers=markers)


def _drawn_points(*, line: Line2D) -> np.ndarray:
    xy = np.column_stack(line.get_data(orig=False)).astype(float)
    drawstyle = line.get_drawstyle()
    if drawstyle != "default" and len(xy):
        xs, ys = STEP_LOOKUP_MAP[drawstyle](xy[:, 0], xy[:, 1])
        xy = np.column_stack([xs, ys])
    return _to_display(line=line, xy=xy)


def _marker_points(*, line: Line2D) -> np.ndarray:
    xy = np.column_stack(line.get_data(orig=False)).astype(float)
    return _to_display(line=line, xy=xy)


def _to_display(*, line: Line2D, xy: np.ndarray) -> np.ndarray:
    if len(xy) == 0:
        return xy
    with np.errstate(all="ignore"):
        display = line.get_transform().transform(xy)
    return display[np.isfinite(display).all(axis=1)]


def _line_name(line: Line2D) -> str:
    label = line.get_label()
    if label and not label.startswith("_"):
        return f"the line '{_short(label)}'"
    return f"an unlabelled {line.get_color()} line"


def _filled_areas(*, ax: Axes) -> Iterator[_Area]:
    """Bars, filled polygons and scatter points (a legend over any of them hides data)."""
    for patch in ax.patches:
        if not patch.get_visible() or _is_span(patch=patch, ax=ax) or not _filled(patch):
            continue
        box = Bbox.intersection(patch.get_window_extent(), ax.bbox)
        if box is not None and box.width > 0 and box.height > 0:
            yield _Area(name="a bar", path=Path.unit_rectangle().transformed(BboxTransformTo(box)))
    for collection in ax.collections:
        if not collection.get_visible():
            continue
        if isinstance(collection, PathCollection):
            for x, y in _offsets(collection=collection):
                square = Bbox.from_extents(x - 2, y - 2, x + 2, y + 2)
                yield _Area(name="a scatter point", path=Path.unit_rectangle().transformed(BboxTransformTo(square)))
        else:
            # Stacked areas and broken bars: the polygon itself, not its bounding box, which for
            # a curve rising to one corner covers the empty space above it too.
            transform = collection.get_transform()
            for path in collection.get_paths():
                yield _Area(name="a filled area", path=transform.transform_path(path))


def _is_span(*, patch: Patch, ax: Axes) -> bool:
    """axvspan/axhspan shading spans the whole axes one way: context, not data."""
    box = patch.get_window_extent()
    return (box.height >= ax.bbox.height - 1) or (box.width >= ax.bbox.width - 1)


def _filled(patch: Patch) -> bool:
    face = patch.get_facecolor()
    return patch.get_fill() and face[3] > 0


def _offsets(*, collection: Collection) -> Sequence[tuple[float, float]]:
    offsets = collection.get_offsets()
    if len(offsets) == 0:
        return []
    return [tuple(point) for point in collection.get_offset_transform().transform(offsets)]


# --- geometry -----------------------------------------------------------------------------------


def _clipped(*, segments: np.ndarray, box: Bbox) -> np.ndarray:
    """Segments cut to the box (Liang-Barsky); the parts outside are not drawn."""
    kept = []
    for (x0, y0), (x1, y1) in segments:
        dx, dy = x1 - x0, y1 - y0
        low, high = 0.0, 1.0
        inside = True
        for p, q in ((-dx, x0 - box.x0), (dx, box.x1 - x0), (-dy, y0 - box.y0), (dy, box.y1 - y0)):
            if p == 0:
                if q < 0:
                    inside = False
                    break
                continue
            t = q / p
            if p < 0:
                low = max(low, t)
            else:
                high = min(high, t)
            if low > high:
                inside = False
                break
        if inside:
            kept.append(((x0 + low * dx, y0 + low * dy), (x0 + high * dx, y0 + high * dy)))
    return np.array(kept).reshape(-1, 2, 2)


def _segments_cross(*, segments: np.ndarray, box: Bbox) -> bool:
    return bool(len(segments)) and bool(len(_clipped(segments=segments, box=box)))


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
