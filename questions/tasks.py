"""Celery tasks of the questions app: each fetches by id and calls a questions service.

The judge's registered names keep their "workers.tasks." prefix for messages already queued and
the beat schedule (see labs/tasks.py); questions.services sends tasks by these names.
"""

from celery import shared_task
from celery.signals import celeryd_after_setup
from django.conf import settings

from core.cpu_priority import lower_cpu_priority
from questions import services


@shared_task(name=services.GRADE_ATTEMPT_TASK, acks_late=True, ignore_result=True)
def grade_attempt(*, attempt_id: int) -> None:
    services.grade_pending_attempt(attempt_id=attempt_id)


@shared_task(name="questions.tasks.settle_stale_grades", ignore_result=True)
def settle_stale_grades() -> list[int]:
    return services.settle_stale_grades()


@shared_task(name=services.JUDGE_ATTEMPT_TASK, acks_late=True, ignore_result=True)
def judge_attempt(*, attempt_id: int) -> None:
    services.apply_judge(attempt_id=attempt_id)


@shared_task(name="workers.tasks.settle_stale_judgements", ignore_result=True)
def settle_stale_judgements() -> list[int]:
    return services.settle_stale_judgements()


@celeryd_after_setup.connect
def _load_the_grader(sender: str, instance, **kwargs) -> None:
    """A worker on the grading queue loads the sentence model once, in its main process before
    the pool forks, so every child shares the weights and the first answer is not the slow one;
    it runs below the web's CPU priority (GRADING_WORKER_NICENESS), its children too, and so does
    its session when it leads one (core.cpu_priority says why nice alone is not enough)."""
    if settings.GRADING_QUEUE in instance.app.amqp.queues.consume_from:
        lower_cpu_priority(niceness=settings.GRADING_WORKER_NICENESS)
        services.load_grader()
