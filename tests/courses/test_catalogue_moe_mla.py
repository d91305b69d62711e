# Multiplication and minus signs in learner-facing text and worked arithmetic are intended.
"""DeepSeek-V3 (MLA + MoE), Qwen3-30B-A3B, gpt-oss-120b (sliding windows), B200, and --gpus.

Every number below is worked by hand in the comment above its assertion, from the config.json
values in courses/inference/catalogue/models.toml:
  DeepSeek-V3: 61 layers (3 dense, 58 MoE), hidden 7168, 128 heads, q_lora_rank 1536,
    kv_lora_rank 512, qk_nope 128 + qk_rope 64 = head_dim 192, v_head_dim 128, dense MLP 18432,
    expert MLP 2048, 256 routed + 1 shared experts, 8 per token, vocab 129280, untied.
  Qwen3-30B-A3B: 48 layers, hidden 2048, 32 heads, 4 KV heads, head_dim 128, expert MLP 768,
    128 experts, 8 per token, vocab 151936, untied, Q/K norms.
  gpt-oss-120b: 36 layers (18 with a 128-token window), hidden 2880, 64 heads, 8 KV heads,
    head_dim 64, expert MLP 2880 with biases, 128 experts, 4 per token, vocab 201088, untied.
"""

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from courses.inference import math as im
from courses.inference.report import speed_of_light
from courses.inference.specs import (
    CatalogueError,
    architecture_param_count,
    attention_param_count,
    get_gpu,
    get_model,
    load_models,
)

MODELS_FILE = Path(__file__).resolve().parents[2] / "courses" / "inference" / "catalogue" / "models.toml"

DEEPSEEK = get_model(slug="deepseek-v3")
QWEN3 = get_model(slug="qwen3-30b-a3b")
GPT_OSS = get_model(slug="gpt-oss-120b")


def test_deepseek_v3_parameter_count_by_hand():
    # MLA per layer: q_a 7168 × 1536 = 11,010,048; q_a norm 1,536; q_b 1536 × 128 × 192
    # = 37,748,736; kv_a 7168 × (512 + 64) = 4,128,768; kv_a norm 512; kv_b 512 × 128 × (128 + 128)
    # = 16,777,216; o 128 × 128 × 7168 = 117,440,512. Sum 187,107,328.
    assert attention_param_count(model=DEEPSEEK) == 187_107_328
    # Dense layer: 187,107,328 + 3 × 7168 × 18432 (396,361,728) + norms 14,336 = 583,483,392.
    # MoE layer: 187,107,328 + 256 × 3 × 7168 × 2048 (11,274,289,152) + shared 44,040,192
    #   + router 7168 × 256 (1,835,008) + bias 256 + norms 14,336 = 11,507,286,272.
    # Total: 3 × 583,483,392 + 58 × 11,507,286,272 + embeddings 2 × 129280 × 7168 + 7168
    #   = 1,750,450,176 + 667,422,603,776 + 1,853,358,080 + 7,168 = 671,026,419,200.
    assert architecture_param_count(model=DEEPSEEK) == 671_026_419_200 == DEEPSEEK.params_total
    # Active: each MoE layer uses 8 routed experts (352,321,536) instead of 256:
    # 3 × 583,483,392 + 58 × 585,318,656 + 1,853,358,080 + 7,168 = 37,552,297,472.
    assert DEEPSEEK.params_active == 37_552_297_472


def test_deepseek_v3_mla_cache_is_576_values_per_layer():
    # 61 layers × (512 + 64) × 2 bytes = 70,272 bytes per token in BF16.
    assert im.model_kv_bytes_per_token(model=DEEPSEEK, kv_precision="bf16") == 70_272
    # The same 128 heads with full multi-head attention would cache keys 192 and values 128 wide:
    # 61 × 128 × (192 + 128) × 2 = 4,997,120 bytes per token, 71× more. The kv report says so.
    from courses.inference.report import kv_cache_report

    report = kv_cache_report(
        gpu_slug="h200", model_slug="deepseek-v3", precision="fp8", kv_precision="bf16",
        context=4096,
    )
    assert "576 cached values per layer instead of 128 heads × (192 key + 128 value) = 40,960" in (
        report.steps[1]
    )
    assert "71.1× smaller" in report.steps[1]
    # 128k tokens: 70,272 × 131,072 = 9,210,691,584 bytes (9.2 GB) in BF16.
    assert im.kv_bytes_per_sequence(
        model=DEEPSEEK, kv_precision="bf16", context=131072
    ) == 9_210_691_584


