# Multiplication and minus signs in learner-facing text and worked arithmetic are intended.
"""The speed-of-light math against numbers worked out by hand (each test shows the working).

Catalogue values used below (see courses/inference/catalogue/):
  Llama 3.1 8B: 8,030,261,248 params, 32 layers, 8 KV heads, head dim 128, 32 query heads.
  H100 SXM: 80 GB, 3.35 TB/s, 989.4 TFLOP/s dense BF16. L4: 24 GB, 300 GB/s, 121 TFLOP/s.
"""

import pytest

from courses.inference import math as im
from courses.inference.report import InputError, cost_report, kv_cache_report, speed_of_light
from courses.inference.scheduling import (
    continuous_batching,
    makespan,
    slot_utilisation,
    static_batching,
)
from courses.inference.specs import get_gpu, get_model

H100 = get_gpu(slug="h100-sxm")
L4 = get_gpu(slug="l4")
LLAMA_8B = get_model(slug="llama-3.1-8b")
LLAMA_70B = get_model(slug="llama-3.1-70b")
MIXTRAL = get_model(slug="mixtral-8x7b")


@pytest.mark.parametrize(
    ("precision", "expected"),
    [("fp32", 4), ("fp16", 2), ("bf16", 2), ("fp8", 1), ("int8", 1), ("int4", 0.515625)],
)
def test_bytes_per_element(precision, expected):
    # int4: 4 bits + one 16-bit scale per 128 weights = 4 + 16/128 = 4.125 bits = 0.515625 bytes.
    assert im.bytes_per_element(precision=precision) == expected


def test_unknown_precision_is_refused():
    with pytest.raises(ValueError, match="precision must be one of"):
        im.bytes_per_element(precision="fp4")


def test_weight_bytes_llama_8b():
    # 8,030,261,248 × 2 = 16,060,522,496 bytes (16.06 GB, 14.96 GiB).
    assert im.model_weight_bytes(model=LLAMA_8B, precision="bf16") == 16_060_522_496
    # int4: 8,030,261,248 / 2 = 4,015,130,624 plus scales 8,030,261,248 / 128 × 2 = 125,472,832.
    assert im.model_weight_bytes(model=LLAMA_8B, precision="int4") == 4_140_603_456
    # 70B in bf16: 70,553,706,496 × 2 = 141,107,412,992 bytes, more than one 80 GB GPU.
    assert im.model_weight_bytes(model=LLAMA_70B, precision="bf16") == 141_107_412_992


def test_moe_memory_counts_every_expert():
    # Mixtral holds 46,702,792,704 parameters even though a token uses 12,879,925,248 of them.
    assert im.model_weight_bytes(model=MIXTRAL, precision="bf16") == 2 * 46_702_792_704


@pytest.mark.parametrize(
    ("slug", "expected"),
    [
        # 2 (K and V) × 32 layers × 8 KV heads × 128 dim × 2 bytes = 131,072 bytes = 128 KiB.
        ("llama-3.1-8b", 131_072),
        # 2 × 80 × 8 × 128 × 2 = 327,680 bytes = 320 KiB.
        ("llama-3.1-70b", 327_680),
        # 2 × 16 × 8 × 64 × 2 = 32,768 bytes = 32 KiB.
        ("llama-3.2-1b", 32_768),
        # 2 × 28 × 4 × 128 × 2 = 57,344 bytes = 56 KiB (Qwen2.5 7B has only 4 KV heads).
        ("qwen2.5-7b", 57_344),
        # 2 × 32 × 8 × 128 × 2 = 131,072: Mixtral's attention is Mistral 7B's.
        ("mixtral-8x7b", 131_072),
    ],
)
def test_kv_bytes_per_token_bf16(slug, expected):
    assert im.model_kv_bytes_per_token(model=get_model(slug=slug), kv_precision="bf16") == expected


def test_kv_per_token_halves_in_fp8():
    # 2 × 32 × 8 × 128 × 1 byte = 65,536 bytes = 64 KiB.
    assert im.model_kv_bytes_per_token(model=LLAMA_8B, kv_precision="fp8") == 65_536


def test_kv_per_request_llama_8b_at_8k_is_one_gib():
    # 131,072 bytes × 8,192 tokens = 2^17 × 2^13 = 2^30 bytes = exactly 1 GiB (1.074 GB).
    assert im.kv_bytes_per_sequence(model=LLAMA_8B, kv_precision="bf16", context=8192) == 1024**3


