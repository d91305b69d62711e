"""Celery tasks of the questions app: each fetches by id and calls a questions service.

The registered names keep their "workers.tasks." prefix for messages already queued and the
beat schedule (see labs/tasks.py); questions.services sends judge_attempt by that name.
"""

from celery import shared_task

from questions import services


@shared_task(name=services.JUDGE_ATTEMPT_TASK, acks_late=True, ignore_result=True)
def judge_attempt(*, attempt_id: int) -> None:
    services.apply_judge(attempt_id=attempt_id)


@shared_task(name="workers.tasks.settle_stale_judgements", ignore_result=True)
def settle_stale_judgements() -> list[int]:
    return services.settle_stale_judgements()
