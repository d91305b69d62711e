# Multiplication and minus signs in learner-facing text and worked arithmetic are intended.
"""Figures that explain a mechanism or a measurement rather than a catalogue row."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from courses.figures.registry import Arg, figure
from courses.figures.style import (
    BLUE,
    GREEN,
    GREY,
    ORANGE,
    PURPLE,
    RED,
    SERIES,
    TEAL,
    legend,
    new_figure,
    note,
)
from courses.inference import math as im
from courses.inference.scheduling import (
    Placement,
    continuous_batching,
    makespan,
    slot_utilisation,
    static_batching,
)
from courses.inference.units import significant

# The seed experiment (shared/seeds/000): Ollama, llama3.2, one prompt per max_tokens setting.
SEED_RUNS = (
    # max_tokens, TTFT s, total s, tokens generated (approximate, as reported)
    (128, 2.93, 6.36, 50),
    (512, 3.33, 55.75, 400),
    (2048, 4.35, 87.79, 600),
)


@figure(
    name="seed_experiment",
    summary="Ollama llama3.2 with max_tokens 128 / 512 / 2048: stacked TTFT + decode time per run.",
)
def seed_experiment() -> Figure:
    fig, ax = new_figure(height=3.8)
    labels = [
        f"max_tokens {tokens:,}\n~{generated:,} tokens out" for tokens, _, _, generated in SEED_RUNS
    ]
    ttft = [run[1] for run in SEED_RUNS]
    decode = [run[2] - run[1] for run in SEED_RUNS]
    ax.bar(labels, ttft, color=BLUE, label="time to first token (prefill)")
    ax.bar(labels, decode, bottom=ttft, color=ORANGE, label="decode (after the first token)")
    for index, (_, first, total, _) in enumerate(SEED_RUNS):
        ax.annotate(
            f"total {total:.2f} s",
            xy=(index, total),
            xytext=(0, 4),
            textcoords="offset points",
            ha="center",
            color=GREY,
            fontsize=9,
        )
        ax.annotate(
            f"{first:.2f} s",
            xy=(index, first / 2),
            ha="center",
            va="center",
            color="white",
            fontsize=9,
        )
    ax.set_ylabel("Seconds")
    ax.set_ylim(0, max(run[2] for run in SEED_RUNS) * 1.15)
    ax.set_title("Same prompt, longer answers: TTFT grows 1.5×, total time 13.8×")
    legend(ax=ax, loc="upper left")
    note(
        figure=fig,
        text="Ollama, llama3.2, local machine; decode = total − TTFT. Token counts are "
        "approximate.",
    )
    return fig


BATCHING_LENGTHS = [6, 2, 9, 3, 4, 7, 2, 5]
BATCHING_SLOTS = 4


def _gantt(*, ax, placements: list[Placement], slots: int, horizon: int) -> None:
    for placement in placements:
        colour = SERIES[placement.request % len(SERIES)]
        ax.broken_barh(
            [(placement.start, placement.end - placement.start)],
            (placement.slot - 0.4, 0.8),
            color=colour,
            edgecolor="none",
        )
        ax.text(
            (placement.start + placement.end) / 2,
            placement.slot,
            f"R{placement.request + 1}",
            ha="center",
            va="center",
            color="white",
            fontsize=9,
        )
    end = makespan(placements=placements)
    for slot in range(slots):
        busy = sorted((p.start, p.end) for p in placements if p.slot == slot)
        cursor = 0
        for start, stop in [*busy, (end, end)]:
            if start > cursor:
                ax.add_patch(
                    Rectangle(
                        (cursor, slot - 0.4),
                        start - cursor,
                        0.8,
                        facecolor="none",
                        edgecolor=GREY,
                        hatch="///",
                        linewidth=0.6,
                    )
                )
            cursor = max(cursor, stop)
    ax.set_yticks(range(slots), [f"slot {slot + 1}" for slot in range(slots)])
    ax.set_xlim(0, horizon)
    ax.set_ylim(slots - 0.5, -0.5)


@figure(
    name="batching_schedules",
    summary="Static vs continuous (iteration-level) batching of the same eight requests in four "
    "slots, as a Gantt chart with idle slots hatched.",
)
def batching_schedules() -> Figure:
    static = static_batching(lengths=BATCHING_LENGTHS, slots=BATCHING_SLOTS)
    continuous = continuous_batching(lengths=BATCHING_LENGTHS, slots=BATCHING_SLOTS)
    horizon = makespan(placements=static) + 1
    fig, (top, bottom) = new_figure(height=4.6, rows=2, sharex=True)
    for ax, placements, title in (
        (top, static, "Static batching: the next batch waits for the longest request"),
        (
            bottom,
            continuous,
            "Continuous batching: a freed slot takes the next request at the next iteration",
        ),
    ):
        _gantt(ax=ax, placements=placements, slots=BATCHING_SLOTS, horizon=horizon)
        percent = slot_utilisation(placements=placements, slots=BATCHING_SLOTS) * 100
        ax.set_title(
            f"{title}\nall done after {makespan(placements=placements)} iterations, "
            f"slots busy {percent:.0f} % of the time",
            fontsize=10,
        )
        ax.grid(False)
    bottom.set_xlabel("Decode iteration")
    note(
        figure=fig,
        text="R1–R8 need "
        + ", ".join(str(n) for n in BATCHING_LENGTHS)
        + " decode iterations; all queued at time 0. Hatched: idle slot.",
    )
    return fig


def _cells(
    *, ax, row: float, owners: list[str | None], used: list[bool], colours: dict[str, str]
) -> None:
    for index, (owner, filled) in enumerate(zip(owners, used, strict=True)):
        if owner is None:
            ax.add_patch(
                Rectangle((index, row), 0.92, 0.8, facecolor="none", edgecolor=GREY, linewidth=0.6)
            )
            continue
        colour = colours[owner]
        if filled:
            ax.add_patch(Rectangle((index, row), 0.92, 0.8, facecolor=colour, edgecolor=colour))
        else:
            ax.add_patch(
                Rectangle(
                    (index, row),
                    0.92,
                    0.8,
                    facecolor="none",
                    edgecolor=colour,
                    hatch="///",
                    linewidth=0.8,
                )
            )


def _letters(*, ax, owners: list[str | None]) -> None:
    """Name each run of cells by its owner, in the run's first cell."""
    previous = None
    for index, owner in enumerate(owners):
        if owner is not None and owner != previous:
            ax.text(
                index + 0.46,
                0.4,
                owner,
                ha="center",
                va="center",
                color="white",
                fontsize=10,
                fontweight="bold",
            )
        previous = owner


