"""The Celery app: Redis broker, tasks autodiscovered from each installed app's tasks.py.

labs/tasks.py (runs, the reaper, probes), questions/tasks.py (the LLM judge) and core/tasks.py
(the health-check ping). Their registered names keep the "workers.tasks." prefix of the module
they came from, so queued messages and the beat schedule still find them.
"""

import os

# The grading worker runs the grader's sentence model (numpy on OpenBLAS): one BLAS thread per
# worker process, as gunicorn.conf.py sets for the web, so its concurrency is the cores it takes
# however it was started (make run, compose, the tests, the benchmarks). Set before numpy loads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

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
