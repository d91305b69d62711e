"""A learner whose plain-words answer was under-credited challenges the mark, in a real browser,
at desktop width and on a phone."""

import contextlib
from collections.abc import Iterator

import pytest

from questions.models import MarkChallenge, Question
from tests.e2e.conftest import SCREENSHOTS, log_in, watched_page
from tests.grading import submit_and_mark

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PARTIAL = (
    "A request has two phases, prefill and then decode. Time to first token is mostly prefill, "
    "which takes longer when the prompt is longer."
)


@contextlib.contextmanager
def _marked_answer_page(*, live_site, browser, make_user, width: int, answer: str) -> Iterator[tuple]:
    """A learner whose answer to prefill-decode-ttft is marked, signed in on the question's page
    at this width: (page, attempt). The page must end without console errors or failed requests."""
    user = make_user("learner", password="prefill-decode-bandwidth-9")
    attempt = submit_and_mark(user=user, question=Question.objects.get(slug="prefill-decode-ttft"), answer=answer)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(viewport={"width": width, "height": 900}, is_mobile=width < 640)
    page = watched_page(context)
    try:
        log_in(page, live_site.url, username="learner")
        page.goto(f"{live_site.url}/practice/q/prefill-decode-ttft/")
        yield page, attempt
        assert not page.problems, page.problems
    finally:
        context.close()


@pytest.mark.parametrize("width", [1280, 390])
def test_a_learner_challenges_a_missed_point_and_reads_the_status(live_site, browser, course, make_user, width):
    with _marked_answer_page(
        live_site=live_site, browser=browser, make_user=make_user, width=width, answer=PARTIAL
    ) as (page, attempt):
        page.get_by_role("link", name="Challenge this mark").first.click()
        page.wait_for_url(f"{live_site.url}/practice/attempts/{attempt.pk}/#challenge")
        form = page.locator("#challenge")
        assert form.get_by_role("heading", name="Think the mark missed something?").is_visible()
        boxes = form.get_by_role("checkbox")
        assert boxes.count() == sum(1 for c in attempt.result["criteria"] if c["awarded"] < c["points"])
        form.get_by_label("Says each decode step reads all the weights").check()
        form.get_by_label("Why (optional)").fill("My answer says decode is the token-by-token part.")
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        page.screenshot(path=str(SCREENSHOTS / f"challenge-form-{width}.png"), full_page=True)

        form.get_by_role("button", name="Send my challenge").click()
        page.get_by_text("Thanks: your challenge is recorded.").wait_for()
        status = page.get_by_test_id("challenge-status")
        assert "Waiting for staff" in status.inner_text()
        assert "You wrote: My answer says decode is the token-by-token part." in form.inner_text()
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        page.screenshot(path=str(SCREENSHOTS / f"challenge-sent-{width}.png"), full_page=True)
        assert MarkChallenge.objects.get(attempt=attempt).criteria == ["decode-memory-bound"]


PLAIN_WORDS = (
    "The first step reads the whole question at once, so a long question means a long wait before "
    "anything appears. After that each new word costs about the same, because the machine mostly spends "
    "its time fetching the model's numbers from memory, and the longer question only adds a little to that."
)


@pytest.mark.parametrize("width", [1280, 390])
def test_a_near_miss_quotes_the_learners_sentence_and_leads_to_the_challenge(
    live_site, browser, course, make_user, width
):
    with _marked_answer_page(
        live_site=live_site, browser=browser, make_user=make_user, width=width, answer=PLAIN_WORDS
    ) as (page, attempt):
        near = page.get_by_test_id("near-miss")
        assert near.count() == 1
        assert near.inner_text().startswith(
            "Closest you came: “The first step reads the whole question at once, so a long question means a long "
            "wait before anything appears.” The marker read this as not making the point"
        )
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        near.scroll_into_view_if_needed()
        page.screenshot(path=str(SCREENSHOTS / f"near-miss-{width}.png"), full_page=True)
        near.get_by_role("link", name="challenge this mark").click()
        page.wait_for_url(f"{live_site.url}/practice/attempts/{attempt.pk}/#challenge")
        page.locator("#challenge").get_by_label("Connects TTFT to prefill, which grows with prompt length").check()
