"""The engine dies mid-run: the stream in flight is cut mid-token, and every request after that
is refused. The run stops and fails with the reason, every measured request and every error is
kept and counted, and once the engine is back the next run succeeds."""

import pytest
from django.conf import settings

from labs.content_sync import sync_labs
from labs.models import LabRun, RunRequest
from labs.targets import upsert_target
from tests.faults.conftest import final, measured
from tests.service_fixtures import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_an_engine_that_drops_mid_stream_then_refuses_fails_the_run_with_the_reason_and_keeps_the_samples(
    live_site, learner_browser, engine_process, celery_worker
):
    engine = engine_process("--ttft-ms", "15", "--gap-ms", "15")
    sync_labs(content_dir=settings.BASE_DIR / "labs" / "content")
    target = upsert_target(name="Scripted GPU", kind="vllm", base_url=engine.url, models=["scripted"])
    celery_worker(target.queue_name)
    ada = learner_browser("ada")
    run_id = ada.queue_run(
        lab="ttft-vs-output-length", target_id=target.pk, max_tokens="64, 128", prompt_tokens="16", repeats="12"
    )
    wait_for(lambda: measured(run_id) >= 3, message="three measured requests")
    engine.kill()  # mid-stream: a request is always in flight on this closed loop

    run = final(run_id, timeout_s=60)
    assert run.status == LabRun.Status.FAILED
    assert "The engine failed requests in step max_tokens=64" in run.error, run.error
    assert "unreachable" in run.error  # the refused connections, named
    assert "measured requests are kept below" in run.error
    rows = RunRequest.objects.filter(run_id=run_id, warmup=False)
    kinds = set(rows.exclude(error_kind="").values_list("error_kind", flat=True))
    assert "unreachable" in kinds and len(kinds) >= 2, kinds  # the cut stream is its own kind
    assert rows.filter(error_kind="").count() >= 3  # every success kept
    overall = run.summary["overall"]["requests"]
    assert overall["failed"] == rows.exclude(error_kind="").count()  # every error counted
    assert not rows.filter(step__key="max_tokens=128").exists()  # the run stopped at the broken step

    page = ada.get(f"/labs/runs/{run_id}/")
    assert page.status_code == 200
    assert "The engine failed requests in step max_tokens=64" in page.text
    assert "cannot connect to Scripted GPU" in page.text  # the engine's words, its address redacted
    assert 'data-testid="summary-table"' in page.text
    # The engine's address is for staff only, also inside the engine's error messages.
    for path in (f"/labs/runs/{run_id}/", f"/labs/runs/{run_id}/export.csv", f"/labs/runs/{run_id}/export.json"):
        assert f":{engine.port}" not in ada.get(path).text, path

    engine.start()  # back on the same URL
    next_id = ada.queue_run(lab="ttft-vs-output-length", target_id=target.pk, max_tokens="8", prompt_tokens="16",
                            repeats="2")
    assert final(next_id).status == LabRun.Status.SUCCEEDED
