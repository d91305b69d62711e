"""Fit the semantic layer's decision model on the labelled rounds, or measure it honestly.

    manage.py fit_semantic_model --loro    # leave-one-round-out: fit on all rounds but one,
                                           # grade that one with the whole grader, per round
    manage.py fit_semantic_model --write   # fit on every development round and write
                                           # questions/grading/semantic_model.json

Held-out rounds (status "held-out" in their round.json) are never fitted on.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from questions.bank import load_bank
from questions.grading import calibration, semantic
from questions.grading.embedding import encoder
from questions.grading.evaluation import discover_rounds, render_rounds


class Command(BaseCommand):
    help = "Fit the semantic layer's decision model (logistic regressions) on the labelled rounds."
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--dir", type=Path,
            default=Path(settings.BASE_DIR) / "tests" / "questions" / "evaluation_set",
            help="evaluation set directory",
        )
        parser.add_argument("--loro", action="store_true", help="report leave-one-round-out figures")
        parser.add_argument("--write", action="store_true", help="write semantic_model.json")
        parser.add_argument("--json", action="store_true", help="print the --loro figures as JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        bank = load_bank(content_dir=Path(settings.BASE_DIR) / "questions" / "content")
        rounds = [r for r in discover_rounds(options["dir"]) if not r.held_out]
        encoder().remember_sentences()
        previous = semantic.use_model(None)
        try:
            pairs = calibration.collect(rounds=rounds, bank=bank)
        finally:
            semantic.use_model(previous)
        self.stderr.write(f"{len(pairs)} labelled pairs from {len(rounds)} rounds")
        if options["loro"]:
            results = calibration.leave_one_round_out(
                rounds=rounds, bank=bank, pairs=pairs,
                progress=lambda name: self.stderr.write(f"  graded {name}"),
            )
            if options["json"]:
                self.stdout.write(json.dumps(results, indent=2))
            else:
                self.stdout.write("Leave-one-round-out: each column fitted on the other rounds")
                self.stdout.write(render_rounds(list(results.items())))
        if options["write"]:
            model = calibration.fit(pairs)
            calibration.write_model(
                calibration.model_document(
                    model=model, rounds=[r.name for r in rounds], pairs=len(pairs),
                ),
            )
            self.stdout.write(f"wrote {semantic.MODEL_FILE}")
        encoder().remember_sentences(on=False)
