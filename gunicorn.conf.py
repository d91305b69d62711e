"""gunicorn reads ./gunicorn.conf.py from its working directory on its own (the repository root,
/app in the image). Checking the environment here runs once in the master, before any worker is
forked, so a bad value stops the server with the one-line message instead of each worker failing
with a traceback. The server's options stay on its command line (scripts/services.py, Dockerfile)."""

import os

# The grader's sentence model runs numpy matmuls on OpenBLAS. Left alone, every web thread that
# grades an answer starts a BLAS thread per core, and under load those threads fight each other
# and the page threads for the same cores (measured at 100 learners: answers p50 6.3 s, gunicorn
# 65 ms CPU per request). One BLAS thread per calling thread; set before numpy is imported.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from config.env import load_settings_or_stop

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
load_settings_or_stop()


def post_worker_init(worker) -> None:
    """Load the grader's sentence model (about half a second) before the worker takes requests, so
    no learner's first answer waits for it."""
    from questions.grading.embedding import ModelMissingError, encoder

    try:
        encoder().encode(["warm up"])
    except ModelMissingError as error:
        worker.log.error("%s", error)
