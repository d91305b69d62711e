"""Content sync across the apps, plus the cross-checks no single app can do (dangling links).

The apps register their content sources (core.content.register_content_source) in their
AppConfig.ready; core imports none of them.
"""

from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction

from core.content import ContentError, SyncReport, content_sources, dangling_references
from core.versions import bump_content_version


@dataclass
class ContentSyncOutcome:
    reports: list[SyncReport]
    dangling: list[str] = field(default_factory=list)

    @property
    def warnings(self) -> list[str]:
        return [warning for report in self.reports for warning in report.warnings] + self.dangling


def sync_all_content(*, strict: bool = False) -> ContentSyncOutcome:
    """Load every content file; all-or-nothing, so a malformed file leaves the database as it was.

    With strict=True a dangling link (to a lesson, anchor, question or lab that does not exist)
    is an error instead of a warning.
    """
    with transaction.atomic():
        parts = [source.sync(content_dir=settings.CONTENT_DIRS[source.name]) for source in content_sources()]
        dangling = dangling_references(parts)
        if strict and dangling:
            raise ContentError(path="content", line=None, message="dangling links:\n  " + "\n  ".join(dangling))
    if any(part.report.changed for part in parts):
        # After the commit, so no process caches pre-sync content under the new version.
        bump_content_version()
    return ContentSyncOutcome(reports=[part.report for part in parts], dangling=dangling)
