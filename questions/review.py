"""Spaced review of questions with FSRS: each graded answer reschedules the question for the learner."""

from datetime import datetime, timedelta

from django.contrib.auth.models import AbstractBaseUser
from django.utils import timezone
from django.utils.timesince import timesince, timeuntil
from fsrs import Card, Rating, Scheduler

from questions.models import Question, ReviewCard

# Interview questions are reviewed over days, not minutes: the first steps are a few hours and a
# day, then FSRS takes over with its default 90% target retention.
SCHEDULER = Scheduler(
    learning_steps=(timedelta(hours=4), timedelta(days=1)),
    relearning_steps=(timedelta(hours=4),),
    enable_fuzzing=False,
)


def rating_for(*, percent: float) -> Rating:
    """Map a rubric score to how well the learner recalled the answer."""
    if percent < 40:
        return Rating.Again
    if percent < 70:
        return Rating.Hard
    if percent < 90:
        return Rating.Good
    return Rating.Easy


def schedule_review(
    *, user: AbstractBaseUser, question: Question, percent: float, at: datetime | None = None
) -> ReviewCard:
    now = at or timezone.now()
    row = ReviewCard.objects.filter(user=user, question=question).first()
    card = Card.from_dict(row.card) if row else Card(due=now)
    rating = rating_for(percent=percent)
    card, _ = SCHEDULER.review_card(card, rating, review_datetime=now)
    fields = {"card": card.to_dict(), "due": card.due, "last_rating": int(rating)}
    if row is None:
        return ReviewCard.objects.create(user=user, question=question, **fields)
    for name, value in fields.items():
        setattr(row, name, value)
    row.save(update_fields=list(fields))
    return row


def due_reviews(*, user: AbstractBaseUser, now: datetime | None = None):
    """Cards due by the end of the learner's day (UTC), oldest first."""
    now = now or timezone.now()
    end_of_day = now.replace(hour=23, minute=59, second=59, microsecond=0)
    return (
        ReviewCard.objects.filter(user=user, due__lte=end_of_day, question__retired=False)
        .select_related("question", "question__question_set")
        .defer("question__spec")  # the queue shows a card's prompt and set, never its rubric
        .order_by("due")
    )


def upcoming_reviews(*, user: AbstractBaseUser, now: datetime | None = None, limit: int = 10):
    now = now or timezone.now()
    end_of_day = now.replace(hour=23, minute=59, second=59, microsecond=0)
    return (
        ReviewCard.objects.filter(user=user, due__gt=end_of_day, question__retired=False)
        .select_related("question")
        .defer("question__spec")
        .order_by("due")[:limit]
    )


def due_label(*, due: datetime, now: datetime) -> str:
    """How the queue says when a card is due: "due now", "due 3 hours ago", "later today, in 2 hours"."""
    if due > now:
        return f"later today, in {timeuntil(due, now, depth=1)}"
    if (now - due) < timedelta(minutes=1):
        return "due now"
    return f"due {timesince(due, now, depth=1)} ago"


def review_queue(*, user: AbstractBaseUser, now: datetime | None = None) -> dict:
    """The review page: what is due today (with when), and what comes later."""
    now = now or timezone.now()
    due = list(due_reviews(user=user, now=now))
    for card in due:
        card.due_label = due_label(due=card.due, now=now)
    return {"due": due, "upcoming": upcoming_reviews(user=user, now=now)}
