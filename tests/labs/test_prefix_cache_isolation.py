"""No learner's prefill is served from another run's cache (issue: every run measures what it claims).

A real Celery worker runs the labs against the scripted engine with its prefix cache on (block
hashes as vLLM keeps them, or llama.cpp's per-request ``cache_prompt``), so a run that reused
another run's prompts would show hits and a TTFT that collapses. Each run draws a fresh workload
seed; its prompts open with a nonce from it.
"""

import pytest

from labs.models import LabRun
from labs.selectors import findings_for
from labs.services import submit_run
from labs.targets import upsert_target
from tests.labs.test_runs import finished, load_lab

pytestmark = pytest.mark.django_db(transaction=True)

# 5 ms + 0.2 ms per uncached prompt token: 1,024 tokens take ~210 ms to prefill, ~5 ms if cached.
ENGINE = ("--prefix-cache", "--ttft-ms", "5", "--ttft-per-prompt-token-ms", "0.2", "--gap-ms", "1")
PROMPT_LENGTH_PARAMS = {"prompt_tokens": [64, 1024], "max_tokens": 4, "repeats": 3}
PREFIX_PARAMS = {
    "shared_prefix": [0, 1],
    "prompt_tokens": 1024,
    "shared_prefix_tokens": 992,
    "max_tokens": 4,
    "repeats": 4,
}


def _step(run: LabRun, key: str) -> dict:
    return next(step["summary"] for step in run.summary["steps"] if step["key"] == key)


def _finding(run: LabRun, finding_id: str):
    return next(f for f in findings_for(run=run) if f.id == finding_id)


def _run(*, user, lab, target, params) -> LabRun:
    run = finished(submit_run(user=user, lab=lab, target=target, params=params, prediction="p"), timeout_s=120)
    assert run.status == LabRun.Status.SUCCEEDED, run.error
    return run


@pytest.mark.parametrize("kind", ["vllm", "llamacpp"])
def test_two_learners_get_the_same_prefill_and_no_cache_hits(kind, scripted_engine, celery_worker, make_user, client):
    url = scripted_engine("--flavor", kind, *ENGINE)
    target = upsert_target(name=f"Shared {kind}", kind=kind, base_url=url, models=["scripted"])
    lab = load_lab("prompt-length-ttft")
    celery_worker(target.queue_name)
    first = _run(user=make_user("ada"), lab=lab, target=target, params=PROMPT_LENGTH_PARAMS)
    second_learner = make_user("grace")
    second = _run(user=second_learner, lab=lab, target=target, params=PROMPT_LENGTH_PARAMS)

    longest_first = _step(first, "prompt_tokens=1024")["ttft_s"]["p50"]
    longest_second = _step(second, "prompt_tokens=1024")["ttft_s"]["p50"]
    assert longest_first > 0.15  # a full prefill of 1,024 tokens
    assert longest_second >= 0.7 * longest_first
    for run in (first, second):
        cache = run.summary["overall"]["prefix_cache"]
        assert cache["prompt_tokens"] > 0 and cache["cached_tokens"] == 0, cache
        finding = _finding(run, "prefix-cache-hits")
        assert finding.ok and finding.title == "Every TTFT here is a full prefill: no prompt came from a cache"

    assert first.workload_seed != second.workload_seed
    client.force_login(second_learner, backend="django.contrib.auth.backends.ModelBackend")
    page = client.get(second.get_absolute_url()).content.decode()
    assert "Prefix cache: <strong>0%</strong> of this run" in page
    assert f"workload seed {second.workload_seed}" in page


@pytest.mark.parametrize("kind", ["vllm", "llamacpp"])
def test_the_prefix_caching_lab_still_shows_its_hits_and_speed_up(kind, scripted_engine, celery_worker, user):
    url = scripted_engine("--flavor", kind, *ENGINE)
    target = upsert_target(name=f"Cache {kind}", kind=kind, base_url=url, models=["scripted"])
    lab = load_lab("prefix-caching")
    celery_worker(target.queue_name)
    run = _run(user=user, lab=lab, target=target, params=PREFIX_PARAMS)

    unique, shared = _step(run, "shared_prefix=0"), _step(run, "shared_prefix=1")
    assert unique["prefix_cache"]["cached_tokens"] == 0
    # The first request with the prefix computes it; the other three reuse 992 of 1,024 tokens.
    assert shared["prefix_cache"]["hit_rate"] > 0.6
    assert shared["ttft_s"]["p50"] < 0.5 * unique["ttft_s"]["p50"]
    assert _finding(run, "prefix-cache-speedup").ok
    hits = _finding(run, "prefix-cache-hit-rate")
    assert hits.ok and "of prompt tokens came from the prefix cache" in hits.title


def test_hits_beyond_the_template_are_flagged_as_a_threat_on_a_lab_not_about_caching():
    from labs.checks import evaluate

    def step(key: str, cached: int) -> dict:
        return {
            "key": key,
            "params": {"prompt_tokens": int(key.split("=")[1])},
            "summary": {
                "requests": {"total": 3, "succeeded": 3, "failed": 0, "cancelled": 0, "warmup": 0},
                "ttft_s": {"p50": 0.02, "p95": 0.03, "p99": 0.03, "n": 3},
                "prefix_cache": {
                    "source": "engine /metrics counters",
                    "cached_tokens": cached,
                    "prompt_tokens": 3072,
                    "hit_rate": cached / 3072,
                    "template_tokens": 0,
                    "beyond_template_tokens": cached,
                    "beyond_template_rate": cached / 3072,
                },
            },
        }

    steps = [step("prompt_tokens=1024", 3000)]
    summary = {"overall": steps[0]["summary"], "sweep_param": "prompt_tokens", "steps": steps}
    threat = next(f for f in evaluate(lab_slug="prompt-length-ttft", summary=summary) if f.id == "prefix-cache-hits")
    assert not threat.ok
    assert threat.title == "98% of prompt tokens came from the engine's prefix cache, so TTFT is not all prefill"
    assert "3,000 of 3,072 prompt tokens" in threat.detail
    # On the lab about caching the same figures are the effect, not a threat.
    expected = evaluate(lab_slug="prefix-caching", summary=summary, measures_prefix_cache=True)
    assert not any(f.id == "prefix-cache-hits" for f in expected)
    assert next(f for f in expected if f.id == "prefix-cache-hit-rate").ok
