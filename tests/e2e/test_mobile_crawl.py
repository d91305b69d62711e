"""Every page a signed-in learner reaches from the navigation fits a phone: at 390 px (and the
top pages at 360 px) the document is never wider than the viewport. The learner has real
content, answers of each kind (free text, numeric, multiple choice, a follow-up), lessons done,
review cards and a lab run measured on the scripted engine, so mark sheets, the Me page, run
pages and comparisons are filled in. A screenshot of every page is kept under
test-output/e2e/mobile/ (and test-output/e2e/desktop/ at 1280 px) to look at."""

import re
from collections import deque
from urllib.parse import urldefrag, urlsplit

import pytest

from tests.e2e.conftest import PASSWORD, SCREENSHOTS, log_in, watched_page

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Not pages a person reads: downloads, machine endpoints, static files, figure images, admin,
# htmx fragments (attempt feedback, run progress), and logging out.
SKIP = re.compile(
    r"^/(admin/|static/|media/|healthz$|favicon)"
    r"|/(export|download)|\.(csv|json|svg|png|jpg|pdf)$|/feedback/$|/progress/$|/partial|/figures/"
)
MAX_PAGES = 170
INTERVIEW_SET = "quantization-inference-optimisation"


@pytest.fixture
def learner_with_history(course, scripted_engine, make_user):
    from courses.models import Lesson
    from courses.services import record_lesson_view, set_lesson_done
    from labs.execution import execute_run
    from labs.models import Lab, LabRun
    from questions.models import Question
    from tests.grading import submit_and_mark
    from tests.labs.test_runs import make_target

    user = make_user("phone.learner", password=PASSWORD)
    for lesson in Lesson.objects.order_by("order")[:3]:
        record_lesson_view(user=user, lesson=lesson)
        set_lesson_done(user=user, lesson=lesson, done=True)
    answers = {
        "prefill-decode-ttft": (
            "Prefill is compute-bound and processes the prompt in parallel, so TTFT grows with the prompt. "
            "Decode is memory-bound: https://example.org/a-very-long-url-that-a-learner-pasted-into-their-answer"
            "-without-any-spaces-at-all-because-that-is-what-people-do"
        ),
        "kv-bytes-per-token": "131072",
    }
    for slug, answer in answers.items():
        submit_and_mark(user=user, question=Question.objects.get(slug=slug), answer=answer)
    choice = Question.objects.filter(kind=Question.Kind.MULTIPLE_CHOICE).first()
    submit_and_mark(user=user, question=choice, answer="0")
    question = Question.objects.get(slug="prefill-decode-ttft")
    follow_up = question.spec["follow_ups"][0]["slug"]
    submit_and_mark(user=user, question=question, answer="It depends on input and output tokens.", follow_up=follow_up)
    target = make_target(scripted_engine("--ttft-ms", "5", "--gap-ms", "1"))
    lab = Lab.objects.get(slug="ttft-vs-output-length")
    for _ in range(2):
        run = LabRun.objects.create(
            user=user, lab=lab, target=target, model_name=target.default_model,
            params={"max_tokens": [8, 16], "prompt_tokens": 16, "repeats": 2}, prediction="TTFT flat",
        )
        assert execute_run(run_id=run.pk) == "succeeded", LabRun.objects.get(pk=run.pk).error
    return user


