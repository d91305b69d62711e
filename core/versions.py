"""One version for everything drawn or rendered from content: a hash of the code that draws it.

Rendered lessons and lab guides, lesson figures and run charts are cached (in Redis, on disk)
under keys that include this version and the content's own hash. When the renderer, a figure,
the chart code, the formatting of numbers or a hardware/model catalogue changes, the hash
changes and every derived cache misses once, with nothing to bump by hand. Library versions
that change the output (Markdown, matplotlib) are part of it too.
"""

import hashlib
from collections.abc import Iterable
from functools import cache
from importlib.metadata import version as package_version
from pathlib import Path

from django.conf import settings

# Source files (or folders of them) whose change changes a rendered lesson, a figure or a chart.
RENDERING_SOURCES = (
    "courses/rendering.py",
    "courses/calculators.py",
    "courses/views_calculators.py",
    "courses/figures",
    "courses/inference",
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
