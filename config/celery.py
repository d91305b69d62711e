"""The Celery app: Redis broker, tasks autodiscovered from installed apps (workers/tasks.py)."""

import os

from celery import Celery

from config.env import load_settings_or_stop

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("prefill")


@app.on_configure.connect
def _settings_checked(sender: Celery, **kwargs) -> None:
    # Celery reads its configuration (Django's settings) the first time the worker or beat needs
    # it; loading them here first turns a bad environment value into the one-line message.
    load_settings_or_stop()

app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
