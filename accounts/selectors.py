from django.contrib.auth.models import AbstractBaseUser
from django.utils import timezone

from courses.models import LessonProgress
from labs.models import LabRun
from questions.models import Attempt, ReviewCard


def learner_activity(*, user: AbstractBaseUser) -> dict:
    """Everything the Me page shows: the learner's own rows only."""
    completed = (
        LessonProgress.objects.filter(user=user, completed_at__isnull=False, lesson__retired=False)
        .select_related("lesson")
        .order_by("-completed_at")
    )
    attempts = (
        Attempt.objects.filter(user=user)
        .select_related("question", "question__question_set")
        .order_by("-created_at")[:20]
    )
    return {
        "completed_lessons": completed,
        "recent_attempts": attempts,
        "attempt_count": Attempt.objects.filter(user=user).count(),
        "reviews_due": ReviewCard.objects.filter(user=user, due__lte=timezone.now()).count(),
        "lab_runs": LabRun.objects.filter(user=user).select_related("lab", "target").order_by("-created_at")[:20],
    }


def learner_data_counts(*, user: AbstractBaseUser) -> dict:
    """What the "Your data" and delete pages say Prefill holds, so the learner knows what goes."""
    return {
        "data_counts": {
            "lessons": LessonProgress.objects.filter(user=user).count(),
            "attempts": Attempt.objects.filter(user=user).count(),
            "review_cards": ReviewCard.objects.filter(user=user).count(),
            "lab_runs": LabRun.objects.filter(user=user).count(),
        },
        "active_runs": LabRun.objects.filter(user=user, status__in=LabRun.ACTIVE).count(),
    }
