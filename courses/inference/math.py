"""Speed-of-light arithmetic for LLM inference: memory, KV cache, decode and prefill bounds, cost.

Plain keyword-only functions with no Django import, shared by the lessons' figures and
calculators, the `speedoflight` command and the labs' "how close did you get" comparison.

Modelling choices (each is a decision, written down so a lesson can quote it):

- Bytes per element: fp32 4, fp16/bf16 2, fp8/int8 1. int4 is 0.5 byte plus one fp16 scale per
  group of 128 weights (the GPTQ/AWQ default), 4.125 bits = 0.515625 bytes per weight. Per-channel
  scales of fp8/int8 are a rounding error and are ignored. Real quantised checkpoints usually keep
  the embedding table and LM head in 16-bit; we quantise every parameter, so an int4 file of a
  small model (where embeddings are a large share) is bigger than `weight_bytes` says.
- Memory needed = weights + KV per sequence x batch + a runtime reserve of 10 % of GPU memory.
  The reserve stands for the CUDA/ROCm context, activation buffers, CUDA graphs and allocator
  slack; it is what vLLM leaves with its default `gpu_memory_utilization=0.9`.
- FLOPs per token = 2 x active parameters (one multiply and one add per weight) plus attention:
  QK^T and AV cost 4 x layers x heads x head_dim FLOPs per token of context. The 2N term counts
  the input-embedding lookup as if it were a matmul (about 6.5 % of Llama 3.1 8B); we keep the
  rule learners meet everywhere, and no real kernel gets near peak anyway.
- Compute peak for a weight precision: 16-bit uses the BF16/FP16 peak; fp8 the FP8 peak; int8 the
  INT8 peak (W8A8, as SmoothQuant kernels run it); int4 the 16-bit peak, because GPTQ/AWQ kernels
  are weight-only (W4A16) and dequantise before a 16-bit matmul. A GPU without an FP8 or INT8
  figure falls back to the 16-bit peak (weight-only execution).
- Decode, one step of a batch of B sequences each holding `context` tokens:
  bytes read = weights + B x context x KV bytes per token; FLOPs = B x FLOPs per token.
  Step time >= max(bytes / bandwidth, FLOPs / peak). All B sequences emit one token per step.
- MoE: memory holds all experts (total parameters) but one token reads and multiplies only its
  experts (active parameters). A batch touches the union of its tokens' experts, so at batch > 1
  a decode step reads more expert weights than at batch 1. With uniform, independent routing the
  expected number of distinct experts per layer is E x (1 - (1 - k/E)^B) for E experts, k per
  token and B tokens: 2 at B=1, 3.5 at B=2 and 7.9 at B=16 for Mixtral's E=8, k=2.
- Prefill of P prompt tokens: FLOPs = 2 x active params x P + causal attention
  2 x layers x heads x head_dim x P x (P + 1) (token i attends to i tokens); bytes = weights read
  once + the KV written. Time >= max(FLOPs / peak, bytes / bandwidth).
- Every bound is a speed of light: peak numbers, perfect overlap, no kernel launch or scheduling
  cost, no communication. The course plans with ONE achievable range for decode,
  `ACHIEVABLE_BANDWIDTH_FRACTION` = 60-80 % of the memory bound (a tuned GPU engine, a model of
  7B or more, batch 1; small models and CPU engines sit lower). It is a rule of thumb tied to the
  model bandwidth utilisation (MBU) measure of Databricks' "LLM Inference Performance
  Engineering: Best Practices" (2023), not a datasheet constant; lessons, labs and rubrics all
  quote this one range (the roofline lesson's "How close real engines get").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from courses.inference.specs import Gpu, Model

Precision = Literal["fp32", "fp16", "bf16", "fp8", "int8", "int4", "mxfp4", "nvfp4"]
PRECISIONS: tuple[str, ...] = ("fp32", "fp16", "bf16", "fp8", "int8", "int4", "mxfp4", "nvfp4")
# Weight formats a serving engine runs a model in (fp32 inference is not a serving setup).
WEIGHT_PRECISIONS: tuple[str, ...] = ("fp16", "bf16", "fp8", "int8", "int4", "mxfp4", "nvfp4")
KV_PRECISIONS: tuple[str, ...] = ("fp16", "bf16", "fp8", "int8")

INT4_GROUP_SIZE = 128
INT4_SCALE_BYTES = 2
# OCP Microscaling MXFP4: E2M1 values, one E8M0 (1-byte) scale per block of 32 -> 4.25 bits.
# NVIDIA NVFP4: E2M1 values, one FP8 E4M3 (1-byte) scale per block of 16 -> 4.5 bits (plus one
# FP32 scale per tensor, negligible).
MXFP4_BLOCK = 32
NVFP4_BLOCK = 16
RUNTIME_RESERVE_FRACTION = 0.10
# Fraction of the decode memory bound a tuned GPU engine reaches (see the module docstring).
ACHIEVABLE_BANDWIDTH_FRACTION: tuple[float, float] = (0.60, 0.80)
SECONDS_PER_HOUR = 3600

_BYTES: dict[str, float] = {
    "fp32": 4.0,
    "fp16": 2.0,
    "bf16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.5 + INT4_SCALE_BYTES / INT4_GROUP_SIZE,
    "mxfp4": 0.5 + 1 / MXFP4_BLOCK,
    "nvfp4": 0.5 + 1 / NVFP4_BLOCK,
}

Bound = Literal["memory", "compute"]


def _require_positive(**values: float) -> None:
    for name, value in values.items():
        if not value > 0:
            raise ValueError(f"{name} must be positive, got {value}")


def _require_precision(*, precision: str, allowed: tuple[str, ...], what: str) -> None:
    if precision not in allowed:
        raise ValueError(f"{what} must be one of {', '.join(allowed)}, got '{precision}'")


def bytes_per_element(*, precision: str) -> float:
    _require_precision(precision=precision, allowed=PRECISIONS, what="precision")
    return _BYTES[precision]


def weight_bytes(*, params: int, precision: str) -> float:
    _require_positive(params=params)
    return params * bytes_per_element(precision=precision)


def model_weight_bytes(*, model: Model, precision: str) -> float:
    """Bytes to hold every parameter (all experts of an MoE) at `precision`."""
    return weight_bytes(params=model.params_total, precision=precision)


def embedding_params(*, model: Model) -> int:
    """Parameters in the input embedding table plus the LM head (one table when tied)."""
    return model.vocab_size * model.hidden_size * (1 if model.tied_embeddings else 2)


def checkpoint_weight_bytes(*, model: Model, precision: str) -> float:
    """Bytes of a quantized checkpoint as it is usually published: embeddings and head in 16-bit.

    vLLM's FP8 mode and most GPTQ/AWQ checkpoints quantize the transformer layers and keep the
    embedding table and LM head in BF16; the lessons' tables use this convention (Llama 3.1 8B:
    9.08 GB FP8, 5.70 GB int4-g128; Llama 3.1 70B: 39.5 GB int4-g128).
    """
    sixteen_bit = bytes_per_element(precision="bf16")
    if bytes_per_element(precision=precision) >= sixteen_bit:
        return model_weight_bytes(model=model, precision=precision)
    embeddings = embedding_params(model=model)
    body = model.params_total - embeddings
    return body * bytes_per_element(precision=precision) + embeddings * sixteen_bit


def kv_bytes_per_token(*, layers: int, kv_heads: int, head_dim: int, kv_precision: str) -> float:
    """2 (K and V) x layers x KV heads x head dim x bytes per element."""
    _require_positive(layers=layers, kv_heads=kv_heads, head_dim=head_dim)
    _require_precision(precision=kv_precision, allowed=PRECISIONS, what="kv_precision")
    return 2 * layers * kv_heads * head_dim * bytes_per_element(precision=kv_precision)


def mla_kv_bytes_per_token(
    *, layers: int, kv_lora_rank: int, qk_rope_head_dim: int, kv_precision: str
) -> float:
    """MLA caches one latent of kv_lora_rank plus one shared RoPE key per layer, not 2 x heads x d.

    DeepSeek-V2 (arXiv:2405.04434) section 2.1: the cache per token per layer is
    (d_c + d_h^R) elements; keys and values for every head are re-expanded from the latent (or the
    expansion is absorbed into the query and output projections at decode).
    """
    _require_positive(layers=layers, kv_lora_rank=kv_lora_rank, qk_rope_head_dim=qk_rope_head_dim)
    _require_precision(precision=kv_precision, allowed=PRECISIONS, what="kv_precision")
    return layers * (kv_lora_rank + qk_rope_head_dim) * bytes_per_element(precision=kv_precision)


def _layer_kv_bytes_per_token(*, model: Model, layers: int, kv_precision: str) -> float:
    if layers == 0:
        return 0.0
    if model.is_mla:
        return mla_kv_bytes_per_token(
            layers=layers,
            kv_lora_rank=model.kv_lora_rank,
            qk_rope_head_dim=model.qk_rope_head_dim,
            kv_precision=kv_precision,
        )
    return kv_bytes_per_token(
        layers=layers, kv_heads=model.kv_heads, head_dim=model.head_dim, kv_precision=kv_precision
    )


def model_kv_bytes_per_token(*, model: Model, kv_precision: str) -> float:
    """KV bytes one token adds while the context is shorter than any sliding window.

    GQA: 2 x layers x KV heads x head dim x bytes; MLA: layers x (kv_lora_rank + rope dim) x
    bytes. For a model with sliding-window layers, beyond the window only the full-attention
    layers keep growing: see `kv_bytes_per_sequence` and `long_context_kv_bytes_per_token`.
    """
    return _layer_kv_bytes_per_token(model=model, layers=model.layers, kv_precision=kv_precision)


def long_context_kv_bytes_per_token(*, model: Model, kv_precision: str) -> float:
    """KV bytes each token adds once the context is past every sliding window."""
    return _layer_kv_bytes_per_token(
        model=model, layers=model.full_attention_layers, kv_precision=kv_precision
    )


def kv_bytes_per_sequence(*, model: Model, kv_precision: str, context: int) -> float:
    """KV cache of one sequence of `context` tokens.

    Full-attention layers hold every token; sliding-window layers hold at most the window (an
    engine that frees blocks outside the window, as vLLM's hybrid allocator does, reaches this).
    """
    _require_positive(context=context)
    full = long_context_kv_bytes_per_token(model=model, kv_precision=kv_precision) * context
    sliding = _layer_kv_bytes_per_token(
        model=model, layers=model.sliding_window_layers, kv_precision=kv_precision
    )
    return full + sliding * min(context, model.sliding_window)


def runtime_reserve_bytes(*, gpu_memory_bytes: float) -> float:
    _require_positive(gpu_memory_bytes=gpu_memory_bytes)
    return gpu_memory_bytes * RUNTIME_RESERVE_FRACTION


def memory_needed_bytes(
    *, weight_bytes: float, kv_bytes_per_sequence: float, batch: int, reserve_bytes: float
) -> float:
    _require_positive(batch=batch)
    return weight_bytes + kv_bytes_per_sequence * batch + reserve_bytes


def max_concurrent_sequences(
    *,
    gpu_memory_bytes: float,
    weight_bytes: float,
    kv_bytes_per_sequence: float,
    reserve_bytes: float,
) -> int:
    """How many full-context sequences fit beside the weights and the reserve (0 if none)."""
    _require_positive(kv_bytes_per_sequence=kv_bytes_per_sequence)
    free = gpu_memory_bytes - reserve_bytes - weight_bytes
    if free <= 0:
        return 0
    return math.floor(free / kv_bytes_per_sequence)


@dataclass(frozen=True, slots=True)
class Peak:
    flops: float
    label: str
    note: str


def peak_compute(*, gpu: Gpu, precision: str) -> Peak:
    """The dense tensor-core peak that applies to a model running in `precision`."""
    _require_precision(precision=precision, allowed=WEIGHT_PRECISIONS, what="precision")
    sixteen = Peak(flops=gpu.peak_16bit_flops, label="BF16/FP16", note="16-bit tensor cores")
    if precision in ("fp16", "bf16"):
        return sixteen
    if precision in ("mxfp4", "nvfp4"):
        if gpu.peak_fp4_flops is not None:
            return Peak(flops=gpu.peak_fp4_flops, label="FP4", note="FP4 tensor cores (W4A4)")
        return Peak(
            flops=gpu.peak_16bit_flops,
            label="BF16/FP16",
            note=f"{gpu.name} has no FP4 tensor cores: {precision} weights are dequantised to "
            "16-bit before the matmul (weight-only)",
        )
    if precision == "int4":
        return Peak(
            flops=gpu.peak_16bit_flops,
            label="BF16/FP16",
            note="int4 weights are dequantised to 16-bit before the matmul (W4A16)",
        )
    if precision == "fp8":
        if gpu.peak_fp8_flops is None:
            return Peak(
                flops=gpu.peak_16bit_flops,
                label="BF16/FP16",
                note=f"{gpu.name} has no FP8 tensor cores: fp8 weights run weight-only at the "
                "16-bit peak",
            )
        return Peak(flops=gpu.peak_fp8_flops, label="FP8", note="FP8 tensor cores")
    if gpu.peak_int8_ops is None:
        return Peak(
            flops=gpu.peak_16bit_flops,
            label="BF16/FP16",
            note=f"no INT8 figure for {gpu.name}: int8 weights run weight-only at the 16-bit peak",
        )
    return Peak(flops=gpu.peak_int8_ops, label="INT8", note="INT8 tensor cores (W8A8)")


def ridge_point(*, peak_flops: float, bandwidth_bytes_per_s: float) -> float:
    """FLOPs per byte where a kernel stops being memory-bound and becomes compute-bound."""
    _require_positive(peak_flops=peak_flops, bandwidth_bytes_per_s=bandwidth_bytes_per_s)
    return peak_flops / bandwidth_bytes_per_s


def arithmetic_intensity(*, flops: float, bytes_moved: float) -> float:
    _require_positive(bytes_moved=bytes_moved)
    return flops / bytes_moved


def attainable_flops(*, intensity: float, peak_flops: float, bandwidth_bytes_per_s: float) -> float:
    """The roofline: min(peak, intensity x bandwidth)."""
    return min(peak_flops, intensity * bandwidth_bytes_per_s)


def expected_experts_touched(*, experts: int, experts_per_token: int, tokens: int) -> float:
    """Expected distinct experts per layer that `tokens` tokens route to (uniform, independent)."""
    _require_positive(experts=experts, experts_per_token=experts_per_token, tokens=tokens)
    if experts == 1:
        return 1.0
    return experts * (1 - (1 - experts_per_token / experts) ** tokens)


def params_read(*, model: Model, tokens: int) -> float:
    """Parameters a forward pass over `tokens` tokens reads: shared ones plus touched experts.

    Shared parameters (attention, embeddings, dense layers, shared experts, routers) are read
    once; each MoE layer reads the expected number of distinct routed experts its tokens touch.
    """
    if not model.is_moe:
        return float(model.params_total)
    touched = expected_experts_touched(
        experts=model.experts, experts_per_token=model.experts_per_token, tokens=tokens
    )
    return model.params_shared + model.moe_layers * touched * model.params_per_expert


def attention_pair_flops(*, model: Model, absorbed: bool) -> float:
    """FLOPs for one query token against one cached token in one layer (QK^T plus AV).

    GQA: 2 x heads x head_dim for the scores plus the same for the values, 4 x heads x head_dim.
    MLA as prefill runs it (keys and values expanded per head): 2 x heads x (qk dim + v dim).
    MLA as decode kernels run it (FlashMLA; the expansion absorbed into the query and output
    projections): every head scores against the 576-wide cached entry and sums 512-wide latents,
    2 x heads x ((kv_lora_rank + rope) + kv_lora_rank), which is why MLA decode attention does
    far more arithmetic per cached byte than GQA.
    """
    heads = model.attention_heads
    if not model.is_mla:
        return 4 * heads * model.head_dim
    if absorbed:
        return 2 * heads * (2 * model.kv_lora_rank + model.qk_rope_head_dim)
    return 2 * heads * (model.head_dim + model.value_head_dim)


def _keys_attended(*, first: int, last: int, window: int) -> int:
    """Sum over query positions first..last (1-based) of the keys each sees, capped at `window`."""
    if last < first:
        return 0

    def total(n: int) -> int:  # sum_{i=1..n} min(i, window)
        if not window or n <= window:
            return n * (n + 1) // 2
        return window * (window + 1) // 2 + (n - window) * window

    return total(last) - total(first - 1)


def attended_pairs(*, model: Model, first: int, last: int) -> int:
    """(query, key) pairs over all layers for query positions first..last (1-based, causal)."""
    full = model.full_attention_layers * _keys_attended(first=first, last=last, window=0)
    sliding = model.sliding_window_layers * _keys_attended(
        first=first, last=last, window=model.sliding_window
    )
    return full + sliding


def attention_flops_per_token(*, model: Model, context: int) -> float:
    """QK^T plus AV for one new token attending to `context` tokens, all layers (decode)."""
    pairs = attended_pairs(model=model, first=context, last=context)
    return attention_pair_flops(model=model, absorbed=True) * pairs


def decode_flops_per_token(*, model: Model, context: int) -> float:
    _require_positive(context=context)
    return 2 * model.params_active + attention_flops_per_token(model=model, context=context)


def prefill_flops(*, model: Model, prompt_tokens: int) -> float:
    """2 x active params per token plus causal attention: token i attends to i tokens.

    For a GQA model without windows the attention term is 2 x layers x heads x head_dim x P x
    (P + 1); sliding-window layers cap each token's keys at the window, and MLA uses its
    expanded (non-absorbed) per-head widths.
    """
    _require_positive(prompt_tokens=prompt_tokens)
    matmuls = 2 * model.params_active * prompt_tokens
    pairs = attended_pairs(model=model, first=1, last=prompt_tokens)
    return matmuls + attention_pair_flops(model=model, absorbed=False) * pairs


def prefill_chunk_flops(*, model: Model, prior_tokens: int, chunk_tokens: int) -> float:
    """FLOPs of one chunked-prefill step: `chunk_tokens` new tokens after `prior_tokens` cached.

    The weight matmuls cost 2 x active params per new token, as for any prefill, but each new
    token at position i also attends to all i tokens before and including it, so a late chunk of
    a long prompt pays attention over everything prefilled so far:
    4 x layers x heads x head_dim x sum(prior+1 .. prior+chunk)
    = 2 x layers x heads x head_dim x chunk x (2 x prior + chunk + 1). With prior 0 this is
    `prefill_flops`; summed over all chunks it is too.
    """
    _require_positive(chunk_tokens=chunk_tokens)
    if prior_tokens < 0:
        raise ValueError(f"prior_tokens must not be negative, got {prior_tokens}")
    matmuls = 2 * model.params_active * chunk_tokens
    pairs = attended_pairs(model=model, first=prior_tokens + 1, last=prior_tokens + chunk_tokens)
    return matmuls + attention_pair_flops(model=model, absorbed=False) * pairs


@dataclass(frozen=True, slots=True)
class DecodeBound:
    batch: int
    context: int
    weight_bytes_read: float
    kv_bytes_read: float
    bytes_read: float
    flops: float
    memory_seconds: float
    compute_seconds: float
    step_seconds: float
    bound_by: Bound
    per_sequence_tokens_per_s: float
    aggregate_tokens_per_s: float
    arithmetic_intensity: float


def decode_bound(
    *, gpu: Gpu, model: Model, precision: str, kv_precision: str, batch: int, context: int
) -> DecodeBound:
    """Fastest possible decode step for `batch` sequences that each hold `context` tokens."""
    _require_positive(batch=batch, context=context)
    weights_read = params_read(model=model, tokens=batch) * bytes_per_element(precision=precision)
    kv_read = batch * kv_bytes_per_sequence(model=model, kv_precision=kv_precision, context=context)
    total_bytes = weights_read + kv_read
    flops = batch * decode_flops_per_token(model=model, context=context)
    peak = peak_compute(gpu=gpu, precision=precision)
    memory_seconds = total_bytes / gpu.memory_bandwidth_bytes_per_s
    compute_seconds = flops / peak.flops
    step = max(memory_seconds, compute_seconds)
    return DecodeBound(
        batch=batch,
        context=context,
        weight_bytes_read=weights_read,
        kv_bytes_read=kv_read,
        bytes_read=total_bytes,
        flops=flops,
        memory_seconds=memory_seconds,
        compute_seconds=compute_seconds,
        step_seconds=step,
        bound_by="memory" if memory_seconds >= compute_seconds else "compute",
        per_sequence_tokens_per_s=1 / step,
        aggregate_tokens_per_s=batch / step,
        arithmetic_intensity=flops / total_bytes,
    )


def weights_only_compute_bound_batch(
    *, gpu: Gpu, model: Model, precision: str, limit: int = 1 << 20
) -> int | None:
    """Smallest batch at which the weight matmuls alone take longer in compute than in reading.

    The textbook crossover (about the ridge point x bytes per weight / 2 for a dense model); it
    ignores KV reads, which also grow with the batch, so real decode turns compute-bound later,
    if ever. None if no batch up to `limit` gets there.
    """
    peak = peak_compute(gpu=gpu, precision=precision).flops
    per_weight = bytes_per_element(precision=precision)

    def compute_bound(batch: int) -> bool:
        compute = batch * 2 * model.params_active / peak
        memory = (
            params_read(model=model, tokens=batch) * per_weight / gpu.memory_bandwidth_bytes_per_s
        )
        return compute >= memory

    if not compute_bound(limit):
        return None
    low, high = (
        0,
        limit,
    )  # compute_bound(high) holds; compute_bound(low) does not (batch 0 reads weights)
    while high - low > 1:
        middle = (low + high) // 2
        if compute_bound(middle):
            high = middle
        else:
            low = middle
    return high


@dataclass(frozen=True, slots=True)
class PrefillBound:
    prompt_tokens: int
    flops: float
    bytes_moved: float
    compute_seconds: float
    memory_seconds: float
    seconds: float
    bound_by: Bound
    arithmetic_intensity: float


def prefill_bound(
    *, gpu: Gpu, model: Model, precision: str, kv_precision: str, prompt_tokens: int
) -> PrefillBound:
    """Lower bound on the time to process a prompt (time to first token, without queueing)."""
    flops = prefill_flops(model=model, prompt_tokens=prompt_tokens)
    weights_read = params_read(model=model, tokens=prompt_tokens) * bytes_per_element(
        precision=precision
    )
    kv_written = kv_bytes_per_sequence(
        model=model, kv_precision=kv_precision, context=prompt_tokens
    )
    total_bytes = weights_read + kv_written
    peak = peak_compute(gpu=gpu, precision=precision)
    compute_seconds = flops / peak.flops
    memory_seconds = total_bytes / gpu.memory_bandwidth_bytes_per_s
    return PrefillBound(
        prompt_tokens=prompt_tokens,
        flops=flops,
        bytes_moved=total_bytes,
        compute_seconds=compute_seconds,
        memory_seconds=memory_seconds,
        seconds=max(compute_seconds, memory_seconds),
        bound_by="compute" if compute_seconds >= memory_seconds else "memory",
        arithmetic_intensity=flops / total_bytes,
    )


def cost_per_million_tokens(
    *, gpu_price_per_hour: float, tokens_per_s: float, utilisation: float
) -> float:
    """Dollars per million tokens for a GPU rented by the hour and busy `utilisation` of the time.

    price per hour / (tokens per second x utilisation x 3600 s) x 10^6.
    """
    _require_positive(gpu_price_per_hour=gpu_price_per_hour, tokens_per_s=tokens_per_s)
    if not 0 < utilisation <= 1:
        raise ValueError(f"utilisation must be in (0, 1], got {utilisation}")
    tokens_per_hour = tokens_per_s * utilisation * SECONDS_PER_HOUR
    return gpu_price_per_hour / tokens_per_hour * 1_000_000


def speculative_expected_tokens(*, acceptance: float, draft_tokens: int) -> float:
    """Expected tokens per target-model step with k drafted tokens: (1 - a^(k+1)) / (1 - a).

    Leviathan, Kalman and Matias, "Fast Inference from Transformers via Speculative Decoding",
    ICML 2023, equation (1); the limit at a = 1 is k + 1.
    """
    if not 0 <= acceptance <= 1:
        raise ValueError(f"acceptance must be in [0, 1], got {acceptance}")
    _require_positive(draft_tokens=draft_tokens)
    if acceptance == 1:
        return float(draft_tokens + 1)
    return (1 - acceptance ** (draft_tokens + 1)) / (1 - acceptance)


def speculative_draft_acceptance_rate(*, acceptance: float, draft_tokens: int) -> float:
    """Accepted drafted tokens / drafted tokens: alpha (1 - alpha^k) / (k (1 - alpha)).

    What vLLM's counters give as num_accepted_tokens / num_draft_tokens. It is not alpha: a
    rejection at position i throws away the drafts after it even if they would have matched, so
    later positions are accepted less often (0.59 at alpha 0.8, k 4). The per-round figure that
    predicts speed is the mean acceptance length, `speculative_expected_tokens`
    (1 + num_accepted_tokens / num_drafts in vLLM's counters).
    """
    if not 0 <= acceptance <= 1:
        raise ValueError(f"acceptance must be in [0, 1], got {acceptance}")
    _require_positive(draft_tokens=draft_tokens)
    if acceptance == 1:
        return 1.0
    return acceptance * (1 - acceptance**draft_tokens) / (draft_tokens * (1 - acceptance))


def speculative_speedup(*, acceptance: float, draft_tokens: int, draft_cost: float) -> float:
    """Expected walltime improvement: expected tokens per step / (k x c + 1).

    c is the cost of one draft step relative to one target step.
    """
    if draft_cost < 0:
        raise ValueError(f"draft_cost must not be negative, got {draft_cost}")
    expected = speculative_expected_tokens(acceptance=acceptance, draft_tokens=draft_tokens)
    return expected / (draft_tokens * draft_cost + 1)
