"""Celery tasks of the labs app: each fetches by id and calls a labs service.

The registered names keep the "workers.tasks." prefix they had when every task lived in
workers/tasks.py: messages already queued, the beat schedule (config/settings.py) and the
services that send these tasks by name refer to these strings, so moving the code renamed nothing.
Services send tasks by name (labs.services.RUN_LAB_TASK) rather than importing this module, so
a task can call its service without the service importing the task back.
"""

import logging

from celery import shared_task
from celery.signals import worker_ready

from labs import services
from labs.execution import execute_run
from labs.targets import probe_and_record

logger = logging.getLogger(__name__)


@shared_task(
    name=services.RUN_LAB_TASK,
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,
)
def run_lab(*, run_id: int) -> str:
    """Measure one lab run. Idempotent: a run that is not queued any more is left alone."""
    return execute_run(run_id=run_id)


@shared_task(name="workers.tasks.reap_stale_runs", ignore_result=True)
def reap_stale_runs() -> dict[str, list[int]]:
    return services.reap_stale_runs()


@shared_task(name="workers.tasks.probe_target", ignore_result=True)
def probe_target(*, target_id: int) -> None:
    probe_and_record(target_id=target_id)


# Connected here, not in LabsConfig.ready: only a worker imports its tasks modules (Celery's
# autodiscovery, before the worker is ready), so the web process never runs the reaper this way.
@worker_ready.connect
def reap_on_start(sender=None, **kwargs) -> None:
    """Reap stale runs as soon as a worker is up instead of waiting for the first beat tick."""
    try:
        outcome = services.reap_stale_runs()
    except Exception:
        logger.exception("reaping stale runs at worker start failed")
        return
    if any(outcome.values()):
        logger.info("reaped stale runs at start: %s", outcome)