def test_sixteen_8k_users_of_an_8b_model_do_not_fit_on_a_24_gb_gpu():
    # Lesson 4's worked example. Weights 16.06 GB + 16 × 1.074 GB KV = 33.24 GB before any
    # reserve, against 24 GB. What does fit: (24 − 2.4 reserve − 16.06) GB / 1.074 GB = 5.16 -> 5.
    report = speed_of_light(
        gpu_slug="l4",
        model_slug="llama-3.1-8b",
        precision="bf16",
        kv_precision="bf16",
        batch=16,
        context=8192,
        prompt_tokens=1024,
    )
    assert report.kv_bytes_total == 16 * 1024**3
    assert report.memory_needed_bytes == 16_060_522_496 + 16 * 1024**3 + 2_400_000_000
    assert not report.fits
    assert report.max_concurrent_sequences == 5


def test_max_concurrent_sequences_is_zero_when_the_weights_do_not_fit():
    # 70B bf16 is 141.1 GB; an L4 has 24 GB.
    assert (
        im.max_concurrent_sequences(
            gpu_memory_bytes=L4.memory_bytes,
            weight_bytes=im.model_weight_bytes(model=LLAMA_70B, precision="bf16"),
            kv_bytes_per_sequence=327_680 * 4096,
            reserve_bytes=im.runtime_reserve_bytes(gpu_memory_bytes=L4.memory_bytes),
        )
        == 0
    )


def test_max_concurrent_sequences_h100_llama_8b_4k():
    # (80e9 − 8e9 − 16,060,522,496) / (131,072 × 4,096 = 536,870,912) = 55,939,477,504 / 536,870,912
    # = 104.2 -> 104 sequences.
    assert (
        im.max_concurrent_sequences(
            gpu_memory_bytes=80e9,
            weight_bytes=16_060_522_496,
            kv_bytes_per_sequence=536_870_912,
            reserve_bytes=8e9,
        )
        == 104
    )


def test_decode_bound_batch_1_h100_llama_8b():
    # Bytes per step: 16,060,522,496 weights + 131,072 × 4,096 = 536,870,912 KV = 16,597,393,408.
    # 16,597,393,408 / 3.35e12 B/s = 4.9544 ms -> 201.84 tokens/s.
    # FLOPs: 2 × 8,030,261,248 + 4 × 32 layers × 32 heads × 128 × 4,096 = 16,060,522,496 +
    # 2,147,483,648 = 18,208,006,144; / 989.4e12 = 18.4 µs, far below 4.95 ms: memory-bound.
    bound = im.decode_bound(
        gpu=H100, model=LLAMA_8B, precision="bf16", kv_precision="bf16", batch=1, context=4096
    )
    assert bound.bytes_read == 16_597_393_408
    assert bound.flops == 18_208_006_144
    assert bound.memory_seconds == pytest.approx(4.9544e-3, rel=1e-4)
    assert bound.compute_seconds == pytest.approx(18.40e-6, rel=1e-3)
    assert bound.bound_by == "memory"
    assert bound.per_sequence_tokens_per_s == pytest.approx(201.84, rel=1e-4)
    assert bound.aggregate_tokens_per_s == bound.per_sequence_tokens_per_s


def test_decode_bound_batch_32_shares_the_weight_read():
    # 32 sequences: 16,060,522,496 + 32 × 536,870,912 = 33,240,391,680 bytes per step;
    # / 3.35e12 = 9.9225 ms per step -> 100.78 tokens/s each, 3,225.0 tokens/s in all.
    bound = im.decode_bound(
        gpu=H100, model=LLAMA_8B, precision="bf16", kv_precision="bf16", batch=32, context=4096
    )
    assert bound.bytes_read == 33_240_391_680
    assert bound.step_seconds == pytest.approx(9.9225e-3, rel=1e-4)
    assert bound.per_sequence_tokens_per_s == pytest.approx(100.78, rel=1e-3)
    assert bound.aggregate_tokens_per_s == pytest.approx(3225.0, rel=1e-4)
    assert bound.aggregate_tokens_per_s == pytest.approx(32 * bound.per_sequence_tokens_per_s)