def test_deepseek_v3_decode_reads_active_experts_at_batch_1_and_the_union_at_batch_64():
    # Shared parameters: 671,026,419,200 − 58 × 256 × 44,040,192 (653,908,770,816)
    # = 17,117,648,384.
    assert DEEPSEEK.params_shared == 17_117_648_384
    # Batch 1: 17,117,648,384 + 58 × 8 × 44,040,192 = 37,552,297,472 params (the active count).
    assert im.params_read(model=DEEPSEEK, tokens=1) == pytest.approx(37_552_297_472)
    # Batch 64: 256 × (1 − (1 − 8/256)^64) = 256 × (1 − 0.131093) = 222.44 experts per layer.
    touched = im.expected_experts_touched(experts=256, experts_per_token=8, tokens=64)
    assert touched == pytest.approx(222.44, abs=0.01)
    # Read: 17,117,648,384 + 58 × 222.44 × 44,040,192 = 585.3 billion params, 87 % of all.
    assert im.params_read(model=DEEPSEEK, tokens=64) == pytest.approx(585.29e9, rel=1e-3)
    # FP8 on 8 × H200 (38.4 TB/s), batch 1, 1 token of context: 37.55 GB / 38.4 TB/s = 0.978 ms.
    bound = speed_of_light(
        gpu_slug="h200",
        model_slug="deepseek-v3",
        precision="fp8",
        kv_precision="bf16",
        batch=1,
        context=1,
        prompt_tokens=1,
        gpus=8,
    )
    assert bound.decode.weight_bytes_read == pytest.approx(37.552e9, rel=1e-4)
    assert bound.decode.memory_seconds == pytest.approx(37.552e9 / 38.4e12, rel=1e-3)
    assert bound.weight_bytes == 671_026_419_200


def test_mla_decode_attention_does_latent_space_arithmetic():
    # Absorbed (decode): 2 × 128 × (512 + 64 + 512) = 278,528 FLOPs per layer per cached token;
    # expanded (prefill): 2 × 128 × (192 + 128) = 81,920.
    assert im.attention_pair_flops(model=DEEPSEEK, absorbed=True) == 278_528
    assert im.attention_pair_flops(model=DEEPSEEK, absorbed=False) == 81_920
    # Per cached byte in BF16: 278,528 / (576 × 2) = 241.8 FLOP/byte, against Llama 3.1 8B's
    # 4 × 32 × 128 / (2 × 8 × 128 × 2) = 4 FLOP/byte (group of 4 query heads per KV head).
    per_layer_bytes = im.model_kv_bytes_per_token(model=DEEPSEEK, kv_precision="bf16") / 61
    assert per_layer_bytes == 576 * 2
    mla = im.attention_pair_flops(model=DEEPSEEK, absorbed=True) / per_layer_bytes
    assert mla == pytest.approx(241.8, rel=1e-3)
    llama = get_model(slug="llama-3.1-8b")
    gqa = im.attention_pair_flops(model=llama, absorbed=True) / (
        im.model_kv_bytes_per_token(model=llama, kv_precision="bf16") / llama.layers
    )
    assert gqa == 4


