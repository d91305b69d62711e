"""No lab chart has a label struck through by a line or a legend over its data, on every lab's
recorded run (tests.labs.golden_runs) and on the same run measured four times over on a busy
machine (noisier: log-normal jitter, stragglers, failures), which puts steps on top of each other.
Measured with matplotlib's renderer by courses.figures.collisions (tested in tests/courses)."""

from __future__ import annotations

import pytest

from courses.figures.collisions import find_collisions
from labs import charts
from tests.labs.golden_runs import BOUND_CPU, RECORDED, Recorded, noisier
from tests.labs.test_checks import sequential

KINDS = ("recorded", "noisy")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("slug", sorted(RECORDED))
def test_the_results_charts_keep_labels_and_legends_off_the_data(slug, kind):
    recorded = RECORDED[slug]()
    run = recorded if kind == "recorded" else noisier(recorded, seed=len(slug))
    drawn = {
        "main chart": charts.main_chart_figure(lab_slug=slug, summary=run.summary, bound=BOUND_CPU),
        "TTFT distribution": charts.ttft_cdf_figure(records=run.records),
        "timeline": charts.timeline_figure(records=run.records),
        "timeline with server slots": charts.timeline_figure(records=run.records, server_slots=4),
    }
    problems = {name: find_collisions(figure=figure) for name, (figure, _) in drawn.items()}
    assert problems == {name: [] for name in drawn}


@pytest.mark.parametrize("slug", sorted(RECORDED))
def test_the_comparison_of_three_runs_keeps_labels_and_legends_off_the_data(slug):
    recorded = RECORDED[slug]()
    runs = [
        {"label": "run 12 (1 Dec)", "summary": recorded.summary},
        {"label": "run 15 (2 Dec)", "summary": noisier(recorded, seed=1).summary},
        {"label": "run 19 (3 Dec)", "summary": noisier(recorded, seed=2, spread=0.8).summary},
    ]
    figure, _ = charts.compare_figure(runs=runs, lab_slug=slug)
    assert find_collisions(figure=figure) == []


def test_an_unknown_sweeps_per_step_bars_keep_their_legend_off_the_bars():
    # A sweep no lab chart knows gets paired TTFT and end-to-end bars; the tallest bar is the last.
    steps = [
        (seed, sequential(params={"seed": seed}, n=6, ttft=0.05 * seed, tpot=0.01, tokens=8 * seed, jitter=0.4))
        for seed in (1, 2, 3, 4)
    ]
    run = noisier(Recorded(sweep_param="seed", steps=steps), seed=5)
    figure, _ = charts.main_chart_figure(lab_slug="some-new-lab", summary=run.summary)
    assert find_collisions(figure=figure) == []