def test_decode_turns_compute_bound_with_a_huge_batch_of_short_sequences():
    # L4, 8B bf16, batch 4,096, one token of context each.
    # Memory: 16,060,522,496 + 4,096 × 131,072 = 16,597,393,408 bytes / 300e9 = 55.32 ms.
    # Compute: 4,096 × (16,060,522,496 + 4 × 32 × 32 × 128 × 1) = 4,096 × 16,061,046,784
    # = 65,786,047,627,264 FLOPs / 121e12 = 543.7 ms: compute-bound, 7.53 tokens/s per sequence.
    bound = im.decode_bound(
        gpu=L4, model=LLAMA_8B, precision="bf16", kv_precision="bf16", batch=4096, context=1
    )
    assert bound.flops == 65_786_047_627_264
    assert bound.memory_seconds == pytest.approx(55.325e-3, rel=1e-4)
    assert bound.compute_seconds == pytest.approx(0.54369, rel=1e-4)
    assert bound.bound_by == "compute"
    assert bound.per_sequence_tokens_per_s == pytest.approx(1 / 0.54369, rel=1e-4)


def test_int4_weights_speed_up_batch_1_decode_by_reading_fewer_bytes():
    # 4,140,603,456 + 536,870,912 = 4,677,474,368 bytes / 3.35e12 = 1.3963 ms -> 716.2 tokens/s,
    # 3.55× the bf16 bound (201.84) although the FLOPs are the same.
    bound = im.decode_bound(
        gpu=H100, model=LLAMA_8B, precision="int4", kv_precision="bf16", batch=1, context=4096
    )
    assert bound.bytes_read == 4_677_474_368
    assert bound.per_sequence_tokens_per_s == pytest.approx(716.2, rel=1e-3)


def test_expected_experts_touched():
    # E = 8, k = 2: B = 1 -> 8 × (1 − 0.75) = 2; B = 2 -> 8 × (1 − 0.5625) = 3.5;
    # B = 16 -> 8 × (1 − 0.75^16) = 7.92.
    assert im.expected_experts_touched(experts=8, experts_per_token=2, tokens=1) == pytest.approx(2)
    assert im.expected_experts_touched(experts=8, experts_per_token=2, tokens=2) == pytest.approx(
        3.5
    )
    assert im.expected_experts_touched(experts=8, experts_per_token=2, tokens=16) == pytest.approx(
        7.9198, rel=1e-4
    )
    assert im.expected_experts_touched(experts=1, experts_per_token=1, tokens=64) == 1


def test_moe_decode_reads_active_params_at_batch_1_and_more_experts_in_a_batch():
    # Batch 1 reads the 12,879,925,248 active parameters (shared + 2 experts per layer) in bf16.
    one = im.decode_bound(
        gpu=H100, model=MIXTRAL, precision="bf16", kv_precision="bf16", batch=1, context=1
    )
    assert one.weight_bytes_read == pytest.approx(2 * 12_879_925_248)
    # Batch 2 touches 3.5 experts per layer: shared 46,702,792,704 − 32 × 8 × 176,160,768
    # = 1,605,636,096, plus 32 × 3.5 × 176,160,768 = 19,730,006,016 -> 21,335,642,112 params.
    two = im.decode_bound(
        gpu=H100, model=MIXTRAL, precision="bf16", kv_precision="bf16", batch=2, context=1
    )
    assert two.weight_bytes_read == pytest.approx(2 * 21_335_642_112)
    # FLOPs use active parameters per token whatever the batch: 2 × 12,879,925,248 per token.
    assert two.flops == 2 * (2 * 12_879_925_248 + 4 * 32 * 32 * 128 * 1)
    # A large batch reads (almost) every expert.
    big = im.decode_bound(
        gpu=H100, model=MIXTRAL, precision="bf16", kv_precision="bf16", batch=256, context=1
    )
    assert big.weight_bytes_read == pytest.approx(2 * 46_702_792_704, rel=1e-6)


