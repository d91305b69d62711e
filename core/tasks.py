"""Celery tasks of the core app: the worker round trip behind /healthz?deep=1.

The registered name keeps its "workers.tasks." prefix (see labs/tasks.py).
"""

import time

from celery import shared_task
from django.core.cache import cache

PING_KEY = "workers:last-ping"


@shared_task(name="workers.tasks.ping", ignore_result=True)
def ping(*, token: str) -> str:
    """Answer a health check: record the token so /healthz?deep=1 can see a worker ran it."""
    cache.set(PING_KEY, {"token": token, "at": time.time()}, timeout=300)
    return "pong"
