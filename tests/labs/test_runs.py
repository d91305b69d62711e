"""Lab runs end to end: the submit service, a real Celery worker process on the target's queue,
the scripted engine with known timings, and the run's stored requests and summary."""

import json
from pathlib import Path

import pytest
import redis as redis_lib
from django.core.exceptions import ValidationError
from django.core.management import call_command

from labs.content_sync import parse_lab_file
from labs.models import Lab, LabRun, RunRequest
from labs.selectors import charts_cache_key
from labs.services import cancel_run, queue_position, reap_stale_runs, submit_run
from labs.targets import upsert_target
from tests.conftest import ROOT
from tests.service_fixtures import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def load_lab(slug: str) -> Lab:
    spec = parse_lab_file(Path(ROOT / "labs" / "content" / f"{slug}.toml"))
    digest = spec.pop("_hash")
    return Lab.objects.create(
        slug=slug, title=spec["title"], objective=spec["objective"], spec=spec, source_path="x", content_hash=digest
    )


def finished(run: LabRun, *, timeout_s: float = 60.0) -> LabRun:
    """Wait until the run leaves queued/running and return it, whatever its final status."""
    return wait_for(
        lambda: LabRun.objects.filter(pk=run.pk).exclude(status__in=LabRun.ACTIVE).first(),
        timeout_s=timeout_s,
        message=f"run {run.pk} to finish",
    )


def make_target(url: str, **limits):
    return upsert_target(name="Scripted GPU", kind="vllm", base_url=url, models=["scripted"], limits=limits or None)


TTFT_PARAMS = {"max_tokens": [8, 32], "prompt_tokens": 32, "repeats": 3}


def test_a_run_measures_each_step_and_stores_every_request(scripted_engine, celery_worker, user, broker):
    url = scripted_engine("--ttft-ms", "40", "--gap-ms", "5")
    target = make_target(url)
    lab = load_lab("ttft-vs-output-length")
    celery_worker(target.queue_name)
    run = submit_run(user=user, lab=lab, target=target, params=TTFT_PARAMS, prediction="TTFT flat, total x4")
    run = finished(run)
    assert run.status == LabRun.Status.SUCCEEDED, run.error

    assert RunRequest.objects.filter(run=run).count() == 1 + 3 + 3  # one warm-up, three per step
    steps = {step["key"]: step["summary"] for step in run.summary["steps"]}
    assert set(steps) == {"max_tokens=8", "max_tokens=32"}
    for summary in steps.values():
        assert summary["requests"]["succeeded"] == 3
        assert summary["ttft_s"]["p50"] == pytest.approx(0.040, abs=0.015)
        assert summary["tpot_s"]["p50"] == pytest.approx(0.005, abs=0.002)
    assert steps["max_tokens=32"]["output_tokens"]["p50"] == 32
    # 40 ms + 31 gaps of 5 ms against 40 ms + 7 gaps: about 2.6x by construction.
    assert steps["max_tokens=32"]["e2e_s"]["p50"] > 2.0 * steps["max_tokens=8"]["e2e_s"]["p50"]
    assert run.progress["done"] == 6
    assert run.result_meta["schema_version"] >= 1
    assert "base_url" not in json.dumps(run.result_meta)
    # The charts were drawn before the run was marked finished, under its finished key: the
    # learner's page shows them at once instead of drawing them in the web process.
    chart_key = f"*{charts_cache_key(run=run)}"
    assert redis_lib.Redis.from_url(broker["url"]).keys(chart_key)


def test_out_of_bounds_and_quota_are_refused_with_clear_messages(scripted_engine, user):
    target = make_target(scripted_engine(), max_requests_per_run=5, runs_per_learner_per_day=1)
    lab = load_lab("ttft-vs-output-length")
    with pytest.raises(ValidationError, match="would send 7 requests; the target allows 5"):
        submit_run(user=user, lab=lab, target=target, params=TTFT_PARAMS, prediction="p")
    assert not LabRun.objects.exists()
    submit_run(user=user, lab=lab, target=target, params={**TTFT_PARAMS, "repeats": 1}, prediction="p")
    with pytest.raises(ValidationError, match="already have run"):
        submit_run(user=user, lab=lab, target=target, params={**TTFT_PARAMS, "repeats": 1}, prediction="p")
    LabRun.objects.update(status=LabRun.Status.SUCCEEDED)
    with pytest.raises(ValidationError, match=r"used your 1 runs .* You can run again at"):
        submit_run(user=user, lab=lab, target=target, params={**TTFT_PARAMS, "repeats": 1}, prediction="p")


def test_runs_queue_fifo_across_learners_and_cancel_while_queued(scripted_engine, make_user, broker):
    target = make_target(scripted_engine())
    lab = load_lab("ttft-vs-output-length")
    first = submit_run(user=make_user("first"), lab=lab, target=target, params=TTFT_PARAMS, prediction="p")
    second = submit_run(user=make_user("second"), lab=lab, target=target, params=TTFT_PARAMS, prediction="p")
    assert queue_position(run=first) == 1
    assert queue_position(run=second) == 2
    cancel_run(run=first)
    first.refresh_from_db()
    assert first.status == LabRun.Status.CANCELLED
    assert queue_position(run=second) == 1


