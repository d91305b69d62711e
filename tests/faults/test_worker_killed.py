"""A worker killed with SIGKILL mid-run: the reaper, run by the real beat scheduler, fails the run
keeping every measured request (or re-queues it once if nothing was measured), the learner's
page says why, and the next run on the target succeeds."""

import os
import signal

import pytest
from django.conf import settings

from labs.content_sync import sync_labs
from labs.models import LabRun, RunRequest
from labs.targets import upsert_target
from tests.faults.conftest import final, measured
from tests.service_fixtures import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

# The reaper presumes a worker dead after 5 s without a heartbeat (45 s in production).
FAST_REAPER = {"LAB_HEARTBEAT_STALE_S": "5", "LAB_REDISPATCH_AFTER_S": "5"}


@pytest.fixture
def reaper(celery_worker, celery_beat, tmp_path):
    """Beat sends the reaper every second to the default queue's worker, as `make run` wires it."""
    celery_worker("default", extra_env=FAST_REAPER)
    celery_beat(every_s=1, schedule_dir=tmp_path)


@pytest.fixture
def scripted_target(engine_process):
    def make(*engine_args: str):
        engine = engine_process(*engine_args)
        sync_labs(content_dir=settings.BASE_DIR / "labs" / "content")
        # The scripted engine writes meaningless words: a generated model, served plain completions.
        return upsert_target(
            name="Scripted GPU", kind="vllm", base_url=engine.url, models=["scripted"], synthetic_text=True
        )

    return make


def kill(worker) -> None:
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait()


def test_a_worker_killed_mid_run_fails_it_keeping_its_samples_and_the_next_run_succeeds(
    live_site, learner_browser, scripted_target, celery_worker, reaper
):
    target = scripted_target("--ttft-ms", "10", "--gap-ms", "20")
    worker = celery_worker(target.queue_name, extra_env=FAST_REAPER)
    ada = learner_browser("ada")
    run_id = ada.queue_run(lab="ttft-vs-output-length", target_id=target.pk, max_tokens="100", prompt_tokens="16",
                           repeats="20")
    wait_for(lambda: measured(run_id) >= 2, message="two measured requests")
    kill(worker)
    kept = RunRequest.objects.filter(run_id=run_id).count()

    run = final(run_id, timeout_s=60)
    assert run.status == LabRun.Status.FAILED
    assert run.error.startswith("Worker lost"), run.error
    assert RunRequest.objects.filter(run_id=run_id).count() == kept  # nothing measured is lost
    succeeded = run.summary["overall"]["requests"]["succeeded"]
    assert succeeded >= 2

    page = ada.get(f"/labs/runs/{run_id}/")
    assert page.status_code == 200
    assert "Worker lost: the process running this lab stopped." in page.text
    assert f"{succeeded} measured requests are kept" in page.text
    assert 'data-testid="summary-table"' in page.text  # what was measured is shown

    celery_worker(target.queue_name, extra_env=FAST_REAPER)
    next_id = ada.queue_run(lab="ttft-vs-output-length", target_id=target.pk, max_tokens="8", prompt_tokens="16",
                            repeats="2")
    assert final(next_id).status == LabRun.Status.SUCCEEDED


def test_a_worker_killed_before_measuring_anything_is_requeued_once_and_the_run_completes(
    live_site, learner_browser, scripted_target, celery_worker, reaper
):
    target = scripted_target("--ttft-ms", "4000", "--gap-ms", "5")
    worker = celery_worker(target.queue_name, extra_env=FAST_REAPER)
    ada = learner_browser("ada")
    run_id = ada.queue_run(lab="ttft-vs-output-length", target_id=target.pk, max_tokens="4", prompt_tokens="16",
                           repeats="1")
    wait_for(lambda: LabRun.objects.filter(pk=run_id, status=LabRun.Status.RUNNING).exists(), message="running")
    kill(worker)
    assert RunRequest.objects.filter(run_id=run_id).count() == 0
    wait_for(lambda: LabRun.objects.filter(pk=run_id, requeue_count=1).exists(), timeout_s=30, message="re-queued")
    page = ada.get(f"/labs/runs/{run_id}/")
    assert "re-queued once" in page.text

    celery_worker(target.queue_name, extra_env=FAST_REAPER)
    run = final(run_id)
    assert run.status == LabRun.Status.SUCCEEDED, run.error
    assert RunRequest.objects.filter(run_id=run_id, warmup=False).count() == 1


def test_a_worker_killed_after_its_warm_up_only_is_requeued_once_and_the_run_succeeds(
    live_site, learner_browser, scripted_target, celery_worker, reaper
):
    # Every second generation request waits 8 s for its headers: the warm-up (1st) is stored at
    # once and the first measured request (2nd) hangs, which is when the worker is killed.
    target = scripted_target("--ttft-ms", "10", "--gap-ms", "5", "--fault", "slow_headers", "--fault-every", "2",
                             "--slow-headers-ms", "8000")
    worker = celery_worker(target.queue_name, extra_env=FAST_REAPER)
    ada = learner_browser("ada")
    run_id = ada.queue_run(lab="ttft-vs-output-length", target_id=target.pk, max_tokens="4", prompt_tokens="16",
                           repeats="1")
    wait_for(lambda: RunRequest.objects.filter(run_id=run_id, warmup=True).exists(), message="the warm-up stored")
    kill(worker)
    assert RunRequest.objects.filter(run_id=run_id, warmup=False).count() == 0

    wait_for(lambda: LabRun.objects.filter(pk=run_id, requeue_count=1).exists(), timeout_s=30, message="re-queued")
    assert not RunRequest.objects.filter(run_id=run_id).exists()  # the old warm-up is not the new run's
    assert "re-queued once" in ada.get(f"/labs/runs/{run_id}/").text

    celery_worker(target.queue_name, extra_env=FAST_REAPER)
    run = final(run_id)
    assert run.status == LabRun.Status.SUCCEEDED, run.error
    assert run.requeue_count == 1
    assert RunRequest.objects.filter(run_id=run_id, warmup=True).count() == 1
    assert RunRequest.objects.filter(run_id=run_id, warmup=False).count() == 1
    page = ada.get(f"/labs/runs/{run_id}/")
    assert 'data-testid="summary-table"' in page.text
    assert "Worker lost" not in page.text


def test_a_worker_killed_after_one_measured_request_fails_the_run_keeping_that_request(
    live_site, learner_browser, scripted_target, celery_worker, reaper
):
    # Requests 1 (warm-up) and 2 (first measured) answer at once; the 3rd hangs 30 s.
    target = scripted_target("--ttft-ms", "10", "--gap-ms", "5", "--fault", "slow_headers", "--fault-every", "3",
                             "--slow-headers-ms", "30000")
    worker = celery_worker(target.queue_name, extra_env=FAST_REAPER)
    ada = learner_browser("ada")
    run_id = ada.queue_run(lab="ttft-vs-output-length", target_id=target.pk, max_tokens="4", prompt_tokens="16",
                           repeats="3")
    wait_for(lambda: measured(run_id) == 1, message="one measured request")
    kill(worker)

    run = final(run_id, timeout_s=60)
    assert run.status == LabRun.Status.FAILED
    assert run.requeue_count == 0
    assert run.error == "Worker lost: the process running this lab stopped. 1 measured request is kept below."
    assert RunRequest.objects.filter(run_id=run_id, warmup=False).count() == 1
    assert run.summary["overall"]["requests"]["succeeded"] == 1
    assert "1 measured request is kept below" in ada.get(f"/labs/runs/{run_id}/").text
