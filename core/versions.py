"""One version for everything drawn or rendered from content: a hash of the code that draws it.

Rendered lessons and lab guides, lesson figures and run charts are cached (in Redis, on disk)
under keys that include this version and the content's own hash. When the renderer, a figure,
the chart code, the formatting of numbers or a hardware/model catalogue changes, the hash
changes and every derived cache misses once, with nothing to bump by hand. Library versions
that change the output (Markdown, matplotlib) are part of it too.
"""

import hashlib
import secrets
import threading
import time
from collections.abc import Iterable
from functools import cache
from importlib.metadata import version as package_version
from pathlib import Path

from django.conf import settings
from django.core.cache import cache as django_cache

# Source files (or folders of them) whose change changes a rendered lesson, a figure or a chart.
RENDERING_SOURCES = (
    "courses/rendering.py",
    "courses/calculators.py",
    "courses/views_calculators.py",
    "courses/figures",
    "courses/inference",
    "labs/analysis.py",
    "labs/charts.py",
    "labs/checks.py",
    "templates/courses/calculators",
)
RENDERING_PACKAGES = ("markdown", "pygments", "latex2mathml", "matplotlib")


def source_fingerprint(*, root: Path, sources: Iterable[str], extra: Iterable[str] = ()) -> str:
    """A short hash of every file under `sources` (path and bytes), plus `extra` strings."""
    digest = hashlib.sha256()
    for source in sources:
        path = root / source
        if path.is_dir():
            files = sorted(p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
        else:
            files = [path]
        for file in files:
            digest.update(str(file.relative_to(root)).encode() + b"\0" + file.read_bytes() + b"\0")
    for item in extra:
        digest.update(item.encode() + b"\0")
    return digest.hexdigest()[:16]


@cache
def rendering_version() -> str:
    """The code version of every derived cache; computed once per process (the code cannot change under it)."""
    return source_fingerprint(
        root=Path(settings.BASE_DIR),
        sources=RENDERING_SOURCES,
        extra=[f"{name}=={package_version(name)}" for name in RENDERING_PACKAGES],
    )


# The content version: a token that changes whenever content rows change (sync_content, or any
# save of a content model in this process). Pages cache what every learner shares under it, so
# a sync invalidates them; what is expensive to draw (Markdown, figures, MathML) is also keyed
# by each item's own content hash and survives a sync that did not touch it.
CONTENT_VERSION_KEY = "content-version"
# Other processes (another gunicorn worker, the process that ran sync_content) learn a new
# version from Redis; each process rereads it at most this often, so a sync shows within it.
CONTENT_VERSION_TTL_S = 1.0
_content_version_memo: dict[str, tuple[float, str]] = {}
_content_version_lock = threading.Lock()


def content_version() -> str:
    """Rendering code version plus the content token; cheap (a dict read, one Redis GET a second)."""
    now = time.monotonic()
    memo = _content_version_memo.get("token")
    if memo is not None and now - memo[0] < CONTENT_VERSION_TTL_S:
        return f"{rendering_version()}.{memo[1]}"
    token = django_cache.get(CONTENT_VERSION_KEY)
    if token is None:
        minted = secrets.token_hex(6)
        # add(): when two processes mint at once, both adopt whichever reached Redis first.
        added = django_cache.add(CONTENT_VERSION_KEY, minted, timeout=None)
        token = minted if added else django_cache.get(CONTENT_VERSION_KEY)
        if token is None:
            # Redis is away: keep this process's token rather than minting one per request.
            token = memo[1] if memo is not None else minted
    with _content_version_lock:
        _content_version_memo["token"] = (now, token)
    return f"{rendering_version()}.{token}"


def bump_content_version() -> None:
    """Content changed: every process's shared page parts miss from now on (within the TTL)."""
    token = secrets.token_hex(6)
    django_cache.set(CONTENT_VERSION_KEY, token, timeout=None)
    with _content_version_lock:
        _content_version_memo["token"] = (time.monotonic(), token)


def forget_content_version() -> None:
    """Drop this process's memo (tests: each has its own cache namespace)."""
    with _content_version_lock:
        _content_version_memo.clear()


def _content_row_changed(**kwargs: object) -> None:
    bump_content_version()


def bump_content_version_on_change(*models: type) -> None:
    """Any save or delete of these content models (the admin, a test, a data fix in a shell)
    changes the content version, as sync_content does; for AppConfig.ready."""
    from django.db.models.signals import post_delete, post_save

    for model in models:
        post_save.connect(_content_row_changed, sender=model, dispatch_uid=f"content-version-{model.__name__}")
        post_delete.connect(_content_row_changed, sender=model, dispatch_uid=f"content-version-del-{model.__name__}")