@figure(
    name="paged_kv",
    summary="KV memory management: contiguous per-request reservation (internal and external "
    "fragmentation) against fixed-size blocks with a block table.",
)
def paged_kv() -> Figure:
    colours = {"A": BLUE, "B": ORANGE, "C": GREEN, "D": PURPLE}
    fig, (top, bottom) = new_figure(width=8.0, height=4.8, rows=2)

    # Contiguous: each request reserves its maximum length (10 slots) up front; gaps left by
    # finished requests are too small for the next reservation.
    owners: list[str | None] = [None] * 32
    used = [False] * 32
    for owner, start, tokens in (("A", 0, 4), ("B", 13, 7)):
        for offset in range(10):
            owners[start + offset] = owner
            used[start + offset] = offset < tokens
    _cells(ax=top, row=0, owners=owners, used=used, colours=colours)
    top.text(
        0,
        1.1,
        "Contiguous: each request reserves room for its maximum length (10 tokens)",
        color=GREY,
        fontsize=10,
        in_layout=False,
    )
    top.text(
        0,
        -0.55,
        "Hatched: reserved but unused (internal fragmentation).\nD needs 10 contiguous slots: "
        "12 are free, but no gap is long enough (external fragmentation).",
        color=RED,
        fontsize=9,
        va="top",
        in_layout=False,
    )
    _letters(ax=top, owners=owners)

    # Paged: blocks of 4 tokens anywhere in memory; a block table maps each request's logical
    # blocks to physical ones, so only the last block of a request can be partly empty.
    block = 4
    tables = {"A": [1], "B": [0, 3], "C": [5], "D": [2, 6]}
    tokens = {"A": 4, "B": 7, "C": 3, "D": 6}
    owners = [None] * 32
    used = [False] * 32
    for owner, physical in tables.items():
        for logical, number in enumerate(physical):
            for offset in range(block):
                cell = number * block + offset
                owners[cell] = owner
                used[cell] = logical * block + offset < tokens[owner]
    _cells(ax=bottom, row=0, owners=owners, used=used, colours=colours)
    _letters(ax=bottom, owners=owners)
    for number in range(8):
        bottom.text(
            number * block + 1.9,
            -0.35,
            f"block {number}",
            ha="center",
            color=GREY,
            fontsize=8,
            in_layout=False,
        )
    bottom.text(
        0,
        1.1,
        "Paged (block size 4): any free block will do, so D fits; only a request's last block "
        "can be part empty",
        color=GREY,
        fontsize=10,
        in_layout=False,
    )
    table = "   ".join(f"{owner}: {tables[owner]}" for owner in tables)
    bottom.text(
        0,
        -0.75,
        f"Block tables (logical → physical): {table}",
        color=GREY,
        fontsize=9,
        in_layout=False,
    )
    for ax in (top, bottom):
        ax.set_xlim(-0.2, 32.2)
        ax.set_ylim(-1.3, 1.7)
        ax.axis("off")
    handles = [Rectangle((0, 0), 1, 1, facecolor=colour) for colour in colours.values()]
    fig.legend(
        handles,
        [f"request {owner}" for owner in colours],
        loc="outside lower center",
        ncols=4,
        frameon=False,
        fontsize=9,
        labelcolor=GREY,
    )
    return fig


