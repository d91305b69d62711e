"""A learner's own data: export all of it, or delete the account and everything tied to it.

The export's layout is documented in docs/data-export.md; bump EXPORT_SCHEMA_VERSION whenever a
field is renamed or removed (adding a field keeps the version).
"""

import csv
import io
import json
import logging
import time
from datetime import datetime
from typing import Any

from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import AbstractBaseUser, User
from django.contrib.sessions.models import Session
from django.db import transaction
from django.utils import timezone

from courses.models import LessonProgress
from labs.models import CohortResult, LabRun
from labs.services import cancel_run
from questions.models import Attempt, ModelAnswerReveal, ReviewCard

logger = logging.getLogger(__name__)

EXPORT_SCHEMA = "prefill-learner-export"
EXPORT_SCHEMA_VERSION = 1

RUN_CSV_COLUMNS = [
    "run_id",
    "lab",
    "lab_title",
    "target",
    "model",
    "status",
    "created_at",
    "finished_at",
    "params",
    "prediction",
    "measured_requests",
    "succeeded_requests",
    "ttft_p50_ms",
    "tpot_p50_ms",
    "output_tokens_per_s",
    "error",
]


def _when(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def _overall(run: LabRun) -> dict[str, Any]:
    return (run.summary or {}).get("overall") or {}


def _run_requests(run: LabRun) -> list[dict[str, Any]]:
    return [
        {
            "index": request.index,
            "warmup": request.warmup,
            "step": request.step,
            "ttft_s": request.ttft_s,
            "tpot_s": request.tpot_s,
            "e2e_s": request.e2e_s,
            "output_tokens": request.output_tokens,
            "prompt_tokens": request.prompt_tokens,
            "error_kind": request.error_kind,
            "record": request.record,
        }
        for request in run.requests.order_by("index")
    ]


def _learner_runs(user: AbstractBaseUser):
    return LabRun.objects.filter(user=user).select_related("lab", "target").order_by("created_at")


def export_learner_data(*, user: AbstractBaseUser) -> dict[str, Any]:
    """Everything Prefill holds about this learner, and nothing about anyone else.

    Targets appear by name only: their addresses and keys belong to the instructor, not to the
    learner (the stored records already have the address replaced by the target's name).
    """
    runs = list(_learner_runs(user))
    return {
        "schema": EXPORT_SCHEMA,
        "schema_version": EXPORT_SCHEMA_VERSION,
        "exported_at": timezone.now().isoformat(),
        "profile": {
            "username": user.get_username(),
            "email": user.email,
            "first_name": user.first_name,
            "last_name": user.last_name,
            "date_joined": _when(user.date_joined),
            "last_login": _when(user.last_login),
            "is_staff": user.is_staff,
        },
        "lesson_progress": [
            {
                "lesson": progress.lesson.slug,
                "lesson_title": progress.lesson.title,
                "last_viewed_at": _when(progress.last_viewed_at),
                "completed_at": _when(progress.completed_at),
            }
            for progress in LessonProgress.objects.filter(user=user).select_related("lesson").order_by("lesson__order")
        ],
        "attempts": [
            {
                "id": attempt.pk,
                "question": attempt.question.slug,
                "question_prompt": attempt.question.prompt,
                "follow_up": attempt.follow_up,
                "answer": attempt.answer,
                "score": attempt.score,
                "max_score": attempt.max_score,
                "percent": attempt.percent,
                "rubric_version": attempt.rubric_version,
                # The mark sheet as graded: per-criterion results with their evidence, misconceptions.
                "mark_sheet": attempt.result,
                "judge_status": attempt.judge_status,
                "judge_result": attempt.judge_result,
                "flagged_for_review": attempt.flagged_for_review,
                "created_at": _when(attempt.created_at),
            }
            for attempt in Attempt.objects.filter(user=user).select_related("question").order_by("created_at")
        ],
        "model_answers_revealed": [
            {"question": reveal.question.slug, "revealed_at": _when(reveal.revealed_at)}
            for reveal in ModelAnswerReveal.objects.filter(user=user).select_related("question").order_by("revealed_at")
        ],
        "review_cards": [
            {
                "question": card.question.slug,
                "due": _when(card.due),
                "last_rating": card.last_rating,
                "fsrs_card": card.card,
            }
            for card in ReviewCard.objects.filter(user=user).select_related("question").order_by("due")
        ],
        "lab_runs": [
            {
                "id": run.pk,
                "lab": run.lab.slug,
                "lab_title": run.lab.title,
                "target": run.target.name,
                "model": run.model_name,
                "params": run.params,
                "prediction": run.prediction,
                "status": run.status,
                "created_at": _when(run.created_at),
                "started_at": _when(run.started_at),
                "finished_at": _when(run.finished_at),
                "requeue_count": run.requeue_count,
                "error": run.error,
                "summary": run.summary,
                "requests": _run_requests(run),
            }
            for run in runs
        ],
        "predictions": [
            {"run_id": run.pk, "lab": run.lab.slug, "prediction": run.prediction, "created_at": _when(run.created_at)}
            for run in runs
            if run.prediction
        ],
    }


def _p50_ms(overall: dict[str, Any], metric: str) -> str:
    value = (overall.get(metric) or {}).get("p50")
    return "" if value is None else f"{value * 1000:.2f}"


def lab_runs_csv(*, user: AbstractBaseUser) -> str:
    """One row per lab run of this learner, oldest first (a spreadsheet's view of the JSON)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(RUN_CSV_COLUMNS)
    for run in _learner_runs(user):
        overall = _overall(run)
        requests = overall.get("requests") or {}
        throughput = overall.get("output_tokens_per_s")
        writer.writerow(
            [
                run.pk,
                run.lab.slug,
                run.lab.title,
                run.target.name,
                run.model_name,
                run.status,
                _when(run.created_at),
                _when(run.finished_at) or "",
                json.dumps(run.params, sort_keys=True),
                run.prediction,
                run.requests.filter(warmup=False).count(),
                requests.get("succeeded", ""),
                _p50_ms(overall, "ttft_s"),
                _p50_ms(overall, "tpot_s"),
                "" if throughput is None else f"{throughput:.2f}",
                run.error,
            ]
        )
    return buffer.getvalue()


def _stop_active_runs(*, user: AbstractBaseUser, wait_s: float) -> list[int]:
    """Cancel the learner's queued and running runs, then give a running one's worker time to
    notice (it checks every 0.3 s), so it does not write requests of a run being deleted.
    Returns the ids still running when the wait ran out (their worker is dead or stuck)."""
    for run in LabRun.objects.filter(user=user, status__in=LabRun.ACTIVE):
        cancel_run(run=run)
    deadline = time.monotonic() + wait_s
    while True:
        running = list(LabRun.objects.filter(user=user, status=LabRun.Status.RUNNING).values_list("pk", flat=True))
        if not running or time.monotonic() >= deadline:
            return running
        time.sleep(0.2)


def delete_account(*, user: User, wait_for_runs_s: float = 15.0) -> None:
    """Delete the learner and everything Prefill holds about them.

    Order matters: active runs are cancelled first (a worker must not keep measuring for an
    account that is gone); then each succeeded run leaves an anonymised CohortResult, so the
    cohort's chart keeps its numbers without the person; then every row tied to the user goes,
    including their sessions (logged out everywhere) and admin log entries. Login-throttling
    records are keyed by username, not by a foreign key, so they are removed by name.
    """
    stuck = _stop_active_runs(user=user, wait_s=wait_for_runs_s)
    if stuck:
        # Its worker is dead or wedged: the run goes anyway; a late write from it fails on the
        # missing row instead of bringing the learner's data back.
        logger.warning("deleting %s with runs %s still marked running", user.get_username(), stuck)
    with transaction.atomic():
        runs = LabRun.objects.filter(user=user)
        CohortResult.objects.bulk_create(
            [
                CohortResult(
                    lab_id=run.lab_id,
                    target_id=run.target_id,
                    model_name=run.model_name,
                    params=run.params,
                    summary=run.summary,
                    finished_on=timezone.localdate(run.finished_at),
                )
                for run in runs.filter(status=LabRun.Status.SUCCEEDED).exclude(summary=None)
                if run.finished_at is not None
            ]
        )
        # Named one by one rather than left to the user's CASCADE, so what goes is readable here;
        # tests/accounts check that every model with a foreign key to the user is empty after.
        runs.delete()  # their requests go with them (RunRequest.run cascades)
        Attempt.objects.filter(user=user).delete()
        ModelAnswerReveal.objects.filter(user=user).delete()
        ReviewCard.objects.filter(user=user).delete()
        LessonProgress.objects.filter(user=user).delete()
        LogEntry.objects.filter(user=user).delete()
        _delete_sessions(user=user)
        _delete_login_records(username=user.get_username())
        user.delete()


def _delete_sessions(*, user: AbstractBaseUser) -> None:
    # Session data is opaque to the database: decode each live session to find the user's own.
    user_id = str(user.pk)
    for session in Session.objects.filter(expire_date__gt=timezone.now()).iterator():
        if session.get_decoded().get("_auth_user_id") == user_id:
            session.delete()


def _delete_login_records(*, username: str) -> None:
    from axes.models import AccessAttempt, AccessFailureLog, AccessLog

    for model in (AccessAttempt, AccessFailureLog, AccessLog):
        model.objects.filter(username=username).delete()
