# Multiplication and minus signs in learner-facing text and worked arithmetic are intended.
"""`manage.py speedoflight`: JSON and table output over the same math, and one-line errors."""

import json
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

ROOT = Path(__file__).resolve().parents[2]


def run_json(*args: str) -> dict:
    out = StringIO()
    call_command("speedoflight", *args, "--json", stdout=out)
    return json.loads(out.getvalue())


def test_json_for_llama_8b_on_h100():
    # Hand-checked in test_inference_math: 16,060,522,496 weight bytes, 131,072 KV bytes per token,
    # 4,096 tokens -> 536,870,912 per sequence, 201.84 tokens/s at batch 1, prefill of 1,024
    # tokens >= 16.90 ms.
    data = run_json("--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--precision", "bf16")
    assert data["weight_bytes"] == 16_060_522_496
    assert data["kv_bytes_per_token"] == 131_072
    assert data["kv_bytes_total"] == 536_870_912
    # weights + KV + 10 % of 80 GB reserve = 16,060,522,496 + 536,870,912 + 8,000,000,000.
    assert data["memory_needed_bytes"] == 24_597_393_408
    assert data["fits"] is True
    assert data["decode_tokens_per_s_bound"]["per_sequence"] == pytest.approx(201.84, rel=1e-4)
    assert data["decode_tokens_per_s_bound"]["aggregate"] == pytest.approx(201.84, rel=1e-4)
    assert data["prefill_seconds_bound"] == pytest.approx(16.900e-3, rel=1e-4)
    assert (data["batch"], data["context"], data["prompt_tokens"]) == (1, 4096, 1024)
    assert data["kv_precision"] == "bf16"


def test_batch_context_and_kv_precision_flags():
    # 32 sequences × 8,192 tokens × 65,536 bytes (fp8 KV) = 17,179,869,184 bytes = 16 GiB.
    data = run_json(
        "--gpu",
        "a100-80gb",
        "--model",
        "llama-3.1-8b",
        "--precision",
        "fp8",
        "--kv-precision",
        "fp8",
        "--batch",
        "32",
        "--context",
        "8192",
        "--prompt-tokens",
        "2048",
    )
    assert data["kv_bytes_per_token"] == 65_536
    assert data["kv_bytes_total"] == 17_179_869_184
    assert data["weight_bytes"] == 8_030_261_248
    assert data["decode_tokens_per_s_bound"]["aggregate"] == pytest.approx(
        32 * data["decode_tokens_per_s_bound"]["per_sequence"]
    )
    assert data["prompt_tokens"] == 2048


def test_kv_precision_defaults_to_16_bit_for_quantised_weights():
    assert (
        run_json("--gpu", "l4", "--model", "llama-3.2-1b", "--precision", "int4")["kv_precision"]
        == "bf16"
    )
    assert (
        run_json("--gpu", "l4", "--model", "llama-3.2-1b", "--precision", "fp16")["kv_precision"]
        == "fp16"
    )


def test_a_model_that_does_not_fit():
    # 70B bf16: 141,107,412,992 bytes of weights against a 24 GB L4.
    data = run_json("--gpu", "l4", "--model", "llama-3.1-70b", "--precision", "bf16")
    assert data["fits"] is False
    assert data["max_concurrent_sequences"] == 0


def test_short_context_shortens_the_default_prompt():
    assert (
        run_json(
            "--gpu", "l4", "--model", "llama-3.2-1b", "--precision", "bf16", "--context", "256"
        )["prompt_tokens"]
        == 256
    )


def test_human_table():
    out = StringIO()
    call_command(
        "speedoflight",
        "--gpu",
        "h100-sxm",
        "--model",
        "llama-3.1-8b",
        "--precision",
        "bf16",
        stdout=out,
    )
    text = out.getvalue()
    assert text.startswith(
        "Llama 3.1 8B on NVIDIA H100 SXM: weights bf16, KV bf16, batch 1, context 4,096"
    )
    for key, value in (
        ("weight_bytes", "16.06 GB (14.96 GiB)"),
        ("kv_bytes_per_token", "131,072 bytes (128 KiB)"),
        ("kv_bytes_total", "536.9 MB (512 MiB)"),
        ("memory_needed_bytes", "24.6 GB"),
        ("fits", "yes"),
        ("decode_tokens_per_s_bound.per_sequence", "202 tokens/s"),
        ("decode_tokens_per_s_bound.aggregate", "202 tokens/s"),
        ("prefill_seconds_bound", "16.9 ms (compute-bound)"),
    ):
        line = next(line for line in text.splitlines() if line.strip().startswith(key + " "))
        assert value in line
    assert "{" not in text


def test_explain_prints_the_steps():
    out = StringIO()
    call_command(
        "speedoflight",
        "--gpu",
        "h100-sxm",
        "--model",
        "llama-3.1-8b",
        "--precision",
        "bf16",
        "--explain",
        stdout=out,
    )
    assert (
        " 2. KV cache per token: 2 (K and V) × 32 layers × 8 KV heads × 128 head dim × 2 bytes"
        in out.getvalue()
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--gpu", "h100", "--model", "llama-3.1-8b", "--precision", "bf16"],
            "unknown gpu 'h100'; valid gpus: l4, a10g, rtx-4090, l40s, a100-40gb, a100-80gb, "
            "h100-sxm, h100-pcie, h200, mi300x",
        ),
        (
            ["--gpu", "l4", "--model", "llama3", "--precision", "bf16"],
            "unknown model 'llama3'; valid models: llama-3.2-1b",
        ),
        (
            ["--gpu", "l4", "--model", "llama-3.1-8b", "--precision", "fp4"],
            "precision: must be one of fp16, bf16, fp8, int8, int4",
        ),
        (
            ["--gpu", "l4", "--model", "llama-3.1-8b", "--precision", "bf16", "--batch", "0"],
            "batch: must be between 1",
        ),
        (
            ["--gpu", "l4", "--model", "mistral-7b", "--precision", "bf16", "--context", "65536"],
            "context: must be between 1 and 32,768",
        ),
        (
            [
                "--gpu",
                "l4",
                "--model",
                "llama-3.1-8b",
                "--precision",
                "bf16",
                "--context",
                "100",
                "--prompt-tokens",
                "200",
            ],
            "prompt_tokens: must be between 1 and 100",
        ),
    ],
)
def test_bad_input_is_a_usage_error(args, message):
    with pytest.raises(CommandError) as error:
        call_command("speedoflight", *args, stdout=StringIO())
    assert message in str(error.value)
    assert error.value.returncode == 2


def test_unknown_slug_from_the_shell_exits_2_with_one_line():
    completed = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "speedoflight",
            "--gpu",
            "gb300",
            "--model",
            "llama-3.1-8b",
            "--precision",
            "bf16",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 2
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "unknown gpu 'gb300'; valid gpus: l4," in lines[0]
    assert completed.stdout == ""
