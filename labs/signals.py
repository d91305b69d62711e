"""Worker start-up: reap stale runs at once instead of waiting for the first beat tick."""

import logging

from celery.signals import worker_ready

from labs.services import reap_stale_runs

logger = logging.getLogger(__name__)


@worker_ready.connect
def reap_on_start(sender=None, **kwargs) -> None:
    try:
        outcome = reap_stale_runs()
    except Exception:
        logger.exception("reaping stale runs at worker start failed")
        return
    if any(outcome.values()):
        logger.info("reaped stale runs at start: %s", outcome)