def test_cancel_while_running_stops_fast_and_keeps_measured_requests(scripted_engine, celery_worker, user):
    url = scripted_engine("--ttft-ms", "20", "--gap-ms", "20")
    target = make_target(url)
    lab = load_lab("ttft-vs-output-length")
    celery_worker(target.queue_name)
    run = submit_run(
        user=user,
        lab=lab,
        target=target,
        params={"max_tokens": [200], "prompt_tokens": 16, "repeats": 10},
        prediction="p",
    )
    wait_for(lambda: RunRequest.objects.filter(run=run, warmup=False).count() >= 2, message="two measured requests")
    cancel_run(run=run)
    import time

    asked = time.monotonic()
    run = wait_for(
        lambda: LabRun.objects.filter(pk=run.pk, status=LabRun.Status.CANCELLED).first(),
        timeout_s=10,
        interval_s=0.05,
        message="cancelled",
    )
    assert time.monotonic() - asked < 3.0
    assert run.summary["overall"]["requests"]["succeeded"] >= 2
    assert "measured requests are kept" in run.error


def test_an_unreachable_target_fails_fast_with_the_engines_message(celery_worker, user):
    target = upsert_target(name="Nowhere", kind="vllm", base_url="http://127.0.0.1:9", models=["m"])
    lab = load_lab("ttft-vs-output-length")
    celery_worker(target.queue_name)
    run = submit_run(
        user=user, lab=lab, target=target, params={"max_tokens": [8], "prompt_tokens": 16, "repeats": 2}, prediction="p"
    )
    run = wait_for(
        lambda: LabRun.objects.filter(pk=run.pk, status=LabRun.Status.FAILED).first(),
        timeout_s=60,
        message="failed run",
    )
    assert "No request succeeded" in run.error
    assert "Traceback" not in run.error


def test_runs_survive_a_redis_restart_that_empties_the_queue(scripted_engine, celery_worker, user, settings, broker):
    settings.LAB_REDISPATCH_AFTER_S = 1
    target = make_target(scripted_engine())
    lab = load_lab("ttft-vs-output-length")
    run = submit_run(
        user=user, lab=lab, target=target, params={"max_tokens": [8], "prompt_tokens": 16, "repeats": 2}, prediction="p"
    )
    import redis as redis_lib

    client = redis_lib.Redis.from_url(broker["url"])
    assert client.llen(target.queue_name) == 1
    client.flushall()  # what a Redis restart without persistence does to the queue
    LabRun.objects.filter(pk=run.pk).update(dispatched_at=run.created_at.replace(year=2000))
    settings.CELERY_BROKER_URL = broker["url"]
    outcome = reap_stale_runs()
    assert outcome["redispatched"] == [run.pk]
    celery_worker(target.queue_name)
    wait_for(
        lambda: LabRun.objects.filter(pk=run.pk, status=LabRun.Status.SUCCEEDED).exists(), message="re-dispatched run"
    )


def test_runlab_command_waits_and_prints_the_measurement_schema(scripted_engine, celery_worker, user, capsys):
    url = scripted_engine("--ttft-ms", "30", "--gap-ms", "3")
    target = make_target(url)
    load_lab("ttft-vs-output-length")
    celery_worker(target.queue_name)
    call_command(
        "runlab",
        "ttft-vs-output-length",
        "--target",
        target.name,
        "--user",
        user.username,
        "--param",
        "max_tokens=8,16",
        "--param",
        "repeats=2",
        "--param",
        "prompt_tokens=32",
        "--wait",
        "--json",
    )
    payload = json.loads(capsys.readouterr().out)
    assert payload["status"] == "succeeded"
    assert payload["summary"]["ttft_s"]["n"] == 4
    assert {"p50", "p90", "p95", "p99", "mean", "n"} <= set(payload["summary"]["ttft_s"])


def test_targets_sharing_hardware_never_measure_at_once_and_a_waiting_run_is_not_reaped(
    scripted_engine, celery_worker, make_user, settings
):
    settings.LAB_HEARTBEAT_STALE_S = 5
    url = scripted_engine("--ttft-ms", "10", "--gap-ms", "10")
    first = upsert_target(name="Same box A", kind="vllm", base_url=url, models=["scripted"], hardware_group="box")
    second = upsert_target(name="Same box B", kind="vllm", base_url=url, models=["scripted"], hardware_group="box")
    lab = load_lab("ttft-vs-output-length")
    celery_worker(first.queue_name, extra_env={"LAB_HEARTBEAT_STALE_S": "5"})
    celery_worker(second.queue_name, extra_env={"LAB_HEARTBEAT_STALE_S": "5"})
    params = {"max_tokens": [80], "prompt_tokens": 16, "repeats": 12}  # about 10 s of measuring
    run_a = submit_run(user=make_user("a"), lab=lab, target=first, params=params, prediction="p")
    wait_for(lambda: RunRequest.objects.filter(run=run_a).exists(), message="run A measuring")
    run_b = submit_run(user=make_user("b"), lab=lab, target=second, params=params, prediction="p")
    import time

    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and LabRun.objects.get(pk=run_a.pk).is_active:
        # B waits for the hardware: alive (heartbeats), measuring nothing, and not reaped.
        if LabRun.objects.get(pk=run_b.pk).status == LabRun.Status.RUNNING:
            assert not RunRequest.objects.filter(run=run_b).exists()
        assert run_b.pk not in reap_stale_runs()["failed"]
        time.sleep(0.5)
    run_a, run_b = finished(run_a), finished(run_b)
    assert run_a.status == run_b.status == LabRun.Status.SUCCEEDED, (run_a.error, run_b.error)
    assert run_b.requeue_count == 0
