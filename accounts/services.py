"""A learner's own data: export all of it, or delete the account and everything tied to it.

Each app exports and deletes its own part (courses: progress; questions: answers, reveals,
review cards; labs: runs and requests); this module composes them with the account itself.
The export's layout is documented in docs/data-export.md; bump EXPORT_SCHEMA_VERSION whenever a
field is renamed or removed (adding a field keeps the version).
"""

import logging
from importlib import import_module
from typing import Any

from django.conf import settings
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import AbstractBaseUser, User
from django.contrib.sessions.models import Session
from django.db import transaction
from django.utils import timezone

from courses import selectors as course_selectors
from courses import services as course_services
from labs import selectors as lab_selectors
from labs import services as lab_services
from questions import selectors as question_selectors
from questions import services as question_services

logger = logging.getLogger(__name__)

EXPORT_SCHEMA = "prefill-learner-export"
EXPORT_SCHEMA_VERSION = 1
# How long deleting an account waits for the worker of a running run to stop measuring.
RUN_STOP_WAIT_S = 15.0


def export_learner_data(*, user: AbstractBaseUser) -> dict[str, Any]:
    """Everything Prefill holds about this learner, and nothing about anyone else."""
    runs = lab_selectors.runs_export(user=user)
    return {
        "schema": EXPORT_SCHEMA,
        "schema_version": EXPORT_SCHEMA_VERSION,
        "exported_at": timezone.now().isoformat(),
        "profile": {
            "username": user.get_username(),
            "email": user.email,
            "first_name": user.first_name,
            "last_name": user.last_name,
            "date_joined": user.date_joined.isoformat(),
            "last_login": user.last_login.isoformat() if user.last_login else None,
            "is_staff": user.is_staff,
        },
        "lesson_progress": course_selectors.progress_export(user=user),
        **question_selectors.practice_export(user=user),
        "lab_runs": runs,
        "predictions": [
            {"run_id": run["id"], "lab": run["lab"], "prediction": run["prediction"], "created_at": run["created_at"]}
            for run in runs
            if run["prediction"]
        ],
    }


def lab_runs_csv(*, user: AbstractBaseUser) -> str:
    return lab_selectors.runs_csv(user=user)


def delete_account(*, user: User, wait_for_runs_s: float = RUN_STOP_WAIT_S) -> None:
    """Delete the learner and everything Prefill holds about them.

    Order matters: active runs are cancelled first (a worker must not keep measuring for an
    account that is gone); then each app deletes its part (labs leaves anonymised CohortResult
    figures for the cohort view), then the user's sessions (logged out everywhere), admin log
    entries and login-throttling records (kept by username, not by a foreign key), then the user.
    Named one by one rather than left to the user's CASCADE, so what goes is readable here;
    tests/accounts check that every model with a foreign key to the user is empty after.
    """
    stuck = lab_services.stop_runs_of(user=user, wait_s=wait_for_runs_s)
    if stuck:
        # Its worker is dead or wedged: the run goes anyway; a late write from it fails on the
        # missing row instead of bringing the learner's data back.
        logger.warning("deleting %s with runs %s still marked running", user.get_username(), stuck)
    with transaction.atomic():
        lab_services.delete_runs_of(user=user)
        question_services.delete_practice_of(user=user)
        course_services.delete_progress_of(user=user)
        LogEntry.objects.filter(user=user).delete()
        _delete_sessions(user=user)
        _delete_login_records(username=user.get_username())
        user.delete()


def _delete_sessions(*, user: AbstractBaseUser) -> None:
    # Session data is opaque to the database: decode each live session to find the user's own.
    user_id = str(user.pk)
    for session in Session.objects.filter(expire_date__gt=timezone.now()).iterator():
        if session.get_decoded().get("_auth_user_id") == user_id:
            # Through the session engine, so its cached copy (cached_db) goes too.
            import_module(settings.SESSION_ENGINE).SessionStore(session_key=session.session_key).delete()


def _delete_login_records(*, username: str) -> None:
    from axes.models import AccessAttempt, AccessFailureLog, AccessLog

    for model in (AccessAttempt, AccessFailureLog, AccessLog):
        model.objects.filter(username=username).delete()
