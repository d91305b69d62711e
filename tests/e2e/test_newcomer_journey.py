"""Journey 1: a newcomer signs up, opens the course, reads a lesson, uses its calculator and marks
it done; the progress survives logging out and in again."""

import pytest

from tests.e2e.conftest import PASSWORD, log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_newcomer_signs_up_reads_a_lesson_uses_its_calculator_and_marks_it_done(live_site, page, course):
    page.goto(f"{live_site.url}/")
    page.get_by_role("link", name="Sign up").first.click()
    page.get_by_label("Username").fill("newcomer")
    page.get_by_label("Password:", exact=True).fill(PASSWORD)
    page.get_by_label("Password confirmation").fill(PASSWORD)
    page.get_by_role("button", name="Sign up").click()
    page.wait_for_url(f"{live_site.url}/accounts/me/")
    assert page.get_by_role("heading", name="newcomer").is_visible()
    assert page.get_by_text("No lessons marked done yet").is_visible()

    page.get_by_role("link", name="Learn").click()
    assert page.get_by_role("heading", name="LLM inference optimisation", level=1).is_visible()
    page.locator("a[href='/learn/lessons/prefill-vs-decode/']").first.click()
    page.wait_for_url(f"{live_site.url}/learn/lessons/prefill-vs-decode/")
    assert page.locator("figure svg").count() >= 1  # figures drawn from code

    calculator = page.locator("section.calculator").first
    calculator.get_by_label("Batch").fill("8")
    calculator.get_by_role("button", name="Calculate").click()
    page.wait_for_function("document.querySelector('section.calculator .calculator-rows') !== null")
    assert "step by step" in page.locator("section.calculator").first.inner_text().lower()

    progress = page.get_by_test_id("module-progress")
    before = int(progress.get_attribute("aria-valuenow"))
    page.get_by_role("button", name="Mark as done").click()
    page.get_by_text("Mark as not done").wait_for()
    assert int(page.get_by_test_id("module-progress").get_attribute("aria-valuenow")) > before

    page.get_by_role("button", name="Log out newcomer").click()
    log_in(page, live_site.url, username="newcomer")
    assert page.get_by_role("heading", name="Lessons done").is_visible()
    assert page.get_by_role("link", name="Prefill vs decode").first.is_visible()
