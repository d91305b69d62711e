from django.contrib.auth.models import AbstractBaseUser

from courses import selectors as course_selectors
from labs import selectors as lab_selectors
from questions import selectors as question_selectors

# What the Me page lists of each (its newest first).
RECENT_ANSWERS = 8
RECENT_RUNS = 10


def learner_activity(*, user: AbstractBaseUser) -> dict:
    """Everything the Me page shows: the learner's own rows only, each read through its app's selectors."""
    return {
        "completed_lessons": course_selectors.completed_lessons(user=user),
        "modules": course_selectors.course_outline(user=user)["modules"],
        "set_progress": question_selectors.set_progress(user=user),
        "recent_attempts": question_selectors.recent_attempts(user=user, limit=RECENT_ANSWERS),
        "attempt_count": question_selectors.attempt_count(user=user),
        "reviews_due": question_selectors.reviews_due_count(user=user),
        "lab_runs": lab_selectors.recent_runs(user=user, limit=RECENT_RUNS),
    }


def learner_data_counts(*, user: AbstractBaseUser) -> dict:
    """What the "Your data" and delete pages say Prefill holds, so the learner knows what goes."""
    runs = lab_selectors.run_counts(user=user)
    return {
        "data_counts": {
            "lessons": course_selectors.progress_count(user=user),
            "attempts": question_selectors.attempt_count(user=user),
            "review_cards": question_selectors.review_card_count(user=user),
            "lab_runs": runs["runs"],
        },
        "active_runs": runs["active"],
    }
