"""Labs 1, 2, 4 and 6 end to end on the real local engine: llama-server (built or reused),
the smallest generated model, both local targets, `manage.py runlab` through real Redis and real
Celery worker processes. The lessons of those labs must show in the numbers."""

import json

import pytest
from django.core.management import call_command

from labs.content_sync import sync_labs
from labs.targets import upsert_target

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

MODEL = "prefill-60m-f16"


@pytest.fixture
def local_targets(local_engines, settings, celery_worker):
    sync_labs(content_dir=settings.BASE_DIR / "labs" / "content")
    common = {"kind": "llamacpp", "models": [MODEL], "synthetic_text": True, "hardware_group": "local-cpu"}
    serial = upsert_target(name="Local serial", base_url=local_engines.serial.url, **common)
    batched = upsert_target(name="Local batched", base_url=local_engines.batched.url, **common)
    celery_worker(serial.queue_name, batched.queue_name)
    return {"serial": serial, "batched": batched}


def runlab(capsys, lab: str, target, user, *params: str, timeout_s: int = 300) -> dict:
    """`manage.py runlab` as a learner would run it; the steps' summaries by key."""
    args = [lab, "--target", target.name, "--user", user.username, "--wait", "--json", "--timeout", str(timeout_s)]
    for param in params:
        args += ["--param", param]
    call_command("runlab", *args)
    result = json.loads(capsys.readouterr().out)
    assert result["status"] == "succeeded", result["error"]
    return {step["key"]: step["summary"] for step in result["steps"]}


@pytest.mark.engine_figures
def test_labs_show_their_lessons_on_the_local_engine(local_targets, user, capsys):
    serial, batched = local_targets["serial"], local_targets["batched"]

    # Lab 1: TTFT stays put while total time grows with output; output length is what was asked.
    steps = runlab(capsys, "ttft-vs-output-length", serial, user, "max_tokens=16,96", "prompt_tokens=64", "repeats=2")
    short, long = steps["max_tokens=16"], steps["max_tokens=96"]
    assert short["output_tokens"]["min"] == 16 and long["output_tokens"]["max"] == 96
    assert long["e2e_s"]["p50"] > 2.5 * short["e2e_s"]["p50"]
    assert long["ttft_s"]["p50"] < 2.0 * short["ttft_s"]["p50"]

    # Lab 2: TTFT rises with prompt length while time per output token stays within a band.
    steps = runlab(capsys, "prompt-length-ttft", serial, user, "prompt_tokens=16,768", "max_tokens=24", "repeats=2")
    small, big = steps["prompt_tokens=16"], steps["prompt_tokens=768"]
    assert big["ttft_s"]["p50"] > 3 * small["ttft_s"]["p50"]
    assert big["tpot_s"]["p50"] < 3 * small["tpot_s"]["p50"]
    # The same lab again (a second learner on the shared engine): its own nonce and
    # cache_prompt off, so llama.cpp computes every prefill again and TTFT stays put.
    again = runlab(capsys, "prompt-length-ttft", serial, user, "prompt_tokens=16,768", "max_tokens=24", "repeats=2")
    assert again["prompt_tokens=768"]["ttft_s"]["p50"] >= 0.7 * big["ttft_s"]["p50"]
    for summary in (big, again["prompt_tokens=768"]):
        assert summary["prefix_cache"]["source"] == "engine timings per request"
        assert summary["prefix_cache"]["cached_tokens"] == 0

    # Lab 4: at four concurrent streams the batched engine's aggregate throughput beats serial.
    # Not by 4x: the 60M F16 model's matmuls on two CPU cores are close to compute-bound, so four
    # streams per step gain about a quarter (1.25-1.29x in four runs here, 1.19x once on CI's
    # machine); 1.1x keeps the lesson's direction without failing on a slower, noisier machine.
    serial_steps = runlab(
        capsys, "batching-almost-free", serial, user, "concurrency=4", "max_tokens=48", "prompt_tokens=32"
    )
    batched_steps = runlab(
        capsys, "batching-almost-free", batched, user, "concurrency=4", "max_tokens=48", "prompt_tokens=32"
    )
    assert (
        batched_steps["concurrency=4"]["output_tokens_per_s"]
        > 1.1 * serial_steps["concurrency=4"]["output_tokens_per_s"]
    )

    # Lab 6: a shared long prefix is served from the cache and cuts TTFT.
    steps = runlab(
        capsys,
        "prefix-caching",
        batched,
        user,
        "shared_prefix=0,1",
        "prompt_tokens=1024",
        "shared_prefix_tokens=960",
        "max_tokens=8",
        "repeats=3",
    )
    assert steps["shared_prefix=1"]["ttft_s"]["p50"] < 0.6 * steps["shared_prefix=0"]["ttft_s"]["p50"]
    assert steps["shared_prefix=1"]["prefix_cache"]["cached_tokens"] > 0
    assert steps["shared_prefix=0"]["prefix_cache"]["cached_tokens"] == 0


def test_the_other_labs_run_to_a_result_with_findings_on_the_local_engine(local_targets, user, capsys):
    serial, batched = local_targets["serial"], local_targets["batched"]
    # Lab 3: one step at concurrency 1, against this machine's bound (no model bytes here: the
    # finding says so instead of inventing a bound).
    steps = runlab(capsys, "decode-speed-of-light", serial, user, "max_tokens=32", "prompt_tokens=16", "repeats=2")
    assert steps["run"]["tpot_s"]["p50"] > 0
    # Lab 5: mixed load on the batched engine; every concurrency step measured.
    steps = runlab(capsys, "continuous-batching", batched, user, "concurrency=1,4", "max_tokens=24", "prompt_tokens=32")
    assert set(steps) == {"concurrency=1", "concurrency=4"}
    assert steps["concurrency=4"]["peak_concurrency"] >= 2
    # Lab 7: open-loop Poisson arrivals at two rates with SLOs: goodput is reported per rate.
    steps = runlab(
        capsys,
        "open-loop-slo",
        batched,
        user,
        "rate_rpm=120,600",
        "repeats=10",
        "max_tokens=16",
        "prompt_tokens=32",
        "slo_ttft_ms=2000",
        "slo_tpot_ms=200",
    )
    assert all(step["goodput"] is not None for step in steps.values())
    # Lab 8: swept over the models the target serves.
    steps = runlab(capsys, "quantization", serial, user, "max_tokens=16", "prompt_tokens=32", "repeats=1")
    assert set(steps) == {f"model={MODEL}"}
