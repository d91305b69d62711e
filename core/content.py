"""Shared pieces of the content pipeline: errors that name file and line, TOML reading, reports."""

import hashlib
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path


class ContentError(Exception):
    """A content file is malformed. str() is `path:line: message`, ready for the operator."""

    def __init__(self, *, path: Path | str, line: int | None, message: str) -> None:
        self.path = Path(path)
        self.line = line
        self.message = message
        super().__init__(str(self))

    def __str__(self) -> str:
        location = f"{self.path}:{self.line}" if self.line else f"{self.path}"
        return f"{location}: {self.message}"


@dataclass
class SyncReport:
    kind: str
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    retired: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.created or self.updated or self.retired)

    def summary_line(self) -> str:
        return (
            f"{self.kind}: {len(self.created)} created, {len(self.updated)} updated, "
            f"{len(self.unchanged)} unchanged, {len(self.retired)} retired"
        )


_TOML_LINE = re.compile(r"\(at line (\d+), column \d+\)")


def parse_toml(*, text: str, path: Path, first_line: int = 1) -> dict:
    """Parse TOML text, turning a syntax error into a ContentError with the file's line number."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        match = _TOML_LINE.search(str(error))
        line = int(match.group(1)) + first_line - 1 if match else None
        message = _TOML_LINE.sub("", str(error)).strip()
        raise ContentError(path=path, line=line, message=f"invalid TOML: {message}") from None


def read_toml(path: Path) -> tuple[dict, str]:
    text = path.read_text(encoding="utf-8")
    return parse_toml(text=text, path=path), text


def line_of(*, text: str, pattern: str, start_line: int = 1) -> int | None:
    """1-based line of the first line matching `pattern` (a regex), for error messages."""
    regex = re.compile(pattern)
    for number, line in enumerate(text.splitlines(), start=1):
        if number >= start_line and regex.search(line):
            return number
    return None


def content_hash(*parts: str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8"))
        digest.update(b"\x00")
    return digest.hexdigest()


SLUG_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


def require(data: dict, key: str, kind: type | tuple[type, ...], *, path: Path, text: str, context: str = ""):
    """Return data[key] if present and of the right type, else a ContentError naming the line."""
    where = f" in {context}" if context else ""
    if key not in data:
        line = line_of(text=text, pattern=re.escape(context)) if context else None
        raise ContentError(path=path, line=line, message=f"missing required key '{key}'{where}")
    value = data[key]
    if not isinstance(value, kind):
        expected = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        line = line_of(text=text, pattern=rf"^\s*{re.escape(key)}\s*=")
        raise ContentError(path=path, line=line, message=f"'{key}'{where} must be a {expected}, got {value!r:.60}")
    return value


def save_changed(instance, **fields) -> bool:
    """Set the model fields that differ and save only those; returns whether anything changed.

    Comparing before saving is what makes sync_content idempotent: an unchanged file writes
    nothing, so "run twice = no change" holds down to updated_at timestamps.
    """
    changed = [name for name, value in fields.items() if getattr(instance, name) != value]
    for name in changed:
        setattr(instance, name, fields[name])
    if changed:
        instance.save(update_fields=changed)
    return bool(changed)


# --- The content pipeline across apps ---------------------------------------------------------
# core knows no feature app: each app that loads content files registers how (in its
# AppConfig.ready), says what it provides (slugs, a lesson's anchors) and what it points at,
# and core checks the links between them.


@dataclass(frozen=True)
class ContentReference:
    """One link from a content file to another piece of content, e.g. a lesson's practice question."""

    where: str
    kind: str  # "lesson", "question" or "lab"
    slug: str
    anchor: str = ""


@dataclass
class ContentSyncPart:
    report: SyncReport
    provides: dict[str, set[str]] = field(default_factory=dict)
    anchors: dict[str, set[str]] = field(default_factory=dict)
    references: list[ContentReference] = field(default_factory=list)


@dataclass(frozen=True)
class ContentSource:
    name: str  # the key of settings.CONTENT_DIRS
    order: int  # lower syncs first: content that others point at comes before them
    sync: Callable[..., ContentSyncPart]


_SOURCES: dict[str, ContentSource] = {}


def register_content_source(*, name: str, order: int, sync: Callable[..., ContentSyncPart]) -> None:
    _SOURCES[name] = ContentSource(name=name, order=order, sync=sync)


def content_sources() -> list[ContentSource]:
    return sorted(_SOURCES.values(), key=lambda source: (source.order, source.name))


def lesson_reference(*, where: str, ref: str) -> ContentReference:
    """A `slug#anchor` (or bare slug) lesson reference."""
    slug, _, anchor = ref.partition("#")
    return ContentReference(where=where, kind="lesson", slug=slug, anchor=anchor)


def dangling_references(parts: list[ContentSyncPart]) -> list[str]:
    provided: dict[str, set[str]] = {}
    anchors: dict[str, set[str]] = {}
    for part in parts:
        for kind, slugs in part.provides.items():
            provided.setdefault(kind, set()).update(slugs)
        anchors.update(part.anchors)
    problems: list[str] = []
    for part in parts:
        for ref in part.references:
            if ref.slug not in provided.get(ref.kind, set()):
                problems.append(f"{ref.where}: {ref.kind} '{ref.slug}' does not exist")
            elif ref.anchor and ref.anchor not in anchors.get(ref.slug, set()):
                problems.append(f"{ref.where}: {ref.kind} '{ref.slug}' has no heading with anchor '#{ref.anchor}'")
    return problems
