# Multiplication and minus signs in learner-facing text and worked arithmetic are intended.
"""Figures computed from the GPU and model catalogues with `courses.inference.math`."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MultipleLocator

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
    ax.text(
        10**4.5,
        peak.flops / 1e12 * 1.6,
        "compute-bound: time = FLOPs ÷ peak",
        color=GREY,
        fontsize=9,
        ha="right",
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
    ax.set_ylim(peak.flops / 1e12 * 1e-4, peak.flops / 1e12 * 4)
    _title(
        figure=fig,
        text=f"{gpu.name}: {significant(value=peak.flops / 1e12, digits=4, strip=True)} TFLOP/s "
        f"{peak.label} dense, {significant(value=bandwidth / 1e12, digits=3, strip=True)} TB/s",
    )
    legend(ax=ax, loc="lower right")
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
    for colour, model in zip(SERIES, models, strict=False):
        end = min(max_context, model.max_context)
        contexts = np.array([0, end])  # linear in context: two points are the whole line
        per_token = im.model_kv_bytes_per_token(model=model, kv_precision=kv_precision)
        gib = contexts * per_token / GIB
        label = (
            f"{model.name} ({significant(value=per_token / 1024, digits=4, strip=True)} KiB/token)"
        )
        ax.plot(contexts, gib, color=colour, linewidth=2.2, label=label)
        ax.plot([end], [gib[-1]], "o", color=colour, markersize=5)
        if end < max_context:
            ax.annotate(
                f"{significant(value=gib[-1])} GiB at its max context",
                xy=(end, gib[-1]),
                xytext=(6, -3),
                textcoords="offset points",
                ha="left",
                color=colour,
                fontsize=9,
            )
        else:
            ax.annotate(
                f"{significant(value=gib[-1])} GiB",
                xy=(end, gib[-1]),
                xytext=(-4, 6),
                textcoords="offset points",
                ha="right",
                color=colour,
                fontsize=9,
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
        text="2 (K and V) × layers × KV heads × head dim × bytes per element, per token.",
    )
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
    legend(ax=ax, loc="upper right", ncols=2)
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