def test_prefill_lower_bound_h100_llama_8b_1024_tokens():
    # Matmuls: 2 × 8,030,261,248 × 1,024 = 16,445,975,035,904 FLOPs.
    # Causal attention: 2 × 32 layers × 32 heads × 128 × 1,024 × 1,025 = 275,146,342,400 FLOPs.
    # Total 16,721,121,378,304 / 989.4e12 = 16.900 ms. Memory: weights 16,060,522,496 + KV written
    # 131,072 × 1,024 = 134,217,728 -> 16,194,740,224 / 3.35e12 = 4.834 ms. Compute-bound.
    bound = im.prefill_bound(
        gpu=H100, model=LLAMA_8B, precision="bf16", kv_precision="bf16", prompt_tokens=1024
    )
    assert bound.flops == 16_721_121_378_304
    assert bound.bytes_moved == 16_194_740_224
    assert bound.seconds == pytest.approx(16.900e-3, rel=1e-4)
    assert bound.memory_seconds == pytest.approx(4.834e-3, rel=1e-3)
    assert bound.bound_by == "compute"


def test_prefill_of_one_token_is_memory_bound_like_a_decode_step():
    bound = im.prefill_bound(
        gpu=H100, model=LLAMA_8B, precision="bf16", kv_precision="bf16", prompt_tokens=1
    )
    assert bound.bound_by == "memory"


def test_ridge_point_and_arithmetic_intensity():
    # H100 SXM bf16: 989.4e12 / 3.35e12 = 295.34 FLOP/byte. L4: 121e12 / 300e9 = 403.3.
    assert im.ridge_point(
        peak_flops=H100.peak_16bit_flops, bandwidth_bytes_per_s=H100.memory_bandwidth_bytes_per_s
    ) == pytest.approx(295.343, rel=1e-5)
    assert im.ridge_point(
        peak_flops=L4.peak_16bit_flops, bandwidth_bytes_per_s=L4.memory_bandwidth_bytes_per_s
    ) == pytest.approx(403.33, rel=1e-4)
    # Batch-1 decode: 18,208,006,144 FLOPs / 16,597,393,408 bytes = 1.097 FLOP/byte.
    bound = im.decode_bound(
        gpu=H100, model=LLAMA_8B, precision="bf16", kv_precision="bf16", batch=1, context=4096
    )
    assert bound.arithmetic_intensity == pytest.approx(1.0970, rel=1e-4)
    assert im.arithmetic_intensity(flops=10, bytes_moved=4) == 2.5
    assert (
        im.attainable_flops(intensity=1, peak_flops=989.4e12, bandwidth_bytes_per_s=3.35e12)
        == 3.35e12
    )
    assert (
        im.attainable_flops(intensity=1000, peak_flops=989.4e12, bandwidth_bytes_per_s=3.35e12)
        == 989.4e12
    )


def test_weights_only_compute_bound_batch():
    # Weight matmuls alone turn compute-bound when 2 × B / bytes per weight >= ridge point:
    # B >= 295.34 × 2 / 2 -> 296 for bf16; with int4, 295.34 × 0.515625 / 2 = 76.1 -> 77.
    assert im.weights_only_compute_bound_batch(gpu=H100, model=LLAMA_8B, precision="bf16") == 296
    assert im.weights_only_compute_bound_batch(gpu=H100, model=LLAMA_8B, precision="int4") == 77


def test_peak_compute_per_precision():
    a100 = get_gpu(slug="a100-80gb")
    assert im.peak_compute(gpu=H100, precision="bf16").flops == 989.4e12
    assert im.peak_compute(gpu=H100, precision="fp8").flops == 1978.9e12
    assert im.peak_compute(gpu=H100, precision="int8").flops == 1978.9e12
    # int4 GPTQ/AWQ kernels dequantise to 16-bit: the 16-bit peak applies.
    assert im.peak_compute(gpu=H100, precision="int4").flops == 989.4e12
    # Ampere has no FP8 tensor cores: fp8 weights fall back to the 16-bit peak, and say so.
    fallback = im.peak_compute(gpu=a100, precision="fp8")
    assert fallback.flops == 312e12
    assert "no FP8" in fallback.note
    assert im.peak_compute(gpu=a100, precision="int8").flops == 624e12
    assert im.peak_compute(gpu=get_gpu(slug="a10g"), precision="int8").flops == 70e12
    with pytest.raises(ValueError, match="precision must be one of"):
        im.peak_compute(gpu=H100, precision="fp32")


