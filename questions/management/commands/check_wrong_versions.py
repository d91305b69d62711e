"""How often the grader credits a point for a sentence that states it wrongly:
`manage.py check_wrong_versions`.

Every criterion's wrong versions (the bank's `wrong_versions`: on the point's topic, in its
words, false) are graded one at a time, each alone as the whole answer. None should earn its
point. The grader was never fitted on them (export_criterion_pairs leaves them out unless asked),
so the count measures what its readers and patterns do with a fluent wrong sentence.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

from questions.bank import load_bank
from questions.grading.evaluation import wrong_versions_credited


class Command(BaseCommand):
    help = "Grade each criterion's wrong versions alone and count those that earn their point."
    requires_system_checks: list[str] = []

    def handle(self, *args: Any, **options: Any) -> None:
        bank = load_bank(content_dir=Path(settings.CONTENT_DIRS["questions"]))
        total, credited = wrong_versions_credited(bank=bank)
        share = f" ({len(credited) / total:.0%})" if total else ""
        self.stdout.write(f"{len(credited)} of {total} wrong versions earn their own point when given alone{share}")
        if options["verbosity"] >= 2:
            for credit in credited:
                self.stdout.write(f"  {credit.target} {credit.criterion}: {credit.sentence}")
