"""Read-side queries for practice, and access to the parsed question bank."""

from functools import lru_cache
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Count, Max, Q

from questions.bank import Bank, load_bank
from questions.models import Attempt, ModelAnswerReveal, Question, QuestionSet


def _bank_fingerprint(content_dir: Path) -> tuple:
    return tuple(sorted((path.name, path.stat().st_mtime_ns) for path in content_dir.glob("*.toml")))


@lru_cache(maxsize=4)
def _load_bank_cached(content_dir: str, fingerprint: tuple) -> Bank:
    return load_bank(content_dir=Path(content_dir))


def current_bank() -> Bank:
    """The bank as the files say now; re-parsed only when a file changed."""
    content_dir = Path(settings.CONTENT_DIRS["questions"])
    return _load_bank_cached(str(content_dir), _bank_fingerprint(content_dir))


def bank_question(*, slug: str):
    return current_bank().questions[slug]


def set_list(*, user: AbstractBaseUser | AnonymousUser) -> list[QuestionSet]:
    sets = list(QuestionSet.objects.live().annotate(total=Count("questions", filter=Q(questions__retired=False))))
    if user.is_authenticated:
        answered = dict(
            Attempt.objects.filter(user=user, follow_up="", question__retired=False)
            .values("question__question_set")
            .annotate(n=Count("question", distinct=True))
            .values_list("question__question_set", "n")
        )
        for question_set in sets:
            question_set.answered = answered.get(question_set.pk, 0)
            question_set.percent = round(100 * question_set.answered / question_set.total) if question_set.total else 0
    return sets


def questions_in_set(*, question_set: QuestionSet, user: AbstractBaseUser | AnonymousUser) -> list[Question]:
    questions = list(question_set.questions.live())
    if user.is_authenticated:
        best = dict(
            Attempt.objects.filter(user=user, follow_up="", question__in=questions)
            .values("question")
            .annotate(best=Max("score"))
            .values_list("question", "best")
        )
        for question in questions:
            question.best_score = best.get(question.pk)
    return questions


def set_siblings(*, question: Question) -> list[Question]:
    """The other live questions of the question's set, in the set's order ("Also asked about")."""
    return list(
        question.question_set.questions.live().exclude(pk=question.pk).only("slug", "prompt", "order")
    )


def attempts_for(*, user: AbstractBaseUser, question: Question, follow_up: str | None = None):
    attempts = Attempt.objects.filter(user=user, question=question)
    if follow_up is not None:
        attempts = attempts.filter(follow_up=follow_up)
    return attempts.order_by("-created_at")


def may_see_model_answer(*, user: AbstractBaseUser | AnonymousUser, question: Question) -> bool:
    """The model answer stays hidden until the learner has attempted or chose to reveal it."""
    if not user.is_authenticated:
        return False
    return (
        Attempt.objects.filter(user=user, question=question, follow_up="").exists()
        or ModelAnswerReveal.objects.filter(user=user, question=question).exists()
    )


def follow_up_spec(*, question: Question, follow_up: str) -> dict | None:
    for item in question.spec.get("follow_ups", []):
        if item.get("slug") == follow_up:
            return item
    return None
