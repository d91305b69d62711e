import time

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRefresh

from core.page_cache import per_learner_page
from core.shared import shared_part
from courses import selectors, services
from courses.models import Course
from labs import selectors as lab_selectors
from questions import selectors as question_selectors


@require_GET
def home(request: HttpRequest) -> HttpResponse:
    return render(request, "core/home.html", selectors.home_context(user=request.user))


@require_GET
def course_index(request: HttpRequest) -> HttpResponse:
    return render(request, "courses/course.html", selectors.course_outline(user=request.user))


@require_GET
def course_detail(request: HttpRequest, course_slug: str) -> HttpResponse:
    get_object_or_404(Course.objects.live(), slug=course_slug)
    return redirect("courses:index")


# An anonymous visitor's lesson page is the same for everyone (no form posts, no CSRF token, no
# progress), so each process keeps it for a few seconds: no query and no template per request.
# Content only changes through sync_content, which therefore shows within the TTL.
ANONYMOUS_PAGE_TTL_S = 10.0
_anonymous_pages: dict[str, tuple[float, bytes]] = {}


# Kept no longer than a reload goes without noting the view (services.VIEW_REWRITE_AFTER), so
# "continue where you left off" stays right; any other lesson's view renews the learner's token.
@per_learner_page(max_age_s=services.VIEW_REWRITE_AFTER.total_seconds())
@require_GET
def lesson_detail(request: HttpRequest, lesson_slug: str) -> HttpResponse:
    cacheable = not request.user.is_authenticated and not request.htmx and "messages" not in request.COOKIES
    if cacheable:
        hit = _anonymous_pages.get(lesson_slug)
        if hit is not None and time.monotonic() - hit[0] < ANONYMOUS_PAGE_TTL_S:
            return HttpResponse(hit[1])
    response = _render_lesson(request, lesson_slug)
    if cacheable and response.status_code == 200:
        _anonymous_pages[lesson_slug] = (time.monotonic(), response.content)
    return response


def lesson_page(slug: str) -> dict | None:
    """The part of a lesson page every learner shares, once per content version (core.shared)."""

    def build() -> dict | None:
        parts = selectors.lesson_page_parts(slug=slug)
        if parts is None:
            return None
        lesson = parts["lesson"]
        page = {
            **parts,
            "next": parts["following"],
            "practice_questions": question_selectors.questions_by_slug(slugs=lesson.practice),
            "try_labs": lab_selectors.labs_by_slug(slugs=lesson.labs),
            "check_questions": question_selectors.check_questions(slugs=lesson.checks),
        }
        # Rendered here, once, rather than by every request's template.
        page["html"] = {
            part: render_to_string(f"courses/lesson.html#lesson-{part}", page)
            for part in ("head", "lists", "nav", "toc")
        }
        return page

    return shared_part(name=f"lesson-page:{slug}", build=build)


def live_lesson_page(slug: str) -> dict:
    """The shared part of a live lesson's page; 404 for any other slug."""
    page = lesson_page(slug)
    if page is None:
        raise Http404("No such lesson")
    return page


def _render_lesson(request: HttpRequest, lesson_slug: str) -> HttpResponse:
    page = live_lesson_page(lesson_slug)
    lesson = page["lesson"]
    learner = learner_state(request, page)
    if request.user.is_authenticated:
        learner["progress"] = services.record_lesson_view(user=request.user, lesson=lesson, known=learner["rows"])
    return render(request, "courses/lesson.html", lesson_page_context(page, learner))


def lesson_page_context(page: dict, learner: dict, *, checks: list[dict] | None = None) -> dict:
    """The whole lesson page's context: the shared part, then the learner's own."""
    return {
        "lesson": page["lesson"],
        "rendered": page["rendered"],
        "body_parts": page["body_parts"],
        "shared_html": page["html"],
        "checks": checks if checks is not None else lesson_checks(page, learner["latest"]),
        **learner,
    }


def learner_state(request: HttpRequest, page: dict) -> dict:
    """The learner's own part of a lesson page: two queries (progress rows, latest check answers)."""
    if not request.user.is_authenticated:
        return {"rows": {}, "latest": {}, "progress": None, **_NO_PROGRESS}
    rows = selectors.progress_by_lesson(user=request.user)
    checks = page["check_questions"]
    latest = question_selectors.latest_main_attempts(
        user=request.user, question_ids=[question.pk for question in checks]
    )
    answered = sum(1 for question in checks if question.pk in latest)
    return {
        "rows": rows,
        "latest": latest,
        "progress": rows.get(page["lesson"].pk),
        "module_progress": selectors.progress_among(rows=rows, lesson_ids=page["module_lesson_ids"]),
        "course_progress": selectors.progress_among(rows=rows, lesson_ids=page["course_lesson_ids"]),
        "checks_progress": {"answered": answered, "total": len(checks)} if checks else None,
        # A check answer still being marked: without JavaScript the page reloads until it is in.
        "grading": any(attempt.grading for attempt in latest.values()),
    }


_NO_PROGRESS = {"module_progress": None, "course_progress": None, "checks_progress": None}


def lesson_checks(page: dict, latest: dict) -> list[dict]:
    """The lesson's checks with the learner's latest answers; their forms are built in the template
    (questions' ``answer_form`` tag), so this page reads the questions app through its selectors only."""
    return [{"question": question, "latest": latest.get(question.pk)} for question in page["check_questions"]]


@login_required
@require_POST
def lesson_done(request: HttpRequest, lesson_slug: str) -> HttpResponse:
    page = live_lesson_page(lesson_slug)
    lesson = page["lesson"]
    done = request.POST.get("done", "1") == "1"
    services.set_lesson_done(user=request.user, lesson=lesson, done=done)
    if not request.htmx:
        return redirect(lesson.get_absolute_url())
    if request.htmx.boosted:
        return HttpResponseClientRefresh()
    context = {"lesson": lesson, **learner_state(request, page)}
    return render(request, "courses/lesson.html#progress-panel", context)
