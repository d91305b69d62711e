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


CASES: list[tuple[str, Callable[[], str], Path]] = [
    ("spec-acceptance-ratio", _spec_acceptance, LESSONS / "speculative-decoding.md"),
    ("spec-acceptance-misread", _spec_misread, LESSONS / "speculative-decoding.md"),
    ("late-prefill-chunk", _late_chunk, LESSONS / "cutting-ttft.md"),
    ("late-chunk-budgets", _late_chunk_other_budgets, LESSONS / "cutting-ttft.md"),
    ("batch-256-h100", _batch_256_on_h100, LESSONS / "what-your-bill-depends-on.md"),
    ("max-batch-h100", _max_batch_on_h100, LESSONS / "what-your-bill-depends-on.md"),
    ("h200-fp8-70b", _h200_fp8_70b, LESSONS / "parallelism.md"),
    ("bandwidth-range-roofline", _bandwidth_range_lesson, LESSONS / "roofline-speed-of-light.md"),
]

ANSWER_CASES: list[tuple[str, Callable[[], str], Path]] = [
    ("int4-70b-fp8-vs-int4", _int4_70b, QUESTIONS / "quantization-inference-optimisation.toml"),
    ("int4-70b-tradeoff", _int4_70b_tradeoff, QUESTIONS / "quantization-inference-optimisation.toml"),
    ("24gb-fixes", _24gb_fixes, QUESTIONS / "quantization-inference-optimisation.toml"),
    ("24gb-how-many", _24gb_how_many, QUESTIONS / "quantization-inference-optimisation.toml"),
]


@pytest.mark.parametrize(("name", "expected", "path"), CASES, ids=[c[0] for c in CASES])
def test_lesson_quotes_the_computed_number(name, expected, path):
    text = expected()
    assert text in _text(path), f"{path.name} should say: {text}"


@pytest.mark.parametrize(
    ("name", "expected", "path"), ANSWER_CASES, ids=[c[0] for c in ANSWER_CASES]
)
def test_model_answer_quotes_the_computed_number(name, expected, path):
    text = expected()
    assert text in _model_answers(path), f"a model answer in {path.name} should say: {text}"


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


def test_a_planted_typo_fails_the_check(tmp_path):
    """The check compares text, so one changed digit in the prose is caught."""
    original = _text(LESSONS / "parallelism.md")
    expected = _h200_fp8_70b()
    planted = original.replace(expected, expected.replace("172,000", "127,000"))
    assert planted != original
    assert expected not in planted