def _name(path: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", path.lower()).strip("-") or "home"


def _overflow(page) -> dict:
    """The document's width against the viewport's, and the widest elements sticking out."""
    return page.evaluate(
        """() => {
          const width = window.innerWidth;
          const culprits = [];
          for (const el of document.querySelectorAll('body *')) {
            const box = el.getBoundingClientRect();
            if (box.right > width + 1 && box.width > 0) {
              const name = `${el.tagName.toLowerCase()}.${[...el.classList].join('.')}`;
              culprits.push(`${name} right=${Math.round(box.right)}`);
            }
          }
          return {scroll: document.documentElement.scrollWidth, viewport: width, culprits: culprits.slice(0, 5)};
        }"""
    )


def _links(page, site_url: str) -> list[str]:
    hrefs = page.eval_on_selector_all("a[href]", "links => links.map(a => a.href)")
    found = []
    for href in hrefs:
        url, _ = urldefrag(href)
        parts = urlsplit(url)
        if f"{parts.scheme}://{parts.netloc}" != site_url or SKIP.search(parts.path):
            continue
        found.append(parts.path + (f"?{parts.query}" if parts.query else ""))
    return found


def _crawl(page, site_url: str, *, width: int, start: list[str], limit: int, shots: str) -> tuple[list, list]:
    seen, queue, too_wide = set(start), deque(start), []
    visited = []
    out = SCREENSHOTS / shots
    out.mkdir(parents=True, exist_ok=True)
    missing: list[str] = []
    page.on("response", lambda r: missing.append(r.url) if r.status == 404 else None)
    while queue and len(visited) < limit:
        path = queue.popleft()
        before = len(page.problems)
        missing.clear()
        response = page.goto(f"{site_url}{path}")
        page.wait_for_load_state("load")
        # Say on which page a problem (a console error, a missing file) was seen.
        page.problems[before:] = [f"{path}: {problem} {missing}" for problem in page.problems[before:]]
        if response is None or "text/html" not in (response.headers.get("content-type") or ""):
            continue
        visited.append(path)
        measured = _overflow(page)
        if measured["scroll"] > measured["viewport"]:
            too_wide.append(f"{path}: {measured['scroll']} px > {width} px; {measured['culprits']}")
        page.screenshot(path=str(out / f"{_name(path)}.png"), full_page=True)
        for link in _links(page, site_url):
            if link not in seen:
                seen.add(link)
                queue.append(link)
    return visited, too_wide


@pytest.mark.layout
def test_no_page_is_wider_than_a_phone(live_site, browser, learner_with_history):
    context = browser.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=1, is_mobile=True)
    page = watched_page(context)
    try:
        log_in(page, live_site.url, username=learner_with_history.username)
        nav = [
            "/", "/learn/", "/practice/", "/labs/", "/accounts/me/", "/practice/review/", "/glossary/",
            "/accounts/me/data/", "/status/",
            # The mock interview starts from a form, not a link: a question and the end page.
            f"/practice/sets/{INTERVIEW_SET}/interview/?minutes=4",
            f"/practice/sets/{INTERVIEW_SET}/interview/?step=99",
        ]
        visited, too_wide = _crawl(page, live_site.url, width=390, start=nav, limit=MAX_PAGES, shots="mobile")
        # Every kind of page was reached, not just the nav.
        kinds = ["/learn/lessons/", "/practice/q/", "/practice/sets/", "/practice/attempts/", "/labs/runs/"]
        missing_kinds = [kind for kind in kinds if not any(path.startswith(kind) for path in visited)]
        assert not too_wide, "pages wider than 390 px:\n" + "\n".join(too_wide)
        assert not page.problems, "\n".join(page.problems)
        print(f"{len(visited)} pages at 390 px, none wider than the viewport")
        assert not missing_kinds, (missing_kinds, visited)
    finally:
        context.close()


@pytest.mark.layout
def test_the_top_pages_fit_at_360_and_read_at_1280(live_site, browser, learner_with_history):
    nav = ["/", "/learn/", "/practice/", "/labs/", "/accounts/me/", "/practice/review/", "/glossary/"]
    for width, shots in ((360, "mobile-360"), (1280, "desktop")):
        context = browser.new_context(viewport={"width": width, "height": 900})
        page = watched_page(context)
        try:
            log_in(page, live_site.url, username=learner_with_history.username)
            _, too_wide = _crawl(page, live_site.url, width=width, start=nav, limit=len(nav) + 25, shots=shots)
            assert not too_wide, f"pages wider than {width} px:\n" + "\n".join(too_wide)
            assert not page.problems, page.problems
        finally:
            context.close()


def test_the_interview_clock_stops_at_zero_and_on_submit(live_site, browser, learner_with_history):
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = watched_page(context)
    try:
        page.clock.install()
        log_in(page, live_site.url, username=learner_with_history.username)
        page.goto(f"{live_site.url}/practice/sets/{INTERVIEW_SET}/interview/?minutes=1")
        clock = page.get_by_test_id("clock")
        assert clock.inner_text() == "1:00"
        assert page.locator("textarea[name=answer]").input_value() == ""  # a fresh question
        assert page.get_by_test_id("mark-sheet").count() == 0
        page.clock.run_for(15_000)
        assert clock.inner_text() == "0:45"
        page.clock.run_for(120_000)  # well past the minute
        assert clock.inner_text().startswith("0:00") and "time is up" in clock.inner_text()
        assert clock.get_attribute("data-state") == "expired"
        page.screenshot(path=str(SCREENSHOTS / "mobile" / "interview-clock-at-zero.png"), full_page=True)
        # The next question: submitting stops its clock where it stands.
        page.get_by_role("link", name="Skip this question").click()
        page.clock.run_for(5_000)
        page.locator("textarea[name=answer]").fill("Prefill is compute-bound; decode is memory-bound.")
        page.evaluate("document.getElementById('interview-answer').addEventListener('submit', e => e.preventDefault())")
        page.get_by_role("button", name=re.compile("Submit and")).click()
        stopped_at = clock.inner_text()
        page.clock.run_for(10_000)
        assert clock.inner_text() == stopped_at and clock.get_attribute("data-state") == "stopped"
        assert not page.problems, page.problems
    finally:
        context.close()
