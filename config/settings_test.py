"""Test settings: the real settings with a private cache namespace and a fast password hasher.

Tests talk to the real Redis at REDIS_URL and the real database at DATABASE_URL (SQLite by
default, PostgreSQL in CI's second pass).
"""

import os
import uuid

from config.settings import *  # noqa: F403
from config.settings import CACHES, DATABASES, VAR_DIR

# Each test session gets its own key namespace, so tests never see another run's cache entries
# and never touch the keys of a site running on the same Redis.
CACHES["default"]["KEY_PREFIX"] = f"prefill-test-{os.getpid()}-{uuid.uuid4().hex[:6]}"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
GRADING_RATE_LIMIT_PER_MINUTE = 1000

# Celery worker processes started by the tests must see the test database, so SQLite's test
# database is a file (not the in-memory default) that a second process can open.
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / f"test-{os.getpid()}.sqlite3")}
