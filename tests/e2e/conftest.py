"""Browser tests: Playwright driving Debian's chromium against the live test server.

Every page load is watched: a console error or a failed request fails the test. Each test saves a
screenshot of its last page under test-output/e2e/.
"""

import os
from pathlib import Path

import pytest

from tests.conftest import ROOT, chromium_path

SCREENSHOTS = ROOT / "test-output" / "e2e"

# Playwright's sync API keeps an event loop running in this thread; the ORM calls the tests and
# fixtures make between browser steps are ordinary synchronous code, so Django may allow them.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"


# Module scope, not session: Playwright's sync API keeps an asyncio loop running on this thread
# while it is open, and later tests (the measurement library's) call asyncio.run().
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


@pytest.fixture
def page(browser, request):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
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
    yield page
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    try:
        page.screenshot(path=str(Path(SCREENSHOTS) / f"{request.node.name}.png"), full_page=True)
    finally:
        context.close()
    assert not problems, "browser saw problems:\n" + "\n".join(problems)