def test_cost_per_million_tokens():
    # $2.50 / (2,000 tokens/s × 0.5 × 3,600 s = 3,600,000 tokens) × 1,000,000 = $0.6944.
    assert im.cost_per_million_tokens(
        gpu_price_per_hour=2.50, tokens_per_s=2000, utilisation=0.5
    ) == pytest.approx(0.69444, rel=1e-4)
    # Fully busy at 500 tokens/s: 2.50 / 1,800,000 × 1e6 = $1.3889.
    assert im.cost_per_million_tokens(
        gpu_price_per_hour=2.50, tokens_per_s=500, utilisation=1
    ) == pytest.approx(1.38889, rel=1e-4)
    with pytest.raises(ValueError, match="utilisation"):
        im.cost_per_million_tokens(gpu_price_per_hour=2.50, tokens_per_s=500, utilisation=1.5)
    with pytest.raises(ValueError, match="tokens_per_s"):
        im.cost_per_million_tokens(gpu_price_per_hour=2.50, tokens_per_s=0, utilisation=0.5)


def test_speculative_decoding_expectation_and_speedup():
    # α = 0.8, k = 4: (1 − 0.8^5) / (1 − 0.8) = (1 − 0.32768) / 0.2 = 3.3616 tokens per target step.
    assert im.speculative_expected_tokens(acceptance=0.8, draft_tokens=4) == pytest.approx(3.3616)
    # With c = 0.05 the step costs 4 × 0.05 + 1 = 1.2: speedup 3.3616 / 1.2 = 2.8013.
    assert im.speculative_speedup(acceptance=0.8, draft_tokens=4, draft_cost=0.05) == pytest.approx(
        2.80133, rel=1e-5
    )
    # α = 0: only the target's own token, so drafting is pure cost: 1 / 1.2.
    assert im.speculative_speedup(acceptance=0, draft_tokens=4, draft_cost=0.05) == pytest.approx(
        1 / 1.2
    )
    # α = 1: every draft accepted plus the bonus token: k + 1.
    assert im.speculative_expected_tokens(acceptance=1, draft_tokens=4) == 5


def test_accepted_over_drafted_is_not_alpha():
    # α = 0.8, k = 4: accepted drafts per round 0.8 + 0.64 + 0.512 + 0.4096 = 2.3616, out of 4
    # drafted: 0.5904. The mean acceptance length is 1 + 2.3616 = 3.3616 tokens per round.
    assert im.speculative_draft_acceptance_rate(acceptance=0.8, draft_tokens=4) == pytest.approx(
        0.5904
    )
    accepted = 0.5904 * 4
    assert 1 + accepted == pytest.approx(im.speculative_expected_tokens(acceptance=0.8, draft_tokens=4))
    # k = 1: the one draft is accepted with probability α.
    assert im.speculative_draft_acceptance_rate(acceptance=0.7, draft_tokens=1) == pytest.approx(0.7)
    assert im.speculative_draft_acceptance_rate(acceptance=1, draft_tokens=4) == 1


def test_a_late_prefill_chunk_pays_attention_over_everything_before_it():
    # Llama 3.1 8B, last 2,048-token chunk of a 32,768-token prompt (30,720 tokens cached):
    # weights 2 × 8,030,261,248 × 2,048 = 32,891,950,071,808 FLOP (33.2 ms at 989.4 TFLOP/s);
    # attention 2 × 32 × 32 × 128 × 2,048 × (2 × 30,720 + 2,049) = 262,144 × 2,048 × 63,489
    # = 34,085,397,331,968 FLOP (34.5 ms). Total 66,977,347,403,776.
    flops = im.prefill_chunk_flops(model=LLAMA_8B, prior_tokens=30720, chunk_tokens=2048)
    assert flops == 66_977_347_403_776
    assert flops / H100.peak_16bit_flops == pytest.approx(0.06770, rel=1e-3)
    # The first chunk pays almost no attention; all 16 chunks sum to the unchunked prefill.
    chunks = sum(
        im.prefill_chunk_flops(model=LLAMA_8B, prior_tokens=i * 2048, chunk_tokens=2048)
        for i in range(16)
    )
    assert chunks == im.prefill_flops(model=LLAMA_8B, prompt_tokens=32768)


