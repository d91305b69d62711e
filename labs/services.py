"""Write-side logic for labs: submitting, dispatching, cancelling and reaping runs."""

import logging
import time
from datetime import timedelta
from typing import Literal

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Avg, F, Q
from django.utils import timezone

from core.queueing import send
from labs.execution import finalise_summary, release_dead_lock
from labs.models import CohortResult, InferenceTarget, Lab, LabRun
from labs.plans import PlanError, build_steps, planned_requests, planned_warmups
from labs.targets import target_limits

logger = logging.getLogger(__name__)

# Registered by labs.tasks.run_lab; sent by name so that this module need not import the tasks
# that call it (the name is the one queued messages carry, see labs/tasks.py).
RUN_LAB_TASK = "workers.tasks.run_lab"


def check_quota(*, user: AbstractBaseUser, target: InferenceTarget) -> None:
    active = LabRun.objects.filter(user=user, target=target, status__in=LabRun.ACTIVE).first()
    if active:
        raise ValidationError(
            f"You already have run {active.pk} {active.get_status_display().lower()} on {target.name}. "
            "Wait for it to finish or cancel it, then run again.",
            code="one_active_run",
        )
    since = timezone.now() - timedelta(days=1)
    recent = LabRun.objects.filter(user=user, target=target, created_at__gte=since).order_by("created_at")
    if recent.count() >= target.runs_per_learner_per_day:
        next_at = recent.first().created_at + timedelta(days=1)
        raise ValidationError(
            f"You have used your {target.runs_per_learner_per_day} runs on {target.name} for the last 24 hours. "
            f"You can run again at {timezone.localtime(next_at):%H:%M} UTC on {timezone.localtime(next_at):%d %b}.",
            code="quota",
        )


def submit_run(
    *,
    user: AbstractBaseUser,
    lab: Lab,
    target: InferenceTarget,
    params: dict,
    prediction: str,
    adjustments: list[str] | None = None,
    predicted: dict[str, float] | None = None,
) -> LabRun:
    """Queue a run. ``adjustments`` say how the form fitted the parameters to the target's caps;
    the run page shows them next to the parameters."""
    if not target.enabled:
        raise ValidationError(f"{target.name} is not taking runs at the moment.", code="disabled")
    try:
        steps = build_steps(
            plan=lab.spec.get("plan", {}), params=params, models=target.model_names, limits=target_limits(target)
        )
    except PlanError as error:
        raise ValidationError(str(error), code="plan") from None
    with transaction.atomic():
        # Lock the learner's row so two quick submits cannot both pass the one-active-run check.
        get_user_model().objects.select_for_update().filter(pk=user.pk).first()
        check_quota(user=user, target=target)
        run = LabRun.objects.create(
            user=user,
            lab=lab,
            target=target,
            model_name=steps[0].model,
            params=params,
            prediction=prediction.strip(),
            result_meta={
                key: value
                for key, value in (("adjusted", list(adjustments or [])), ("predicted", dict(predicted or {})))
                if value
            },
            progress={
                "done": 0,
                "total": planned_requests(steps),
                "warmup": planned_warmups(steps),
                "tokens": 0,
                "elapsed_s": 0.0,
            },
        )
        transaction.on_commit(lambda: dispatch_run(run_id=run.pk))
    return run


def dispatch_run(*, run_id: int) -> None:
    """Send the run's task to its target's own queue (one worker, concurrency 1, per queue)."""
    run = LabRun.objects.select_related("target").get(pk=run_id)
    try:
        send(task_name=RUN_LAB_TASK, kwargs={"run_id": run.pk}, queue=run.target.queue_name)
    except Exception as error:
        logger.warning("could not dispatch run %s: %s", run.pk, error)
        return
    LabRun.objects.filter(pk=run.pk).update(dispatched_at=timezone.now(), dispatch_count=F("dispatch_count") + 1)


def cancel_run(*, run: LabRun) -> LabRun:
    """Queued runs stop at once; running ones are told to stop and keep what was measured."""
    with transaction.atomic():
        run = LabRun.objects.select_for_update().get(pk=run.pk)
        if run.status == LabRun.Status.QUEUED:
            run.status = LabRun.Status.CANCELLED
            run.finished_at = timezone.now()
            run.error = "Cancelled before it started."
            run.save(update_fields=["status", "finished_at", "error"])
        elif run.status == LabRun.Status.RUNNING:
            run.cancel_requested = True
            run.save(update_fields=["cancel_requested"])
    return run


def queue_position(*, run: LabRun) -> int | None:
    """1 = next to run. FIFO across learners on the same target."""
    if run.status != LabRun.Status.QUEUED:
        return None
    ahead = LabRun.objects.filter(target=run.target, status__in=LabRun.ACTIVE).filter(
        Q(created_at__lt=run.created_at) | Q(created_at=run.created_at, pk__lt=run.pk)
    )
    return ahead.count() + 1


# Every learner polling a queued run on a target asks for the same mean; it moves only when a
# run ends, so it is worked out at most this often per target (shared through the cache).
RECENT_RUN_MEAN_TTL_S = 5


