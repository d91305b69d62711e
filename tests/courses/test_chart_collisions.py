"""No lesson figure has a label struck through by a line or a legend over its data: every figure
as the lessons draw it (arguments read from the Markdown) is measured with matplotlib's renderer
by courses.figures.collisions, which is itself tested here on figures with known collisions."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from courses.figures import FIGURES
from courses.figures.collisions import find_collisions
from courses.figures.style import legend, new_figure

ROOT = Path(__file__).resolve().parents[2]
FIGURE_REFERENCE = re.compile(r"!figure\[[^\]]*\]\((\w+)([^)]*)\)")


def lesson_figures() -> list[tuple[str, str]]:
    """(name, arguments) of every figure a lesson or lab guide draws, each once."""
    found: set[tuple[str, str]] = set()
    for folder in ("courses/content", "labs/content"):
        for path in (ROOT / folder).rglob("*.md"):
            for match in FIGURE_REFERENCE.finditer(path.read_text(encoding="utf-8")):
                found.add((match.group(1), " ".join(match.group(2).split())))
    return sorted(found)


def draw(name: str, arguments: str):
    spec = FIGURES[name]
    raw = dict(pair.split("=", 1) for pair in arguments.split())
    return spec.draw(**spec.parse(raw))


# --- the checker on figures whose collisions are known -------------------------------------


def test_a_label_on_a_line_is_found_and_one_beside_it_is_not():
    figure, ax = new_figure()
    ax.plot([0, 10], [0, 10], label="rising")
    ax.text(5, 5, "struck through", ha="center", va="center")
    ax.text(1, 8, "clear of it")
    problems = find_collisions(figure=figure)
    assert problems == ["text 'struck through' is crossed by the line 'rising'"]


def test_a_legend_over_a_marker_or_a_bar_is_found():
    figure, (left, right) = new_figure(cols=2)
    left.plot([0.2, 9.5], [0.2, 9.5], "o", label="points")
    left.set_xlim(0, 10)
    left.set_ylim(0, 10)
    legend(ax=left, loc="upper right")
    right.bar([0, 1], [10, 1], label="bars")
    legend(ax=right, loc="upper left")
    problems = find_collisions(figure=figure)
    assert "the legend (points) covers a marker of the line 'points'" in problems
    assert "the legend (bars) covers a bar" in problems


def test_a_line_stopping_at_the_spine_does_not_strike_a_label_outside_the_plot():
    figure, ax = new_figure()
    ax.axhline(0.5, label="level")
    ax.set_ylim(0, 1)
    ax.text(1.0, 0.5, " P50", transform=ax.get_yaxis_transform(), va="center")
    assert find_collisions(figure=figure) == []


def test_overlapping_labels_and_a_label_off_the_figure_are_found():
    figure, ax = new_figure()
    ax.set_xlim(0, 10)
    ax.text(2, 5, "first label")
    ax.text(2.2, 5, "second label")
    ax.text(9.9, 1, "runs off the right edge of the figure")
    problems = find_collisions(figure=figure)
    assert "text 'first label' overlaps text 'second label'" in problems
    assert "text 'runs off the right edge of the figure' is cut off by the figure's edge" in problems


# --- every lesson figure --------------------------------------------------------------------


def test_the_lessons_draw_every_registered_figure():
    assert {name for name, _ in lesson_figures()} == set(FIGURES)


@pytest.mark.parametrize(("name", "arguments"), lesson_figures())
def test_no_label_or_legend_collides_with_data(name, arguments):
    assert find_collisions(figure=draw(name, arguments)) == []
