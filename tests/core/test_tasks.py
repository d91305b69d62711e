"""Every task name that is sent (by a service, the beat schedule or the health check) is registered
by an app's own tasks.py when a worker starts, under the name queued messages already carry."""

import pytest
from django.conf import settings

from config.celery import app
from labs.models import LabRun
from labs.services import RUN_LAB_TASK, submit_run
from labs.targets import upsert_target
from questions.services import GRADE_ATTEMPT_TASK, JUDGE_ATTEMPT_TASK
from tests.labs.test_runs import load_lab


def test_sent_task_names_are_registered_by_the_owning_apps():
    app.loader.import_default_modules()  # what `celery worker` does at start: autodiscover tasks.py
    owners = {name: task.__module__ for name, task in app.tasks.items() if not name.startswith("celery.")}
    beat = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert beat == {
        "workers.tasks.reap_stale_runs",
        "workers.tasks.settle_stale_judgements",
        "questions.tasks.settle_stale_grades",
    }
    assert owners == {
        RUN_LAB_TASK: "labs.tasks",
        "workers.tasks.reap_stale_runs": "labs.tasks",
        "workers.tasks.probe_target": "labs.tasks",
        JUDGE_ATTEMPT_TASK: "questions.tasks",
        GRADE_ATTEMPT_TASK: "questions.tasks",
        "questions.tasks.settle_stale_grades": "questions.tasks",
        "workers.tasks.settle_stale_judgements": "questions.tasks",
        "workers.tasks.ping": "core.tasks",
    }



@pytest.mark.django_db(transaction=True)
def test_with_eager_tasks_a_submitted_run_is_measured_in_the_calling_process(scripted_engine, user, monkeypatch):
    """CELERY_TASK_ALWAYS_EAGER (no broker, no worker) still runs what services send by name."""
    monkeypatch.setitem(app.conf, "task_always_eager", True)
    target = upsert_target(name="Eager", kind="vllm", base_url=scripted_engine("--ttft-ms", "5"), models=["scripted"])
    run = submit_run(
        user=user,
        lab=load_lab("ttft-vs-output-length"),
        target=target,
        params={"max_tokens": [4], "prompt_tokens": 16, "repeats": 2},
        prediction="",
    )
    run.refresh_from_db()
    assert run.status == LabRun.Status.SUCCEEDED, run.error
    assert run.summary["overall"]["requests"]["succeeded"] == 2