def eta_seconds(*, run: LabRun, position: int | Literal["unknown"] | None = "unknown") -> float | None:
    """Seconds until the run starts: its queue position times the mean of the target's last 10
    runs. Pass ``position`` when already known (queue_position), to save its query."""
    if position == "unknown":
        position = queue_position(run=run)
    if position is None:
        return None
    key = f"recent-run-mean-s:{run.target_id}"
    mean_s = cache.get(key)
    if mean_s is None:
        recent = (
            LabRun.objects.filter(target=run.target, status=LabRun.Status.SUCCEEDED, started_at__isnull=False)
            .order_by("-finished_at")[:10]
            .annotate(duration=F("finished_at") - F("started_at"))
            .aggregate(mean=Avg("duration"))
        )
        # 0.0 stands for "no finished run yet", so that answer is cached too.
        mean_s = recent["mean"].total_seconds() if recent["mean"] is not None else 0.0
        cache.set(key, mean_s, timeout=RECENT_RUN_MEAN_TTL_S)
    if not mean_s:
        return None
    return position * mean_s


def reap_stale_runs() -> dict[str, list[int]]:
    """Make every run recoverable after a dead worker or an emptied broker.

    - running without a heartbeat for LAB_HEARTBEAT_STALE_S: re-queued once when nothing was
      measured, else failed with "worker lost", keeping every measured request;
    - queued, dispatched long ago, while its target's queue in Redis is empty and nothing runs
      on the target: the message was lost (Redis restarted empty), so it is dispatched again.
      A duplicate message is harmless: the task does nothing for a run that is not queued.
    """
    now = timezone.now()
    stale_before = now - timedelta(seconds=settings.LAB_HEARTBEAT_STALE_S)
    outcome: dict[str, list[int]] = {"requeued": [], "failed": [], "redispatched": []}
    for run in LabRun.objects.filter(status=LabRun.Status.RUNNING).filter(
        Q(heartbeat_at__lt=stale_before) | Q(heartbeat_at__isnull=True, started_at__lt=stale_before)
    ):
        with transaction.atomic():
            run = LabRun.objects.select_for_update().get(pk=run.pk)
            if run.status != LabRun.Status.RUNNING:
                continue
            release_dead_lock(target=run.target, run_id=run.pk)
            # Decided as the results and the message below count: a stored warm-up is not a
            # measurement, so a run that only warmed up has lost nothing and is retried.
            measured = run.requests.filter(warmup=False).count()
            if measured == 0 and run.requeue_count == 0 and not run.cancel_requested:
                # The next worker warms up again; a stale warm-up row would shift its indices
                # and be exported as if it belonged to the retried run.
                run.requests.all().delete()
                run.status = LabRun.Status.QUEUED
                run.requeue_count += 1
                run.started_at = None
                run.error = "The worker stopped before measuring anything; re-queued once."
                run.save(update_fields=["status", "requeue_count", "started_at", "error"])
                transaction.on_commit(lambda run_id=run.pk: dispatch_run(run_id=run_id))
                outcome["requeued"].append(run.pk)
            else:
                run.status = LabRun.Status.FAILED
                run.finished_at = now
                run.error = (
                    f"Worker lost: the process running this lab stopped. {measured} measured "
                    f"request{'s are' if measured != 1 else ' is'} kept below."
                )
                run.save(update_fields=["status", "finished_at", "error"])
                finalise_summary(run=run)
                outcome["failed"].append(run.pk)

    lost_before = now - timedelta(seconds=settings.LAB_REDISPATCH_AFTER_S)
    for target in InferenceTarget.objects.filter(runs__status=LabRun.Status.QUEUED).distinct():
        if LabRun.objects.filter(target=target, status=LabRun.Status.RUNNING).exists():
            continue
        if _queue_length(target.queue_name) > 0:
            continue
        oldest = (
            LabRun.objects.filter(target=target, status=LabRun.Status.QUEUED)
            .filter(Q(dispatched_at__lt=lost_before) | Q(dispatched_at__isnull=True, created_at__lt=lost_before))
            .order_by("created_at")
        )
        for run in oldest:
            dispatch_run(run_id=run.pk)
            outcome["redispatched"].append(run.pk)
    return outcome


def _queue_length(queue_name: str) -> int:
    import redis

    client = redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_timeout=2, socket_connect_timeout=2)
    try:
        return int(client.llen(queue_name))
    except redis.RedisError:
        return 1  # cannot tell: do not dispatch duplicates blindly
    finally:
        client.close()


def stop_runs_of(*, user: AbstractBaseUser, wait_s: float) -> list[int]:
    """Cancel the learner's queued and running runs, then give a running one's worker time to
    notice (it checks every 0.3 s and writes nothing after the run leaves "running"), so it does
    not write requests of a run about to be deleted. Returns the ids still running when the wait
    ran out (their worker is dead or stuck)."""
    for run in LabRun.objects.filter(user=user, status__in=LabRun.ACTIVE):
        cancel_run(run=run)
    deadline = time.monotonic() + wait_s
    while True:
        running = list(LabRun.objects.filter(user=user, status=LabRun.Status.RUNNING).values_list("pk", flat=True))
        if not running or time.monotonic() >= deadline:
            return running
        time.sleep(0.2)


def delete_runs_of(*, user: AbstractBaseUser) -> int:
    """Part of deleting an account (accounts.services.delete_account): the learner's runs and
    every request go; each succeeded run first leaves an anonymised CohortResult, so the cohort
    view keeps its figures without the person. Returns how many runs were deleted."""
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
            for run in runs.filter(status=LabRun.Status.SUCCEEDED, finished_at__isnull=False, summary__isnull=False)
        ]
    )
    count = runs.count()
    runs.delete()  # their requests go with them (RunRequest.run cascades)
    return count
