"""Write-side logic for practice: storing an answer and grading it into its Attempt (in a worker
for free text), reveals, rate limits."""

import logging
import time
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from core.learner_state import renew_learner_state
from core.queueing import send
from questions.grading import grade
from questions.grading.judge import combine, judge
from questions.models import Attempt, ModelAnswerReveal, Question, ReviewCard, Rubric
from questions.review import schedule_review
from questions.rubrics import RubricUnavailable, gradable_from
from questions.selectors import current_rubric, current_rubric_version, follow_up_spec

logger = logging.getLogger(__name__)

MAX_ANSWER_CHARS = 10_000
# Registered by questions.tasks.judge_attempt; sent by name so this module need not import the
# task that calls it back (the name is the one queued messages carry).
JUDGE_ATTEMPT_TASK = "workers.tasks.judge_attempt"
GRADE_ATTEMPT_TASK = "questions.tasks.grade_attempt"


class RateLimited(Exception):
    def __init__(self, *, retry_after_s: int) -> None:
        self.retry_after_s = retry_after_s
        super().__init__(f"You have sent a lot of answers in the last minute. Try again in {retry_after_s} s.")


def clean_answer(*, answer: str) -> str:
    text = answer.replace("\r\n", "\n").strip()
    if not text:
        raise ValidationError("Write an answer before submitting: the box is empty.", code="empty")
    if len(text) > MAX_ANSWER_CHARS:
        raise ValidationError(
            f"Your answer is {len(text):,} characters; the limit is {MAX_ANSWER_CHARS:,}. "
            "An interview answer fits in a few paragraphs.",
            code="too_long",
        )
    return text


