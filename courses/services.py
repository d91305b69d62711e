from datetime import timedelta

from django.contrib.auth.models import AbstractBaseUser
from django.utils import timezone

from core.learner_state import renew_learner_state
from courses.models import Lesson, LessonProgress

# Reloading the lesson a learner is already on need not write: "continue where you left off"
# only needs to know which lesson was viewed last, and that has not changed.
VIEW_REWRITE_AFTER = timedelta(minutes=1)


def record_lesson_view(
    *, user: AbstractBaseUser, lesson: Lesson, known: dict[int, LessonProgress] | None = None
) -> LessonProgress:
    """Note that the learner is reading the lesson. ``known`` is every progress row of theirs
    (courses.selectors.progress_by_lesson), when the caller has it: then a reload of the lesson
    viewed last within VIEW_REWRITE_AFTER writes nothing, and any other view is one UPDATE or INSERT."""
    now = timezone.now()
    if known is None:
        progress, _ = LessonProgress.objects.update_or_create(
            user=user, lesson=lesson, defaults={"last_viewed_at": now}
        )
        return progress
    progress = known.get(lesson.pk)
    if progress is None:
        progress = LessonProgress(user=user, lesson=lesson, last_viewed_at=now)
        # One INSERT that yields to a row the learner's other tab created a moment ago.
        LessonProgress.objects.bulk_create([progress], ignore_conflicts=True)
        renew_learner_state(user_ids=[user.pk])
        return progress
    viewed = [row.last_viewed_at for row in known.values() if row.last_viewed_at is not None]
    last_viewed = progress.last_viewed_at is not None and progress.last_viewed_at == max(viewed)
    if last_viewed and now - progress.last_viewed_at < VIEW_REWRITE_AFTER:
        return progress
    LessonProgress.objects.filter(pk=progress.pk).update(last_viewed_at=now)
    renew_learner_state(user_ids=[user.pk])
    progress.last_viewed_at = now
    return progress


def set_lesson_done(*, user: AbstractBaseUser, lesson: Lesson, done: bool) -> LessonProgress:
    progress, _ = LessonProgress.objects.get_or_create(user=user, lesson=lesson)
    if done and progress.completed_at is None:
        progress.completed_at = timezone.now()
    elif not done:
        progress.completed_at = None
    progress.save(update_fields=["completed_at"])
    return progress


def delete_progress_of(*, user: AbstractBaseUser) -> int:
    """Part of deleting an account (accounts.services.delete_account): the learner's progress."""
    deleted, _ = LessonProgress.objects.filter(user=user).delete()
    return deleted