def test_qwen3_30b_a3b_by_hand():
    # Attention: 2 × 2048 × 4096 + 2 × 2048 × 512 + Q/K norms 2 × 128 = 18,874,624.
    assert attention_param_count(model=QWEN3) == 18_874_624
    # Layer: 18,874,624 + 128 × 3 × 2048 × 768 (603,979,776) + router 262,144 + norms 4,096
    # = 623,120,640; × 48 = 29,909,790,720; + 2 × 151936 × 2048 (622,329,856) + 2,048.
    assert QWEN3.params_total == 30_532_122_624
    # KV: 2 × 48 × 4 × 128 × 2 = 98,304 bytes per token.
    assert im.model_kv_bytes_per_token(model=QWEN3, kv_precision="bf16") == 98_304
    # Batch 1 reads 3,353,032,704 params: 6.7 GB in BF16, 2.1 ms at 3.35 TB/s on an H100.
    step = im.decode_bound(
        gpu=get_gpu(slug="h100-sxm"),
        model=QWEN3,
        precision="bf16",
        kv_precision="bf16",
        batch=1,
        context=1,
    )
    assert step.weight_bytes_read == 2 * 3_353_032_704
    assert step.memory_seconds == pytest.approx((6_706_065_408 + 98_304) / 3.35e12)


def test_gpt_oss_120b_sliding_layers_cap_their_cache():
    # Attention with biases on Q, K, V and O and 64 sink logits: 2 × 2880 × 4096 + 2 × 2880 × 512
    # + 4096 + 2 × 512 + 2880 + 64 = 26,550,144.
    assert attention_param_count(model=GPT_OSS) == 26_550_144
    assert GPT_OSS.params_total == 116_829_156_672
    # Expert with biases: 3 × 2880 × 2880 + 2 × 2880 + 2880 = 24,891,840.
    assert GPT_OSS.params_per_expert == 24_891_840
    # Short context: all 36 layers grow, 2 × 36 × 8 × 64 × 2 = 73,728 bytes per token.
    assert im.model_kv_bytes_per_token(model=GPT_OSS, kv_precision="bf16") == 73_728
    # Past 128 tokens only the 18 full layers grow: 36,864 bytes per token.
    assert im.long_context_kv_bytes_per_token(model=GPT_OSS, kv_precision="bf16") == 36_864
    # 131,072 tokens: 36,864 × 131,072 + 36,864 × 128 = 4,836,556,800 bytes, not 9.66 GB.
    assert im.kv_bytes_per_sequence(
        model=GPT_OSS, kv_precision="bf16", context=131072
    ) == 4_836_556_800
    # 100 tokens (inside the window): 73,728 × 100.
    assert im.kv_bytes_per_sequence(model=GPT_OSS, kv_precision="bf16", context=100) == 7_372_800


def test_sliding_window_caps_prefill_attention():
    # Pairs for a 1,024-token prompt: 18 full layers × 1024 × 1025 / 2 = 9,446,400, plus
    # 18 window layers × (128 × 129 / 2 + (1024 − 128) × 128) = 18 × 122,944 = 2,212,992.
    assert im.attended_pairs(model=GPT_OSS, first=1, last=1024) == 9_446_400 + 2_212_992
    # Decode at 4,096 tokens: 18 × 4,096 + 18 × 128 = 76,032 pairs × 4 × 64 × 64 FLOPs.
    assert im.attention_flops_per_token(model=GPT_OSS, context=4096) == 76_032 * 16_384


def test_mxfp4_and_nvfp4_bytes_and_peaks():
    # MXFP4: 4 bits + one 8-bit scale per 32 = 4.25 bits; NVFP4: 4 + 8/16 = 4.5 bits.
    assert im.bytes_per_element(precision="mxfp4") == 0.53125
    assert im.bytes_per_element(precision="nvfp4") == 0.5625
    b200, h100 = get_gpu(slug="b200"), get_gpu(slug="h100-sxm")
    assert im.peak_compute(gpu=b200, precision="nvfp4").flops == 9.0e15
    # Hopper has no FP4 tensor cores: weight-only, at the 16-bit peak.
    assert im.peak_compute(gpu=h100, precision="mxfp4").flops == h100.peak_16bit_flops