@figure(
    name="speculative_speedup",
    summary="Expected speedup of speculative decoding against acceptance rate α for several draft "
    "lengths k, with E[tokens per target step] = (1 − α^(k+1)) / (1 − α) and cost k·c + 1.",
    args=(
        Arg(
            name="draft_cost",
            kind="float",
            help="cost of a draft step relative to a target step (c)",
            default="0.05",
            low=0,
            high=1,
        ),
        Arg(name="ks", kind="ints", help="draft lengths k", default="2,4,8", low=1, high=16),
    ),
)
def speculative_speedup(*, draft_cost: float, ks: tuple[int, ...]) -> Figure:
    alphas = np.linspace(0, 0.99, 200)
    fig, ax = new_figure()
    for colour, k in zip(SERIES, ks, strict=False):
        speedups = [
            im.speculative_speedup(acceptance=a, draft_tokens=k, draft_cost=draft_cost)
            for a in alphas
        ]
        ax.plot(alphas, speedups, color=colour, linewidth=2.2, label=f"k = {k}")
    ax.axhline(1, color=RED, linestyle="--", linewidth=1.2, label="no gain")
    ax.set_xlim(0, 1)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("Acceptance rate α (chance the target agrees with a drafted token)")
    ax.set_ylabel("Expected speedup over plain decoding")
    ax.set_title(f"Speculative decoding with a draft costing c = {draft_cost:g} of a target step")
    legend(ax=ax, loc="upper left")
    note(
        figure=fig,
        text="Speedup = (1 − α^(k+1)) / ((1 − α)(k·c + 1)), Leviathan et al. 2023. "
        "Assumes the target verifies k tokens in the time of one decode step.",
    )
    return fig


