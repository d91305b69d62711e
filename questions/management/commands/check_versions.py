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
        self.stdout.write(
            f"{len(credited)} of {total} wrong versions earn their own point when given alone"
            f"{_share(len(credited), total)}",
        )
        if options["verbosity"] >= 2:
            for credit in credited:
                self.stdout.write(f"  {credit.target} {credit.criterion}: {credit.sentence}")
        total, flagged = right_versions_flagged(bank=bank)
        self.stdout.write(
            f"{len(flagged)} of {total} right versions are flagged as their own misconception when given alone"
            f"{_share(len(flagged), total)}",
        )
        if options["verbosity"] >= 2:
            for flag in flagged:
                self.stdout.write(f"  {flag.target} {flag.misconception}: {flag.sentence}")


def _share(part: int, total: int) -> str:
    return f" ({part / total:.0%})" if total else ""
