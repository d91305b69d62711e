from django.contrib.auth.models import AbstractBaseUser
from django.utils import timezone

from courses.models import Lesson, LessonProgress


def record_lesson_view(*, user: AbstractBaseUser, lesson: Lesson) -> LessonProgress:
    progress, _ = LessonProgress.objects.update_or_create(
        user=user, lesson=lesson, defaults={"last_viewed_at": timezone.now()}
    )
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
