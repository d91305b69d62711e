"""Sending an app's Celery task by its registered name.

Services send their own app's tasks by name rather than importing them: a task module imports
its service, so a service importing the task back would be an import cycle by construction.
``send_task`` alone would skip ``CELERY_TASK_ALWAYS_EAGER`` (the setting that runs tasks in the
calling process, without a broker or worker), so the eager path is taken here as ``.delay()``
would take it.
"""

from typing import Any

from celery import current_app


def send(*, task_name: str, kwargs: dict[str, Any], queue: str | None = None) -> bool:
    """Queue ``task_name`` (on ``queue``, else the default), or run it now when tasks are eager.
    True when it ran here and now (what it wrote is in the database when this returns)."""
    if current_app.conf.task_always_eager:
        if task_name not in current_app.tasks:
            # Outside a worker nothing has imported the apps' tasks.py yet; a worker does this at start.
            current_app.loader.import_default_modules()
        current_app.tasks[task_name].apply(kwargs=kwargs)
        return True
    current_app.send_task(task_name, kwargs=kwargs, queue=queue)
    return False
