"""Celery tasks: thin wrappers that fetch by id and call a service."""

import time

from celery import shared_task
from django.core.cache import cache

PING_KEY = "workers:last-ping"


@shared_task(name="workers.tasks.ping", ignore_result=True)
def ping(*, token: str) -> str:
    """Answer a health check: record the token so /healthz?deep=1 can see a worker ran it."""
    cache.set(PING_KEY, {"token": token, "at": time.time()}, timeout=300)
    return "pong"


@shared_task(
    name="workers.tasks.run_lab",
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,
)
def run_lab(*, run_id: int) -> str:
    """Measure one lab run. Idempotent: a run that is not queued any more is left alone."""
    from labs.execution import execute_run

    return execute_run(run_id=run_id)


@shared_task(name="workers.tasks.reap_stale_runs", ignore_result=True)
def reap_stale_runs() -> dict[str, list[int]]:
    from labs.services import reap_stale_runs as reap

    return reap()


@shared_task(name="workers.tasks.settle_stale_judgements", ignore_result=True)
def settle_stale_judgements() -> list[int]:
    from questions.services import settle_stale_judgements as settle

    return settle()


@shared_task(name="workers.tasks.probe_target", ignore_result=True)
def probe_target(*, target_id: int) -> None:
    from labs.targets import probe_and_record

    probe_and_record(target_id=target_id)


@shared_task(name="workers.tasks.judge_attempt", acks_late=True, ignore_result=True)
def judge_attempt(*, attempt_id: int) -> None:
    from questions.services import apply_judge

    apply_judge(attempt_id=attempt_id)
