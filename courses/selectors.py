"""Read-side queries for courses: course outline with progress, rendered lesson HTML (cached)."""

import copy
from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.cache import cache
from django.db.models import Count, Q

from core.lru import BoundedLRU
from core.shared import shared_part
from core.versions import rendering_version
from courses.models import Course, Lesson, LessonProgress, Module
from courses.rendering import render_lesson_body


@dataclass(frozen=True)
class Progress:
    done: int
    total: int

    @property
    def percent(self) -> int:
        return round(100 * self.done / self.total) if self.total else 0


def live_lesson(*, slug: str) -> Lesson | None:
    return Lesson.objects.live().select_related("module", "module__course").filter(slug=slug).first()


def live_course() -> Course | None:
    return Course.objects.live().first()


def _done_slugs(user: AbstractBaseUser | AnonymousUser) -> set[str] | None:
    if not user.is_authenticated:
        return None
    return set(
        LessonProgress.objects.filter(user=user, completed_at__isnull=False).values_list("lesson__slug", flat=True)
    )


def _course_catalogue() -> tuple[Course | None, list[tuple[Module, list[Lesson]]]]:
    """The live course, its modules and their lessons: the same for every learner, so built
    once per content version (core.shared). Read-only: course_outline copies what it marks."""
    course = live_course()
    if course is None:
        return None, []
    lessons = (
        Lesson.objects.live()
        .filter(module__course=course)
        .select_related("module")
        .only("slug", "title", "summary", "minutes", "order", "module__id")
    )
    by_module: dict[int, list[Lesson]] = {}
    for lesson in lessons:
        by_module.setdefault(lesson.module_id, []).append(lesson)
    return course, [(module, by_module.get(module.pk, [])) for module in Module.objects.live().filter(course=course)]


def course_outline(*, user: AbstractBaseUser | AnonymousUser) -> dict:
    course, catalogue = shared_part(name="course-catalogue", build=_course_catalogue)
    if course is None:
        return {"course": None, "modules": [], "course_progress": None}
    done = _done_slugs(user)
    modules = []
    for shared_module, shared_lessons in catalogue:
        # Copies: the shared objects are read by every request at once.
        module_lessons = [copy.copy(lesson) for lesson in shared_lessons]
        for lesson in module_lessons:
            lesson.is_done = done is not None and lesson.slug in done
        module = copy.copy(shared_module)
        module.lesson_list = module_lessons
        module.lesson_count = len(module_lessons)
        module.done = None if done is None else sum(1 for lesson in module_lessons if lesson.is_done)
        module.progress = None if done is None else Progress(done=module.done, total=module.lesson_count)
        modules.append(module)
    total = sum(module.lesson_count for module in modules)
    course_progress = None if done is None else Progress(done=sum(m.done for m in modules), total=total)
    return {"course": course, "modules": modules, "course_progress": course_progress}


def completed_lessons(*, user: AbstractBaseUser):
    """The learner's finished lessons, most recent first."""
    return (
        LessonProgress.objects.filter(user=user, completed_at__isnull=False, lesson__retired=False)
        .select_related("lesson")
        .order_by("-completed_at")
    )


def home_context(*, user: AbstractBaseUser | AnonymousUser) -> dict:
    context = course_outline(user=user)
    context["continue_lesson"] = continue_lesson(user=user)
    return context


def continue_lesson(*, user: AbstractBaseUser | AnonymousUser) -> Lesson | None:
    """The lesson to resume: the last one viewed if unfinished, else the first not yet done."""
    if not user.is_authenticated:
        return None
    last = (
        LessonProgress.objects.filter(user=user, lesson__retired=False, last_viewed_at__isnull=False)
        .select_related("lesson")
        .order_by("-last_viewed_at")
        .first()
    )
    if last and last.completed_at is None:
        return last.lesson
    done = _done_slugs(user) or set()
    if not done and last is None:
        return None
    return Lesson.objects.live().exclude(slug__in=done).order_by("order").first()


def lesson_neighbours(*, lesson: Lesson) -> tuple[Lesson | None, Lesson | None]:
    previous = Lesson.objects.live().filter(order__lt=lesson.order).order_by("-order").only("slug", "title").first()
    following = Lesson.objects.live().filter(order__gt=lesson.order).order_by("order").only("slug", "title").first()
    return previous, following


def _progress(*, user: AbstractBaseUser, lessons) -> Progress:
    counts = lessons.aggregate(
        total=Count("id"),
        done=Count("id", filter=Q(progress__user=user, progress__completed_at__isnull=False)),
    )
    return Progress(done=counts["done"], total=counts["total"])


def lesson_progress(*, user: AbstractBaseUser, lesson: Lesson) -> LessonProgress | None:
    return LessonProgress.objects.filter(user=user, lesson=lesson).first()


def module_progress(*, user: AbstractBaseUser, module: Module) -> Progress:
    return _progress(user=user, lessons=Lesson.objects.live().filter(module=module))


