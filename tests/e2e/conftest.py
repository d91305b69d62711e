"""Browser journeys: Playwright driving Debian's chromium against the real site under gunicorn
(`live_site`, started with `make run`'s command line, DEBUG off, collected static files).

Every page load is watched: a console error, a failed request or a 5xx fails the test. Each test
saves a screenshot of its last page under test-output/e2e/.
"""

import os
import re

import pytest

from tests.conftest import ROOT, chromium_path

SCREENSHOTS = ROOT / "test-output" / "e2e"

# Playwright's sync API keeps an event loop running in this thread; the ORM calls the tests and
# fixtures make between browser steps are ordinary synchronous code, so Django may allow them.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"


# Module scope, not session: Playwright's sync API keeps an asyncio loop running on this thread
# while it is open, and later tests (the measurement library's) call asyncio.run().
PASSWORD = "prefill-decode-bandwidth-9"
# A run's page, also when the browser carries the form's #fragment across the redirect.
RUN_PAGE = re.compile(r".*/labs/runs/\d+/(#.*)?$")


@pytest.fixture(autouse=True)
def site_password_hashers(settings):
    """Users made here must log in through gunicorn, which knows only the real hashers (the test
    settings hash with MD5 for speed)."""
    from django.conf import global_settings

    settings.PASSWORD_HASHERS = global_settings.PASSWORD_HASHERS


def log_in(page, site_url: str, *, username: str, password: str = PASSWORD) -> None:
    page.goto(f"{site_url}/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{site_url}/accounts/me/")


@pytest.fixture(scope="module")
def browser():
    path = chromium_path()
    if path is None:
        pytest.skip("NO CHROMIUM FOUND: browser tests skipped (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=path,
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        yield browser
        browser.close()


def watched_page(context):
    """A page whose console errors, failed requests and 5xx answers are collected in .problems."""
    page = context.new_page()
    problems: list[str] = []
    page.on("console", lambda msg: problems.append(f"console {msg.type}: {msg.text}") if msg.type == "error" else None)
    page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    # ERR_ABORTED is the browser cancelling its own request (a download, or a poll cut short by
    # navigating away); every other failure is a real one.
    page.on(
        "requestfailed",
        lambda req: (
            problems.append(f"request failed: {req.url} ({req.failure})")
            if "ERR_ABORTED" not in (req.failure or "")
            else None
        ),
    )
    page.on(
        "response",
        lambda response: problems.append(f"HTTP {response.status}: {response.url}") if response.status >= 500 else None,
    )
    page.problems = problems
    return page


@pytest.fixture
def open_page(browser, request):
    """Open watched pages, each in a browser context of its own (a second person at another
    computer); at the end every page is screenshotted and any problem it saw fails the test."""
    opened = []

    def open_one():
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        opened.append((context, watched_page(context)))
        return opened[-1][1]

    yield open_one
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    problems = []
    for number, (context, page) in enumerate(opened):
        suffix = "" if number == 0 else f"-{number + 1}"
        try:
            page.screenshot(path=str(SCREENSHOTS / f"{request.node.name}{suffix}.png"), full_page=True)
        finally:
            context.close()
        problems.extend(page.problems)
    assert not problems, "browser saw problems:\n" + "\n".join(problems)


@pytest.fixture
def page(open_page):
    return open_page()
