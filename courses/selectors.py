"""Read-side queries for courses: course outline with progress, rendered lesson HTML (cached)."""

from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.cache import cache
from django.db.models import Count, Q

from courses.models import Course, Lesson, LessonProgress, Module
from courses.rendering import RENDERER_VERSION, render_lesson_body
from labs.models import Lab
from questions.models import Question


@dataclass(frozen=True)
class Progress:
    done: int
    total: int

    @property
    def percent(self) -> int:
        return round(100 * self.done / self.total) if self.total else 0


def live_course() -> Course | None:
    return Course.objects.live().first()


def _done_slugs(user: AbstractBaseUser | AnonymousUser) -> set[str] | None:
    if not user.is_authenticated:
        return None
    return set(
        LessonProgress.objects.filter(user=user, completed_at__isnull=False).values_list("lesson__slug", flat=True)
    )


def course_outline(*, user: AbstractBaseUser | AnonymousUser) -> dict:
    course = live_course()
    if course is None:
        return {"course": None, "modules": [], "course_progress": None}
    done = _done_slugs(user)
    modules = []
    lessons = (
        Lesson.objects.live()
        .filter(module__course=course)
        .select_related("module")
        .only("slug", "title", "summary", "minutes", "order", "module__id")
    )
    by_module: dict[int, list[Lesson]] = {}
    for lesson in lessons:
        by_module.setdefault(lesson.module_id, []).append(lesson)
    for module in Module.objects.live().filter(course=course):
        module_lessons = by_module.get(module.pk, [])
        for lesson in module_lessons:
            lesson.is_done = done is not None and lesson.slug in done
        module.lesson_list = module_lessons
        module.lesson_count = len(module_lessons)
        module.done = None if done is None else sum(1 for lesson in module_lessons if lesson.is_done)
        module.progress = None if done is None else Progress(done=module.done, total=module.lesson_count)
        modules.append(module)
    total = sum(module.lesson_count for module in modules)
    course_progress = None if done is None else Progress(done=sum(m.done for m in modules), total=total)
    return {"course": course, "modules": modules, "course_progress": course_progress}


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


def module_progress(*, user: AbstractBaseUser, module: Module) -> Progress:
    return _progress(user=user, lessons=Lesson.objects.live().filter(module=module))


def course_progress(*, user: AbstractBaseUser, course: Course) -> Progress:
    return _progress(user=user, lessons=Lesson.objects.live().filter(module__course=course))


# Rendered lessons are immutable for a given content hash, so each process keeps them in memory
# after the first render and only falls back to the shared cache (then to rendering) on a miss.
_LOCAL_RENDER_CACHE: dict[str, dict] = {}
_LOCAL_RENDER_CACHE_MAX = 64


def rendered_lesson(*, lesson: Lesson) -> dict:
    key = f"lesson-html:{RENDERER_VERSION}:{lesson.content_hash}"
    rendered = _LOCAL_RENDER_CACHE.get(key)
    if rendered is None:
        rendered = cache.get(key)
        if rendered is None:
            result = render_lesson_body(body=lesson.body)
            rendered = {"html": result.html, "toc": result.toc}
            cache.set(key, rendered, timeout=None)
        if len(_LOCAL_RENDER_CACHE) >= _LOCAL_RENDER_CACHE_MAX:
            _LOCAL_RENDER_CACHE.pop(next(iter(_LOCAL_RENDER_CACHE)))
        _LOCAL_RENDER_CACHE[key] = rendered
    return rendered


def lesson_progress_for(*, user: AbstractBaseUser | AnonymousUser, lesson: Lesson) -> LessonProgress | None:
    if not user.is_authenticated:
        return None
    return LessonProgress.objects.filter(user=user, lesson=lesson).first()


def linked_questions(*, slugs: list[str]) -> list[Question]:
    """The lesson's practice questions in the order the lesson lists them."""
    found = {q.slug: q for q in Question.objects.live().filter(slug__in=slugs).only("slug", "prompt", "difficulty")}
    return [found[slug] for slug in slugs if slug in found]


def linked_labs(*, slugs: list[str]) -> list[Lab]:
    found = {lab.slug: lab for lab in Lab.objects.live().filter(slug__in=slugs).only("slug", "title", "objective")}
    return [found[slug] for slug in slugs if slug in found]


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
