"""Journey 4: an instructor registers a target in the admin, probes it, watches the run queue
update by itself, cancels a learner's queued run (the learner sees why), and opens the cohort
view once a run has finished."""

import pytest

from labs.models import InferenceTarget, LabRun
from tests.e2e.conftest import RUN_PAGE, log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LAB_URL = "/labs/ttft-vs-output-length/"


def queue_a_run(page, site_url: str) -> None:
    page.goto(f"{site_url}{LAB_URL}")
    page.get_by_label("Engine").select_option(label="Cohort GPU")
    page.get_by_label("Your prediction").fill("TTFT flat, total time grows with output")
    page.get_by_label("Output lengths (max_tokens)").fill("8, 32")
    page.get_by_label("Prompt length (tokens)").fill("32")
    page.get_by_label("Requests per length").fill("2")
    page.get_by_role("button", name="Queue the run").click()
    page.wait_for_url(RUN_PAGE)


def test_staff_registers_and_probes_a_target_watches_the_queue_cancels_a_run_and_sees_the_cohort(
    live_site, open_page, course, scripted_engine, celery_worker, make_user
):
    engine_url = scripted_engine("--flavor", "vllm", "--ttft-ms", "20", "--gap-ms", "4")
    make_user("instructor", password="prefill-decode-bandwidth-9", is_staff=True, is_superuser=True)
    make_user("learner", password="prefill-decode-bandwidth-9")

    staff = open_page()
    log_in(staff, live_site.url, username="instructor")
    staff.get_by_role("link", name="Admin").click()
    staff.get_by_role("link", name="Inference targets").click()
    staff.get_by_role("link", name="Add inference target").click()
    staff.locator("#id_name").fill("Cohort GPU")
    staff.locator("#id_slug").fill("cohort-gpu")
    staff.locator("#id_kind").select_option("vllm")
    staff.locator("#id_base_url").fill(engine_url)
    staff.locator("#id_model_names").fill('["scripted"]')
    staff.locator("#id_api_key").fill("sk-cohort-secret-0001")
    staff.get_by_role("button", name="Save", exact=True).click()
    staff.get_by_text("was added successfully").wait_for()
    target = InferenceTarget.objects.get(name="Cohort GPU")
    assert target.base_url == engine_url and target.api_key == "sk-cohort-secret-0001"

    staff.get_by_role("row", name="Cohort GPU").get_by_role("checkbox").check()
    staff.locator("select[name=action]").select_option("probe_targets")
    staff.get_by_role("button", name="Go").click()
    staff.locator(".messagelist .success", has_text="Cohort GPU").wait_for()
    target.refresh_from_db()
    assert target.probed_at is not None and not target.probe_error

    staff.goto(f"{live_site.url}/labs/queue/")
    assert staff.get_by_role("row", name="Cohort GPU").is_visible()
    assert staff.get_by_text("Nothing is running or waiting.").is_visible()

    # No worker consumes the new target's queue yet, so the learner's run waits in it.
    learner = open_page()
    log_in(learner, live_site.url, username="learner")
    queue_a_run(learner, live_site.url)
    assert learner.get_by_test_id("run-status").inner_text() == "Queued"
    run = LabRun.objects.get(user__username="learner")

    # The dashboard updates itself: the run appears without a reload.
    cancel = staff.get_by_role("button", name=f"Cancel run {run.pk}")
    cancel.wait_for(timeout=10_000)
    assert "learner" in staff.get_by_role("row", name=f"{run.pk} learner").inner_text()
    cancel.click()
    staff.wait_for_url(f"{live_site.url}/labs/queue/")
    staff.get_by_text("Nothing is running or waiting.").wait_for()
    run.refresh_from_db()
    assert run.status == LabRun.Status.CANCELLED

    # The learner's page, still polling, shows the outcome and the reason.
    learner.get_by_test_id("run-status").filter(has_text="Cancelled").wait_for(timeout=10_000)
    assert learner.get_by_text("Cancelled before it started.").is_visible()

    # With a worker on the queue (restarted after adding a target), the next run goes through.
    celery_worker(target.queue_name)
    learner.get_by_role("link", name="Labs").first.click()
    queue_a_run(learner, live_site.url)
    learner.get_by_role("heading", name="What you should see").wait_for(timeout=60_000)

    staff.goto(f"{live_site.url}{LAB_URL}")
    staff.get_by_role("link", name="See the cohort's results").click()
    staff.get_by_role("heading", name="Cohort results").wait_for()
    assert staff.get_by_role("cell", name=f"learner · run {run.pk + 1}").is_visible()
    assert staff.locator("figure svg").count() == 1
    # The key went in through the admin and never comes back out, not even to staff.
    for page in (staff, learner):
        assert "sk-cohort-secret-0001" not in page.content()
