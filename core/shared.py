"""Page parts every learner shares, built once per content version and kept in two places.

A signed-in page is mostly the same for everyone (the rendered lesson, its navigation, the
question's text and links, the lab's guide); only progress, attempts and runs are the learner's
own. The shared part is built once per content version (core.versions.content_version: a
sync_content changes it), stored in Redis for every process, and kept in this process's memory
after the first read, so a request for it costs a dict lookup: no query, no unpickling.

What is stored is read by many threads at once and must be treated as read-only.
"""

import hashlib
from collections.abc import Callable
from functools import cache as memoize
from pathlib import Path
from typing import TypeVar

from django.conf import settings
from django.core.cache import cache

from core.lru import BoundedLRU
from core.versions import content_version

T = TypeVar("T")
# Old versions are never read again; Redis lets them go after a day.
SHARED_TIMEOUT_S = 24 * 60 * 60
LOCAL_MAX_ITEMS = 512
_MISSING = object()


_local = BoundedLRU(max_items=LOCAL_MAX_ITEMS)


# What builds a shared part (the views and selectors that assemble it, the templates that render
# it): a deploy that changes any of them must not read parts an older build stored.
SHARED_PART_SOURCES = ("core", "courses", "questions", "labs", "templates")


@memoize
def shared_code_version() -> str:
    """A short hash of the Python and template files under SHARED_PART_SOURCES; once per process."""
    root = Path(settings.BASE_DIR)
    digest = hashlib.sha256()
    for source in SHARED_PART_SOURCES:
        files = sorted(path for pattern in ("*.py", "*.html") for path in (root / source).rglob(pattern))
        for path in files:
            if "__pycache__" not in path.parts:
                digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


def shared_part(*, name: str, build: Callable[[], T]) -> T:
    """``build()``'s value for this content version: from memory, else Redis, else built (and
    stored in both). ``name`` says what it is and for which item, e.g. ``lesson-page:<slug>``;
    None is a value like any other (a page that does not exist is remembered too)."""
    key = f"shared:{name}:{shared_code_version()}.{content_version()}"
    value = _local.get(key, _MISSING)
    if value is not _MISSING:
        return value  # type: ignore[return-value]
    stored = cache.get(key, _MISSING)
    if stored is _MISSING:
        # Wrapped, so a stored None is told apart from a miss.
        stored = (build(),)
        cache.set(key, stored, timeout=SHARED_TIMEOUT_S)
    _local.put(key, stored[0])
    return stored[0]


def forget_local_parts() -> None:
    """Drop this process's copies (tests: each has its own cache namespace)."""
    _local.clear()
