from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRefresh

from courses import selectors, services
from courses.models import Course, Lesson


@require_GET
def course_index(request: HttpRequest) -> HttpResponse:
    return render(request, "courses/course.html", selectors.course_outline(user=request.user))


@require_GET
def course_detail(request: HttpRequest, course_slug: str) -> HttpResponse:
    get_object_or_404(Course.objects.live(), slug=course_slug)
    return redirect("courses:index")


@require_GET
def lesson_detail(request: HttpRequest, lesson_slug: str) -> HttpResponse:
    lesson = get_object_or_404(Lesson.objects.live().select_related("module", "module__course"), slug=lesson_slug)
    progress = None
    if request.user.is_authenticated:
        progress = services.record_lesson_view(user=request.user, lesson=lesson)
    previous, following = selectors.lesson_neighbours(lesson=lesson)
    context = {
        "lesson": lesson,
        "rendered": selectors.rendered_lesson(lesson=lesson),
        "progress": progress,
        "previous": previous,
        "next": following,
        "practice_questions": selectors.linked_questions(slugs=lesson.practice),
        "try_labs": selectors.linked_labs(slugs=lesson.labs),
        **_progress_context(request, lesson),
    }
    return render(request, "courses/lesson.html", context)


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
    context = {"lesson": lesson, "progress": progress, **_progress_context(request, lesson)}
    return render(request, "courses/lesson.html#progress-panel", context)


def _progress_context(request: HttpRequest, lesson: Lesson) -> dict:
    if not request.user.is_authenticated:
        return {"module_progress": None, "course_progress": None}
    return {
        "module_progress": selectors.module_progress(user=request.user, module=lesson.module),
        "course_progress": selectors.course_progress(user=request.user, course=lesson.module.course),
    }
