"""The Celery app: Redis broker, tasks autodiscovered from installed apps (workers/tasks.py)."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("prefill")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
