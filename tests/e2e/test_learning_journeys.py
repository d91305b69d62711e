"""Browser journeys through the real site: a lesson with its calculator, a question with its
follow-up, and a lab run on a real Celery worker against the scripted engine."""

import re

import pytest
from django.core.management import call_command

from labs.models import LabRun
from tests.labs.test_runs import make_target
from tests.service_fixtures import wait_for

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "prefill-decode-bandwidth-9"


@pytest.fixture
def site(content, make_user):
    call_command("sync_content")
    make_user("learner", password=PASSWORD)


def log_in(page, live_server):
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("Username").fill("learner")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(re.compile(r".*/accounts/me/$"))


def test_read_a_lesson_use_its_calculator_and_mark_it_done(live_server, page, settings):
    call_command("sync_content")  # the repository's real course: figures and calculators
    from django.contrib.auth.models import User

    User.objects.create_user("learner", password=PASSWORD)
    log_in(page, live_server)
    page.get_by_role("link", name="Learn").click()
    page.locator("a[href='/learn/lessons/roofline-speed-of-light/']").first.click()
    page.wait_for_url(re.compile(r".*/learn/lessons/roofline-speed-of-light/$"))
    assert page.locator("figure svg").count() >= 1
    assert page.locator("math").count() >= 1

    calculator = page.locator("section.calculator").first
    calculator.get_by_label("Batch").fill("8")
    calculator.get_by_role("button", name="Calculate").click()
    page.wait_for_function("document.querySelector('section.calculator .calculator-rows') !== null")
    result = page.locator("section.calculator").first.inner_text()
    assert "step by step" in result.lower()

    before = page.get_by_test_id("module-progress").get_attribute("aria-valuenow")
    page.get_by_role("button", name="Mark as done").click()
    page.get_by_text("Mark as not done").wait_for()
    after = page.get_by_test_id("module-progress").get_attribute("aria-valuenow")
    assert int(after) > int(before)


def test_answer_a_question_read_the_mark_sheet_reveal_and_follow_up(live_server, page, site):
    log_in(page, live_server)
    page.goto(f"{live_server.url}/practice/q/sample-question/")
    assert page.get_by_text("Hidden until you have answered").is_visible()
    page.get_by_label("Your answer").fill("Decode is memory-bound: each step reads all the weights to make one token.")
    page.get_by_role("button", name="Submit answer").click()
    page.get_by_role("heading", name="Your mark sheet").wait_for()
    assert page.locator(".criterion.met").count() == 2
    assert page.get_by_text("From your answer").first.is_visible()
    assert page.get_by_text("so bytes moved dominate").is_visible()  # the model answer, now shown
    follow_up = page.locator("#follow-up-batching")
    follow_up.get_by_label("Your answer to the follow-up").fill(
        "With batching the weights are read once for every sequence in the batch."
    )
    follow_up.get_by_role("button", name="Answer the follow-up").click()
    page.locator("#follow-up-batching .feedback").wait_for()
    page.get_by_role("link", name="Practice").first.click()
    page.get_by_role("link", name="Review queue").click()
    assert page.get_by_role("heading", name="Review queue").is_visible()


def test_run_a_lab_watch_progress_read_results_export_and_compare(
    live_server, page, site, scripted_engine, celery_worker, settings
):
    from labs.content_sync import sync_labs

    sync_labs(content_dir=settings.BASE_DIR / "labs" / "content")
    target = make_target(scripted_engine("--ttft-ms", "30", "--gap-ms", "15"))
    celery_worker(target.queue_name)
    log_in(page, live_server)
    page.goto(f"{live_server.url}/labs/ttft-vs-output-length/")
    page.get_by_label("Your prediction").fill("TTFT stays flat, total time grows about 4x")
    page.get_by_label("Output lengths (max_tokens)").fill("16, 64")
    page.get_by_label("Requests per length").fill("3")
    page.get_by_role("button", name="Queue the run").click()
    page.wait_for_url(re.compile(r".*/labs/runs/\d+/$"))
    assert page.get_by_test_id("run-progress").is_visible()
    page.get_by_role("heading", name="What you should see").wait_for(timeout=60_000)
    assert page.get_by_test_id("summary-table").is_visible()
    assert page.locator("figure svg").count() >= 3
    with page.expect_download() as download:
        page.get_by_role("link", name="Export CSV").click()
    assert download.value.suggested_filename.endswith(".csv")

    page.get_by_role("link", name="Run again with these parameters").click()
    page.get_by_role("button", name="Queue the run").click()
    page.get_by_role("heading", name="What you should see").wait_for(timeout=60_000)
    assert LabRun.objects.filter(status=LabRun.Status.SUCCEEDED).count() == 2
    page.locator("input[name=with]").first.check()
    page.get_by_role("button", name="Compare").click()
    page.get_by_role("heading", name="Compare runs").wait_for()
    wait_for(lambda: page.locator("figure svg").count() >= 1, message="compare chart")
