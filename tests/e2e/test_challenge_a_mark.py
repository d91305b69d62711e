"""A learner whose plain-words answer was under-credited challenges the mark, in a real browser,
at desktop width and on a phone."""

import pytest

from questions.models import MarkChallenge, Question
from tests.e2e.conftest import SCREENSHOTS, log_in, watched_page
from tests.grading import submit_and_mark

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PARTIAL = (
    "A request has two phases, prefill and then decode. Time to first token is mostly prefill, "
    "which takes longer when the prompt is longer."
)


@pytest.mark.parametrize("width", [1280, 390])
def test_a_learner_challenges_a_missed_point_and_reads_the_status(live_site, browser, course, make_user, width):
    user = make_user("learner", password="prefill-decode-bandwidth-9")
    question = Question.objects.get(slug="prefill-decode-ttft")
    attempt = submit_and_mark(user=user, question=question, answer=PARTIAL)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(viewport={"width": width, "height": 900}, is_mobile=width < 640)
    page = watched_page(context)
    try:
        log_in(page, live_site.url, username="learner")
        page.goto(f"{live_site.url}/practice/q/prefill-decode-ttft/")
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
        assert not page.problems, page.problems
    finally:
        context.close()