def check_rate_limit(*, user: AbstractBaseUser) -> None:
    """A fixed one-minute window per user, counted in the shared cache."""
    window = int(time.time() // 60)
    key = f"grading-rate:{user.pk}:{window}"
    count = cache.get_or_set(key, 0, timeout=120)
    if count >= settings.GRADING_RATE_LIMIT_PER_MINUTE:
        raise RateLimited(retry_after_s=60 - int(time.time() % 60))
    try:
        cache.incr(key)
    except ValueError:
        cache.set(key, 1, timeout=120)


def _gradable(*, question: Question, follow_up: str, rubric: Rubric):
    try:
        return gradable_from(
            question_spec=question.spec, rubric=rubric.spec, version=rubric.content_hash, follow_up=follow_up
        )
    except RubricUnavailable as error:
        raise ValidationError(f"This question cannot be graded yet: {error}", code="rubric_unavailable") from None


def _current_rubric(*, question: Question, follow_up: str) -> Rubric:
    if follow_up and follow_up_spec(question=question, follow_up=follow_up) is None:
        raise ValidationError(f"This question has no follow-up called '{follow_up}'.", code="unknown_follow_up")
    rubric = current_rubric(question=question, follow_up=follow_up)
    if rubric is None:
        raise ValidationError(
            "This question's rubric is not loaded; an operator must run `manage.py sync_content`.",
            code="rubric_missing",
        )
    return rubric


def _rubric_for_the_worker(*, question: Question, follow_up: str) -> Rubric:
    """The current rubric version, known to be gradable, without reading its spec: the worker
    reads it, and parsing it here too was a tenth of an answer's request. A rubric that is
    missing or not gradable takes the full path, whose error names what is wrong."""
    version = current_rubric_version(question=question, follow_up=follow_up)
    gradable = Rubric.objects.filter(question=question, content_hash=version, spec__has_key="concepts")
    rubric = gradable.defer("spec").first() if version else None
    if rubric is None:
        rubric = _current_rubric(question=question, follow_up=follow_up)
        _gradable(question=question, follow_up=follow_up, rubric=rubric)
    return rubric


def grades_in_worker(*, question: Question, follow_up: str = "") -> bool:
    """Free text (main answers and follow-ups) is marked by the sentence model, 50-300 ms of CPU,
    so it is graded on the grading queue; numeric and multiple-choice answers take microseconds
    and no model, so they are graded in the request as before and the learner never waits."""
    return bool(follow_up) or question.kind == Question.Kind.FREE_TEXT


def submit_answer(*, user: AbstractBaseUser, question: Question, answer: str, follow_up: str = "") -> Attempt:
    """Store the answer and have it graded: at once for numeric and multiple choice, by a worker
    for free text (the attempt is saved `pending` before anything is queued, so a lost message or
    a dead worker loses nothing: settle_stale_grades marks it later)."""
    text = clean_answer(answer=answer)
    in_worker = grades_in_worker(question=question, follow_up=follow_up)
    if in_worker:
        rubric = _rubric_for_the_worker(question=question, follow_up=follow_up)
    else:
        rubric = _current_rubric(question=question, follow_up=follow_up)
        gradable = _gradable(question=question, follow_up=follow_up, rubric=rubric)
    check_rate_limit(user=user)
    fields = {"user": user, "question": question, "follow_up": follow_up, "answer": text, "rubric": rubric,
              "rubric_version": rubric.content_hash}
    if in_worker:
        with transaction.atomic():
            attempt = Attempt.objects.create(
                **fields, score=0, max_score=0, result={}, grade_status=Attempt.GradeStatus.PENDING
            )
            transaction.on_commit(lambda: _enqueue_grade(attempt=attempt))
        return attempt
    data = grade(question=gradable, answer=text).to_dict()
    with transaction.atomic():
        attempt = Attempt.objects.create(**fields, score=data["score"], max_score=data["max_score"], result=data)
        _after_grading(attempt=attempt)
    return attempt


def _after_grading(*, attempt: Attempt) -> None:
    """What a mark sets off, inside the transaction that stores it: the review schedule (main
    answers) and the LLM judge's second opinion when one is configured."""
    if not attempt.follow_up:
        schedule_review(user=attempt.user, question=attempt.question, percent=attempt.percent)
    if judge_configured() and (attempt.follow_up or attempt.question.kind == Question.Kind.FREE_TEXT):
        Attempt.objects.filter(pk=attempt.pk).update(judge_status=Attempt.JudgeStatus.PENDING)
        attempt.judge_status = Attempt.JudgeStatus.PENDING
        transaction.on_commit(lambda: _enqueue_judge(attempt_id=attempt.pk))


def _enqueue_grade(*, attempt: Attempt) -> None:
    """Hand a stored answer to the grading worker. Where it is marked in this process instead
    (eager tasks, or the broker unreachable) the caller's copy gets the mark, so the page this
    request renders shows it."""
    try:
        # Its own queue and worker (settings.GRADING_QUEUE, scripts/services.py), so a mark never
        # waits behind a judge call or a probe on the default queue, and grading's CPU is bounded
        # by that worker's slots.
        kwargs = {"attempt_id": attempt.pk}
        marked_here = send(task_name=GRADE_ATTEMPT_TASK, kwargs=kwargs, queue=settings.GRADING_QUEUE)
        graded = Attempt.objects.filter(pk=attempt.pk).first() if marked_here else None
    except Exception:
        # The broker is unreachable: grade here and now rather than leave the learner waiting for
        # the settler (which needs the broker too). This request pays the 50-300 ms, once.
        logger.warning("Grading queue unreachable; grading attempt %s in the web process", attempt.pk, exc_info=True)
        graded = grade_pending_attempt(attempt_id=attempt.pk)
    if graded is not None:
        attempt.grade_status, attempt.score, attempt.max_score = graded.grade_status, graded.score, graded.max_score
        attempt.result, attempt.judge_status = graded.result, graded.judge_status


def grade_pending_attempt(*, attempt_id: int) -> Attempt | None:
    """Mark a pending attempt against the rubric version it was stored with. Idempotent: a
    re-queued message, or the settler racing the worker, finds it graded and leaves it alone
    (the write is conditional on `pending`, so two graders never both schedule a review)."""
    attempt = Attempt.objects.select_related("question", "rubric", "user").filter(pk=attempt_id).first()
    if attempt is None or attempt.grade_status != Attempt.GradeStatus.PENDING:
        return attempt
    rubric = attempt.rubric or _current_rubric(question=attempt.question, follow_up=attempt.follow_up)
    gradable = _gradable(question=attempt.question, follow_up=attempt.follow_up, rubric=rubric)
    data = grade(question=gradable, answer=attempt.answer).to_dict()
    with transaction.atomic():
        won = Attempt.objects.filter(pk=attempt.pk, grade_status=Attempt.GradeStatus.PENDING).update(
            grade_status=Attempt.GradeStatus.GRADED, score=data["score"], max_score=data["max_score"], result=data
        )
        if not won:
            return Attempt.objects.get(pk=attempt.pk)
        attempt.grade_status = Attempt.GradeStatus.GRADED
        attempt.score, attempt.max_score, attempt.result = data["score"], data["max_score"], data
        _after_grading(attempt=attempt)
        renew_learner_state(user_ids=[attempt.user_id])
    return attempt


# A grade normally lands within a second; one still pending after this long lost its message (a
# Redis restart) or its worker (not started, crashed). Long enough that a backlog under load is
# not graded twice over, short enough that a learner on the page still gets their mark.
GRADE_STALE_AFTER_S = 45
# Per settler run: its worker grades these itself (50-300 ms each), so one run stays short.
GRADE_SETTLE_BATCH = 40


def settle_stale_grades(*, now=None) -> list[int]:
    """Grade attempts left pending too long, here in the settler's own process (the default
    queue's worker), so an answer is marked even while no grading worker runs."""
    cutoff = (now or timezone.now()) - timedelta(seconds=GRADE_STALE_AFTER_S)
    stale = list(
        Attempt.objects.filter(grade_status=Attempt.GradeStatus.PENDING, created_at__lt=cutoff)
        .order_by("created_at")
        .values_list("pk", flat=True)[:GRADE_SETTLE_BATCH]
    )
    settled = []
    for attempt_id in stale:
        try:
            grade_pending_attempt(attempt_id=attempt_id)
        except ValidationError as error:
            # Its rubric cannot be loaded: nothing will ever mark it. Left pending, the learner
            # would watch "being marked" forever and a batch of such attempts would hold up every
            # answer behind it; it ends as "could not be marked", the answer kept.
            logger.warning("Attempt %s cannot be marked: %s", attempt_id, error.messages[0])
            give_up_grading(attempt_id=attempt_id)
        settled.append(attempt_id)
    return settled


def give_up_grading(*, attempt_id: int) -> None:
    """A pending attempt nothing can mark ends as unmarkable (conditional on still pending: a
    grader that got there first keeps its mark), and the learner's pages say so at once."""
    with transaction.atomic():
        changed = Attempt.objects.filter(pk=attempt_id, grade_status=Attempt.GradeStatus.PENDING).update(
            grade_status=Attempt.GradeStatus.UNMARKABLE
        )
        if changed:
            user_id = Attempt.objects.filter(pk=attempt_id).values_list("user_id", flat=True).first()
            renew_learner_state(user_ids=[user_id])


def judge_configured() -> bool:
    return bool(settings.GRADING_JUDGE_BASE_URL and settings.GRADING_JUDGE_MODEL)


def _enqueue_judge(*, attempt_id: int) -> None:
    try:
        send(task_name=JUDGE_ATTEMPT_TASK, kwargs={"attempt_id": attempt_id})
    except Exception:
        Attempt.objects.filter(pk=attempt_id).update(judge_status=Attempt.JudgeStatus.FAILED)
        renew_learner_state(user_ids=Attempt.objects.filter(pk=attempt_id).values_list("user_id", flat=True))


def apply_judge(*, attempt_id: int) -> Attempt:
    """Second opinion from the LLM judge; disagreements flag the attempt for staff review.

    The learner's answer goes to the model strictly as data (see questions.grading.judge); a
    timeout or a malformed reply leaves the deterministic result in place.
    """
    attempt = Attempt.objects.select_related("question", "rubric").get(pk=attempt_id)
    if attempt.judge_status != Attempt.JudgeStatus.PENDING:
        return attempt
    # The rubric the attempt was graded with, even if a sync has brought a newer one since.
    rubric = attempt.rubric or _current_rubric(question=attempt.question, follow_up=attempt.follow_up)
    gradable = _gradable(question=attempt.question, follow_up=attempt.follow_up, rubric=rubric)
    verdict = judge(
        question=gradable,
        answer=attempt.answer,
        base_url=settings.GRADING_JUDGE_BASE_URL,
        model=settings.GRADING_JUDGE_MODEL,
        api_key=settings.GRADING_JUDGE_API_KEY or None,
        timeout_s=settings.GRADING_JUDGE_TIMEOUT_S,
    )
    fields = {"judge_result": verdict.to_dict()}
    if not verdict.ok:
        fields["judge_status"] = Attempt.JudgeStatus.FAILED
    else:
        combined, disagreements = combine(
            rubric_result=grade(question=gradable, answer=attempt.answer), judge_result=verdict
        )
        data = combined.to_dict()
        data["disagreements"] = disagreements
        fields.update(
            judge_status=Attempt.JudgeStatus.DONE,
            result=data,
            score=data["score"],
            max_score=data["max_score"],
            flagged_for_review=bool(disagreements),
        )
    Attempt.objects.filter(pk=attempt.pk).update(**fields)
    renew_learner_state(user_ids=[attempt.user_id])
    attempt.refresh_from_db()
    return attempt


# An opinion that has not come after this many judge timeouts is not coming: its message was lost
# (a Redis restart) or its worker died. The rubric's result, stored with the attempt, stands.
JUDGE_GIVE_UP_AFTER_TIMEOUTS = 3
JUDGE_LOST_MESSAGE = "The second opinion did not arrive (its worker or message was lost); the rubric result stands."


def settle_stale_judgements() -> list[int]:
    """Move attempts that wait for the LLM judge too long to FAILED, so none waits forever."""
    cutoff = timezone.now() - timedelta(seconds=JUDGE_GIVE_UP_AFTER_TIMEOUTS * settings.GRADING_JUDGE_TIMEOUT_S + 30)
    stale = list(
        Attempt.objects.filter(judge_status=Attempt.JudgeStatus.PENDING, created_at__lt=cutoff).values_list(
            "pk", flat=True
        )
    )
    Attempt.objects.filter(pk__in=stale, judge_status=Attempt.JudgeStatus.PENDING).update(
        judge_status=Attempt.JudgeStatus.FAILED, judge_result={"ok": False, "error": JUDGE_LOST_MESSAGE}
    )
    renew_learner_state(user_ids=Attempt.objects.filter(pk__in=stale).values_list("user_id", flat=True).distinct())
    return stale


def load_grader() -> None:
    """Load the sentence model, the belief and criterion readers and the bank's reference vectors
    into this process (a grading worker does this once at start). Best effort: a worker that cannot load
    them still starts, and each answer then reports its own error through the settler's log."""
    from questions.grading.belief_reader import criterion_reader, reader
    from questions.grading.embedding import encoder
    from questions.grading.semantic import prepare_bank

    started = time.monotonic()
    try:
        encoder()
        reader()
        criterion_reader()
        count = prepare_bank(content_dir=Path(settings.CONTENT_DIRS["questions"]))
    except Exception:
        logger.exception("Could not load the grader's model; answers will be graded on first use")
        return
    logger.info("Grader loaded (%d rubrics prepared) in %.1f s", count, time.monotonic() - started)


def reveal_model_answer(*, user: AbstractBaseUser, question: Question) -> None:
    ModelAnswerReveal.objects.get_or_create(user=user, question=question)


def delete_practice_of(*, user: AbstractBaseUser) -> None:
    """Part of deleting an account (accounts.services.delete_account): the learner's answers and
    mark sheets, revealed model answers and review cards. Rubric rows are content, not theirs."""
    Attempt.objects.filter(user=user).delete()
    ModelAnswerReveal.objects.filter(user=user).delete()
    ReviewCard.objects.filter(user=user).delete()
