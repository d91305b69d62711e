"""What blind writers get for a new held-out round, and nothing more.

A blind round is only blind if its writers never see the grader: its patterns, paraphrases,
reference statements or earlier rounds. This writes the one thing they may read: per free-text
question its prompt, model answer, rubric criteria (id, points, earns) and misconceptions (id,
correction), split into parts (one per writer, every third question to each of three writers so
each covers every set), and the brief they follow (questions/grading/blind_brief.md). The
writers' folders are then copied into the evaluation set as a round folder with a round.json of
status "held-out" and committed: the round is sealed until `grading_report --record-first-run`
grades it once.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from questions.bank import Bank, BankError, load_bank

BRIEF = Path(__file__).resolve().parents[2] / "grading" / "blind_brief.md"


def blind_export(*, bank: Bank) -> list[dict[str, Any]]:
    """Every free-text question as a writer may see it."""
    return [
        {
            "slug": question.slug,
            "prompt": question.prompt,
            "model_answer": question.model_answer,
            "rubric": [{"id": c.id, "points": c.points, "earns": c.earns} for c in question.rubric],
            "misconceptions": [{"id": m.id, "correction": m.correction} for m in question.misconceptions],
        }
        for question_set in bank.sets
        for question in question_set.questions
        if question.type == "free_text"
    ]


class Command(BaseCommand):
    help = "Write the inputs and the brief for the writers of a blind round (no grader internals)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("out", type=Path, help="folder for BRIEF.md, input-N.json and out-N/")
        parser.add_argument("--round", required=True, help="the round folder's name to be, e.g. heldout14")
        parser.add_argument("--writers", type=int, default=3, help="how many writers (default 3)")

    def handle(self, *args: Any, **options: Any) -> None:
        match = re.fullmatch(r"[a-z]+(\d+)", options["round"])
        if match is None:
            raise CommandError(
                f"--round {options['round']!r}: give a folder name of lowercase letters and a number, e.g. heldout14",
            )
        if not 1 <= options["writers"] <= 12:
            raise CommandError(f"--writers {options['writers']}: give 1 to 12 writers")
        out: Path = options["out"].resolve()
        if out.exists() and any(out.iterdir()):
            raise CommandError(f"{out} is not empty: give a new folder, so no earlier round's files reach a writer")
        try:
            questions = blind_export(bank=load_bank(content_dir=Path(settings.CONTENT_DIRS["questions"])))
        except BankError as error:
            raise CommandError(str(error)) from None
        out.mkdir(parents=True, exist_ok=True)
        writers = options["writers"]
        for part in range(writers):
            (out / f"input-{part + 1}.json").write_text(
                json.dumps(questions[part::writers], indent=1, ensure_ascii=False) + "\n", encoding="utf-8",
            )
            (out / f"out-{part + 1}").mkdir()
        (out / "BRIEF.md").write_text(
            BRIEF.read_text(encoding="utf-8").format(
                round=options["round"], directory=out, prefix=f"r{match.group(1)}",
            ),
            encoding="utf-8",
        )
        self.stdout.write(
            f"{len(questions)} free-text questions for {writers} writers in {out} "
            f"({', '.join(str(len(questions[p::writers])) for p in range(writers))} each); "
            f"brief: {out / 'BRIEF.md'}",
        )