def test_b200_and_mi300x_datasheet_values():
    b200 = get_gpu(slug="b200")
    # DGX B200: 1,440 GB and 64 TB/s over 8 GPUs; FP8 72 PF sparse / 8 / 2 = 4.5 PF dense.
    assert (b200.memory_bytes, b200.memory_bandwidth_bytes_per_s) == (180e9, 8.0e12)
    assert (b200.peak_16bit_flops, b200.peak_fp8_flops, b200.peak_fp4_flops) == (
        2.25e15,
        4.5e15,
        9.0e15,
    )
    mi300x = get_gpu(slug="mi300x")
    assert (mi300x.memory_bytes, mi300x.memory_bandwidth_bytes_per_s) == (192e9, 5.3e12)


def _json(*args: str) -> dict:
    out = StringIO()
    call_command("speedoflight", *args, "--json", stdout=out)
    return json.loads(out.getvalue())


def test_speedoflight_gpus_adds_memory_and_bandwidth():
    # Llama 3.1 70B BF16 on 4 × H100: 320 GB, 13.4 TB/s. Batch 1, 4,096 tokens: weights
    # 141,107,412,992 bytes + KV 327,680 × 4,096 = 1,342,177,280; 142.45 GB / 13.4 TB/s = 10.63 ms.
    data = _json(
        "--gpu", "h100-sxm", "--model", "llama-3.1-70b", "--precision", "bf16", "--gpus", "4"
    )
    assert data["gpus"] == 4
    assert data["gpu_memory_bytes"] == 320_000_000_000
    assert data["memory_bandwidth_total_bytes_per_s"] == 13.4e12
    assert data["fits"] is True
    assert data["decode_step_seconds_bound"] == pytest.approx(
        (141_107_412_992 + 1_342_177_280) / 13.4e12, rel=1e-6
    )
    assert "all-reduce" in data["leaves_out"]
    one = _json("--gpu", "h100-sxm", "--model", "llama-3.1-70b", "--precision", "bf16")
    assert one["fits"] is False and "leaves_out" not in one


def test_speedoflight_json_handles_the_new_models():
    data = _json("--gpu", "b200", "--model", "deepseek-v3", "--precision", "nvfp4", "--gpus", "8")
    # 671,026,419,200 × 0.5625 = 377,452,360,800 bytes; 1,440 GB of memory.
    assert data["weight_bytes"] == 377_452_360_800
    assert data["kv_bytes_per_token"] == 70_272
    assert data["fits"] is True
    data = _json("--gpu", "h100-sxm", "--model", "gpt-oss-120b", "--precision", "mxfp4")
    # 116,829,156,672 × 0.53125 = 62,065,489,482 bytes (every tensor in MXFP4 here).
    assert data["weight_bytes"] == 62_065_489_482
    # 4,096 tokens: 36,864 × 4,096 + 36,864 × 128 = 155,713,536 bytes.
    assert data["kv_bytes_per_sequence"] == 155_713_536


def test_gpus_out_of_range_is_a_usage_error():
    with pytest.raises(CommandError, match="gpus: must be between 1 and 64, got 0"):
        call_command(
            "speedoflight", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--precision", "bf16",
            "--gpus", "0",
        )


def _row(**overrides: str) -> str:
    text = MODELS_FILE.read_text(encoding="utf-8")
    start = text.index('["deepseek-v3"]')
    end = text.index("# Qwen3-30B-A3B")
    row = text[start:end]
    for key, value in overrides.items():
        lines = [line for line in row.splitlines() if not line.startswith(f"{key} =")]
        row = "\n".join(lines) + f"\n{key} = {value}\n"
    return row


def test_deepseek_row_loads_and_a_wrong_latent_rank_is_caught(tmp_path):
    path = tmp_path / "models.toml"
    path.write_text(_row(), encoding="utf-8")
    assert load_models(path=path)["deepseek-v3"].kv_lora_rank == 512
    path.write_text(_row(kv_lora_rank="1024"), encoding="utf-8")
    with pytest.raises(CatalogueError, match=r"\[deepseek-v3\] params_total: .* disagrees"):
        load_models(path=path)
    path.write_text(_row(sliding_window="128"), encoding="utf-8")
    with pytest.raises(CatalogueError, match="give both sliding_window and sliding_window_layers"):
        load_models(path=path)
