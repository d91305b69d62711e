"""Numbers quoted in lessons and model answers, recomputed from courses.inference.

Each case computes a figure with the same functions the calculators use, formats it the way the
text writes it, and asserts the text contains exactly that string. A typo in the prose, or a change
to the catalogue or the math that moves the figure, fails here with the file and the expected text.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest

from courses.inference import math as im
from courses.inference.specs import get_gpu, get_model

ROOT = Path(__file__).resolve().parents[2]
LESSONS = ROOT / "courses" / "content" / "lessons"
QUESTIONS = ROOT / "questions" / "content"
LABS = ROOT / "labs" / "content"

GB = 1e9


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _flat(text: str) -> str:
    """Whitespace collapsed, so a number split across a line break still matches."""
    return " ".join(text.split())


SKIP = "[skip]"


def _says(*, text: str, expected: str) -> bool:
    """True when every fragment of `expected` (split at [skip]) occurs in `text`, in order."""
    position = 0
    flat = _flat(text)
    for fragment in expected.split(SKIP):
        fragment = _flat(fragment)
        found = flat.find(fragment, position)
        if found < 0:
            return False
        position = found + len(fragment)
    return True


def _model_answers(path: Path) -> str:
    """Every model answer in a question file, questions and follow-ups, joined."""
    data = tomllib.loads(_text(path))
    answers = []
    for question in data.get("questions", []):
        answers.append(question.get("model_answer", ""))
        answers.extend(f.get("model_answer", "") for f in question.get("follow_ups", []))
    return "\n".join(answers)


def _h100_8b_decode(batch: int, context: int = 2048) -> im.DecodeBound:
    return im.decode_bound(
        gpu=get_gpu(slug="h100-sxm"),
        model=get_model(slug="llama-3.1-8b"),
        precision="bf16",
        kv_precision="bf16",
        batch=batch,
        context=context,
    )


def _spec_acceptance() -> str:
    rate = im.speculative_draft_acceptance_rate(acceptance=0.8, draft_tokens=4)
    return f"which is {rate:.2f} at $\\alpha = 0.8$, $\\gamma = 4$"


def _spec_misread() -> str:
    rate = im.speculative_draft_acceptance_rate(acceptance=0.8, draft_tokens=4)
    wrong = im.speculative_expected_tokens(acceptance=rate, draft_tokens=4)
    right = im.speculative_expected_tokens(acceptance=0.8, draft_tokens=4)
    return f"you would predict {wrong:.1f} tokens per round instead of {right:.2f}"


def _late_chunk() -> str:
    gpu, model = get_gpu(slug="h100-sxm"), get_model(slug="llama-3.1-8b")
    total = im.prefill_chunk_flops(model=model, prior_tokens=30720, chunk_tokens=2048)
    weights = 2 * model.params_active * 2048
    attention = total - weights
    ms = 1e3 / gpu.peak_16bit_flops
    return (
        f"{weights * ms:.0f} ms of weights plus {attention * ms:.0f} ms of attention, "
        f"{total * ms:.0f} ms at peak"
    )


def _late_chunk_other_budgets() -> str:
    gpu, model = get_gpu(slug="h100-sxm"), get_model(slug="llama-3.1-8b")
    ms = 1e3 / gpu.peak_16bit_flops
    small = im.prefill_chunk_flops(model=model, prior_tokens=32768 - 512, chunk_tokens=512)
    large = im.prefill_chunk_flops(model=model, prior_tokens=32768 - 8192, chunk_tokens=8192)
    return (
        f"with a 512-token budget the last chunk is {small * ms:.0f} ms, "
        f"and with 8,192 it is {large * ms:.0f} ms"
    )


def _batch_256_on_h100() -> str:
    model = get_model(slug="llama-3.1-8b")
    weights = im.model_weight_bytes(model=model, precision="bf16")
    per_sequence = im.kv_bytes_per_sequence(model=model, kv_precision="bf16", context=2048)
    need = weights + 256 * per_sequence
    return (
        f"$16.06 + 256 \\times {per_sequence / GB:.3f} = {need / GB:.1f}$ GB, more than the "
        "H100's 80 GB"
    )


def _max_batch_on_h100() -> str:
    gpu, model = get_gpu(slug="h100-sxm"), get_model(slug="llama-3.1-8b")
    fit = im.max_concurrent_sequences(
        gpu_memory_bytes=gpu.memory_bytes,
        weight_bytes=im.model_weight_bytes(model=model, precision="bf16"),
        kv_bytes_per_sequence=im.kv_bytes_per_sequence(
            model=model, kv_precision="bf16", context=2048
        ),
        reserve_bytes=im.runtime_reserve_bytes(gpu_memory_bytes=gpu.memory_bytes),
    )
    step = _h100_8b_decode(batch=fit).step_seconds / fit * 1e6
    return f"at most {fit} such sequences fit, where a decode token costs {step:.0f}–{step / 0.7:.0f} µs"


def _h200_fp8_70b() -> str:
    gpu, model = get_gpu(slug="h200"), get_model(slug="llama-3.1-70b")
    usable = gpu.memory_bytes - im.runtime_reserve_bytes(gpu_memory_bytes=gpu.memory_bytes)
    free = usable - im.model_weight_bytes(model=model, precision="fp8")
    per_token = im.model_kv_bytes_per_token(model=model, kv_precision="bf16")
    tokens = round(free / per_token, -3)
    return (
        f"({usable / GB:.1f} GB usable) has about {free / GB:.0f} GB, {tokens:,.0f} tokens of BF16 "
        f"cache at {per_token:,.0f} bytes each"
    )


def _checkpoint(slug: str, precision: str) -> float:
    return im.checkpoint_weight_bytes(model=get_model(slug=slug), precision=precision) / GB


def _int4_70b() -> str:
    return f"a 70B model in about {_checkpoint('llama-3.1-70b', 'int4'):.1f} GB (4 bits plus"


def _int4_70b_tradeoff() -> str:
    return (
        f"to about {_checkpoint('llama-3.1-70b', 'fp8'):.0f} GB (INT8/FP8) or about "
        f"{_checkpoint('llama-3.1-70b', 'int4'):.1f} GB (INT4"
    )


def _usable_24gb() -> float:
    return 24e9 * (1 - im.RUNTIME_RESERVE_FRACTION)


def _24gb_fixes() -> str:
    model = get_model(slug="llama-3.1-8b")
    kv_fp8 = im.kv_bytes_per_sequence(model=model, kv_precision="fp8", context=8192) * 16 / GB
    kv_bf16 = im.kv_bytes_per_sequence(model=model, kv_precision="bf16", context=8192) * 16 / GB
    fp8 = _checkpoint("llama-3.1-8b", "fp8")
    int4 = _checkpoint("llama-3.1-8b", "int4")
    usable = _usable_24gb() / GB
    return (
        f"FP8 or INT8 weights (about {fp8:.1f} GB with the embeddings and head in BF16) plus an FP8 "
        f"KV cache ({kv_fp8:.1f} GB) come to {fp8 + kv_fp8:.1f} GB, which fits with about "
        f"{usable - fp8 - kv_fp8:.1f} GB to spare; INT4 weights ({int4:.1f} GB) with the cache left "
        f"in BF16 come to {int4 + kv_bf16:.1f} GB, which still misses by {int4 + kv_bf16 - usable:.1f} GB"
    )


def _24gb_how_many() -> str:
    model = get_model(slug="llama-3.1-8b")
    weights = im.model_weight_bytes(model=model, precision="bf16")
    per_sequence = im.kv_bytes_per_sequence(model=model, kv_precision="bf16", context=8192)
    fit = im.max_concurrent_sequences(
        gpu_memory_bytes=24e9,
        weight_bytes=weights,
        kv_bytes_per_sequence=per_sequence,
        reserve_bytes=im.runtime_reserve_bytes(gpu_memory_bytes=24e9),
    )
    left = (_usable_24gb() - weights) / GB
    return (
        f"about {left:.1f} GB is left for cache. At 1 GiB ({per_sequence / GB:.2f} GB) per "
        f"8k-token conversation that is {fit} full-length conversations at once, {fit - 1} once"
    )


def _bandwidth_range_lesson() -> str:
    low, high = im.ACHIEVABLE_BANDWIDTH_FRACTION
    bound = _h100_8b_decode(batch=1, context=1).per_sequence_tokens_per_s
    return (
        f"should decode at about {low * bound:.0f}-{high * bound:.0f} tokens/s against\n"
        f"a bound of {bound:.0f}"
    )


def _bandwidth_range_pct() -> str:
    low, high = im.ACHIEVABLE_BANDWIDTH_FRACTION
    return f"{low * 100:.0f}-{high * 100:.0f}%"


def _tex(value: float) -> str:
    """A thousands-separated integer as the lessons write it in math: 70{,}272."""
    return f"{value:,.0f}".replace(",", "{,}")


DEEPSEEK, QWEN3, GPT_OSS = "deepseek-v3", "qwen3-30b-a3b", "gpt-oss-120b"


def _mla_per_token() -> str:
    per_token = im.model_kv_bytes_per_token(model=get_model(slug=DEEPSEEK), kv_precision="bf16")
    return f"61 \\times (512 + 64) \\times 2 \\text{{ bytes}} = {_tex(per_token)} \\text{{ bytes per token}}"


def _mla_vs_llama_128k() -> str:
    deepseek = im.kv_bytes_per_sequence(
        model=get_model(slug=DEEPSEEK), kv_precision="bf16", context=131072
    )
    llama = get_model(slug="llama-3.1-70b")
    per_token = im.model_kv_bytes_per_token(model=llama, kv_precision="bf16")
    at_128k = im.kv_bytes_per_sequence(model=llama, kv_precision="bf16", context=131072)
    return (
        f"in BF16, {deepseek / GB:.1f} GB at 131,072 tokens. [skip] caches {per_token:,.0f} bytes "
        f"per token, {at_128k / GB:.1f} GB at 128k"
    )


def _gpt_oss_window() -> str:
    model = get_model(slug=GPT_OSS)
    long = im.long_context_kv_bytes_per_token(model=model, kv_precision="bf16")
    total = im.kv_bytes_per_sequence(model=model, kv_precision="bf16", context=131072)
    full = im.model_kv_bytes_per_token(model=model, kv_precision="bf16") * 131072
    return (
        f"${_tex(long)} \\times 131{{,}}072 + {_tex(long)} \\times 128 = {total / GB:.2f}$ GB "
        f"instead of the {full / GB:.2f} GB"
    )


def _mla_intensity() -> str:
    model = get_model(slug=DEEPSEEK)
    pair = im.attention_pair_flops(model=model, absorbed=True)
    per_layer = im.model_kv_bytes_per_token(model=model, kv_precision="bf16") / model.layers
    return (
        f"$2 \\times 128 \\times (576 + 512) = {_tex(pair)}$ FLOPs per token and layer against "
        f"{per_layer:,.0f} bytes read. That is **{pair / per_layer:.0f} FLOP per byte**"
    )


def _llama_decode_by_context() -> str:
    parts = []
    for context, label in ((4096, "4k tokens"), (32768, "32k"), (131072, "128k")):
        step = _h100_8b_decode(batch=1, context=context)
        kv_ms = step.kv_bytes_read / get_gpu(slug="h100-sxm").memory_bandwidth_bytes_per_s * 1e3
        digits = 2 if step.kv_bytes_read < GB else 1
        parts.append(f"{step.kv_bytes_read / GB:.{digits}f} GB ({kv_ms:.{2 if kv_ms < 1 else 1}f} ms) at {label}")
    last = _h100_8b_decode(batch=1, context=131072).step_seconds * 1e3
    return f"{parts[0]}, {parts[1]} and {parts[2]}, where the step is {last:.1f} ms"


def _llama_batch16_32k() -> str:
    step = _h100_8b_decode(batch=16, context=32768)
    return (
        f"{step.weight_bytes_read / GB:.1f} GB of weights and {step.kv_bytes_read / GB:.1f} GB of "
        f"cache: {step.step_seconds * 1e3:.0f} ms per step, an aggregate intensity of "
        f"{step.arithmetic_intensity:.1f} FLOP per byte"
    )


def _prefill_128k() -> str:
    model, gpu = get_model(slug="llama-3.1-8b"), get_gpu(slug="h100-sxm")
    flops = im.prefill_flops(model=model, prompt_tokens=131072)
    attention = 1 - 2 * model.params_active * 131072 / flops
    mantissa, exponent = f"{flops:.1e}".split("e+")
    return (
        f"${mantissa} \\times 10^{{{int(exponent)}}}$ FLOP, {attention:.0%} of it attention, "
        f"**{flops / gpu.peak_16bit_flops:.1f} s**"
    )


def _billions(value: float, digits: int = 1) -> str:
    return f"{value / 1e9:.{digits}f}B"


def _moe_table_row(slug: str, label: str, active_digits: int = 1) -> str:
    model = get_model(slug=slug)
    return (
        f"| {label} | {_billions(model.params_total)} | "
        f"{_billions(model.params_active, active_digits)} |"
    )


def _moe_rows() -> list[str]:
    return [
        _moe_table_row("mixtral-8x7b", "Mixtral 8x7B [1][7]"),
        _moe_table_row(QWEN3, "Qwen3-30B-A3B [2]", 2),
        _moe_table_row(GPT_OSS, "gpt-oss-120b [3]", 2),
        _moe_table_row(DEEPSEEK, "DeepSeek-V3 [4]"),
    ]


def _deepseek_experts() -> str:
    model = get_model(slug=DEEPSEEK)
    routed = model.moe_layers * model.experts * model.params_per_expert
    return (
        f"$3 \\times 7168 \\times 2048 = {_tex(model.params_per_expert)}$ parameters, so the "
        f"routed experts hold $58 \\times 256 \\times 44.0\\text{{M}} = {routed / 1e9:.1f}$B of the "
        f"671B. Everything else, {model.params_shared / 1e9:.1f}B"
    )


def _qwen3_on_h100() -> str:
    model, gpu = get_model(slug=QWEN3), get_gpu(slug="h100-sxm")
    weights = im.model_weight_bytes(model=model, precision="bf16")
    free = gpu.memory_bytes - im.runtime_reserve_bytes(gpu_memory_bytes=gpu.memory_bytes) - weights
    per_token = im.model_kv_bytes_per_token(model=model, kv_precision="bf16")
    return (
        f"Qwen3-30B-A3B in BF16 is {weights / GB:.1f} GB: one 80 GB H100 holds it, leaving "
        f"{free / GB:.1f} GB for cache after the usual 10% reserve, about "
        f"{round(free / per_token, -3):,.0f} tokens at {per_token:,.0f} bytes each"
    )


def _deepseek_batch1() -> str:
    from courses.inference.report import speed_of_light

    bound = speed_of_light(
        gpu_slug="h200", model_slug=DEEPSEEK, precision="fp8", kv_precision="bf16", batch=1,
        context=1, prompt_tokens=1, gpus=8,
    )
    dense = bound.weight_bytes / bound.gpu.memory_bandwidth_bytes_per_s * 1e3
    return (
        f"the bound is **{bound.decode.memory_seconds * 1e3:.2f} ms per token**, about 1,000 "
        f"tokens/s for one sequence (leaving out the communication described below). A dense "
        f"model of 671B would need {dense:.1f} ms"
    )


def _qwen3_batch1() -> str:
    step = im.decode_bound(
        gpu=get_gpu(slug="h100-sxm"), model=get_model(slug=QWEN3), precision="bf16",
        kv_precision="bf16", batch=1, context=4096,
    )
    return (
        f"reads {step.weight_bytes_read / GB:.1f} GB of weights per step, plus "
        f"{step.kv_bytes_read / GB:.1f} GB of cache at 4,096 tokens: "
        f"{step.step_seconds * 1e3:.1f} ms, {step.per_sequence_tokens_per_s:.0f} tokens/s"
    )


def _experts_by_batch() -> str:
    touched = [
        im.expected_experts_touched(experts=256, experts_per_token=8, tokens=b)
        for b in (8, 32, 64, 256)
    ]
    return (
        f"8 experts at $B = 1$, {touched[0]:.1f} at $B = 8$, {touched[1]:.1f} at $B = 32$, "
        f"**{touched[2]:.1f} at $B = 64$** and {touched[3]:.1f} at $B = 256$"
    )


def _params_read_by_batch() -> str:
    model = get_model(slug=DEEPSEEK)
    read = {b: im.params_read(model=model, tokens=b) for b in (1, 8, 64, 256)}
    return (
        f"{_billions(read[1])} parameters at batch 1, {_billions(read[8])} at 8, "
        f"{_billions(read[64])} at 64, {_billions(read[256])} at 256. At batch 64 a decode step "
        f"reads {read[64] / model.params_total:.0%} of the model"
    )


def _qwen3_union() -> str:
    touched = [
        im.expected_experts_touched(experts=128, experts_per_token=8, tokens=b) for b in (8, 32)
    ]
    return f"{touched[0]:.1f} of 128 experts at batch 8, {touched[1]:.1f} at 32"


def _a2a_bytes() -> str:
    per_layer = 8 * get_model(slug=DEEPSEEK).hidden_size * (1 + 2)
    return f"$8 \\times 7168 \\times (1 + 2) = {_tex(per_layer)}$ bytes"


def _formats_alt() -> str:
    model, gpu = get_model(slug="llama-3.1-70b"), get_gpu(slug="h100-sxm")
    sizes = [im.checkpoint_weight_bytes(model=model, precision=p) for p in
             ("bf16", "fp8", "int4", "nvfp4", "mxfp4")]
    rates = [gpu.memory_bandwidth_bytes_per_s / size for size in sizes]
    return (
        f"{sizes[0] / GB:.0f} GB, {sizes[1] / GB:.1f} GB, {sizes[2] / GB:.1f} GB, "
        f"{sizes[3] / GB:.1f} GB and {sizes[4] / GB:.1f} GB, with batch-1 decode bounds of "
        f"{rates[0]:.0f}, {rates[1]:.0f}, {rates[2]:.0f}, {rates[3]:.0f} and {rates[4]:.0f} tokens/s"
    )


def _fp8_70b_h200() -> str:
    model, gpu = get_model(slug="llama-3.1-70b"), get_gpu(slug="h200")
    fp8 = im.checkpoint_weight_bytes(model=model, precision="fp8")
    free = gpu.memory_bytes * (1 - im.RUNTIME_RESERVE_FRACTION) - fp8
    tokens = free / im.model_kv_bytes_per_token(model=model, kv_precision="bf16")
    return f"on an H200 it leaves about {free / GB:.0f} GB, {round(tokens, -3):,.0f} tokens of BF16 cache"


def _gpt_oss_mxfp4() -> str:
    model = get_model(slug=GPT_OSS)
    experts = model.moe_layers * model.experts * model.params_per_expert
    rest = model.params_total - experts
    total = experts * im.bytes_per_element(precision="mxfp4") + rest * 2
    active = (
        model.moe_layers * model.experts_per_token * model.params_per_expert
        * im.bytes_per_element(precision="mxfp4")
        + rest * 2
    )
    ms = active / get_gpu(slug="h100-sxm").memory_bandwidth_bytes_per_s * 1e3
    return (
        f"${experts / 1e9:.1f}\\text{{B}} \\times 0.53125 + {rest / 1e9:.1f}\\text{{B}} \\times 2 = "
        f"{total / GB:.1f}$ GB, [skip] shared layers, {active / GB:.1f} GB, for a bound of {ms:.1f} ms"
    )


def _lora_size() -> str:
    layers, rank = 32, 16
    per_layer = (4096 + 4096) * 2 + (4096 + 1024) * 2 + (4096 + 14336) * 3
    params = layers * rank * per_layer
    return f"= {params / 1e6:.1f}\\text{{M parameters}} $$ {params * 2 / 1e6:.0f} MB in BF16"


def _offload() -> str:
    model, gpu = get_model(slug="llama-3.1-8b"), get_gpu(slug="h100-sxm")
    cache = im.kv_bytes_per_sequence(model=model, kv_precision="bf16", context=32768)
    flops = im.prefill_flops(model=model, prompt_tokens=32768)
    mantissa, exponent = f"{flops:.1e}".split("e+")
    return (
        f"prefill costs ${mantissa} \\times 10^{{{int(exponent)}}}$ FLOP, "
        f"{flops / gpu.peak_16bit_flops * 1e3:.0f} ms at peak [skip] the cache is "
        f"$32{{,}}768 \\times 131{{,}}072 = {cache / GB:.2f}$ GB; at about 50 GB/s of achieved PCIe Gen5 "
        f"bandwidth that is **{cache / 50e9 * 1e3:.0f} ms**"
    )


def _disaggregation_transfer() -> str:
    llama = get_model(slug="llama-3.1-70b")
    cache = im.kv_bytes_per_sequence(model=llama, kv_precision="bf16", context=8192)
    prefill = im.prefill_flops(model=llama, prompt_tokens=8192) / (
        8 * get_gpu(slug="h100-sxm").peak_16bit_flops
    )
    mla = im.kv_bytes_per_sequence(model=get_model(slug=DEEPSEEK), kv_precision="bf16", context=8192)
    return (
        f"$8{{,}}192 \\times 327{{,}}680 = {cache / GB:.2f}$ GB of cache, {cache / 50e9 * 1e3:.0f} ms "
        f"at 50 GB/s of RDMA, the same order as the prefill itself ({prefill * 1e3:.0f} ms at peak on "
        f"8 H100s); the same prompt on DeepSeek-V3, whose MLA cache is 70,272 bytes per token, ships "
        f"{mla / GB:.2f} GB, {mla / 50e9 * 1e3:.0f} ms"
    )


CASES: list[tuple[str, Callable[[], str], Path]] = [
    ("spec-acceptance-ratio", _spec_acceptance, LESSONS / "speculative-decoding.md"),
    ("spec-acceptance-misread", _spec_misread, LESSONS / "speculative-decoding.md"),
    ("late-prefill-chunk", _late_chunk, LESSONS / "cutting-ttft.md"),
    ("late-chunk-budgets", _late_chunk_other_budgets, LESSONS / "cutting-ttft.md"),
    ("batch-256-h100", _batch_256_on_h100, LESSONS / "what-your-bill-depends-on.md"),
    ("max-batch-h100", _max_batch_on_h100, LESSONS / "what-your-bill-depends-on.md"),
    ("h200-fp8-70b", _h200_fp8_70b, LESSONS / "parallelism.md"),
    ("bandwidth-range-roofline", _bandwidth_range_lesson, LESSONS / "roofline-speed-of-light.md"),
    ("mla-per-token", _mla_per_token, LESSONS / "attention-kernels-long-context.md"),
    ("mla-vs-llama-128k", _mla_vs_llama_128k, LESSONS / "attention-kernels-long-context.md"),
    ("gpt-oss-window", _gpt_oss_window, LESSONS / "attention-kernels-long-context.md"),
    ("mla-intensity", _mla_intensity, LESSONS / "attention-kernels-long-context.md"),
    ("decode-by-context", _llama_decode_by_context, LESSONS / "attention-kernels-long-context.md"),
    ("batch16-32k", _llama_batch16_32k, LESSONS / "attention-kernels-long-context.md"),
    ("prefill-128k", _prefill_128k, LESSONS / "attention-kernels-long-context.md"),
    ("moe-table-mixtral", lambda: _moe_rows()[0], LESSONS / "moe-and-expert-parallelism.md"),
    ("moe-table-qwen3", lambda: _moe_rows()[1], LESSONS / "moe-and-expert-parallelism.md"),
    ("moe-table-gpt-oss", lambda: _moe_rows()[2], LESSONS / "moe-and-expert-parallelism.md"),
    ("moe-table-deepseek", lambda: _moe_rows()[3], LESSONS / "moe-and-expert-parallelism.md"),
    ("deepseek-experts", _deepseek_experts, LESSONS / "moe-and-expert-parallelism.md"),
    ("qwen3-on-h100", _qwen3_on_h100, LESSONS / "moe-and-expert-parallelism.md"),
    ("deepseek-batch1", _deepseek_batch1, LESSONS / "moe-and-expert-parallelism.md"),
    ("qwen3-batch1", _qwen3_batch1, LESSONS / "moe-and-expert-parallelism.md"),
    ("experts-by-batch", _experts_by_batch, LESSONS / "moe-and-expert-parallelism.md"),
    ("params-read-by-batch", _params_read_by_batch, LESSONS / "moe-and-expert-parallelism.md"),
    ("qwen3-union", _qwen3_union, LESSONS / "moe-and-expert-parallelism.md"),
    ("all-to-all-bytes", _a2a_bytes, LESSONS / "moe-and-expert-parallelism.md"),
    ("formats-figure-alt", _formats_alt, LESSONS / "low-precision-fp8-fp4.md"),
    ("fp8-70b-h200", _fp8_70b_h200, LESSONS / "low-precision-fp8-fp4.md"),
    ("gpt-oss-mxfp4", _gpt_oss_mxfp4, LESSONS / "low-precision-fp8-fp4.md"),
    ("lora-size", _lora_size, LESSONS / "serving-features.md"),
    ("kv-offload", _offload, LESSONS / "serving-features.md"),
    ("disaggregation-transfer", _disaggregation_transfer, LESSONS / "serving-features.md"),
]

def _answer_moe_batch() -> str:
    model = get_model(slug=DEEPSEEK)
    touched = im.expected_experts_touched(experts=256, experts_per_token=8, tokens=64)
    read = im.params_read(model=model, tokens=64)
    from courses.inference.report import speed_of_light

    step = speed_of_light(
        gpu_slug="h200", model_slug=DEEPSEEK, precision="fp8", kv_precision="bf16", batch=64,
        context=4096, prompt_tokens=1, gpus=8,
    ).decode.step_seconds
    return (
        f"about {touched:.0f} of 256 experts, so a step reads about {read / 1e9:.0f}B parameters, "
        f"{read / model.params_total:.0%} of the model. The step takes about {step * 1e3:.0f} ms "
        "with 4,096 tokens of context"
    )


def _answer_mla_kib() -> str:
    per_token = im.model_kv_bytes_per_token(model=get_model(slug=DEEPSEEK), kv_precision="bf16")
    return f"61 × (512 + 64) × 2 bytes = {per_token:,.0f} bytes, which is {per_token / 1024:.1f} KiB"


def _answer_nvfp4() -> str:
    size = im.checkpoint_weight_bytes(model=get_model(slug="llama-3.1-70b"), precision="nvfp4")
    return f"About {size / GB:.1f} GB."


def _answer_reload() -> str:
    cache = im.kv_bytes_per_sequence(
        model=get_model(slug="llama-3.1-8b"), kv_precision="bf16", context=32768
    )
    return (
        f"About {cache / 50e9 * 1e3:.0f} ms. The cache is 32,768 × 131,072 bytes = "
        f"{cache / GB:.2f} GB, and {cache / GB:.2f} GB at 50 GB/s takes {cache / 50e9:.3f} s"
    )


def _answer_ridge() -> str:
    gpu = get_gpu(slug="h100-sxm")
    ridge = im.ridge_point(
        peak_flops=gpu.peak_16bit_flops, bandwidth_bytes_per_s=gpu.memory_bandwidth_bytes_per_s
    )
    return f"About {ridge:.0f} FLOP per byte"


def _answer_int4_8b() -> str:
    size = im.checkpoint_weight_bytes(model=get_model(slug="llama-3.1-8b"), precision="int4")
    return f"About {size / GB:.2f} GB."


def _answer_fp8_h200_tokens() -> str:
    model, gpu = get_model(slug="llama-3.1-70b"), get_gpu(slug="h200")
    free = gpu.memory_bytes * 0.9 - im.model_weight_bytes(model=model, precision="fp8")
    tokens = free / im.model_kv_bytes_per_token(model=model, kv_precision="bf16")
    return f"About {round(tokens, -3):,.0f} tokens. [skip] which leaves {free / GB:.1f} GB"


def _answer_decode_8b() -> str:
    rate = _h100_8b_decode(batch=1, context=1).per_sequence_tokens_per_s
    return f"About {rate:.0f} tokens/s"


ANSWER_CASES: list[tuple[str, Callable[[], str], Path]] = [
    ("int4-70b-fp8-vs-int4", _int4_70b, QUESTIONS / "quantization-inference-optimisation.toml"),
    ("int4-70b-tradeoff", _int4_70b_tradeoff, QUESTIONS / "quantization-inference-optimisation.toml"),
    ("24gb-fixes", _24gb_fixes, QUESTIONS / "quantization-inference-optimisation.toml"),
    ("24gb-how-many", _24gb_how_many, QUESTIONS / "quantization-inference-optimisation.toml"),
    ("moe-batch-64", _answer_moe_batch, QUESTIONS / "moe-expert-parallelism.toml"),
    ("mla-kib", _answer_mla_kib, QUESTIONS / "attention-long-context.toml"),
    ("nvfp4-70b", _answer_nvfp4, QUESTIONS / "low-precision.toml"),
    ("kv-reload", _answer_reload, QUESTIONS / "serving-features.toml"),
    ("ridge-check", _answer_ridge, QUESTIONS / "lesson-checks.toml"),
    ("int4-8b-check", _answer_int4_8b, QUESTIONS / "lesson-checks.toml"),
    ("fp8-h200-check", _answer_fp8_h200_tokens, QUESTIONS / "lesson-checks.toml"),
    ("decode-8b-check", _answer_decode_8b, QUESTIONS / "lesson-checks.toml"),
]


@pytest.mark.parametrize(("name", "expected", "path"), CASES, ids=[c[0] for c in CASES])
def test_lesson_quotes_the_computed_number(name, expected, path):
    text = expected()
    assert _says(text=_text(path), expected=text), f"{path.name} should say: {text}"


@pytest.mark.parametrize(
    ("name", "expected", "path"), ANSWER_CASES, ids=[c[0] for c in ANSWER_CASES]
)
def test_model_answer_quotes_the_computed_number(name, expected, path):
    text = expected()
    assert _says(text=_model_answers(path), expected=text), (
        f"a model answer in {path.name} should say: {text}"
    )


def test_one_achievable_bandwidth_range_everywhere():
    """The range the course plans with appears wherever an achievable fraction is quoted."""
    pct = _bandwidth_range_pct()
    assert pct == "60-80%"
    quant = _text(QUESTIONS / "quantization-inference-optimisation.toml")
    assert quant.count(pct) >= 3
    assert pct in _text(LABS / "decode-speed-of-light.toml")
    for stale in ("50-80", "70-85", "60-85"):
        for path in [*LESSONS.glob("*.md"), *QUESTIONS.glob("*.toml"), *LABS.glob("*.toml")]:
            assert stale not in _text(path), f"{path.name} quotes {stale}%; use {pct}"


def test_kv_lesson_table_matches_the_answer():
    """kv-cache-memory.md and the 24 GB question agree: INT4 with a BF16 cache misses by 1.3 GB."""
    lesson = _text(LESSONS / "kv-cache-memory.md")
    model = get_model(slug="llama-3.1-8b")
    int4 = _checkpoint("llama-3.1-8b", "int4")
    cache = im.kv_bytes_per_sequence(model=model, kv_precision="bf16", context=8192) * 16 / GB
    assert f"| 4-bit weights | {int4:.2f} | {cache:.2f} | {int4 + cache:.2f} | No, by " in lesson
    assert f"No, by {int4 + cache - _usable_24gb() / GB:.1f} GB" in lesson


@pytest.mark.parametrize(
    ("lesson", "expected", "right", "typo"),
    [
        ("parallelism.md", _h200_fp8_70b, "172,000", "127,000"),
        ("moe-and-expert-parallelism.md", _experts_by_batch, "222.4", "224.2"),
        ("attention-kernels-long-context.md", _mla_per_token, "70{,}272", "70{,}227"),
    ],
)
def test_a_planted_typo_fails_the_check(lesson, expected, right, typo):
    """One changed digit in the prose makes the check fail (and the unchanged text passes)."""
    original = _text(LESSONS / lesson)
    text = expected()
    assert _says(text=original, expected=text)
    planted = original.replace(right, typo)
    assert planted != original
    assert not _says(text=planted, expected=text)