def course_progress(*, user: AbstractBaseUser, course: Course) -> Progress:
    return _progress(user=user, lessons=Lesson.objects.live().filter(module__course=course))


_LOCAL_RENDER_CACHE = BoundedLRU(max_items=64)


def lesson_cache_key(*, lesson: Lesson) -> str:
    return f"lesson-html:{rendering_version()}:{lesson.content_hash}"


def rendered_lesson(*, lesson: Lesson) -> dict:
    key = lesson_cache_key(lesson=lesson)
    rendered = _LOCAL_RENDER_CACHE.get(key)
    if rendered is None:
        rendered = cache.get(key)
        if rendered is None:
            result = render_lesson_body(body=lesson.body)
            rendered = {"html": result.html, "toc": result.toc}
            cache.set(key, rendered, timeout=None)
        _LOCAL_RENDER_CACHE.put(key, rendered)
    return rendered


def lesson_ref_section(*, ref: str) -> tuple[str, str, int] | None:
    """(url, lesson title, reading minutes) for a `slug#anchor` reference, or None when not live."""
    slug, _, anchor = ref.partition("#")
    lesson = Lesson.objects.live().filter(slug=slug).only("slug", "title", "minutes").first()
    if lesson is None:
        return None
    url = lesson.get_absolute_url()
    return (f"{url}#{anchor}" if anchor else url, lesson.title, lesson.minutes)


def lesson_ref_link(*, ref: str) -> tuple[str, str] | None:
    """(url, lesson title) for a `slug#anchor` reference, or None when the lesson is not live."""
    slug, _, anchor = ref.partition("#")
    lesson = Lesson.objects.live().filter(slug=slug).only("slug", "title").first()
    if lesson is None:
        return None
    url = lesson.get_absolute_url()
    return (f"{url}#{anchor}" if anchor else url, lesson.title)


def _iso(value) -> str | None:
    return value.isoformat() if value else None


def progress_export(*, user: AbstractBaseUser) -> list[dict]:
    """The learner's lesson progress for their data export (docs/data-export.md)."""
    return [
        {
            "lesson": progress.lesson.slug,
            "lesson_title": progress.lesson.title,
            "last_viewed_at": _iso(progress.last_viewed_at),
            "completed_at": _iso(progress.completed_at),
        }
        for progress in LessonProgress.objects.filter(user=user).select_related("lesson").order_by("lesson__order")
    ]


def progress_count(*, user: AbstractBaseUser) -> int:
    return LessonProgress.objects.filter(user=user).count()


@dataclass(frozen=True)
class LessonPage:
    """What every learner's copy of a lesson page shares, built once per content version.

    Read by many threads at once (core.shared): never modify it or the objects it holds.
    """

    lesson: Lesson  # with its module and course loaded
    rendered: dict
    body_parts: tuple[str, str]
    previous: Lesson | None
    following: Lesson | None
    practice_questions: list
    try_labs: list
    check_questions: list
    module_lesson_ids: frozenset[int]
    course_lesson_ids: frozenset[int]


REFERENCES_HEADING = '<h2 id="references"'


def _body_around_checks(html: str) -> tuple[str, str]:
    """The rendered body split before its References heading, where the checks go."""
    before, heading, after = html.partition(REFERENCES_HEADING)
    return (before, heading + after) if heading else (html, "")


def lesson_page_parts(*, slug: str) -> dict | None:
    """This app's share of a lesson page (the lesson, its body, neighbours, progress scopes); the
    view adds the other apps' parts (questions, labs) and caches the whole (core.shared)."""
    lesson = live_lesson(slug=slug)
    if lesson is None:
        return None
    previous, following = lesson_neighbours(lesson=lesson)
    rendered = rendered_lesson(lesson=lesson)
    live = Lesson.objects.live()
    return {
        "lesson": lesson,
        "rendered": rendered,
        "body_parts": _body_around_checks(rendered["html"]),
        "previous": previous,
        "following": following,
        "module_lesson_ids": frozenset(live.filter(module_id=lesson.module_id).values_list("pk", flat=True)),
        "course_lesson_ids": frozenset(
            live.filter(module__course_id=lesson.module.course_id).values_list("pk", flat=True)
        ),
    }


def progress_by_lesson(*, user: AbstractBaseUser) -> dict[int, LessonProgress]:
    """Every progress row of the learner, by lesson id (one query; a row per lesson at most)."""
    rows = LessonProgress.objects.filter(user=user).only("id", "lesson_id", "last_viewed_at", "completed_at")
    return {row.lesson_id: row for row in rows}


def progress_among(*, rows: dict[int, LessonProgress], lesson_ids: frozenset[int]) -> Progress:
    done = sum(1 for lesson_id in lesson_ids if (row := rows.get(lesson_id)) and row.completed_at is not None)
    return Progress(done=done, total=len(lesson_ids))
