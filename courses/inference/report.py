# Multiplication and minus signs in learner-facing text and worked arithmetic are intended.
"""Whole answers built from `courses.inference.math`: the numbers plus the arithmetic as steps.

The `speedoflight` command, the lesson calculators and the figures all call these, so the step
text a learner reads on a lesson page is the same arithmetic the command prints.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from courses.inference import math as im
from courses.inference.specs import Gpu, Model, get_gpu, get_model
from courses.inference.units import (
    format_bandwidth,
    format_bytes,
    format_bytes_decimal,
    format_count,
    format_flops,
    format_rate,
    format_seconds,
    significant,
)

MAX_BATCH = 4096
MAX_GPUS = 64
MAX_GPU_PRICE_PER_HOUR = 1000.0
MAX_TOKENS_PER_S = 10_000_000.0


class InputError(ValueError):
    """An input outside what the math accepts; `field` names the input."""

    def __init__(self, *, field: str, message: str) -> None:
        self.field = field
        super().__init__(f"{field}: {message}")


def _check_range(*, field: str, value: float, low: float, high: float) -> None:
    if not low <= value <= high:
        raise InputError(
            field=field, message=f"must be between {low:,} and {high:,}, got {value:,}"
        )


def _check_choice(*, field: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise InputError(field=field, message=f"must be one of {', '.join(allowed)}, got '{value}'")


@dataclass(frozen=True)
class SpeedOfLight:
    gpu: Gpu
    model: Model
    precision: str
    kv_precision: str
    batch: int
    context: int
    prompt_tokens: int
    gpus: int
    weight_bytes: float
    kv_bytes_per_token: float
    kv_bytes_per_sequence: float
    kv_bytes_total: float
    runtime_reserve_bytes: float
    memory_needed_bytes: float
    fits: bool
    max_concurrent_sequences: int
    peak: im.Peak
    ridge_point: float
    decode: im.DecodeBound
    prefill: im.PrefillBound
    steps: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "gpu": self.gpu.slug,
            "gpus": self.gpus,
            "model": self.model.slug,
            "precision": self.precision,
            "kv_precision": self.kv_precision,
            "batch": self.batch,
            "context": self.context,
            "prompt_tokens": self.prompt_tokens,
            "weight_bytes": round(self.weight_bytes),
            "kv_bytes_per_token": round(self.kv_bytes_per_token),
            "kv_bytes_per_sequence": round(self.kv_bytes_per_sequence),
            "kv_bytes_total": round(self.kv_bytes_total),
            "runtime_reserve_bytes": round(self.runtime_reserve_bytes),
            "memory_needed_bytes": round(self.memory_needed_bytes),
            "gpu_memory_bytes": self.gpu.memory_bytes,
            "memory_bandwidth_total_bytes_per_s": self.gpu.memory_bandwidth_bytes_per_s,
            "fits": self.fits,
            "max_concurrent_sequences": self.max_concurrent_sequences,
            "decode_tokens_per_s_bound": {
                "per_sequence": self.decode.per_sequence_tokens_per_s,
                "aggregate": self.decode.aggregate_tokens_per_s,
            },
            "decode_step_seconds_bound": self.decode.step_seconds,
            "decode_bound_by": self.decode.bound_by,
            "decode_bytes_per_step": round(self.decode.bytes_read),
            "decode_flops_per_step": self.decode.flops,
            "decode_arithmetic_intensity": self.decode.arithmetic_intensity,
            "prefill_seconds_bound": self.prefill.seconds,
            "prefill_bound_by": self.prefill.bound_by,
            "prefill_flops": self.prefill.flops,
            "prefill_arithmetic_intensity": self.prefill.arithmetic_intensity,
            "peak_flops": self.peak.flops,
            "peak_label": self.peak.label,
            "memory_bandwidth_bytes_per_s": self.gpu.memory_bandwidth_bytes_per_s,
            "ridge_point_flops_per_byte": self.ridge_point,
        }


def speed_of_light(
    *,
    gpu_slug: str,
    model_slug: str,
    precision: str,
    kv_precision: str,
    batch: int,
    context: int,
    prompt_tokens: int,
    gpus: int = 1,
) -> SpeedOfLight:
    """Memory budget, decode bound (per sequence and aggregate) and prefill bound, with steps.

    `gpus` > 1 is tensor parallelism over that many of the GPU: memory, bandwidth and peak
    compute add up, and the bound leaves out what TP costs (see `tensor_parallel_gpu`).
    Raises `UnknownSlugError` for a slug not in the catalogues and `InputError` for a value out
    of range (the prompt is part of the context, so it may not exceed it).
    """
    _check_range(field="gpus", value=gpus, low=1, high=MAX_GPUS)
    gpu = tensor_parallel_gpu(gpu=get_gpu(slug=gpu_slug), gpus=gpus)
    model = get_model(slug=model_slug)
    _check_choice(field="precision", value=precision, allowed=im.WEIGHT_PRECISIONS)
    _check_choice(field="kv_precision", value=kv_precision, allowed=im.KV_PRECISIONS)
    _check_range(field="batch", value=batch, low=1, high=MAX_BATCH)
    _check_range(field="context", value=context, low=1, high=model.max_context)
    _check_range(field="prompt_tokens", value=prompt_tokens, low=1, high=context)

    weights = im.model_weight_bytes(model=model, precision=precision)
    kv_token = im.model_kv_bytes_per_token(model=model, kv_precision=kv_precision)
    kv_sequence = im.kv_bytes_per_sequence(model=model, kv_precision=kv_precision, context=context)
    kv_total = kv_sequence * batch
    reserve = im.runtime_reserve_bytes(gpu_memory_bytes=gpu.memory_bytes)
    needed = im.memory_needed_bytes(
        weight_bytes=weights, kv_bytes_per_sequence=kv_sequence, batch=batch, reserve_bytes=reserve
    )
    max_sequences = im.max_concurrent_sequences(
        gpu_memory_bytes=gpu.memory_bytes,
        weight_bytes=weights,
        kv_bytes_per_sequence=kv_sequence,
        reserve_bytes=reserve,
    )
    peak = im.peak_compute(gpu=gpu, precision=precision)
    decode = im.decode_bound(
        gpu=gpu,
        model=model,
        precision=precision,
        kv_precision=kv_precision,
        batch=batch,
        context=context,
    )
    prefill = im.prefill_bound(
        gpu=gpu,
        model=model,
        precision=precision,
        kv_precision=kv_precision,
        prompt_tokens=prompt_tokens,
    )
    result = SpeedOfLight(
        gpu=gpu,
        model=model,
        precision=precision,
        kv_precision=kv_precision,
        batch=batch,
        context=context,
        prompt_tokens=prompt_tokens,
        gpus=gpus,
        weight_bytes=weights,
        kv_bytes_per_token=kv_token,
        kv_bytes_per_sequence=kv_sequence,
        kv_bytes_total=kv_total,
        runtime_reserve_bytes=reserve,
        memory_needed_bytes=needed,
        fits=needed <= gpu.memory_bytes,
        max_concurrent_sequences=max_sequences,
        peak=peak,
        ridge_point=im.ridge_point(
            peak_flops=peak.flops, bandwidth_bytes_per_s=gpu.memory_bandwidth_bytes_per_s
        ),
        decode=decode,
        prefill=prefill,
    )
    result.steps.extend(_speed_of_light_steps(result=result))
    return result


def tensor_parallel_gpu(*, gpu: Gpu, gpus: int) -> Gpu:
    """N GPUs running one model with tensor parallelism, seen as one device.

    Each GPU holds 1/N of every weight matrix and reads only its share per step, so memory,
    bandwidth and peak FLOP/s add up. What the sum leaves out: two all-reduces per layer on the
    critical path of every step (latency-bound at decode, tens of microseconds each even on
    NVLink), weights that are replicated rather than split (norms, and the KV heads when there
    are fewer KV heads than GPUs), the runtime reserve on every GPU, and imperfect balance.
    """
    if gpus == 1:
        return gpu
    return replace(
        gpu,
        name=f"{gpus} × {gpu.name} (tensor parallel)",
        memory_bytes=gpu.memory_bytes * gpus,
        memory_label=f"{gpus} × {gpu.memory_label}",
        memory_bandwidth_bytes_per_s=gpu.memory_bandwidth_bytes_per_s * gpus,
        peak_16bit_flops=gpu.peak_16bit_flops * gpus,
        peak_fp8_flops=gpu.peak_fp8_flops * gpus if gpu.peak_fp8_flops else None,
        peak_int8_ops=gpu.peak_int8_ops * gpus if gpu.peak_int8_ops else None,
        peak_fp4_flops=gpu.peak_fp4_flops * gpus if gpu.peak_fp4_flops else None,
    )


TENSOR_PARALLEL_CAVEAT = (
    "the bound adds memory, bandwidth and FLOP/s over the GPUs and leaves out the two "
    "all-reduces per layer every step waits for, replicated weights and KV heads, and the "
    "reserve on each GPU, so real tensor-parallel decode is further from it than one GPU is"
)


def _sequences(*, count: int) -> str:
    return f"{count:,} sequence" if count == 1 else f"{count:,} sequences"


def _weights_step(*, model: Model, precision: str, weights: float) -> str:
    per = im.bytes_per_element(precision=precision)
    note = " (0.5 byte + an fp16 scale per 128 weights)" if precision == "int4" else ""
    moe = f", all {model.experts} experts" if model.is_moe else ""
    return (
        f"Weights: {model.params_total:,} parameters{moe} × {per:g} bytes "
        f"({precision}){note} = {format_bytes(value=weights)}"
    )


def _kv_token_step(*, model: Model, kv_precision: str, kv_token: float) -> str:
    per = im.bytes_per_element(precision=kv_precision)
    if model.is_mla:
        return (
            f"KV cache per token (multi-head latent attention): {model.layers} layers × "
            f"({model.kv_lora_rank} latent + {model.qk_rope_head_dim} RoPE key) × {per:g} bytes "
            f"({kv_precision}) = {format_bytes(value=kv_token)}; one compressed entry per layer "
            f"shared by all {model.attention_heads} heads, not 2 × heads × head dim"
        )
    return (
        f"KV cache per token: 2 (K and V) × {model.layers} layers × {model.kv_heads} KV heads × "
        f"{model.head_dim} head dim × {per:g} bytes ({kv_precision}) = "
        f"{format_bytes(value=kv_token)}"
    )


def _kv_sequence_step(*, model: Model, kv_precision: str, kv_token: float, kv_sequence: float, context: int) -> str:
    if not model.sliding_window:
        return (
            f"KV cache per sequence: {format_bytes_decimal(value=kv_token)} × {context:,} tokens = "
            f"{format_bytes(value=kv_sequence)}"
        )
    full = im.long_context_kv_bytes_per_token(model=model, kv_precision=kv_precision)
    sliding = kv_token - full
    held = min(context, model.sliding_window)
    return (
        f"KV cache per sequence: {model.full_attention_layers} full-attention layers keep every "
        f"token, {format_bytes_decimal(value=full)} × {context:,}; "
        f"{model.sliding_window_layers} sliding-window layers keep at most the last "
        f"{model.sliding_window} tokens, {format_bytes_decimal(value=sliding)} × {held:,}; "
        f"total {format_bytes(value=kv_sequence)}"
    )


def _attention_text(*, model: Model, absorbed: bool) -> str:
    pair = im.attention_pair_flops(model=model, absorbed=absorbed)
    if not model.is_mla:
        how = f"4 × {model.attention_heads} heads × {model.head_dim}"
    elif absorbed:
        how = (
            f"2 × {model.attention_heads} heads × (2 × {model.kv_lora_rank} + "
            f"{model.qk_rope_head_dim}), latent-space MLA"
        )
    else:
        how = f"2 × {model.attention_heads} heads × ({model.head_dim} + {model.value_head_dim}), expanded MLA"
    window = (
        f"; {model.sliding_window_layers} of {model.layers} layers see at most {model.sliding_window} tokens"
        if model.sliding_window
        else ""
    )
    return f"{format_count(value=pair)} FLOPs per (layer, query, key) pair [{how}]{window}"


def _max_sequences_step(
    *, gpu: Gpu, weights: float, reserve: float, kv_sequence: float, context: int, sequences: int
) -> str:
    free = gpu.memory_bytes - reserve - weights
    if free <= 0:
        return (
            f"Max concurrent sequences: the weights ({format_bytes(value=weights)}) and the "
            f"reserve do not fit in {gpu.memory_label}, so none"
        )
    return (
        f"Max concurrent {context:,}-token sequences: "
        f"⌊({format_bytes_decimal(value=gpu.memory_bytes)} − "
        f"{format_bytes_decimal(value=reserve)} reserve − "
        f"{format_bytes_decimal(value=weights)} weights) ÷ "
        f"{format_bytes_decimal(value=kv_sequence)}⌋ = {sequences:,}"
    )


def _prefill_flops_step(*, model: Model, prompt_tokens: int, flops: float) -> str:
    total = format_flops(value=flops, per_second=False)
    if not model.is_mla and not model.sliding_window:
        return (
            f"Prefill FLOPs for {prompt_tokens:,} prompt tokens: 2 × "
            f"{format_count(value=model.params_active)} × {prompt_tokens:,} + attention 2 × "
            f"{model.layers} × {model.attention_heads} × {model.head_dim} × {prompt_tokens:,} × "
            f"{prompt_tokens + 1:,} = {total}"
        )
    pairs = im.attended_pairs(model=model, first=1, last=prompt_tokens)
    return (
        f"Prefill FLOPs for {prompt_tokens:,} prompt tokens: 2 × "
        f"{format_count(value=model.params_active)} × {prompt_tokens:,} + attention "
        f"{format_count(value=pairs)} causal (layer, query, key) pairs × "
        f"{_attention_text(model=model, absorbed=False)} = {total}"
    )


def _speed_of_light_steps(*, result: SpeedOfLight) -> list[str]:
    gpu, model, decode, prefill = result.gpu, result.model, result.decode, result.prefill
    bandwidth = format_bandwidth(value=gpu.memory_bandwidth_bytes_per_s)
    peak = (
        f"{format_flops(value=result.peak.flops)} ({result.peak.label} dense; {result.peak.note})"
    )
    steps = [
        _weights_step(model=model, precision=result.precision, weights=result.weight_bytes),
        _kv_token_step(model=model, kv_precision=result.kv_precision, kv_token=result.kv_bytes_per_token),
        _kv_sequence_step(
            model=model,
            kv_precision=result.kv_precision,
            kv_token=result.kv_bytes_per_token,
            kv_sequence=result.kv_bytes_per_sequence,
            context=result.context,
        ),
        f"KV cache for the batch: {format_bytes_decimal(value=result.kv_bytes_per_sequence)} × "
        f"{_sequences(count=result.batch)} = {format_bytes(value=result.kv_bytes_total)}",
        f"Runtime reserve: {round(im.RUNTIME_RESERVE_FRACTION * 100)} % of {gpu.memory_label} = "
        f"{format_bytes(value=result.runtime_reserve_bytes)} (CUDA context, activations, "
        "allocator slack; vLLM's default gpu_memory_utilization=0.9 leaves the same)",
        f"Memory needed: {format_bytes_decimal(value=result.weight_bytes)} weights + "
        f"{format_bytes_decimal(value=result.kv_bytes_total)} KV + "
        f"{format_bytes_decimal(value=result.runtime_reserve_bytes)} reserve = "
        f"{format_bytes(value=result.memory_needed_bytes)} "
        f"{'≤' if result.fits else '>'} {format_bytes_decimal(value=gpu.memory_bytes)}: "
        f"{'fits' if result.fits else 'does not fit'}",
        _max_sequences_step(
            gpu=gpu,
            weights=result.weight_bytes,
            reserve=result.runtime_reserve_bytes,
            kv_sequence=result.kv_bytes_per_sequence,
            context=result.context,
            sequences=result.max_concurrent_sequences,
        ),
    ]
    if result.gpus > 1:
        steps.insert(
            0,
            f"Tensor parallel over {result.gpus} GPUs: {gpu.memory_label} "
            f"({format_bytes_decimal(value=gpu.memory_bytes)}), "
            f"{format_bandwidth(value=gpu.memory_bandwidth_bytes_per_s)} together; "
            f"{TENSOR_PARALLEL_CAVEAT}",
        )
    if model.is_moe:
        touched = im.expected_experts_touched(
            experts=model.experts, experts_per_token=model.experts_per_token, tokens=result.batch
        )
        steps.append(
            f"MoE: a decode step of {result.batch:,} tokens touches on average "
            f"{significant(value=touched, digits=3)} of {model.experts} routed experts in each of "
            f"{model.moe_layers} MoE layers "
            f"(E × (1 − (1 − k/E)^B), k = {model.experts_per_token}), so it reads "
            f"{format_count(value=im.params_read(model=model, tokens=result.batch))} parameters, "
            f"not all {format_count(value=model.params_total)}"
        )
    steps += [
        f"Decode bytes per step: weights {format_bytes_decimal(value=decode.weight_bytes_read)} "
        f"+ KV {result.batch:,} × {format_bytes_decimal(value=result.kv_bytes_per_sequence)} = "
        f"{format_bytes_decimal(value=decode.bytes_read)}",
        f"Memory time per step: {format_bytes_decimal(value=decode.bytes_read)} ÷ {bandwidth} = "
        f"{format_seconds(value=decode.memory_seconds)}",
        f"Decode FLOPs per step: {result.batch:,} × (2 × "
        f"{format_count(value=model.params_active)} active parameters + attention over "
        f"{result.context:,} tokens in {model.layers} layers, "
        f"{_attention_text(model=model, absorbed=True)}) = "
        f"{format_flops(value=decode.flops, per_second=False)}",
        f"Compute time per step: {format_flops(value=decode.flops, per_second=False)} ÷ {peak} = "
        f"{format_seconds(value=decode.compute_seconds)}",
        f"Step time ≥ max({format_seconds(value=decode.memory_seconds)}, "
        f"{format_seconds(value=decode.compute_seconds)}) = "
        f"{format_seconds(value=decode.step_seconds)}: {decode.bound_by}-bound (intensity "
        f"{significant(value=decode.arithmetic_intensity)} FLOP/byte, "
        f"ridge point {significant(value=result.ridge_point)} FLOP/byte)",
        f"Decode bound: 1 ÷ {format_seconds(value=decode.step_seconds)} = "
        f"{format_rate(value=decode.per_sequence_tokens_per_s)} per sequence; × "
        f"{_sequences(count=result.batch)} = {format_rate(value=decode.aggregate_tokens_per_s)} "
        "aggregate",
        _prefill_flops_step(model=model, prompt_tokens=result.prompt_tokens, flops=prefill.flops),
        f"Prefill bound: max(compute {format_flops(value=prefill.flops, per_second=False)} ÷ "
        f"{format_flops(value=result.peak.flops)} = "
        f"{format_seconds(value=prefill.compute_seconds)}, "
        f"memory {format_bytes_decimal(value=prefill.bytes_moved)} ÷ {bandwidth} = "
        f"{format_seconds(value=prefill.memory_seconds)}) = "
        f"{format_seconds(value=prefill.seconds)}: {prefill.bound_by}-bound",
    ]
    return steps


@dataclass(frozen=True)
class KvCacheReport:
    gpu: Gpu
    model: Model
    precision: str
    kv_precision: str
    context: int
    kv_bytes_per_token: float
    kv_bytes_per_sequence: float
    weight_bytes: float
    runtime_reserve_bytes: float
    max_concurrent_sequences: int
    steps: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "gpu": self.gpu.slug,
            "model": self.model.slug,
            "precision": self.precision,
            "kv_precision": self.kv_precision,
            "context": self.context,
            "kv_bytes_per_token": round(self.kv_bytes_per_token),
            "kv_bytes_per_sequence": round(self.kv_bytes_per_sequence),
            "weight_bytes": round(self.weight_bytes),
            "runtime_reserve_bytes": round(self.runtime_reserve_bytes),
            "max_concurrent_sequences": self.max_concurrent_sequences,
        }


def kv_cache_report(
    *, gpu_slug: str, model_slug: str, precision: str, kv_precision: str, context: int
) -> KvCacheReport:
    """KV bytes per token and per sequence, and how many full-context sequences fit on the GPU."""
    gpu = get_gpu(slug=gpu_slug)
    model = get_model(slug=model_slug)
    _check_choice(field="precision", value=precision, allowed=im.WEIGHT_PRECISIONS)
    _check_choice(field="kv_precision", value=kv_precision, allowed=im.KV_PRECISIONS)
    _check_range(field="context", value=context, low=1, high=model.max_context)
    weights = im.model_weight_bytes(model=model, precision=precision)
    kv_token = im.model_kv_bytes_per_token(model=model, kv_precision=kv_precision)
    kv_sequence = im.kv_bytes_per_sequence(model=model, kv_precision=kv_precision, context=context)
    reserve = im.runtime_reserve_bytes(gpu_memory_bytes=gpu.memory_bytes)
    sequences = im.max_concurrent_sequences(
        gpu_memory_bytes=gpu.memory_bytes,
        weight_bytes=weights,
        kv_bytes_per_sequence=kv_sequence,
        reserve_bytes=reserve,
    )
    report = KvCacheReport(
        gpu=gpu,
        model=model,
        precision=precision,
        kv_precision=kv_precision,
        context=context,
        kv_bytes_per_token=kv_token,
        kv_bytes_per_sequence=kv_sequence,
        weight_bytes=weights,
        runtime_reserve_bytes=reserve,
        max_concurrent_sequences=sequences,
    )
    if model.is_mla:
        per_head = model.attention_heads * (model.head_dim + model.value_head_dim)
        latent = model.kv_lora_rank + model.qk_rope_head_dim
        sharing = (
            f"Multi-head latent attention: {latent} cached values per layer instead of "
            f"{model.attention_heads} heads × ({model.head_dim} key + {model.value_head_dim} "
            f"value) = {per_head:,} for full multi-head attention, "
            f"{significant(value=per_head / latent)}× smaller"
        )
    else:
        gqa = model.attention_heads // model.kv_heads
        sharing = (
            f"Grouped-query attention: {model.attention_heads} query heads share "
            f"{model.kv_heads} KV heads, so the cache is {gqa}× smaller than with one KV head per "
            "query head"
        )
    report.steps.extend(
        [
            _kv_token_step(model=model, kv_precision=kv_precision, kv_token=kv_token),
            sharing,
            _kv_sequence_step(
                model=model,
                kv_precision=kv_precision,
                kv_token=kv_token,
                kv_sequence=kv_sequence,
                context=context,
            ),
            _weights_step(model=model, precision=precision, weights=weights),
            f"Runtime reserve: {round(im.RUNTIME_RESERVE_FRACTION * 100)} % of {gpu.memory_label} "
            f"= {format_bytes(value=reserve)}",
            _max_sequences_step(
                gpu=gpu,
                weights=weights,
                reserve=reserve,
                kv_sequence=kv_sequence,
                context=context,
                sequences=sequences,
            ),
        ]
    )
    return report


@dataclass(frozen=True)
class CostReport:
    gpu_price_per_hour: float
    tokens_per_s: float
    utilisation: float
    tokens_per_hour: float
    cost_per_million_tokens: float
    steps: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "gpu_price_per_hour": self.gpu_price_per_hour,
            "tokens_per_s": self.tokens_per_s,
            "utilisation": self.utilisation,
            "tokens_per_hour": self.tokens_per_hour,
            "cost_per_million_tokens": self.cost_per_million_tokens,
        }


def cost_report(
    *, gpu_price_per_hour: float, tokens_per_s: float, utilisation: float
) -> CostReport:
    """Cost per million output tokens for a GPU rented by the hour."""
    _check_range(field="gpu_price", value=gpu_price_per_hour, low=0.01, high=MAX_GPU_PRICE_PER_HOUR)
    _check_range(field="tokens_per_s", value=tokens_per_s, low=0.1, high=MAX_TOKENS_PER_S)
    _check_range(field="utilisation", value=utilisation, low=0.01, high=1.0)
    cost = im.cost_per_million_tokens(
        gpu_price_per_hour=gpu_price_per_hour, tokens_per_s=tokens_per_s, utilisation=utilisation
    )
    tokens_per_hour = tokens_per_s * utilisation * im.SECONDS_PER_HOUR
    percent = significant(value=utilisation * 100, digits=3)
    report = CostReport(
        gpu_price_per_hour=gpu_price_per_hour,
        tokens_per_s=tokens_per_s,
        utilisation=utilisation,
        tokens_per_hour=tokens_per_hour,
        cost_per_million_tokens=cost,
    )
    report.steps.extend(
        [
            f"Tokens per hour: {format_rate(value=tokens_per_s)} × {percent} % busy × 3,600 s = "
            f"{format_count(value=tokens_per_hour)} tokens",
            f"Cost: ${gpu_price_per_hour:,.2f} per GPU-hour ÷ "
            f"{format_count(value=tokens_per_hour)} "
            f"tokens × 1,000,000 = ${significant(value=cost, digits=3)} per million tokens",
            "Idle time is paid for: halving utilisation doubles the cost per token",
        ]
    )
    return report


def summary_rows(*, result: SpeedOfLight) -> list[tuple[str, str]]:
    """(key, value) rows for a plain-text table; keys match `SpeedOfLight.as_dict`."""
    decode, prefill = result.decode, result.prefill
    return [
        ("weight_bytes", format_bytes(value=result.weight_bytes)),
        ("kv_bytes_per_token", format_bytes(value=result.kv_bytes_per_token)),
        ("kv_bytes_per_sequence", format_bytes(value=result.kv_bytes_per_sequence)),
        ("kv_bytes_total", format_bytes(value=result.kv_bytes_total)),
        ("runtime_reserve_bytes", format_bytes(value=result.runtime_reserve_bytes)),
        ("memory_needed_bytes", format_bytes(value=result.memory_needed_bytes)),
        (
            "gpu_memory_bytes",
            f"{format_bytes(value=result.gpu.memory_bytes)} ({result.gpu.memory_label})",
        ),
        ("fits", "yes" if result.fits else "no"),
        ("max_concurrent_sequences", f"{result.max_concurrent_sequences:,}"),
        (
            "decode_tokens_per_s_bound.per_sequence",
            format_rate(value=decode.per_sequence_tokens_per_s),
        ),
        ("decode_tokens_per_s_bound.aggregate", format_rate(value=decode.aggregate_tokens_per_s)),
        (
            "decode_step_seconds_bound",
            f"{format_seconds(value=decode.step_seconds)} ({decode.bound_by}-bound)",
        ),
        (
            "prefill_seconds_bound",
            f"{format_seconds(value=prefill.seconds)} ({prefill.bound_by}-bound)",
        ),
        ("peak_flops", f"{format_flops(value=result.peak.flops)} ({result.peak.label} dense)"),
        ("memory_bandwidth", format_bandwidth(value=result.gpu.memory_bandwidth_bytes_per_s)),
        ("ridge_point", f"{significant(value=result.ridge_point)} FLOP/byte"),
    ]


def default_kv_precision(*, precision: str) -> str:
    """What engines do by default: the KV cache stays in the activation dtype (16-bit) even when
    the weights are quantised; only fp16 models keep fp16, everything else bf16."""
    return "fp16" if precision == "fp16" else "bf16"