def test_checkpoint_bytes_keep_embeddings_and_head_in_16_bit():
    # Llama 3.1 70B: embeddings + head 2 × 128,256 × 8,192 = 2,101,346,304 params at 2 bytes
    # = 4.2027 GB; the other 68,452,360,192 params at 0.515625 bytes = 35.2957 GB. 39.498 GB.
    assert im.checkpoint_weight_bytes(model=LLAMA_70B, precision="int4") == pytest.approx(
        39.498e9, rel=1e-4
    )
    # Llama 3.1 8B FP8: 1,050,673,152 embedding params at 2 bytes + 6,979,588,096 at 1 byte.
    assert im.checkpoint_weight_bytes(model=LLAMA_8B, precision="fp8") == 9_080_934_400
    assert im.checkpoint_weight_bytes(model=LLAMA_8B, precision="bf16") == 16_060_522_496


def test_inputs_must_be_positive():
    with pytest.raises(ValueError, match="context must be positive"):
        im.kv_bytes_per_sequence(model=LLAMA_8B, kv_precision="bf16", context=0)
    with pytest.raises(ValueError, match="batch must be positive"):
        im.decode_bound(
            gpu=H100, model=LLAMA_8B, precision="bf16", kv_precision="bf16", batch=0, context=1
        )


def test_speed_of_light_report_checks_ranges_and_names_the_field():
    arguments = {
        "gpu_slug": "h100-sxm",
        "model_slug": "qwen2.5-7b",
        "precision": "bf16",
        "kv_precision": "bf16",
        "batch": 1,
        "prompt_tokens": 1024,
    }
    # Qwen2.5 7B's config allows 32,768 tokens.
    with pytest.raises(InputError, match="context: must be between 1 and 32,768") as error:
        speed_of_light(**arguments, context=65536)
    assert error.value.field == "context"
    with pytest.raises(InputError, match="prompt_tokens: must be between 1 and 512"):
        speed_of_light(**{**arguments, "prompt_tokens": 1024}, context=512)
    with pytest.raises(InputError, match="kv_precision: must be one of"):
        speed_of_light(**{**arguments, "kv_precision": "int4"}, context=512)


def test_reports_show_their_working():
    report = speed_of_light(
        gpu_slug="h100-sxm",
        model_slug="llama-3.1-8b",
        precision="bf16",
        kv_precision="bf16",
        batch=1,
        context=4096,
        prompt_tokens=1024,
    )
    text = "\n".join(report.steps)
    assert (
        "2 (K and V) × 32 layers × 8 KV heads × 128 head dim × 2 bytes (bf16) = 131,072 bytes "
        "(128 KiB)" in text
    )
    assert "4.95 ms" in text
    assert "202 tokens/s per sequence" in text
    assert "16.9 ms: compute-bound" in text
    kv = kv_cache_report(
        gpu_slug="l4",
        model_slug="llama-3.1-8b",
        precision="bf16",
        kv_precision="bf16",
        context=8192,
    )
    assert kv.max_concurrent_sequences == 5
    assert any("32 query heads share 8 KV heads" in step for step in kv.steps)
    cost = cost_report(gpu_price_per_hour=2.5, tokens_per_s=2000, utilisation=0.5)
    assert cost.cost_per_million_tokens == pytest.approx(0.69444, rel=1e-4)
    assert any("$0.694 per million tokens" in step for step in cost.steps)


def test_static_and_continuous_batching_schedules():
    # Lengths 6, 2, 9, 3 | 4, 7, 2, 5 in four slots. Static: the first batch lasts max = 9
    # iterations, the second 7 -> 16. Continuous: R5 joins at 2 (R2 done), R6 at 3 (R4 done),
    # R7 and R8 at 6 (R1 and R5 done) -> R8 ends at 11. Work = 38 slot-iterations:
    # 38 / (4 × 16) = 59 % busy static, 38 / (4 × 11) = 86 % continuous.
    lengths = [6, 2, 9, 3, 4, 7, 2, 5]
    static = static_batching(lengths=lengths, slots=4)
    continuous = continuous_batching(lengths=lengths, slots=4)
    assert makespan(placements=static) == 16
    assert makespan(placements=continuous) == 11
    assert slot_utilisation(placements=static, slots=4) == pytest.approx(38 / 64)
    assert slot_utilisation(placements=continuous, slots=4) == pytest.approx(38 / 44)
    starts = {p.request: p.start for p in continuous}
    assert starts == {0: 0, 1: 0, 2: 0, 3: 0, 4: 2, 5: 3, 6: 6, 7: 6}
    with pytest.raises(ValueError):
        static_batching(lengths=[], slots=4)
