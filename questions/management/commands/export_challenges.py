"""Upheld mark challenges as labelled answers in the evaluation set.

A challenge staff upheld is a real learner's answer with an expert's verdict on where the
grader erred: the closest thing to a blind round that the site itself produces. This writes them
as a round folder of the evaluation set (category "challenge"), which `grading_report` then
reports like any other round. The files hold the answers' text and labels, never a name or
account; an answer already in a file (by id) is replaced, others in the file are kept, so
exports from several deployments add up.
"""

from __future__ import annotations

import datetime as dt
import json
import tempfile
import tomllib
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from questions.bank import BankError, load_bank
from questions.challenges import upheld_as_labelled_answers
from questions.grading.evaluation import CHALLENGE, ROUND_FILE, load_evaluation_set

DEFAULT_DIR = Path(settings.BASE_DIR) / "tests" / "questions" / "evaluation_set" / "challenges"


def _toml_answer(answer: dict) -> str:
    # JSON strings are valid TOML basic strings, whatever quotes or newlines the answer holds.
    expected = ", ".join(f"{key} = {'true' if value else 'false'}" for key, value in answer["expected"].items())
    lines = ["[[answers]]", f"id = {json.dumps(answer['id'])}", f'category = "{CHALLENGE}"', 'split = "dev"']
    if answer.get("follow_up"):
        lines.append(f"follow_up = {json.dumps(answer['follow_up'])}")
    lines += [f"text = {json.dumps(answer['text'], ensure_ascii=False)}", f"expected = {{ {expected} }}"]
    if answer.get("misconceptions"):
        lines.append(f"misconceptions = {json.dumps(answer['misconceptions'])}")
    return "\n".join(lines)


class Command(BaseCommand):
    help = "Write every upheld mark challenge as a labelled answer of the evaluation set (category 'challenge')."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--dir", type=Path, default=DEFAULT_DIR, help=f"round folder to write (default {DEFAULT_DIR})"
        )

    def handle(self, *args, **options) -> None:
        directory: Path = options["dir"]
        by_question, skipped = upheld_as_labelled_answers()
        texts: dict[str, str] = {}
        for slug, answers in sorted(by_question.items()):
            path = directory / f"{slug}.toml"
            kept = []
            if path.exists():
                new_ids = {answer["id"] for answer in answers}
                earlier = tomllib.loads(path.read_text(encoding="utf-8")).get("answers", [])
                kept = [answer for answer in earlier if answer.get("id") not in new_ids]
            every = sorted([*kept, *answers], key=lambda answer: str(answer["id"]))
            texts[path.name] = f"question = {json.dumps(slug)}\n\n" + "\n\n".join(map(_toml_answer, every)) + "\n"
        # Checked against the bank before anything is written: a file that would not load is never left behind.
        with tempfile.TemporaryDirectory() as scratch:
            for name, text in texts.items():
                (Path(scratch) / name).write_text(text, encoding="utf-8")
            try:
                bank = load_bank(content_dir=Path(settings.CONTENT_DIRS["questions"]))
                load_evaluation_set(directory=Path(scratch), bank=bank)
            except BankError as error:
                raise CommandError(f"the exported answers do not fit the question bank: {error}") from None
        directory.mkdir(parents=True, exist_ok=True)
        for name, text in texts.items():
            (directory / name).write_text(text, encoding="utf-8")
        round_file = directory / ROUND_FILE
        if not round_file.exists():
            round_file.write_text(json.dumps({
                "status": "development",
                "written": "by learners on the site, in their own words; labelled by staff who upheld their "
                           "challenge of the mark (manage.py export_challenges, first run "
                           f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC)",
            }, indent=2) + "\n", encoding="utf-8")
        written = sum(len(answers) for answers in by_question.values())
        self.stdout.write(
            f"Wrote {written} upheld challenge{'s' if written != 1 else ''} to {directory}"
            + (f"; left out {skipped} marked with an older rubric version" if skipped else "")
        )
