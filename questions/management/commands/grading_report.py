"""How well the deterministic grader agrees with the labelled evaluation set."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from questions.bank import BankError, load_bank
from questions.grading.evaluation import (
    SPLITS,
    evaluate,
    load_evaluation_set,
    render_text,
)


def default_evaluation_dir() -> Path:
    return Path(settings.BASE_DIR) / "tests" / "questions" / "evaluation_set"


class Command(BaseCommand):
    help = (
        "Grade every labelled answer of the evaluation set and print per-criterion and overall "
        "agreement with the labels, score ranges per category, and threshold problems."
    )
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help="print JSON")
        parser.add_argument(
            "--dir", type=Path, default=None,
            help="evaluation set directory (default: tests/questions/evaluation_set)",
        )
        parser.add_argument("--split", choices=SPLITS, help="only this split")
        parser.add_argument(
            "--fail-on-problems", action="store_true",
            help="exit with status 1 when a threshold does not hold (for CI)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        directory = options["dir"] or default_evaluation_dir()
        if not directory.is_dir():
            raise CommandError(f"no evaluation set at {directory}", returncode=2)
        try:
            bank = load_bank(content_dir=Path(settings.CONTENT_DIRS["questions"]))
            answers = load_evaluation_set(directory=directory, bank=bank)
        except BankError as error:
            raise CommandError(str(error)) from None
        if options["split"]:
            answers = [a for a in answers if a.split == options["split"]]
        if not answers:
            raise CommandError(f"no labelled answers in {directory}", returncode=2)
        report = evaluate(answers=answers, bank=bank)
        if options["json"]:
            self.stdout.write(json.dumps(report.to_dict(), indent=2))
        else:
            self.stdout.write(render_text(report))
        if options["fail_on_problems"] and report.problems:
            raise CommandError(f"{len(report.problems)} threshold problem(s)")
