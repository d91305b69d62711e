"""Journey 3: a learner runs `ttft-vs-output-length` on the local llama.cpp engine through the real
site, a real Celery worker and Redis; watches the progress bar move, reads the results and charts,
exports CSV, runs it again and compares the two runs."""

import csv
import io
import time

import pytest
from django.core.management import call_command
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from labs.management.commands.register_local_targets import BATCHED_NAME, SERIAL_NAME
from labs.models import InferenceTarget, LabRun
from tests.e2e.conftest import RUN_PAGE, log_in
from tests.service_fixtures import wait_for

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def local_site_targets(local_engines, celery_worker, monkeypatch):
    """The local engines registered exactly as `make run` registers them, with their workers."""
    monkeypatch.setenv("LOCAL_ENGINE_URL", local_engines.serial.url)
    monkeypatch.setenv("LOCAL_ENGINE_BATCHED_URL", local_engines.batched.url)
    call_command("register_local_targets", stdout=io.StringIO())
    serial = InferenceTarget.objects.get(name=SERIAL_NAME)
    batched = InferenceTarget.objects.get(name=BATCHED_NAME)
    celery_worker(serial.queue_name, batched.queue_name)
    return serial


def watch_progress(page, *, timeout_s: float = 180.0) -> list[int]:
    """Read the progress bar as the htmx poll replaces it, until the results arrive."""
    seen: list[int] = []
    deadline = time.monotonic() + timeout_s
    results = page.get_by_role("heading", name="What you should see")
    while not results.is_visible():
        assert time.monotonic() < deadline, f"no results after {timeout_s:.0f} s; progress seen {seen}"
        try:
            value = page.locator("[data-testid=run-progress]").first.get_attribute("aria-valuenow", timeout=500)
        except PlaywrightTimeoutError:  # the page is between two polls or reloading with the results
            value = None
        if value is not None and (not seen or int(value) != seen[-1]):
            seen.append(int(value))
        page.wait_for_timeout(150)
    return seen


def test_run_on_the_local_engine_watch_progress_read_results_export_rerun_and_compare(
    live_site, page, course, local_site_targets, make_user, tmp_path
):
    make_user("learner", password="prefill-decode-bandwidth-9")
    log_in(page, live_site.url, username="learner")
    page.get_by_role("link", name="Labs").first.click()
    page.get_by_role("link", name="TTFT stays put while total time grows with output").first.click()
    page.get_by_label("Engine").select_option(label=SERIAL_NAME)
    page.get_by_label("Your prediction").fill("TTFT stays flat; total time grows about 10x with 10x the tokens")
    page.get_by_label("Output lengths (max_tokens)").fill("16, 256")
    page.get_by_label("Prompt length (tokens)").fill("64")
    page.get_by_label("Requests per length").fill("3")
    page.get_by_role("button", name="Queue the run").click()
    page.wait_for_url(RUN_PAGE)

    seen = watch_progress(page)
    assert any(0 < value < 100 for value in seen), f"the bar never showed a run in progress: {seen}"
    assert seen == sorted(seen), f"the bar went backwards: {seen}"

    run = LabRun.objects.get(user__username="learner")
    assert run.status == LabRun.Status.SUCCEEDED, run.error
    # This lab prefers the real model the local engine serves beside the generated ones.
    assert run.model_name == "smollm2-135m-instruct-q4_1"
    assert page.get_by_text("Real model: smollm2-135m-instruct-q4_1 has real weights").is_visible()
    assert page.get_by_test_id("summary-table").is_visible()
    assert page.get_by_text("Speed of light for decode at batch 1").is_visible()
    assert page.locator("figure svg").count() >= 3
    assert "TTFT stays flat" in page.locator("main").inner_text()  # the prediction, next to the result

    with page.expect_download() as download:
        page.get_by_role("link", name="Export CSV").click()
    saved = tmp_path / download.value.suggested_filename
    download.value.save_as(saved)
    rows = list(csv.DictReader(saved.read_text().splitlines()))
    measured = [row for row in rows if row["warmup"] == "False"]
    assert len(rows) == 7 and len(measured) == 6
    produced = [int(row["output_tokens"]) for row in measured]
    if set(produced) == {16, 256}:
        pass  # exactly what was asked
    else:
        # The real model now and then ends a forced answer early through a stop its chat template
        # adds (seen: 223 of 256); the page must then say so instead of presenting it as forced.
        assert all(p <= 256 for p in produced) and 16 in produced, produced
        assert page.get_by_text("Output was shorter than asked").is_visible()

    page.get_by_role("link", name="Run again with these parameters").click()
    assert page.get_by_label("Output lengths (max_tokens)").input_value() == "16, 256"
    page.get_by_role("button", name="Queue the run").click()
    page.wait_for_url(RUN_PAGE)
    watch_progress(page)
    wait_for(lambda: LabRun.objects.filter(status=LabRun.Status.SUCCEEDED).count() == 2, message="second run")

    page.locator("input[name=with]").first.check()
    page.get_by_role("button", name="Compare").click()
    page.get_by_role("heading", name="Compare runs").wait_for()
    assert page.locator("figure svg").count() >= 1
    assert page.get_by_role("link", name=f"Run {run.pk}", exact=True).is_visible()
