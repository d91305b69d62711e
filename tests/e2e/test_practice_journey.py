"""Journey 2: a learner answers `prefill-decode-ttft` from the real bank, reads the mark sheet per
criterion, sees the model answer, answers a follow-up and finds the question in the review queue."""

import pytest

from questions.models import Attempt
from tests.e2e.conftest import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ANSWER = (
    "A request has two phases. Prefill runs the whole prompt through the model in parallel, so it is "
    "compute-bound and its time grows with prompt length; time to first token is mostly prefill. "
    "Decode then makes one token per step and every step reads all the weights from memory, so it is "
    "memory-bandwidth-bound; a longer prompt only adds a little KV cache to read per token."
)
FOLLOW_UP = (
    "It depends on the mix of input tokens and output tokens: long prompts with short answers are "
    "dominated by prefill, chat with long answers by decode."
)


def test_answer_read_the_mark_sheet_see_the_model_answer_follow_up_and_review(
    live_site, page, course, make_user, celery_worker
):
    celery_worker("grading")  # free-text answers are marked there while the page polls
    make_user("learner", password="prefill-decode-bandwidth-9")
    log_in(page, live_site.url, username="learner")
    page.goto(f"{live_site.url}/practice/")
    page.get_by_role("link", name="Quantization & inference optimisation").first.click()
    page.locator("a[href='/practice/q/prefill-decode-ttft/']").first.click()
    page.wait_for_url(f"{live_site.url}/practice/q/prefill-decode-ttft/")
    assert page.get_by_text("Hidden until you have answered").is_visible()

    page.get_by_label("Your answer").fill(ANSWER)
    page.get_by_role("button", name="Submit answer").click()
    page.get_by_role("heading", name="Your mark sheet").wait_for()
    # "Marking your answer…" until the worker's mark sheet replaces it.
    page.locator(".criterion").first.wait_for(timeout=60_000)
    met = page.locator(".criterion.met")
    assert met.count() >= 4, page.locator(".feedback").first.inner_text()
    assert page.get_by_text("From your answer").first.is_visible()  # the evidence quoted back
    # Answering reveals the model answer and what gets marked up.
    model_answer = page.locator("#model-answer")
    assert "Serving a request is two different workloads" in model_answer.inner_text()
    assert "What gets marked up" in model_answer.inner_text()

    follow_up = page.locator("#follow-up-bill")
    follow_up.get_by_label("Your answer to the follow-up").fill(FOLLOW_UP)
    follow_up.get_by_role("button", name="Answer the follow-up").click()
    page.locator("#follow-up-bill .criterion").first.wait_for(timeout=60_000)
    assert page.locator("#follow-up-bill .criterion.met").count() >= 1
    page.locator("#follow-up-bill summary", has_text="An answer that works").click()
    assert page.locator("#follow-up-bill .answer-text").is_visible()
    assert Attempt.objects.filter(user__username="learner", follow_up="bill").count() == 1

    page.get_by_role("link", name="Practice").first.click()
    page.get_by_role("link", name="Review queue").click()
    page.get_by_role("heading", name="Review queue").wait_for()
    assert page.locator("main").get_by_text("Why does prompt length change time to first token").first.is_visible()
