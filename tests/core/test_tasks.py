"""Every task name that is sent (by a service, the beat schedule or the health check) is registered
by an app's own tasks.py when a worker starts, under the name queued messages already carry."""

from django.conf import settings

from config.celery import app
from labs.services import RUN_LAB_TASK
from questions.services import JUDGE_ATTEMPT_TASK


def test_sent_task_names_are_registered_by_the_owning_apps():
    app.loader.import_default_modules()  # what `celery worker` does at start: autodiscover tasks.py
    owners = {name: task.__module__ for name, task in app.tasks.items() if not name.startswith("celery.")}
    beat = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert beat == {"workers.tasks.reap_stale_runs", "workers.tasks.settle_stale_judgements"}
    assert owners == {
        RUN_LAB_TASK: "labs.tasks",
        "workers.tasks.reap_stale_runs": "labs.tasks",
        "workers.tasks.probe_target": "labs.tasks",
        JUDGE_ATTEMPT_TASK: "questions.tasks",
        "workers.tasks.settle_stale_judgements": "questions.tasks",
        "workers.tasks.ping": "core.tasks",
    }
