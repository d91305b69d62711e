import time

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRefresh

from courses import selectors, services
from courses.models import Course, Lesson
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


def _render_lesson(request: HttpRequest, lesson_slug: str) -> HttpResponse:
    lesson = get_object_or_404(Lesson.objects.live().select_related("module", "module__course"), slug=lesson_slug)
    progress = None
    if request.user.is_authenticated:
        progress = services.record_lesson_view(user=request.user, lesson=lesson)
    previous, following = selectors.lesson_neighbours(lesson=lesson)
    rendered = selectors.rendered_lesson(lesson=lesson)
    context = {
        "lesson": lesson,
        "rendered": rendered,
        "body_parts": body_around_checks(rendered),
        "progress": progress,
        "previous": previous,
        "next": following,
        "practice_questions": question_selectors.questions_by_slug(slugs=lesson.practice),
        "try_labs": lab_selectors.labs_by_slug(slugs=lesson.labs),
        "checks": lesson_checks(request, lesson),
        **progress_context(request, lesson),
    }
    return render(request, "courses/lesson.html", context)


REFERENCES_HEADING = '<h2 id="references"'


def body_around_checks(rendered: dict) -> tuple[str, str]:
    """The rendered body split before its References heading, where the checks go."""
    html = rendered["html"]
    before, heading, after = html.partition(REFERENCES_HEADING)
    return (before, heading + after) if heading else (html, "")


def lesson_checks(request: HttpRequest, lesson: Lesson) -> list[dict]:
    """The lesson's checks with the learner's latest answers; their forms are built in the template
    (questions' ``answer_form`` tag), so this page reads the questions app through its selectors only."""
    return question_selectors.lesson_checks(user=request.user, slugs=lesson.checks)


@login_required
@require_POST
def lesson_done(request: HttpRequest, lesson_slug: str) -> HttpResponse:
    lesson = get_object_or_404(Lesson.objects.live().select_related("module", "module__course"), slug=lesson_slug)
    done = request.POST.get("done", "1") == "1"
    progress = services.set_lesson_done(user=request.user, lesson=lesson, done=done)
    if not request.htmx:
        return redirect(lesson.get_absolute_url())
    if request.htmx.boosted:
        return HttpResponseClientRefresh()
    context = {"lesson": lesson, "progress": progress, **progress_context(request, lesson)}
    return render(request, "courses/lesson.html#progress-panel", context)


def progress_context(request: HttpRequest, lesson: Lesson) -> dict:
    if not request.user.is_authenticated:
        return {"module_progress": None, "course_progress": None, "checks_progress": None}
    checks = question_selectors.lesson_checks(user=request.user, slugs=lesson.checks)
    return {
        "module_progress": selectors.module_progress(user=request.user, module=lesson.module),
        "course_progress": selectors.course_progress(user=request.user, course=lesson.module.course),
        "checks_progress": {
            "answered": sum(1 for check in checks if check["latest"] is not None),
            "total": len(checks),
        }
        if checks
        else None,
    }
