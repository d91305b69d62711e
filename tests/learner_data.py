"""A learner's history made through the real services: lessons viewed and done, graded answers
(mark sheets with evidence, a misconception), a revealed model answer, review cards, and lab
runs measured in-process against the scripted engine. Used by the data export/deletion tests
and the backup/restore test."""

from dataclasses import dataclass

from django.contrib.auth.models import User

from courses.models import Lesson
from courses.services import record_lesson_view, set_lesson_done
from labs.execution import execute_run
from labs.models import InferenceTarget, Lab, LabRun
from questions.models import Attempt, Question
from questions.services import reveal_model_answer
from tests.grading import submit_and_mark

STRONG = (
    "Decode is memory-bound: every step has to read all the weights from HBM to make one token. "
    "With batching the same weight read is shared by every sequence in the batch."
)
MISTAKEN = "Decode is compute-bound because it does lots of matrix maths on the weights."
RUN_PARAMS = {"max_tokens": [8], "prompt_tokens": 16, "repeats": 2}


@dataclass
class History:
    user: User
    attempts: list[Attempt]
    runs: list[LabRun]


def give_history(*, user: User, lab: Lab, target: InferenceTarget, tag: str) -> History:
    """`tag` goes into the learner's own text (answers, predictions), so a test can tell whose it is."""
    first, second = Lesson.objects.order_by("order")[:2]
    record_lesson_view(user=user, lesson=first)
    set_lesson_done(user=user, lesson=first, done=True)
    record_lesson_view(user=user, lesson=second)
    question = Question.objects.get(slug="sample-question")
    reveal_model_answer(user=user, question=question)
    attempts = [
        submit_and_mark(user=user, question=question, answer=f"{MISTAKEN} ({tag})"),
        submit_and_mark(user=user, question=question, answer=f"{STRONG} ({tag})"),
    ]
    measured = LabRun.objects.create(
        user=user,
        lab=lab,
        target=target,
        model_name=target.default_model,
        params=RUN_PARAMS,
        prediction=f"TTFT flat, total x2 ({tag})",
    )
    assert execute_run(run_id=measured.pk) == "succeeded", LabRun.objects.get(pk=measured.pk).error
    queued = LabRun.objects.create(
        user=user, lab=lab, target=target, model_name=target.default_model, params=RUN_PARAMS, prediction=""
    )
    return History(user=user, attempts=attempts, runs=[LabRun.objects.get(pk=measured.pk), queued])


def snapshot() -> dict:
    """Every learner, graded answer, lab run and stored request, field by field, as JSON-ready
    values: two databases with equal snapshots hold the same cohort."""
    from labs.models import RunRequest

    def when(value):
        return value.isoformat() if value else None

    return {
        "learners": [
            [u.pk, u.username, u.password, u.email, u.is_staff, when(u.date_joined)]
            for u in User.objects.order_by("pk")
        ],
        "attempts": [
            [a.pk, a.user_id, a.question.slug, a.answer, a.score, a.max_score, a.result, a.rubric_version,
             when(a.created_at)]
            for a in Attempt.objects.select_related("question").order_by("pk")
        ],
        "runs": [
            [r.pk, r.user_id, r.lab.slug, r.target.name, r.status, r.params, r.prediction, r.summary,
             r.result_meta, when(r.created_at), when(r.finished_at)]
            for r in LabRun.objects.select_related("lab", "target").order_by("pk")
        ],
        "requests": [
            [q.pk, q.run_id, q.index, q.warmup, q.ttft_s, q.tpot_s, q.e2e_s, q.output_tokens, q.record]
            for q in RunRequest.objects.order_by("pk")
        ],
    }