@figure(
    name="cost_per_million",
    summary="Cost per million output tokens against GPU utilisation for several throughputs.",
    args=(
        Arg(
            name="gpu_price",
            kind="float",
            help="$ per GPU-hour",
            default="2.50",
            low=0.01,
            high=1000,
        ),
        Arg(
            name="throughputs",
            kind="floats",
            help="output tokens/s at full load",
            default="500,2000,8000",
            low=0.1,
            high=1e7,
        ),
    ),
)
def cost_per_million(*, gpu_price: float, throughputs: tuple[float, ...]) -> Figure:
    utilisation = np.linspace(0.05, 1.0, 96)
    fig, ax = new_figure()
    for colour, rate in zip(SERIES, throughputs, strict=False):
        costs = [
            im.cost_per_million_tokens(
                gpu_price_per_hour=gpu_price, tokens_per_s=rate, utilisation=u
            )
            for u in utilisation
        ]
        ax.plot(
            utilisation * 100,
            costs,
            color=colour,
            linewidth=2.2,
            label=f"{significant(value=rate)} tokens/s",
        )
        ax.annotate(
            f"${significant(value=costs[-1])}",
            xy=(100, costs[-1]),
            xytext=(4, 0),
            textcoords="offset points",
            va="center",
            color=colour,
            fontsize=9,
        )
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(lambda value, _position: f"${value:g}")
    ax.set_xlim(0, 112)
    ax.set_xlabel("Utilisation (% of the hour the GPU is serving at that throughput)")
    ax.set_ylabel("$ per million output tokens")
    ax.set_title(f"A ${gpu_price:,.2f}/hour GPU: idle time is paid for")
    legend(ax=ax, loc="upper right")
    note(figure=fig, text="$/M tokens = price per hour ÷ (tokens/s × utilisation × 3,600) × 10⁶.")
    return fig


PERCENTILE_SEED = 20240601
PERCENTILE_REPEATS = 300
# Log-normal latencies: median 200 ms, sigma 0.8, a long right tail like real request latencies.
LATENCY_MEDIAN_S = 0.2
LATENCY_SIGMA = 0.8
Z_99 = 2.326347874  # standard normal quantile at 0.99


def p99_estimates(*, n: int, repeats: int, seed: int) -> np.ndarray:
    """P99 estimated from `repeats` independent samples of `n` latencies (seconds)."""
    rng = np.random.default_rng(seed)
    samples = rng.lognormal(mean=np.log(LATENCY_MEDIAN_S), sigma=LATENCY_SIGMA, size=(repeats, n))
    return np.percentile(samples, 99, axis=1)


@figure(
    name="percentile_spread",
    summary="Spread of the estimated P99 of a long-tailed latency distribution across repeated "
    "samples of size n (seeded): small samples give unreliable tails.",
    args=(
        Arg(name="ns", kind="ints", help="sample sizes", default="20,100,1000", low=5, high=20000),
    ),
)
def percentile_spread(*, ns: tuple[int, ...]) -> Figure:
    true_p99 = LATENCY_MEDIAN_S * np.exp(LATENCY_SIGMA * Z_99) * 1e3
    fig, ax = new_figure()
    estimates = [
        p99_estimates(n=n, repeats=PERCENTILE_REPEATS, seed=PERCENTILE_SEED + n) * 1e3 for n in ns
    ]
    box = ax.boxplot(estimates, whis=(5, 95), showfliers=False, patch_artist=True, widths=0.5)
    for patch in box["boxes"]:
        patch.set(facecolor=TEAL, alpha=0.5, edgecolor=GREY)
    for part in ("whiskers", "caps", "medians"):
        for line in box[part]:
            line.set_color(GREY)
    rng = np.random.default_rng(PERCENTILE_SEED)
    for position, values in enumerate(estimates, start=1):
        # Dots for a third of the runs: enough to see the scatter, and the inlined SVG stays small.
        shown = values[: PERCENTILE_REPEATS // 3]
        jitter = rng.uniform(-0.18, 0.18, size=len(shown))
        ax.plot(position + jitter, shown, ".", color=BLUE, alpha=0.35, markersize=3)
        low, high = np.percentile(values, [5, 95])
        ax.annotate(f"{low:.0f}–{high:.0f} ms", xy=(position + 0.3, high), color=GREY, fontsize=9)
    ax.axhline(
        true_p99, color=ORANGE, linestyle="--", linewidth=1.4, label=f"true P99 {true_p99:.0f} ms"
    )
    ax.set_xticks(range(1, len(ns) + 1), [f"n = {n:,}" for n in ns])
    ax.set_ylabel("Estimated P99 latency (ms)")
    ax.set_title(f"P99 from {PERCENTILE_REPEATS} repeated runs of n requests each")
    legend(ax=ax, loc="upper right")
    note(
        figure=fig,
        text="Log-normal latencies (median 200 ms, σ = 0.8), seeded. Box: middle half; whiskers: "
        "5th–95th percentile of the estimates. At n = 20 the 'P99' is set by the two largest "
        "values.",
    )
    return fig
