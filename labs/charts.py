"""Charts of a lab run as inline SVG: the lab's main chart, a TTFT CDF, a per-request timeline and
a comparison of several runs.

Inputs are plain data, no Django: ``LabRun.summary`` (``{"overall", "sweep_param", "steps"}``,
each summary in the measurement library's format) and request records as
``RequestRecord.to_dict()``. Figures are drawn on ``matplotlib.figure.Figure`` objects with the
lesson figures' style (transparent, mid-grey text), so they read in light and dark mode alike.

The analyses the charts draw (the knee of a concurrency sweep, the prefill line, the saturation
rate) live in ``labs.analysis``, which ``labs.checks`` reads too, so a finding states exactly
what its chart shows.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from matplotlib.axes import Axes
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

from courses.figures.collisions import AROUND_A_POINT, OVER_A_BAR, Label, place_labels, place_legend
from courses.figures.style import (
    BLUE,
    FONT_SIZE,
    GREEN,
    GREY,
    ORANGE,
    PURPLE,
    RED,
    SERIES,
    legend,
    new_figure,
    note,
    style_axes,
    to_svg,
)
from courses.inference.units import (
    MISSING,
    format_seconds,
    percent_or_missing,
    rate_or_missing,
    seconds_or_missing,
    significant,
)
from labs.analysis import (
    KNEE_PEAK_FRACTION,
    SATURATION_GOODPUT,
    StepView,
    as_number,
    concurrency_knee,
    decode_tokens_per_s,
    goodput_fraction,
    is_shared,
    linear_fit,
    prefix_ratio,
    record_step_key,
    saturation_rate,
    stat,
    sweep_steps,
)

# A y-axis spanning more than this ratio is drawn on a log scale so the small series stays
# readable (TTFT in tens of ms next to end-to-end times in tens of seconds).
LOG_SPAN = 20.0

_PREFIX_PLACEHOLDER = "labchartprefix"


# --- the main chart -------------------------------------------------------------------------


def main_chart_svg(*, lab_slug: str, summary: Mapping[str, Any], bound: Mapping[str, Any] | None = None) -> str:
    """The lab's main chart, chosen by what the run swept.

    ``bound`` is the decode speed-of-light, ``{"decode_tokens_per_s": x, "label": "..."}``: the
    subject of the no-sweep chart, and a TPOT floor on charts that plot TPOT.
    """
    figure, alt = main_chart_figure(lab_slug=lab_slug, summary=summary, bound=bound)
    return _svg(figure=figure, alt=alt)


def main_chart_figure(
    *, lab_slug: str, summary: Mapping[str, Any], bound: Mapping[str, Any] | None = None
) -> tuple[Figure, str]:
    """The main chart as a matplotlib figure and its alt text (main_chart_svg draws it as SVG)."""
    param, steps = sweep_steps(summary=summary)
    if not any(stat(summary=s.summary, metric="ttft_s") is not None for s in steps):
        return _empty_figure(
            title="No successful requests to chart",
            alt="Main chart: the run has no successful requests to chart.",
        )
    draw: Callable[..., tuple[Figure, str]]
    if lab_slug == "continuous-batching":
        draw = _head_of_line_chart
    elif param == "max_tokens":
        draw = _output_length_chart
    elif param == "prompt_tokens":
        draw = _prompt_length_chart
    elif param == "concurrency":
        draw = _concurrency_chart
    elif param == "rate_rpm":
        draw = _rate_chart
    elif param == "model":
        draw = _model_chart
    elif param == "shared_prefix":
        draw = _prefix_chart
    elif param is None and len(steps) == 1:
        draw = _speed_of_light_chart
    else:
        draw = _per_step_chart
    return draw(steps=steps, param=param, bound=bound)


def _output_length_chart(
    *, steps: list[StepView], param: str | None, bound: Mapping[str, Any] | None
) -> tuple[Figure, str]:
    xs = [as_number(s.value) or 0.0 for s in steps]
    ttft = [stat(summary=s.summary, metric="ttft_s") for s in steps]
    e2e = [stat(summary=s.summary, metric="e2e_s") for s in steps]
    figure, ax = new_figure()
    _line(ax=ax, xs=xs, ys=ttft, color=BLUE, marker="o", label="P50 TTFT")
    _line(ax=ax, xs=xs, ys=e2e, color=ORANGE, marker="s", label="P50 end-to-end")
    _numeric_x(ax=ax, xs=xs, label="max_tokens (output length asked)")
    _seconds_y(ax=ax, values=[*ttft, *e2e])
    first, last = _first_last(xs=xs, ys=ttft)
    e_first, e_last = _first_last(xs=xs, ys=e2e)
    headline = "TTFT and end-to-end time per output length"
    if first and last and e_first and e_last:
        headline = (
            f"TTFT ×{significant(value=last / first, digits=2)}, end-to-end "
            f"×{significant(value=e_last / e_first, digits=2)} from "
            f"{_int(xs[0])} to {_int(xs[-1])} tokens"
        )
    ax.set_title(headline)
    place_legend(ax=ax)
    place_labels(
        ax=ax, labels=[*_seconds_labels(xs=xs, ys=ttft, color=BLUE), *_seconds_labels(xs=xs, ys=e2e, color=ORANGE)]
    )
    alt = (
        f"P50 time to first token and P50 end-to-end time against max_tokens "
        f"({', '.join(_int(x) for x in xs)}): TTFT {_seconds_list(ttft)}; "
        f"end-to-end {_seconds_list(e2e)}."
    )
    return figure, alt


def _prompt_length_chart(
    *, steps: list[StepView], param: str | None, bound: Mapping[str, Any] | None
) -> tuple[Figure, str]:
    xs = [as_number(s.value) or 0.0 for s in steps]
    ttft = [stat(summary=s.summary, metric="ttft_s") for s in steps]
    tpot = [stat(summary=s.summary, metric="tpot_s") for s in steps]
    figure, ax = new_figure()
    _line(ax=ax, xs=xs, ys=ttft, color=BLUE, marker="o", label="P50 TTFT", linestyle="none")
    fit_text = "no line: fewer than two prompt lengths with a TTFT"
    headline = "P50 TTFT and TPOT against prompt length"
    pairs = [(x, y) for x, y in zip(xs, ttft, strict=True) if y is not None]
    if len({x for x, _ in pairs}) >= 2:
        slope, intercept, r2 = linear_fit(xs=[x for x, _ in pairs], ys=[y for _, y in pairs])
        line_x = [0.0, max(xs)]
        if slope > 0:
            headline = f"Prefill ≈ {significant(value=1 / slope)} tokens/s; TPOT on the right"
            fixed = f"{format_seconds(value=intercept)} fixed" if intercept > 0 else "no fixed cost visible"
            fit_text = f"fit: {significant(value=1 / slope)} prefill tokens/s, {fixed}, r² = {r2:.2f}"
        else:
            fit_text = f"fit: TTFT did not rise with prompt length (r² = {r2:.2f})"
        ax.plot(
            line_x,
            [slope * x + intercept for x in line_x],
            color=BLUE,
            linestyle="--",
            linewidth=1.2,
            label=fit_text,
        )
    ax.set_xlabel("prompt tokens (asked)")
    ax.set_ylabel("P50 TTFT", color=BLUE)
    ax.set_xlim(left=0)
    _from_zero(ax)
    ax.yaxis.set_major_formatter(FuncFormatter(_seconds_tick))
    right = _twin(ax=ax)
    tpot_ms = [t * 1e3 if t is not None else None for t in tpot]
    _line(ax=right, xs=xs, ys=tpot_ms, color=ORANGE, marker="s", label="P50 TPOT (right)")
    known = [t for t in tpot_ms if t is not None]
    top = max(known) * 2.2 if known else 1.0
    if bound and bound.get("decode_tokens_per_s"):
        floor_ms = 1e3 / float(bound["decode_tokens_per_s"])
        right.axhline(floor_ms, color=RED, linestyle=":", linewidth=1.2, label="TPOT lower bound")
        top = max(top, floor_ms * 1.5)
    right.set_ylim(0, top)
    right.set_ylabel("P50 TPOT (ms)", color=ORANGE)
    ax.set_title(headline)
    _legend_both(ax=ax, other=right)
    alt = (
        f"P50 TTFT against prompt tokens ({', '.join(_int(x) for x in xs)}): "
        f"{_seconds_list(ttft)}, with a fitted line ({fit_text}); P50 time per output token "
        f"on the right axis: {_seconds_list(tpot)}."
    )
    return figure, alt


def _concurrency_chart(
    *, steps: list[StepView], param: str | None, bound: Mapping[str, Any] | None
) -> tuple[Figure, str]:
    xs = [as_number(s.value) or 0.0 for s in steps]
    tpot = [stat(summary=s.summary, metric="tpot_s") for s in steps]
    aggregate = [_float(s.summary.get("output_tokens_per_s")) for s in steps]
    knee = concurrency_knee(steps=steps)
    figure, ax = new_figure()
    tpot_ms = [t * 1e3 if t is not None else None for t in tpot]
    _line(ax=ax, xs=xs, ys=tpot_ms, color=ORANGE, marker="s", label="P50 TPOT per request")
    if bound and bound.get("decode_tokens_per_s"):
        ax.axhline(
            1e3 / float(bound["decode_tokens_per_s"]),
            color=RED,
            linestyle=":",
            linewidth=1.2,
            label="TPOT lower bound at batch 1",
        )
    ax.set_ylabel("P50 TPOT per request (ms)", color=ORANGE)
    _from_zero(ax)
    _numeric_x(ax=ax, xs=xs, label="concurrency (requests in flight)", base=2)
    right = _twin(ax=ax)
    _line(ax=right, xs=xs, ys=aggregate, color=BLUE, marker="o", label="aggregate tokens/s (right)")
    right.set_ylabel("aggregate output tokens/s", color=BLUE)
    _from_zero(right)
    lowest = xs[0] if xs else None
    if knee is not None and knee.concurrency != lowest:
        ax.axvline(
            knee.concurrency, color=GREEN, linestyle="--", linewidth=1.2, label=f"knee ≈ {_int(knee.concurrency)}"
        )
        ax.set_title(f"Batching pays until about {_int(knee.concurrency)} concurrent requests")
    elif knee is not None:
        ax.set_title(
            f"No gain from concurrency: {_int(knee.concurrency)} already gives {knee.fraction_of_peak:.0%} of the peak"
        )
    else:
        ax.set_title("Aggregate throughput still rising at the highest concurrency")
    _legend_both(ax=ax, other=right)
    note(
        figure=figure,
        text=(
            f"Knee: the lowest concurrency whose aggregate tokens/s reaches {KNEE_PEAK_FRACTION:.0%} "
            "of the peak measured in this sweep"
            + (
                f" ({_rate_text(knee.peak_tokens_per_s)} at {_int(knee.peak_concurrency)})."
                if knee is not None
                else "."
            )
        ),
    )
    alt = (
        f"Per-request P50 TPOT and aggregate output tokens/s against concurrency "
        f"({', '.join(_int(x) for x in xs)}): TPOT {_seconds_list(tpot)}; aggregate "
        f"{_rate_list(aggregate)}; "
        + (f"knee at about {_int(knee.concurrency)}." if knee is not None else "no knee within the sweep.")
    )
    return figure, alt


def _rate_chart(*, steps: list[StepView], param: str | None, bound: Mapping[str, Any] | None) -> tuple[Figure, str]:
    xs = [as_number(s.value) or 0.0 for s in steps]
    fractions = [goodput_fraction(summary=s.summary) for s in steps]
    p95 = [stat(summary=s.summary, metric="ttft_s", key="p95") for s in steps]
    figure, ax = new_figure()
    have_goodput = any(f is not None for f in fractions)
    if have_goodput:
        percent = [f * 100 if f is not None else None for f in fractions]
        _line(ax=ax, xs=xs, ys=percent, color=GREEN, marker="o", label="goodput (% within SLO)")
        ax.axhline(SATURATION_GOODPUT * 100, color=GREEN, linestyle=":", linewidth=1)
        ax.set_ylim(0, 105)
        ax.set_ylabel("requests within the SLO (%)", color=GREEN)
        saturation = saturation_rate(points=[(x, f) for x, f in zip(xs, fractions, strict=True) if f is not None])
    else:
        achieved = [(_float(s.summary.get("requests_per_s")) or 0.0) * 60 if s.summary else None for s in steps]
        _line(ax=ax, xs=xs, ys=achieved, color=GREEN, marker="o", label="completed per minute")
        ax.plot(xs, xs, color=GREY, linestyle=":", linewidth=1, label="offered = completed")
        ax.set_ylabel("completed requests per minute", color=GREEN)
        _from_zero(ax)
        saturation = saturation_rate(points=[(x, (a or 0.0) / x) for x, a in zip(xs, achieved, strict=True) if x > 0])
    ax.set_xlabel("offered rate (requests per minute)")
    right = _twin(ax=ax)
    _line(ax=right, xs=xs, ys=p95, color=PURPLE, marker="s", label="P95 TTFT (right)")
    slo = (steps[0].summary.get("goodput") or {}).get("slo") if steps else None
    slo_ttft = (slo or {}).get("ttft_s")
    if slo_ttft:
        right.axhline(slo_ttft, color=PURPLE, linestyle=":", linewidth=1, label="TTFT SLO")
    _seconds_y(ax=right, values=[*p95, slo_ttft])
    right.set_ylabel("P95 TTFT", color=PURPLE)
    if saturation is not None:
        ax.axvline(saturation, color=RED, linestyle="--", linewidth=1.2, label="saturation")
        ax.set_title(f"Saturates at about {_int(saturation)} requests per minute")
    else:
        ax.set_title("No saturation within the offered rates")
    _legend_both(ax=ax, other=right)
    series = (
        f"goodput {', '.join(_percent(f) for f in fractions)}"
        if have_goodput
        else "no SLO set, so completed requests per minute instead of goodput"
    )
    alt = (
        f"Open-loop run at {', '.join(_int(x) for x in xs)} requests per minute: "
        f"{series}; P95 TTFT {_seconds_list(p95)}; "
        + (
            f"saturation at about {_int(saturation)} per minute."
            if saturation is not None
            else "no saturation within the sweep."
        )
    )
    return figure, alt


def _model_chart(*, steps: list[StepView], param: str | None, bound: Mapping[str, Any] | None) -> tuple[Figure, str]:
    names = [str(s.value) for s in steps]
    decode = [decode_tokens_per_s(summary=s.summary) for s in steps]
    ttft = [stat(summary=s.summary, metric="ttft_s") for s in steps]
    figure, axes = new_figure(width=8.0, cols=2)
    left, right = axes
    _bars(ax=left, labels=names, values=decode, color=BLUE, text=_rate_text)
    left.set_title("decode tokens/s per request (1 / P50 TPOT)")
    _bars(ax=right, labels=names, values=ttft, color=ORANGE, text=_seconds_text)
    right.yaxis.set_major_formatter(FuncFormatter(_seconds_tick))
    right.set_title("P50 TTFT")
    figure.suptitle("The same model at several precisions", color=GREY)
    alt = (
        "Decode tokens/s and P50 TTFT per model: "
        + "; ".join(
            f"{name}: {_rate_text(d)}, TTFT {_seconds_text(t)}" for name, d, t in zip(names, decode, ttft, strict=True)
        )
        + "."
    )
    return figure, alt


def _speed_of_light_chart(
    *, steps: list[StepView], param: str | None, bound: Mapping[str, Any] | None
) -> tuple[Figure, str]:
    measured = decode_tokens_per_s(summary=steps[0].summary)
    figure, ax = new_figure(height=3.6)
    labels = ["measured"]
    values: list[float | None] = [measured]
    colors = [BLUE]
    limit = _float((bound or {}).get("decode_tokens_per_s"))
    if limit:
        labels.insert(0, "bandwidth bound")
        values.insert(0, limit)
        colors.insert(0, GREY)
    positions = list(range(len(labels)))
    ax.barh(positions, [v or 0.0 for v in values], color=colors, height=0.55, alpha=0.85)
    for pos, value in zip(positions, values, strict=True):
        if value:
            ax.text(value, pos, f"  {_rate_text(value)}", va="center", color=GREY, fontsize=9)
    ax.set_yticks(positions, labels=labels)
    ax.invert_yaxis()
    ax.set_xlabel("decode tokens/s at batch 1")
    ax.set_xlim(0, max(v or 0.0 for v in values) * 1.35 or 1.0)
    if limit and measured:
        efficiency = measured / limit
        ax.set_title(f"Decode at batch 1: {efficiency:.0%} of the bandwidth bound")
        note(figure=figure, text=f"Bound: {(bound or {}).get('label', 'from the target hardware')}")
        alt = (
            f"Measured decode speed {_rate_text(measured)} against a bandwidth bound of "
            f"{_rate_text(limit)}: {efficiency:.0%} efficiency."
        )
    else:
        ax.set_title("Decode at batch 1 (no bound known for this target)")
        note(
            figure=figure,
            text="The target has no memory bandwidth or model size recorded, so no bound is drawn.",
        )
        alt = f"Measured decode speed {_rate_text(measured)}; no bandwidth bound is known."
    return figure, alt


def _prefix_chart(*, steps: list[StepView], param: str | None, bound: Mapping[str, Any] | None) -> tuple[Figure, str]:
    labels = [_prefix_label(value=s.value, key=s.key) for s in steps]
    p50 = [stat(summary=s.summary, metric="ttft_s") for s in steps]
    p95 = [stat(summary=s.summary, metric="ttft_s", key="p95") for s in steps]
    colors = [GREEN if is_shared(s.value) else BLUE for s in steps]
    figure, ax = new_figure(height=3.8)
    positions = list(range(len(steps)))
    ax.bar(positions, [v or 0.0 for v in p50], color=colors, width=0.55, alpha=0.85)
    ax.plot(
        [p for p, v in zip(positions, p95, strict=True) if v is not None],
        [v for v in p95 if v is not None],
        linestyle="none",
        marker="_",
        markersize=22,
        color=GREY,
        label="P95",
    )
    ax.set_xticks(positions, labels=labels)
    ax.set_ylabel("P50 TTFT (bars)")
    ax.yaxis.set_major_formatter(FuncFormatter(_seconds_tick))
    _from_zero(ax)
    ratio = prefix_ratio(steps=steps)
    ax.set_title(
        f"TTFT with a shared prefix is ×{significant(value=ratio, digits=2)} of unique prompts"
        if ratio is not None
        else "TTFT with and without a shared prefix"
    )
    place_legend(ax=ax)
    # Over each bar, raised past its P95 mark where the two are close.
    place_labels(
        ax=ax,
        labels=[
            Label(text=_seconds_text(value), xy=(pos, value), color=GREY, offsets=OVER_A_BAR)
            for pos, value in zip(positions, p50, strict=True)
            if value is not None
        ],
        fontsize=FONT_SIZE,
    )
    alt = "P50 TTFT per step: " + "; ".join(
        f"{label}: {_seconds_text(v)} (P95 {_seconds_text(w)})" for label, v, w in zip(labels, p50, p95, strict=True)
    )
    return figure, alt + "."


def _head_of_line_chart(
    *, steps: list[StepView], param: str | None, bound: Mapping[str, Any] | None
) -> tuple[Figure, str]:
    numeric = all(as_number(s.value) is not None for s in steps)
    xs = [as_number(s.value) or 0.0 for s in steps] if numeric else [float(i) for i in range(len(steps))]
    ttft50 = [stat(summary=s.summary, metric="ttft_s") for s in steps]
    ttft95 = [stat(summary=s.summary, metric="ttft_s", key="p95") for s in steps]
    queue95 = [stat(summary=s.summary, metric="queue_s", key="p95") for s in steps]
    figure, ax = new_figure()
    _line(ax=ax, xs=xs, ys=ttft50, color=BLUE, marker="o", label="P50 TTFT")
    _line(ax=ax, xs=xs, ys=ttft95, color=RED, marker="^", label="P95 TTFT")
    _line(ax=ax, xs=xs, ys=queue95, color=GREY, marker="s", label="P95 client queue", linestyle=":")
    if numeric:
        _numeric_x(ax=ax, xs=xs, label=param or "step", base=2)
    else:
        ax.set_xticks(xs, labels=[s.key for s in steps])
    _seconds_y(ax=ax, values=[*ttft50, *ttft95, *queue95])
    first, last = _first_last(xs=xs, ys=ttft95)
    ax.set_title(
        f"P95 TTFT ×{significant(value=last / first, digits=2)} from the first to the last step"
        if first and last
        else "Waiting under load: TTFT and queue time per step"
    )
    place_legend(ax=ax)
    alt = (
        f"TTFT and client queue time per step ({', '.join(s.key for s in steps)}): P50 TTFT "
        f"{_seconds_list(ttft50)}; P95 TTFT {_seconds_list(ttft95)}; P95 queue "
        f"{_seconds_list(queue95)}."
    )
    return figure, alt


def _per_step_chart(*, steps: list[StepView], param: str | None, bound: Mapping[str, Any] | None) -> tuple[Figure, str]:
    labels = [s.key for s in steps]
    ttft = [stat(summary=s.summary, metric="ttft_s") for s in steps]
    e2e = [stat(summary=s.summary, metric="e2e_s") for s in steps]
    figure, ax = new_figure()
    positions = list(range(len(steps)))
    width = 0.38
    ax.bar(
        [p - width / 2 for p in positions],
        [v or 0.0 for v in ttft],
        width,
        color=BLUE,
        label="P50 TTFT",
    )
    ax.bar(
        [p + width / 2 for p in positions],
        [v or 0.0 for v in e2e],
        width,
        color=ORANGE,
        label="P50 end-to-end",
    )
    ax.set_xticks(positions, labels=labels)
    _seconds_y(ax=ax, values=[*ttft, *e2e])
    ax.set_title("TTFT and end-to-end time per step")
    place_legend(ax=ax)
    alt = "P50 TTFT and end-to-end time per step: " + "; ".join(
        f"{label}: {_seconds_text(t)} and {_seconds_text(e)}" for label, t, e in zip(labels, ttft, e2e, strict=True)
    )
    return figure, alt + "."


# --- distribution and timeline --------------------------------------------------------------


def ttft_cdf_svg(*, records: Sequence[Mapping[str, Any]]) -> str:
    """Empirical CDF of TTFT, one line per step, over measured successful requests."""
    figure, alt = ttft_cdf_figure(records=records)
    return _svg(figure=figure, alt=alt)


def ttft_cdf_figure(*, records: Sequence[Mapping[str, Any]]) -> tuple[Figure, str]:
    """The TTFT distribution as a matplotlib figure and its alt text."""
    groups: dict[str, list[float]] = {}
    for record in records:
        if record.get("warmup") or record.get("error") or record.get("ttft_s") is None:
            continue
        groups.setdefault(record_step_key(record=record), []).append(float(record["ttft_s"]))
    if not groups:
        return _empty_figure(
            title="No successful requests to chart",
            alt="TTFT distribution: the run has no successful requests.",
        )
    ordered = _ordered_groups(groups=groups)
    figure, ax = new_figure()
    summaries = []
    for index, (key, values) in enumerate(ordered):
        values.sort()
        n = len(values)
        xs = [values[0], *values]
        ys = [0.0, *((i + 1) / n for i in range(n))]
        ax.step(
            xs,
            ys,
            where="post",
            color=SERIES[index % len(SERIES)],
            linewidth=1.6,
            label=f"{key} (n={n})",
        )
        summaries.append(f"{key}: median {format_seconds(value=values[(n - 1) // 2])}, n={n}")
    for level in (0.5, 0.95):
        ax.axhline(level, color=GREY, linestyle=":", linewidth=0.8)
        ax.text(
            1.0,
            level,
            f" P{round(level * 100)}",
            transform=ax.get_yaxis_transform(),
            color=GREY,
            fontsize=8,
            va="center",
        )
    every = [v for _, values in ordered for v in values]
    if min(every) > 0 and max(every) / min(every) > LOG_SPAN:
        ax.set_xscale("log")
        # Decades alone leave two or three labels, so a step between them cannot be read off;
        # 1-2-5 ticks where that many fit, 1-3 over a wider span.
        decades = math.log10(max(every) / min(every))
        subs = (1.0, 2.0, 5.0) if decades <= 2.5 else (1.0, 3.0) if decades <= 4 else (1.0,)
        ax.xaxis.set_major_locator(LogLocator(base=10, subs=subs))
    ax.xaxis.set_major_formatter(FuncFormatter(_seconds_tick))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel("time to first token")
    ax.set_ylabel("fraction of requests")
    ax.set_ylim(0, 1.02)
    ax.set_title("TTFT distribution per step")
    # Steps' curves cross the whole plot on a noisy run; the legend takes a corner only if one
    # is clear of them, else it goes under the plot.
    place_legend(ax=ax)
    alt = "Cumulative distribution of time to first token per step: " + "; ".join(summaries) + "."
    return figure, alt


@dataclass(frozen=True, slots=True)
class _Bar:
    key: str
    queued_from: float
    send: float
    first: float | None
    end: float
    error: str | None
    # Prefill time the engine itself reported (llama.cpp prompt_ms, Ollama prompt_eval_duration).
    server_prefill: float | None = None
    # Time spent waiting inside the engine before its prefill began (see _server_waits).
    server_wait: float = 0.0


# Below this a wait inside the engine is network, parsing and scheduling noise, not a queue.
SERVER_WAIT_MIN_S = 0.005


def _server_waits(*, bars: list[_Bar], server_slots: int | None) -> tuple[list[_Bar], str | None]:
    """Each bar with the time it waited inside the engine for a free slot, and how it was found.

    Where the engine reports its own prefill time, the wait is TTFT minus that time: everything
    before the first token that the engine did not spend on the prompt. Otherwise, on a target
    whose slot count is known, a request sent while more requests than slots were in flight
    waited for a slot: its wait is estimated as its TTFT minus the median TTFT of requests sent
    while a slot was free (the uncontended prefill). Without either, no wait is drawn.
    """
    ok = [b for b in bars if not b.error and b.first is not None]
    if any(b.server_prefill is not None for b in ok):
        out = []
        for bar in bars:
            wait = 0.0
            if bar in ok and bar.server_prefill is not None:
                wait = max(0.0, (bar.first or bar.send) - bar.send - bar.server_prefill)
            out.append(dataclasses.replace(bar, server_wait=wait if wait >= SERVER_WAIT_MIN_S else 0.0))
        method = "inside the engine: TTFT minus the prefill time the engine reported"
        return out, method
    if not server_slots:
        return bars, None

    def in_flight(bar: _Bar) -> int:
        return sum(1 for other in bars if other.send <= bar.send < other.end)

    crowded = {id(b) for b in ok if in_flight(b) > server_slots}
    free = sorted((b.first or b.send) - b.send for b in ok if id(b) not in crowded)
    if not crowded or not free:
        return bars, None
    baseline = free[(len(free) - 1) // 2]
    out = []
    for bar in bars:
        wait = 0.0
        if id(bar) in crowded:
            wait = max(0.0, (bar.first or bar.send) - bar.send - baseline)
        out.append(dataclasses.replace(bar, server_wait=wait if wait >= SERVER_WAIT_MIN_S else 0.0))
    method = (
        f"estimated for requests sent while more than {server_slots} (the engine's slots) were in "
        f"flight: TTFT minus the median TTFT with a slot free ({format_seconds(value=baseline)})"
    )
    return out, method


def timeline_svg(
    *, records: Sequence[Mapping[str, Any]], max_requests: int = 200, server_slots: int | None = None
) -> str:
    """Each measured request as a bar: client queue wait, wait inside the engine, prefill, decode;
    errors in red. ``server_slots`` is how many requests the engine runs at once, where known;
    the wait inside the engine is found as _server_waits says, and the chart says how.

    Steps are measured one after another and each may count time from its own start, so a step
    whose clock restarts is placed after the previous step ends. Beyond ``max_requests`` bars an
    evenly spaced sample is drawn (every failed request kept where room allows) and the title
    says so.
    """
    figure, alt = timeline_figure(records=records, max_requests=max_requests, server_slots=server_slots)
    return _svg(figure=figure, alt=alt)


def timeline_figure(
    *, records: Sequence[Mapping[str, Any]], max_requests: int = 200, server_slots: int | None = None
) -> tuple[Figure, str]:
    """The request timeline as a matplotlib figure and its alt text."""
    bars = _timeline_bars(records=records)
    if not bars:
        return _empty_figure(title="No requests were sent", alt="Request timeline: no measured request was sent.")
    bars, wait_method = _server_waits(bars=bars, server_slots=server_slots)
    total = len(bars)
    errors = sum(1 for b in bars if b.error)
    shown = _sample(bars=bars, limit=max(max_requests, 1))
    rows = len(shown)
    # Tall enough that the y label fits beside a few rows under a two-row key and a footnote.
    figure, ax = new_figure(height=min(6.0, 3.2 + rows * 0.02))
    ys = list(range(rows))
    queue = [
        (y, b.queued_from, b.send - b.queued_from) for y, b in zip(ys, shown, strict=True) if b.send > b.queued_from
    ]
    waiting = [(y, b.send, b.server_wait) for y, b in zip(ys, shown, strict=True) if b.server_wait > 0]
    prefill = [
        (y, b.send + b.server_wait, b.first - b.send - b.server_wait)
        for y, b in zip(ys, shown, strict=True)
        if not b.error and b.first is not None
    ]
    decode = [
        (y, b.first, b.end - b.first) for y, b in zip(ys, shown, strict=True) if not b.error and b.first is not None
    ]
    failed = [(y, b.send, max(b.end - b.send, 0.0)) for y, b in zip(ys, shown, strict=True) if b.error]
    height = 0.8 if rows < 60 else 1.0
    _hbars(ax=ax, bars=queue, color=GREY, height=height, alpha=0.45)
    _hbars(ax=ax, bars=waiting, color=PURPLE, height=height, alpha=0.75)
    _hbars(ax=ax, bars=prefill, color=BLUE, height=height)
    _hbars(ax=ax, bars=decode, color=ORANGE, height=height)
    _hbars(ax=ax, bars=failed, color=RED, height=height)
    if failed:
        ax.plot([x + w for _, x, w in failed], [y for y, _, _ in failed], "x", color=RED, markersize=5)
    end = max(b.end for b in bars)
    begin = min(b.queued_from for b in bars)
    _mark_steps(ax=ax, bars=bars, span=end - begin)
    ax.set_xlim(begin, end + (end - begin) * 0.02 or 1.0)
    ax.set_ylim(rows - 0.5, -0.5)
    ax.yaxis.set_major_locator(NullLocator())
    ax.set_ylabel("requests, in send order")
    ax.set_xlabel("seconds since the run started")
    ax.xaxis.set_major_formatter(FuncFormatter(_seconds_tick))
    title = f"{total:,} requests" if rows == total else f"Showing {rows:,} of {total:,} requests (evenly sampled)"
    if errors:
        title += f", {errors:,} failed"
    ax.set_title(title)
    handles = [Patch(color=GREY, alpha=0.45, label="waiting for a client slot")]
    if waiting:
        handles.append(Patch(color=PURPLE, alpha=0.75, label="waiting inside the engine"))
    handles += [
        Patch(color=BLUE, label="prefill (rest of TTFT)" if waiting else "prefill (TTFT)"),
        Patch(color=ORANGE, label="decode"),
    ]
    if errors:
        handles.append(Patch(color=RED, label="failed"))
    waited = sum(1 for b in bars if b.server_wait > 0)
    if waited and wait_method:
        longest = max(b.server_wait for b in bars)
        note(
            figure=figure,
            text=(
                f"{waited:,} request{'s' if waited != 1 else ''} waited inside the engine before "
                f"its prefill began (longest {format_seconds(value=longest)}); wait {wait_method}."
            ),
        )
    # Above the plot when a footnote explains the wait: both below would overlap.
    key = figure.legend(
        handles=handles,
        loc="outside upper center" if waited and wait_method else "outside lower center",
        # Five or six keys in one row run past the figure's edges; three a row fit.
        ncols=min(len(handles), 3),
        frameon=False,
        fontsize=FONT_SIZE - 1,
    )
    for text in key.get_texts():
        text.set_color(GREY)
    alt = (
        f"Timeline of {'a sample of ' if rows < total else ''}{rows:,} of {total:,} requests "
        f"by send time over {format_seconds(value=end - begin)}: each bar shows waiting, "
        f"prefill and decode; {errors:,} failed."
        + (
            f" {waited:,} waited inside the engine before their prefill ({wait_method})."
            if waited and wait_method
            else ""
        )
    )
    return figure, alt


def _mark_steps(*, ax: Axes, bars: Sequence[_Bar], span: float) -> None:
    """A dotted line where each step starts, named on a top axis; names too close are skipped."""
    starts: dict[str, float] = {}
    for bar in bars:
        starts.setdefault(bar.key, bar.queued_from)
    if len(starts) < 2:
        return
    # Roughly the share of the axis one label character takes (0.6 em, axes ~85 % of the figure).
    per_char = (FONT_SIZE - 2) * 0.6 / (ax.figure.get_figwidth() * 72 * 0.85)
    named: list[tuple[float, str]] = []
    for key, start in sorted(starts.items(), key=lambda item: item[1]):
        ax.axvline(start, color=GREY, linestyle=":", linewidth=0.8)
        room = span * per_char * (len(named[-1][1]) + len(key)) / 2 * 1.2 if named else 0.0
        if not named or start - named[-1][0] >= room:
            named.append((start, key))
    top = ax.secondary_xaxis("top")
    top.set_xticks([x for x, _ in named], labels=[k for _, k in named])
    top.tick_params(colors=GREY, labelsize=FONT_SIZE - 2, length=0)
    top.spines["top"].set_visible(False)


def _timeline_bars(*, records: Sequence[Mapping[str, Any]]) -> list[_Bar]:
    grouped: dict[str, list[Mapping[str, Any]]] = {}
    for record in records:
        if record.get("send_s") is None:
            continue
        grouped.setdefault(record_step_key(record=record), []).append(record)
    bars: list[_Bar] = []
    clock: float | None = None
    for key, group in grouped.items():
        starts = [_queued_from(record=r) for r in group]
        ends = [_end(record=r) for r in group]
        # Only shift a step whose times overlap the previous one: a run on one clock keeps its own.
        shift = max(0.0, clock - min(starts)) if clock is not None else 0.0
        for record, start, end in zip(group, starts, ends, strict=True):
            if record.get("warmup"):
                continue
            send = float(record["send_s"]) + shift
            ttft = record.get("ttft_s")
            error = record.get("error")
            bars.append(
                _Bar(
                    key=key,
                    queued_from=start + shift,
                    send=send,
                    first=send + float(ttft) if ttft is not None else None,
                    end=end + shift,
                    error=(error or {}).get("kind", "error") if error else None,
                    server_prefill=_float((record.get("server") or {}).get("prefill_s")),
                )
            )
        clock = max(ends) + shift
    bars.sort(key=lambda b: b.send)
    return bars


def _queued_from(*, record: Mapping[str, Any]) -> float:
    send = float(record["send_s"])
    scheduled = record.get("scheduled_s")
    if scheduled is not None and float(scheduled) <= send:
        return float(scheduled)
    return send - float(record.get("queue_s") or 0.0)


def _end(*, record: Mapping[str, Any]) -> float:
    send = float(record["send_s"])
    if record.get("end_s") is not None:
        return max(float(record["end_s"]), send)
    if record.get("e2e_s") is not None:
        return send + float(record["e2e_s"])
    return send


def _sample(*, bars: list[_Bar], limit: int) -> list[_Bar]:
    if len(bars) <= limit:
        return bars
    # Failed requests are what a learner looks for, so keep them while they use at most half.
    failed = [i for i, b in enumerate(bars) if b.error][: limit // 2]
    rest = [i for i, b in enumerate(bars) if not b.error]
    room = limit - len(failed)
    if room >= len(rest):
        picked = rest
    elif room == 1:
        picked = rest[:1]
    else:
        picked = [rest[round(j * (len(rest) - 1) / (room - 1))] for j in range(room)]
    return [bars[i] for i in sorted({*failed, *picked})]


# --- comparing runs -------------------------------------------------------------------------


def compare_svg(*, runs: Sequence[Mapping[str, Any]], lab_slug: str | None = None) -> str:
    """The lab's main metric per step for several runs on one chart.

    Each run is ``{"label": "run 12 (1 Dec)", "summary": <LabRun.summary>}``. The metric follows
    the sweep (aggregate tokens/s for concurrency, goodput for rates, decode tokens/s per model,
    P50 TTFT otherwise); ``lab_slug="continuous-batching"`` compares P95 TTFT, the tail that lab
    is about. Runs that swept a different parameter than the first one cannot share its x axis;
    they are left out and the title says how many.
    """
    figure, alt = compare_figure(runs=runs, lab_slug=lab_slug)
    return _svg(figure=figure, alt=alt)


def compare_figure(*, runs: Sequence[Mapping[str, Any]], lab_slug: str | None = None) -> tuple[Figure, str]:
    """The comparison as a matplotlib figure and its alt text."""
    if not runs:
        return _empty_figure(title="No runs to compare", alt="Comparison: no runs were given.")
    param = runs[0]["summary"].get("sweep_param")
    kept = [r for r in runs if r["summary"].get("sweep_param") == param]
    skipped = len(runs) - len(kept)
    views = [(str(r.get("label", "")), sweep_steps(summary=r["summary"])[1]) for r in kept]
    metric_name, metric, formatter = _compare_metric(param=param, views=views, lab_slug=lab_slug)
    numeric = param not in (None, "model", "shared_prefix") and all(
        as_number(s.value) is not None for _, steps in views for s in steps
    )
    figure, ax = new_figure()
    described: list[str] = []
    if numeric:
        every_x: list[float] = []
        for index, (label, steps) in enumerate(views):
            xs = [as_number(s.value) or 0.0 for s in steps]
            ys = [metric(s.summary) for s in steps]
            every_x.extend(xs)
            _line(ax=ax, xs=xs, ys=ys, color=SERIES[index % len(SERIES)], marker="o", label=label)
            described.append(f"{label}: " + ", ".join(formatter(y) for y in ys))
        _numeric_x(
            ax=ax,
            xs=sorted(set(every_x)),
            label=param or "step",
            base=2 if param == "concurrency" else 10,
        )
    else:
        keys: list[str] = []
        for _, steps in views:
            for s in steps:
                if s.key not in keys:
                    keys.append(s.key)
        width = 0.8 / max(len(views), 1)
        for index, (label, steps) in enumerate(views):
            by_key = {s.key: metric(s.summary) for s in steps}
            positions = [k + (index - (len(views) - 1) / 2) * width for k in range(len(keys))]
            ax.bar(
                positions,
                [by_key.get(k) or 0.0 for k in keys],
                width * 0.95,
                color=SERIES[index % len(SERIES)],
                label=label,
            )
            described.append(f"{label}: " + ", ".join(f"{k} {formatter(by_key.get(k))}" for k in keys))
        ax.set_xticks(list(range(len(keys))), labels=keys)
    ax.set_ylabel(metric_name)
    if metric_name.endswith("TTFT"):
        ax.yaxis.set_major_formatter(FuncFormatter(_seconds_tick))
    _from_zero(ax)
    title = f"{metric_name} across {len(kept)} run{'s' if len(kept) != 1 else ''}"
    if skipped:
        title += f" ({skipped} left out: a different sweep)"
    ax.set_title(title)
    place_legend(ax=ax)
    alt = f"{metric_name} per step for {len(kept)} runs: " + "; ".join(described) + "."
    return figure, alt


def _compare_metric(
    *, param: str | None, views: Sequence[tuple[str, list[StepView]]], lab_slug: str | None
) -> tuple[str, Callable[[Mapping[str, Any]], float | None], Callable[[float | None], str]]:
    if lab_slug == "continuous-batching":
        return "P95 TTFT", lambda s: stat(summary=s, metric="ttft_s", key="p95"), _seconds_text
    if param == "concurrency":
        return (
            "aggregate output tokens/s",
            lambda s: _float(s.get("output_tokens_per_s")),
            _rate_text,
        )
    if param in (None, "model"):
        return "decode tokens/s", lambda s: decode_tokens_per_s(summary=s), _rate_text
    if param == "rate_rpm":
        if any(goodput_fraction(summary=s.summary) is not None for _, steps in views for s in steps):
            return (
                "goodput (% within SLO)",
                lambda s: (goodput_fraction(summary=s) or 0.0) * 100,
                lambda v: f"{v:.0f} %" if v is not None else MISSING,
            )
        return "P95 TTFT", lambda s: stat(summary=s, metric="ttft_s", key="p95"), _seconds_text
    return "P50 TTFT", lambda s: stat(summary=s, metric="ttft_s"), _seconds_text


# --- drawing helpers ------------------------------------------------------------------------


def _svg(*, figure: Figure, alt: str) -> str:
    """SVG with ids unique to its content, so several charts can share one page."""
    svg = to_svg(figure=figure, alt=alt, id_prefix=_PREFIX_PLACEHOLDER)
    digest = hashlib.sha1(svg.encode(), usedforsecurity=False).hexdigest()[:10]
    return svg.replace(_PREFIX_PLACEHOLDER, f"lc{digest}")


def _empty_figure(*, title: str, alt: str) -> tuple[Figure, str]:
    figure, ax = new_figure(height=2.0)
    ax.set_axis_off()
    ax.text(0.5, 0.5, title, ha="center", va="center", color=GREY, transform=ax.transAxes)
    return figure, alt


def _twin(*, ax: Axes) -> Axes:
    right = ax.twinx()
    style_axes(ax=right)
    right.grid(False)
    right.spines["right"].set_visible(True)
    return right


def _legend_both(*, ax: Axes, other: Axes) -> None:
    handles, labels = ax.get_legend_handles_labels()
    more_handles, more_labels = other.get_legend_handles_labels()
    # Below the plot: with two y scales there is no corner both series are sure to leave free.
    # The twin axes is drawn over the first one, so its legend is the one nothing hides.
    legend(
        ax=other,
        handles=[*handles, *more_handles],
        labels=[*labels, *more_labels],
        loc="upper center",
        bbox_to_anchor=(0.5, -0.16),
        ncols=2,
    )


def _line(
    *,
    ax: Axes,
    xs: Sequence[float],
    ys: Sequence[float | None],
    color: str,
    marker: str,
    label: str,
    linestyle: str = "-",
) -> None:
    pairs = [(x, y) for x, y in zip(xs, ys, strict=True) if y is not None]
    if not pairs:
        return
    ax.plot(
        [x for x, _ in pairs],
        [y for _, y in pairs],
        color=color,
        marker=marker,
        linestyle=linestyle,
        linewidth=1.8,
        markersize=6,
        label=label,
    )


def _hbars(
    *,
    ax: Axes,
    bars: Sequence[tuple[float, float, float]],
    color: str,
    height: float,
    alpha: float = 1.0,
) -> None:
    """Horizontal bars (row, left, width) as one collection: far faster than one patch each."""
    if not bars:
        return
    half = height / 2
    verts = [
        [(left, y - half), (left + width, y - half), (left + width, y + half), (left, y + half)]
        for y, left, width in bars
    ]
    ax.add_collection(
        PolyCollection(verts, facecolors=color, edgecolors="none", alpha=alpha),
        autolim=True,
    )


def _bars(
    *,
    ax: Axes,
    labels: Sequence[str],
    values: Sequence[float | None],
    color: str,
    text: Callable[[float | None], str],
) -> None:
    positions = list(range(len(labels)))
    ax.bar(positions, [v or 0.0 for v in values], color=color, width=0.6, alpha=0.85)
    for pos, value in zip(positions, values, strict=True):
        ax.text(pos, value or 0.0, text(value), ha="center", va="bottom", color=GREY, fontsize=8)
    long_labels = any(len(label) > 10 for label in labels)
    ax.set_xticks(
        positions,
        labels=labels,
        rotation=25 if long_labels else 0,
        ha="right" if long_labels else "center",
    )
    ax.set_ylim(bottom=0, top=max((v or 0.0 for v in values), default=1.0) * 1.2 or 1.0)


def _numeric_x(*, ax: Axes, xs: Sequence[float], label: str, base: int = 2) -> None:
    positive = [x for x in xs if x > 0]
    if positive and len(positive) == len(xs) and max(positive) / min(positive) >= 4:
        ax.set_xscale("log", base=base)
    ax.set_xticks(list(xs), labels=[_int(x) for x in xs])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel(label)


def _seconds_y(*, ax: Axes, values: Sequence[float | None]) -> None:
    known = [v for v in values if v is not None and v > 0]
    if known and max(known) / min(known) > LOG_SPAN:
        ax.set_yscale("log")
        # Unlabelled minor ticks still cost a text layout each; the major decades are enough.
        ax.yaxis.set_minor_locator(NullLocator())
    else:
        _from_zero(ax)
    ax.yaxis.set_major_formatter(FuncFormatter(_seconds_tick))


def _from_zero(ax: Axes) -> None:
    """A y axis from 0 with headroom over the highest point: autoscaling a nearly flat series
    puts it, and its value labels, on the top edge, half cut off."""
    top = ax.dataLim.ymax
    ax.set_ylim(bottom=0, top=top * 1.15 if math.isfinite(top) and top > 0 else None)


def _seconds_labels(*, xs: Sequence[float], ys: Sequence[float | None], color: str) -> list[Label]:
    return [
        Label(text=_seconds_text(y), xy=(x, y), color=color, offsets=AROUND_A_POINT)
        for x, y in zip(xs, ys, strict=True)
        if y is not None
    ]


def _ordered_groups(*, groups: dict[str, list[float]]) -> list[tuple[str, list[float]]]:
    """Steps in sweep order when their values are numbers ("max_tokens=128" before "=2048")."""

    def order(item: tuple[str, list[float]]) -> tuple[int, float, str]:
        key = item[0]
        value = as_number(key.rsplit("=", 1)[-1]) if "=" in key else None
        return (0, value, key) if value is not None else (1, 0.0, key)

    return sorted(groups.items(), key=order)


def _first_last(*, xs: Sequence[float], ys: Sequence[float | None]) -> tuple[float | None, float | None]:
    known = [y for y in ys if y is not None]
    if len(known) < 2:
        return None, None
    return known[0], known[-1]


def _prefix_label(*, value: Any, key: str) -> str:
    if value is None:
        return key
    return "shared prefix" if is_shared(value) else "unique prompts"


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _int(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else significant(value=value)


def _seconds_tick(value: float, _position: float) -> str:
    if value <= 0:
        return "0"
    return format_seconds(value=value)


def _seconds_text(value: float | None) -> str:
    return seconds_or_missing(value)


def _rate_text(value: float | None) -> str:
    return rate_or_missing(value, unit="tok/s")


def _percent(value: float | None) -> str:
    return percent_or_missing(value)


def _seconds_list(values: Sequence[float | None]) -> str:
    return ", ".join(_seconds_text(v) for v in values)


def _rate_list(values: Sequence[float | None]) -> str:
    return ", ".join(_rate_text(v) for v in values)
