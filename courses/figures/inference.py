# Multiplication and minus signs in learner-facing text and worked arithmetic are intended.
"""Figures computed from the GPU and model catalogues with `courses.inference.math`."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MultipleLocator

from courses.figures.collisions import OVER_A_BAR, Label, Offset, leader_offsets, place_labels, place_legend
from courses.figures.registry import Arg, figure
from courses.figures.style import (
    BLUE,
    GREEN,
    GREY,
    ORANGE,
    PURPLE,
    RED,
    SERIES,
    legend,
    new_figure,
    note,
)
from courses.inference import math as im
from courses.inference.specs import Gpu, Model
from courses.inference.units import format_seconds, significant

GIB = 1024**3

# Where a line's end label may go, preferred first: beside the end point, then around it. A line
# that runs to the right edge has no room on its right.
TRUNCATED_END = (
    Offset(6, 0, "left", "center"),
    Offset(-4, 6, "right", "bottom"),
    Offset(6, 6, "left", "bottom"),
    Offset(6, -6, "left", "top"),
    Offset(-4, -6, "right", "top"),
    Offset(-4, 16, "right", "bottom"),
    Offset(6, 16, "left", "bottom"),
    # Where other lines crowd the end point, a leader line to the nearest clear spot.
    *leader_offsets(),
)
FULL_END = (
    Offset(-4, 6, "right", "bottom"),
    Offset(-8, 0, "right", "center"),
    Offset(-4, -6, "right", "top"),
    Offset(-4, 16, "right", "bottom"),
)

ROOFLINE_PRECISIONS = ("bf16", "fp16", "fp8", "int8")


def _title(*, figure: Figure, text: str) -> None:
    # Figure-level, so a long model and GPU name centres on the figure rather than the axes.
    figure.suptitle(text, color=GREY, fontsize=11)


def _gpu_arg(*, default: str | None = None) -> Arg:
    return Arg(
        name="gpu",
        kind="gpu",
        help="GPU from the catalogue",
        default=default,
        required=default is None,
    )


def _model_arg(*, default: str | None = None, required: bool | None = None) -> Arg:
    return Arg(
        name="model",
        kind="model",
        help="model from the catalogue",
        default=default,
        required=default is None if required is None else required,
    )


def _weights_arg(*, choices: tuple[str, ...] = im.WEIGHT_PRECISIONS) -> Arg:
    return Arg(
        name="precision", kind="choice", help="weight precision", default="bf16", choices=choices
    )


def _kv_arg() -> Arg:
    return Arg(
        name="kv_precision",
        kind="choice",
        help="KV cache precision",
        default="bf16",
        choices=im.KV_PRECISIONS,
    )


@figure(
    name="roofline",
    summary="Roofline of a GPU: attainable FLOP/s against arithmetic intensity, with the ridge "
    "point; with model=, marks decode at batch 1 and prefill of 1,024 tokens.",
    args=(
        _gpu_arg(),
        _weights_arg(choices=ROOFLINE_PRECISIONS),
        _model_arg(required=False),
    ),
)
def roofline(*, gpu: Gpu, precision: str, model: Model | None) -> Figure:
    peak = im.peak_compute(gpu=gpu, precision=precision)
    bandwidth = gpu.memory_bandwidth_bytes_per_s
    ridge = im.ridge_point(peak_flops=peak.flops, bandwidth_bytes_per_s=bandwidth)
    # Both roofs are straight lines on log-log axes, so three points draw them exactly.
    intensity = np.array([0.1, ridge, 10**4.5])
    attainable = np.minimum(peak.flops, intensity * bandwidth) / 1e12

    fig, ax = new_figure()
    ax.loglog(intensity, attainable, color=BLUE, linewidth=2.2, label="attainable FLOP/s")
    ax.axvline(ridge, color=GREY, linestyle=":", linewidth=1)
    ax.annotate(
        f"ridge point\n{significant(value=ridge)} FLOP/byte",
        xy=(ridge, peak.flops / 1e12),
        xytext=(ridge * 1.6, peak.flops / 1e12 * 0.12),
        color=GREY,
        fontsize=9,
        arrowprops={"arrowstyle": "->", "color": GREY},
    )
    ax.text(
        0.12,
        min(peak.flops, 30 * bandwidth) / 1e12,
        "memory-bound:\ntime = bytes ÷ bandwidth",
        color=GREY,
        fontsize=9,
        in_layout=False,
    )
    # Right of the ridge line, over the flat roof: left of it the dotted line would strike it.
    ax.text(
        ridge * 1.25,
        peak.flops / 1e12 * 1.6,
        "compute-bound:\ntime = FLOPs ÷ peak",
        color=GREY,
        fontsize=9,
        ha="left",
        va="bottom",
        in_layout=False,
    )

    if model is not None:
        decode = im.decode_bound(
            gpu=gpu, model=model, precision=precision, kv_precision="bf16", batch=1, context=1024
        )
        prefill = im.prefill_bound(
            gpu=gpu, model=model, precision=precision, kv_precision="bf16", prompt_tokens=1024
        )
        for point, label, colour in (
            (decode.arithmetic_intensity, "decode, batch 1", ORANGE),
            (prefill.arithmetic_intensity, "prefill, 1,024 tokens", GREEN),
        ):
            performance = (
                im.attainable_flops(
                    intensity=point, peak_flops=peak.flops, bandwidth_bytes_per_s=bandwidth
                )
                / 1e12
            )
            ax.plot(
                [point],
                [performance],
                "o",
                color=colour,
                markersize=8,
                label=f"{model.name} {label}",
            )
            ax.annotate(
                f"{significant(value=point)} FLOP/byte",
                xy=(point, performance),
                xytext=(6, -14),
                textcoords="offset points",
                color=colour,
                fontsize=9,
            )
    ax.set_xlabel("Arithmetic intensity (FLOP per byte read from memory)")
    ax.set_ylabel("Attainable TFLOP/s")
    # Headroom over the roof for the two-line compute-bound label.
    ax.set_ylim(peak.flops / 1e12 * 1e-4, peak.flops / 1e12 * 12)
    _title(
        figure=fig,
        text=f"{gpu.name}: {significant(value=peak.flops / 1e12, digits=4, strip=True)} TFLOP/s "
        f"{peak.label} dense, {significant(value=bandwidth / 1e12, digits=3, strip=True)} TB/s",
    )
    place_legend(ax=ax)
    return fig


@figure(
    name="decode_batch_scaling",
    summary="Decode speed-of-light per sequence and aggregate against batch size (log x), marking "
    "where the step turns compute-bound and where the KV cache runs out of memory.",
    args=(
        _gpu_arg(),
        _model_arg(),
        _weights_arg(),
        Arg(
            name="context",
            kind="int",
            help="tokens in each sequence's KV cache",
            default="2048",
            low=1,
            high=131072,
        ),
        Arg(
            name="max_batch",
            kind="int",
            help="largest batch drawn",
            default="256",
            low=2,
            high=4096,
        ),
    ),
)
def decode_batch_scaling(
    *, gpu: Gpu, model: Model, precision: str, context: int, max_batch: int
) -> Figure:
    if context > model.max_context:
        raise ValueError(
            f"context {context:,} is longer than {model.name}'s {model.max_context:,} tokens"
        )
    batches = sorted({round(value) for value in np.geomspace(1, max_batch, 80)})
    bounds = [
        im.decode_bound(
            gpu=gpu,
            model=model,
            precision=precision,
            kv_precision="bf16",
            batch=batch,
            context=context,
        )
        for batch in batches
    ]
    weights = im.model_weight_bytes(model=model, precision=precision)
    kv_sequence = im.kv_bytes_per_sequence(model=model, kv_precision="bf16", context=context)
    fits = im.max_concurrent_sequences(
        gpu_memory_bytes=gpu.memory_bytes,
        weight_bytes=weights,
        kv_bytes_per_sequence=kv_sequence,
        reserve_bytes=im.runtime_reserve_bytes(gpu_memory_bytes=gpu.memory_bytes),
    )

    fig, ax = new_figure()
    ax.loglog(
        batches,
        [b.aggregate_tokens_per_s for b in bounds],
        color=BLUE,
        linewidth=2.2,
        label="aggregate tokens/s",
    )
    ax.loglog(
        batches,
        [b.per_sequence_tokens_per_s for b in bounds],
        color=ORANGE,
        linewidth=2.2,
        label="tokens/s per sequence",
    )
    turn = next((b.batch for b in bounds if b.bound_by == "compute"), None)
    if turn is not None:
        ax.axvline(
            turn,
            color=GREEN,
            linestyle="--",
            linewidth=1.2,
            label=f"compute-bound from batch {turn:,}",
        )
    weights_turn = im.weights_only_compute_bound_batch(gpu=gpu, model=model, precision=precision)
    if turn is None and weights_turn is not None and weights_turn <= max_batch:
        ax.axvline(
            weights_turn,
            color=GREEN,
            linestyle=":",
            linewidth=1.2,
            label=f"weights alone compute-bound from batch {weights_turn:,}",
        )
    if fits == 0:
        ax.text(
            0.5,
            0.5,
            f"the weights alone do not fit on the {gpu.name}",
            transform=ax.transAxes,
            ha="center",
            color=RED,
            fontsize=10,
        )
    elif fits < max_batch:
        ax.axvspan(fits, max_batch, color=RED, alpha=0.12, linewidth=0)
        ax.axvline(
            fits,
            color=RED,
            linestyle="--",
            linewidth=1.2,
            label=f"KV memory full after {fits:,} sequences",
        )
    ax.set_xlabel("Batch size (sequences decoding together)")
    ax.set_ylabel("Decode tokens/s (upper bound)")
    _title(
        figure=fig,
        text=f"{model.name} {precision} on {gpu.name}, {context:,} tokens of context each",
    )
    legend(ax=ax, loc="upper left")
    if turn is not None:
        story = f"The step turns compute-bound at batch {turn:,}."
    elif weights_turn is not None:
        story = (
            "Counting the weights alone, the step would turn compute-bound at batch "
            f"{weights_turn:,}; the KV "
            f"reads grow with the batch too, so up to batch {max_batch:,} it stays memory-bound."
        )
    else:
        story = f"Up to batch {max_batch:,} the step stays memory-bound."
    note(figure=fig, text=f"Speed-of-light bounds, KV cache in bf16. {story}")
    return fig


@figure(
    name="kv_cache_growth",
    summary="KV cache per sequence (GiB) against context length for several models; lines stop at "
    "each model's maximum context.",
    args=(
        Arg(name="models", kind="models", help="models to compare", required=True),
        _kv_arg(),
        Arg(
            name="max_context",
            kind="int",
            help="right end of the x axis (tokens)",
            default="131072",
            low=256,
            high=1048576,
        ),
    ),
)
def kv_cache_growth(*, models: tuple[Model, ...], kv_precision: str, max_context: int) -> Figure:
    fig, ax = new_figure()
    ends: list[Label] = []
    for colour, model in zip(SERIES, models, strict=False):
        end = min(max_context, model.max_context)
        # Piecewise linear: every layer grows up to the sliding window (if any), then only the
        # full-attention layers do, so three points draw the line exactly.
        knots = {1, end} | ({model.sliding_window} if 0 < model.sliding_window < end else set())
        contexts = np.array([0, *sorted(knots)])
        gib = (
            np.array(
                [0.0]
                + [
                    im.kv_bytes_per_sequence(model=model, kv_precision=kv_precision, context=c)
                    for c in contexts[1:]
                ]
            )
            / GIB
        )
        per_token = im.long_context_kv_bytes_per_token(model=model, kv_precision=kv_precision)
        label = (
            f"{model.name} ({significant(value=per_token / 1024, digits=4, strip=True)} KiB/token)"
        )
        ax.plot(contexts, gib, color=colour, linewidth=2.2, label=label)
        ax.plot([end], [gib[-1]], "o", color=colour, markersize=5)
        # A line that stops short of the axis says where it stops; the label goes beside the
        # end point where no other model's line runs through it.
        if end < max_context:
            ends.append(
                Label(
                    text=f"{significant(value=gib[-1])} GiB at its max context",
                    xy=(end, gib[-1]),
                    color=colour,
                    offsets=TRUNCATED_END,
                )
            )
        else:
            ends.append(
                Label(text=f"{significant(value=gib[-1])} GiB", xy=(end, gib[-1]), color=colour, offsets=FULL_END)
            )
    ax.set_xlim(0, max_context * 1.02)
    ax.set_ylim(bottom=0)
    # Ticks on powers of two (16k, 32k, ...) because context limits are powers of two.
    step = 2 ** max(0, int(np.ceil(np.log2(max_context / 8))))
    ax.xaxis.set_major_locator(MultipleLocator(step))
    ax.set_xlabel("Context length (tokens)")
    ax.set_ylabel("KV cache per sequence (GiB)")
    ax.set_title(f"KV cache grows linearly with context ({kv_precision})")
    ax.xaxis.set_major_formatter(
        lambda value, _position: (
            f"{value / 1024:g}k" if value >= 1024 and value % 1024 == 0 else f"{value:g}"
        )
    )
    legend(ax=ax, loc="upper left")
    note(
        figure=fig,
        text="Per token: 2 (K and V) × layers × KV heads × head dim × bytes; MLA caches "
        "layers × (latent + RoPE key); sliding-window layers stop growing at their window.",
    )
    place_labels(ax=ax, labels=ends, fontsize=9)
    return fig


def _budget_batches(*, fits: int) -> list[int]:
    top = max(2, min(1024, 2 * max(fits, 1)))
    batches = [1]
    while batches[-1] * 2 <= top:
        batches.append(batches[-1] * 2)
    if fits > 1 and fits not in batches:
        batches.append(fits)
    return sorted(batches)[-9:] if len(batches) > 9 else sorted(batches)


@figure(
    name="memory_budget",
    summary="Stacked weights + KV cache (+ runtime reserve) for growing batch sizes against the "
    "GPU's memory, showing how many sequences fit.",
    args=(
        _gpu_arg(),
        _model_arg(),
        _weights_arg(),
        Arg(
            name="context",
            kind="int",
            help="tokens per sequence",
            default="8192",
            low=1,
            high=131072,
        ),
        _kv_arg(),
    ),
)
def memory_budget(
    *, gpu: Gpu, model: Model, precision: str, context: int, kv_precision: str
) -> Figure:
    if context > model.max_context:
        raise ValueError(
            f"context {context:,} is longer than {model.name}'s {model.max_context:,} tokens"
        )
    weights = im.model_weight_bytes(model=model, precision=precision)
    kv_sequence = im.kv_bytes_per_sequence(model=model, kv_precision=kv_precision, context=context)
    reserve = im.runtime_reserve_bytes(gpu_memory_bytes=gpu.memory_bytes)
    fits = im.max_concurrent_sequences(
        gpu_memory_bytes=gpu.memory_bytes,
        weight_bytes=weights,
        kv_bytes_per_sequence=kv_sequence,
        reserve_bytes=reserve,
    )
    batches = _budget_batches(fits=fits)
    positions = np.arange(len(batches))
    kv = np.array([batch * kv_sequence for batch in batches]) / 1e9

    fig, ax = new_figure()
    over = [weights + batch * kv_sequence + reserve > gpu.memory_bytes for batch in batches]
    alphas = [0.35 if too_big else 1.0 for too_big in over]
    for index, position in enumerate(positions):
        ax.bar(
            position,
            weights / 1e9,
            color=BLUE,
            alpha=alphas[index],
            label="weights" if index == 0 else None,
        )
        ax.bar(
            position,
            kv[index],
            bottom=weights / 1e9,
            color=ORANGE,
            alpha=alphas[index],
            label="KV cache" if index == 0 else None,
        )
        ax.bar(
            position,
            reserve / 1e9,
            bottom=weights / 1e9 + kv[index],
            color="none",
            edgecolor=GREY,
            hatch="///",
            linewidth=0.6,
            label="runtime reserve (10 %)" if index == 0 else None,
        )
    ax.axhline(gpu.memory_bytes / 1e9, color=RED, linewidth=1.6, label=f"GPU: {gpu.memory_label}")
    ax.set_xticks(positions, [f"{batch:,}" for batch in batches])
    ax.set_xlabel(f"Concurrent sequences of {context:,} tokens")
    ax.set_ylabel("GB")
    ceiling = max(gpu.memory_bytes, weights + kv[-1] * 1e9 + reserve) / 1e9
    ax.set_ylim(0, ceiling * 1.12)
    verdict = f"fits {fits:,} sequences" if fits else "the weights alone do not fit"
    fig.suptitle(
        f"{model.name} {precision} + KV {kv_precision} on {gpu.name}: {verdict}",
        color=GREY,
        fontsize=11,
    )
    legend(ax=ax, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    note(
        figure=fig,
        text="Faded bars do not fit. Weights + KV × sequences + reserve must stay under the line.",
    )
    return fig


@figure(
    name="prefill_decode_timeline",
    summary="One request's timeline: the prefill block then each decode step, durations from the "
    "speed-of-light math (lower bounds).",
    args=(
        _gpu_arg(default="h100-sxm"),
        _model_arg(default="llama-3.1-8b"),
        Arg(
            name="prompt_tokens",
            kind="int",
            help="prompt length",
            default="1024",
            low=1,
            high=131072,
        ),
        Arg(
            name="output_tokens", kind="int", help="tokens generated", default="16", low=1, high=256
        ),
    ),
)
def prefill_decode_timeline(
    *, gpu: Gpu, model: Model, prompt_tokens: int, output_tokens: int
) -> Figure:
    if prompt_tokens + output_tokens > model.max_context:
        raise ValueError(
            f"prompt_tokens + output_tokens ({prompt_tokens + output_tokens:,}) exceed "
            f"{model.name}'s {model.max_context:,}-token context"
        )
    prefill = im.prefill_bound(
        gpu=gpu, model=model, precision="bf16", kv_precision="bf16", prompt_tokens=prompt_tokens
    )
    steps = [
        im.decode_bound(
            gpu=gpu,
            model=model,
            precision="bf16",
            kv_precision="bf16",
            batch=1,
            context=prompt_tokens + i,
        )
        for i in range(1, output_tokens)
    ]
    fig, ax = new_figure(height=2.8)
    ms = 1e3
    ax.broken_barh(
        [(0, prefill.seconds * ms)],
        (0.2, 0.6),
        color=BLUE,
        label=f"prefill ({prefill.bound_by}-bound)",
    )
    start = prefill.seconds
    for index, step in enumerate(steps):
        # Alternate colours so neighbouring steps read as separate bars; both are named in the key.
        colour = ORANGE if index % 2 == 0 else PURPLE
        label = None
        if index == 0:
            label = "decode steps 1, 3, 5, … (memory-bound)"
        elif index == 1:
            label = "decode steps 2, 4, 6, …"
        ax.broken_barh([(start * ms, step.step_seconds * ms)], (0.2, 0.6), color=colour, label=label)
        start += step.step_seconds
    ax.axvline(prefill.seconds * ms, color=GREY, linestyle=":", linewidth=1)
    ax.annotate(
        f"first token ≥ {format_seconds(value=prefill.seconds)}",
        xy=(prefill.seconds * ms, 0.85),
        xytext=(4, 4),
        textcoords="offset points",
        color=GREY,
        fontsize=9,
    )
    ax.annotate(
        f"last token ≥ {format_seconds(value=start)}",
        xy=(start * ms, 0.2),
        xytext=(-4, -14),
        textcoords="offset points",
        ha="right",
        color=GREY,
        fontsize=9,
    )
    ax.set_yticks([])
    ax.spines["left"].set_visible(False)
    ax.set_ylim(-0.3, 1.3)
    ax.set_xlim(0, start * ms * 1.02)
    ax.set_xlabel("Milliseconds since the request started (lower bounds)")
    _title(
        figure=fig,
        text=f"{model.name} bf16 on {gpu.name}: {prompt_tokens:,}-token prompt, {output_tokens:,} "
        "tokens out",
    )
    step_text = (
        f"The first token comes out of prefill; each of the {len(steps)} decode steps that follow "
        f"takes ≥ {format_seconds(value=steps[0].step_seconds)}. "
        if steps
        else "The only token comes out of prefill. "
    )
    note(
        figure=fig,
        text=step_text + "Speeds of light: no queueing, launch overhead or sampling time; "
        "real engines are slower.",
    )
    place_legend(ax=ax, ncols=2)
    return fig


@figure(
    name="tensor_parallel",
    summary="Weights per GPU and decode bound at batch 1 for tensor parallelism over 1, 2, 4 and "
    "8 GPUs (all-reduce cost not included).",
    args=(
        _model_arg(default="llama-3.1-70b"),
        _gpu_arg(default="h100-sxm"),
        _weights_arg(),
    ),
)
def tensor_parallel(*, model: Model, gpu: Gpu, precision: str) -> Figure:
    degrees = (1, 2, 4, 8)
    weights = im.model_weight_bytes(model=model, precision=precision)
    reserve = im.runtime_reserve_bytes(gpu_memory_bytes=gpu.memory_bytes)
    usable = gpu.memory_bytes - reserve
    single = im.decode_bound(
        gpu=gpu, model=model, precision=precision, kv_precision="bf16", batch=1, context=4096
    )
    fig, (left, right) = new_figure(width=8.0, height=3.8, cols=2)
    per_gpu = [weights / degree / 1e9 for degree in degrees]
    fit = [weights / degree <= usable for degree in degrees]
    labels = [f"TP={degree}" for degree in degrees]
    for label, value, ok in zip(labels, per_gpu, fit, strict=True):
        left.bar(
            label, value, color=BLUE if ok else "none", edgecolor=BLUE, hatch=None if ok else "///"
        )
    left.axhline(gpu.memory_bytes / 1e9, color=RED, linewidth=1.4, label=f"{gpu.memory_label}")
    left.axhline(usable / 1e9, color=RED, linewidth=1, linestyle="--", label="minus 10 % reserve")
    left.set_ylabel("Weights per GPU (GB)")
    left.set_title("Weights split across GPUs")
    legend(ax=left, loc="upper right")

    # Ideal sharding divides both the bytes each GPU reads and the FLOPs it does by the degree.
    rates = [degree / single.step_seconds for degree in degrees]
    for label, rate, ok in zip(labels, rates, fit, strict=True):
        right.bar(
            label, rate, color=GREEN if ok else "none", edgecolor=GREEN, hatch=None if ok else "///"
        )
    for label, rate in zip(labels, rates, strict=True):
        right.annotate(
            f"{significant(value=rate)}",
            xy=(label, rate),
            xytext=(0, 3),
            textcoords="offset points",
            ha="center",
            color=GREY,
            fontsize=9,
        )
    right.set_ylabel("Decode tokens/s, batch 1 (bound)")
    right.set_title("Aggregate bandwidth grows with TP")
    _title(figure=fig, text=f"{model.name} {precision} on {gpu.name}")
    note(
        figure=fig,
        text="Hatched: does not fit. All-reduce cost not included (two per layer), so real "
        "scaling is below these bars; context 4,096 tokens, KV in bf16.",
    )
    return fig


@figure(
    name="moe_weights_read",
    summary="Weight bytes a decode step reads against batch size (log x) for MoE models, as a "
    "share of all their weights: the expected union of routed experts, E × (1 − (1 − k/E)^B).",
    args=(
        Arg(name="models", kind="models", help="MoE models to compare", required=True),
        Arg(
            name="max_batch",
            kind="int",
            help="largest batch drawn",
            default="256",
            low=2,
            high=4096,
        ),
    ),
)
def moe_weights_read(*, models: tuple[Model, ...], max_batch: int) -> Figure:
    dense = [model.name for model in models if not model.is_moe]
    if dense:
        raise ValueError(f"moe_weights_read needs MoE models; {', '.join(dense)} is dense")
    batches = sorted({round(value) for value in np.geomspace(1, max_batch, 80)})
    fig, ax = new_figure()
    for colour, model in zip(SERIES, models, strict=False):
        shares = [
            100 * im.params_read(model=model, tokens=batch) / model.params_total
            for batch in batches
        ]
        label = (
            f"{model.name}: {model.experts_per_token} of {model.experts} experts, "
            f"{100 * model.params_active / model.params_total:.0f}% at batch 1"
        )
        ax.semilogx(batches, shares, color=colour, linewidth=2.2, label=label)
        for batch in (8, 64):
            if batch <= max_batch:
                share = 100 * im.params_read(model=model, tokens=batch) / model.params_total
                ax.plot([batch], [share], "o", color=colour, markersize=4)
    ax.set_ylim(0, 105)
    ax.set_xlim(1, max_batch)
    ax.set_xlabel("Tokens in the decode step (batch size)")
    ax.set_ylabel("Weights read per step (% of all)")
    ax.set_title("A batch reads the union of its tokens' experts")
    note(
        figure=fig,
        text="Uniform, independent routing: expected distinct experts per MoE layer "
        "E × (1 − (1 − k/E)^B). Real routers are skewed, which lowers the union but loads some "
        "experts (and GPUs) more than others.",
    )
    # The curves fill every corner; below the plot the long labels need a column of their own.
    place_legend(ax=ax, below_columns=1)
    return fig


FORMAT_ORDER = ("bf16", "fp8", "int4", "nvfp4", "mxfp4")


@figure(
    name="weight_formats",
    summary="Checkpoint size of a model in BF16, FP8, INT4 (group 128), NVFP4 and MXFP4 with the "
    "embeddings and head kept in BF16, and the batch-1 decode bound each gives on a GPU.",
    args=(_gpu_arg(), _model_arg()),
)
def weight_formats(*, gpu: Gpu, model: Model) -> Figure:
    sizes = [
        im.checkpoint_weight_bytes(model=model, precision=precision) / 1e9
        for precision in FORMAT_ORDER
    ]
    rates = [
        gpu.memory_bandwidth_bytes_per_s / (size * 1e9)
        if not model.is_moe
        else gpu.memory_bandwidth_bytes_per_s
        / (size * 1e9 * im.params_read(model=model, tokens=1) / model.params_total)
        for size in sizes
    ]
    fig, ax = new_figure()
    positions = np.arange(len(FORMAT_ORDER))
    bars = ax.bar(positions, sizes, color=[BLUE, GREEN, ORANGE, PURPLE, RED], width=0.6)
    ax.axhline(gpu.memory_bytes / 1e9, color=RED, linestyle="--", linewidth=1.2)
    ax.annotate(
        f"{gpu.name}: {gpu.memory_label}",
        xy=(len(FORMAT_ORDER) - 0.5, gpu.memory_bytes / 1e9),
        xytext=(0, 4),
        textcoords="offset points",
        ha="right",
        color=RED,
        fontsize=9,
    )
    ax.set_xticks(positions, ["BF16", "FP8", "INT4 g128", "NVFP4", "MXFP4"])
    ax.set_ylabel("Weights (GB)")
    ax.set_ylim(0, max(max(sizes), gpu.memory_bytes / 1e9) * 1.25)
    _title(figure=fig, text=f"{model.name}: bytes per format and batch-1 decode bound")
    note(
        figure=fig,
        text="Bits per weight: FP8 8, INT4 4 + 16/128, NVFP4 4 + 8/16, MXFP4 4 + 8/32; embeddings "
        "and LM head stay BF16. Bound = bytes read per step ÷ bandwidth (KV cache not counted).",
    )
    # Over each bar, raised past the GPU's memory line where that line would strike it.
    place_labels(
        ax=ax,
        labels=[
            Label(
                text=f"{significant(value=size)} GB\n≤ {significant(value=rate)} tok/s",
                xy=(bar.get_x() + bar.get_width() / 2, size),
                color=GREY,
                offsets=OVER_A_BAR,
            )
            for bar, size, rate in zip(bars, sizes, rates, strict=True)
        ],
        fontsize=9,
    )
    return fig


def _kv_passes_weights(
    *, model: Model, kv_precision: str, weight_ms: float, bandwidth: float
) -> int | None:
    """Smallest context whose KV read takes as long as the weight read (None within the model)."""

    def kv_ms(context: int) -> float:
        kv = im.kv_bytes_per_sequence(model=model, kv_precision=kv_precision, context=context)
        return kv / bandwidth * 1e3

    if kv_ms(model.max_context) < weight_ms:
        return None
    low, high = 1, model.max_context
    while high - low > 1:
        middle = (low + high) // 2
        if kv_ms(middle) >= weight_ms:
            high = middle
        else:
            low = middle
    return high


@figure(
    name="decode_step_split",
    summary="Batch-1 decode step bound against context length for one model on one GPU, split "
    "into the time to read the weights and the time to read the KV cache.",
    args=(
        _gpu_arg(),
        _model_arg(),
        _weights_arg(),
        _kv_arg(),
    ),
)
def decode_step_split(*, gpu: Gpu, model: Model, precision: str, kv_precision: str) -> Figure:
    contexts = np.geomspace(1024, model.max_context, 60).round().astype(int)
    bandwidth = gpu.memory_bandwidth_bytes_per_s
    weights_ms = (
        im.params_read(model=model, tokens=1) * im.bytes_per_element(precision=precision)
        / bandwidth
        * 1e3
    )
    kv_ms = np.array(
        [
            im.kv_bytes_per_sequence(model=model, kv_precision=kv_precision, context=int(c))
            / bandwidth
            * 1e3
            for c in contexts
        ]
    )
    fig, ax = new_figure()
    ax.stackplot(
        contexts,
        np.full(len(contexts), weights_ms),
        kv_ms,
        colors=[BLUE, ORANGE],
        alpha=0.85,
        labels=["read the weights", "read the KV cache (attention)"],
    )
    crossing = _kv_passes_weights(
        model=model, kv_precision=kv_precision, weight_ms=weights_ms, bandwidth=bandwidth
    )
    if crossing is not None:
        ax.axvline(crossing, color=GREY, linestyle=":", linewidth=1)
        ax.annotate(
            f"cache reads pass weight reads\nnear {crossing:,} tokens",
            xy=(crossing, weights_ms),
            xytext=(-10, 45),
            textcoords="offset points",
            ha="right",
            color=GREY,
            fontsize=9,
        )
    ax.set_xscale("log", base=2)
    ax.set_xlim(contexts[0], contexts[-1])
    ax.set_ylim(bottom=0)
    ax.xaxis.set_major_formatter(
        lambda value, _position: f"{value / 1024:g}k" if value >= 1024 else f"{value:g}"
    )
    ax.set_xlabel("Context length (tokens, log scale)")
    ax.set_ylabel("Decode step, batch 1 (ms, lower bound)")
    _title(
        figure=fig,
        text=f"{model.name} {precision} weights, {kv_precision} KV on {gpu.name}",
    )
    legend(ax=ax, loc="upper left")
    note(
        figure=fig,
        text="Memory time only: (weights read + KV bytes of one sequence) ÷ bandwidth. Attention "
        "reads the whole cache every step, at about one FLOP per byte per query head sharing it.",
    )
    return fig
