import time

from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRefresh

from core.shared import shared_part
from courses import selectors, services
from courses.models import Course
from labs import selectors as lab_selectors
from questions import selectors as question_selectors
from questions import services as question_services
from questions.forms import answer_form_for


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


def _lesson_page(slug: str) -> dict | None:
    """The part of a lesson page every learner shares, once per content version (core.shared)."""

    def build() -> dict | None:
        parts = selectors.lesson_page_parts(slug=slug)
        if parts is None:
            return None
        lesson = parts["lesson"]
        return {
            **parts,
            "practice_questions": question_selectors.questions_by_slug(slugs=lesson.practice),
            "try_labs": lab_selectors.labs_by_slug(slugs=lesson.labs),
            "check_questions": question_selectors.check_questions(slugs=lesson.checks),
        }

    return shared_part(name=f"lesson-page:{slug}", build=build)


def _live_lesson_page(slug: str) -> dict:
    page = _lesson_page(slug)
    if page is None:
        raise Http404("No such lesson")
    return page


def _render_lesson(request: HttpRequest, lesson_slug: str) -> HttpResponse:
    page = _live_lesson_page(lesson_slug)
    lesson = page["lesson"]
    learner = _learner_state(request, page)
    if request.user.is_authenticated:
        learner["progress"] = services.record_lesson_view(user=request.user, lesson=lesson, known=learner["rows"])
    context = {
        "lesson": lesson,
        "rendered": page["rendered"],
        "body_parts": page["body_parts"],
        "previous": page["previous"],
        "next": page["following"],
        "practice_questions": page["practice_questions"],
        "try_labs": page["try_labs"],
        "checks": _checks(page, learner["latest"]),
        **learner,
    }
    return render(request, "courses/lesson.html", context)


def _learner_state(request: HttpRequest, page: dict) -> dict:
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
    }


_NO_PROGRESS = {"module_progress": None, "course_progress": None, "checks_progress": None}


def _checks(page: dict, latest: dict) -> list[dict]:
    return [
        {
            "question": question,
            "latest": latest.get(question.pk),
            "form": answer_form_for(question=question, auto_id=f"check-{question.slug}-%s"),
        }
        for question in page["check_questions"]
    ]


@login_required
@require_POST
def lesson_check(request: HttpRequest, lesson_slug: str, question_slug: str) -> HttpResponse:
    """Answer one of the lesson's checks in place: grade it, then show the score and worked answer.

    With htmx the check's card is swapped; without JavaScript the browser returns to the check on
    the lesson page. The attempt is an ordinary practice attempt (mark sheet, review schedule).
    """
    page = _live_lesson_page(lesson_slug)
    lesson = page["lesson"]
    question = next((item for item in page["check_questions"] if item.slug == question_slug), None)
    if question is None:
        raise Http404("That question is not a check in this lesson")
    form = answer_form_for(question=question, data=request.POST, auto_id=f"check-{question.slug}-%s")
    if form.is_valid():
        try:
            question_services.submit_answer(
                user=request.user, question=question, answer=str(form.cleaned_data["answer"] or "")
            )
        except ValidationError as error:
            form.add_error("answer", error)
        except question_services.RateLimited as error:
            form.add_error(None, str(error))
        else:
            if not request.htmx:
                return redirect(f"{lesson.get_absolute_url()}#check-{question.slug}")
            form = answer_form_for(question=question, auto_id=f"check-{question.slug}-%s")
    learner = _learner_state(request, page)
    checks = _checks(page, learner["latest"])
    check = next(item for item in checks if item["question"].slug == question_slug)
    if form.errors:
        check["form"] = form
    if not request.htmx:
        context = {
            "lesson": lesson,
            "rendered": page["rendered"],
            "body_parts": page["body_parts"],
            "previous": page["previous"],
            "next": page["following"],
            "practice_questions": page["practice_questions"],
            "try_labs": page["try_labs"],
            "checks": checks,
            **learner,
        }
        return render(request, "courses/lesson.html", context, status=422)
    response = render(request, "courses/lesson.html#lesson-check", {"lesson": lesson, "check": check})
    # The progress panel counts answered checks; refresh it out of band.
    response.content += render(request, "courses/lesson.html#progress-panel-oob", {"lesson": lesson, **learner}).content
    return response


@login_required
@require_POST
def lesson_done(request: HttpRequest, lesson_slug: str) -> HttpResponse:
    page = _live_lesson_page(lesson_slug)
    lesson = page["lesson"]
    done = request.POST.get("done", "1") == "1"
    services.set_lesson_done(user=request.user, lesson=lesson, done=done)
    if not request.htmx:
        return redirect(lesson.get_absolute_url())
    if request.htmx.boosted:
        return HttpResponseClientRefresh()
    context = {"lesson": lesson, **_learner_state(request, page)}
    return render(request, "courses/lesson.html#progress-panel", context)
