"""How often the grader is fooled by the bank's training sentences: `manage.py check_versions`.

Every criterion's wrong versions (the bank's `wrong_versions`: on the point's topic, in its
words, false) and every misconception's right versions (`right_versions`: on the belief's topic,
close in its words, true) are graded one at a time, each alone as the whole answer. No wrong
version should earn its point and no right version should be flagged as its belief. The figures
say what the readers and patterns do with such sentences; once a reader is trained on them
(export_criterion_pairs --with-wrong-versions, export_reader_pairs --with-right-versions) they
are in-sample for it, so they show what training took in rather than what it generalises to.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

from questions.bank import load_bank
from questions.grading.evaluation import right_versions_flagged, wrong_versions_credited


class Command(BaseCommand):
    help = (
        "Grade each criterion's wrong versions and each misconception's right versions alone: count "
        "wrong versions that earn their point and right versions flagged as their belief."
    )
    requires_system_checks: list[str] = []

    def handle(self, *args: Any, **options: Any) -> None:
        bank = load_bank(content_dir=Path(settings.CONTENT_DIRS["questions"]))
        total, credited = wrong_versions_credited(bank=bank)
        self._report(
            total, [f"{c.target} {c.criterion}: {c.sentence}" for c in credited],
            what="wrong versions earn their own point", verbose=options["verbosity"] >= 2,
        )
        total, flagged = right_versions_flagged(bank=bank)
        self._report(
            total, [f"{f.target} {f.misconception}: {f.sentence}" for f in flagged],
            what="right versions are flagged as their own misconception", verbose=options["verbosity"] >= 2,
        )

    def _report(self, total: int, found: list[str], *, what: str, verbose: bool) -> None:
        share = f" ({len(found) / total:.0%})" if total else ""
        self.stdout.write(f"{len(found)} of {total} {what} when given alone{share}")
        if verbose:
            for line in found:
                self.stdout.write(f"  {line}")
