"""Grade one answer from the command line: `manage.py grade SLUG --answer-file FILE|- [--json]`."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from questions.bank import BankError, FollowUp, Question, load_bank
from questions.grading import GradeResult, grade

# Unknown question or follow-up, unreadable or empty answer: the caller's mistake.
USAGE_ERROR = 2


class Command(BaseCommand):
    help = "Grade an answer against a question's rubric and print the mark sheet."
    # Reads files only; it must work before the database or URLs are set up.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug", help="question slug, e.g. prefill-decode-ttft")
        parser.add_argument(
            "--answer-file", required=True, metavar="FILE",
            help="file with the answer text, or - to read standard input",
        )
        parser.add_argument("--follow-up", metavar="SLUG", help="grade a follow-up instead")
        parser.add_argument("--json", action="store_true", help="print JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        content_dir = Path(settings.CONTENT_DIRS["questions"])
        try:
            bank = load_bank(content_dir=content_dir)
        except BankError as error:
            raise CommandError(str(error)) from None
        try:
            question = bank.question(options["slug"])
        except KeyError:
            raise CommandError(
                f"unknown question {options['slug']!r}", returncode=USAGE_ERROR,
            ) from None
        target: Question | FollowUp = question
        if options["follow_up"]:
            try:
                target = question.follow_up(options["follow_up"])
            except KeyError as error:
                raise CommandError(error.args[0], returncode=USAGE_ERROR) from None

        answer = self._read(options["answer_file"])
        result = grade(question=target, answer=answer)
        if options["json"]:
            self.stdout.write(json.dumps(result.to_dict(), indent=2, ensure_ascii=False))
        else:
            self.stdout.write(render_mark_sheet(question=question, target=target, result=result))

    def _read(self, name: str) -> str:
        try:
            text = sys.stdin.read() if name == "-" else Path(name).read_text(encoding="utf-8")
        except OSError as error:
            raise CommandError(
                f"cannot read answer file {name}: {error.strerror}", returncode=USAGE_ERROR,
            ) from None
        if not text.strip():
            raise CommandError("the answer is empty", returncode=USAGE_ERROR)
        return text


def _points(value: float) -> str:
    return f"{value:g}"


def render_mark_sheet(
    *, question: Question, target: Question | FollowUp, result: GradeResult,
) -> str:
    title = question.slug if target is question else f"{question.slug} / {target.slug}"
    lines = [
        title,
        textwrap.fill(target.prompt, width=88),
        "",
        f"Score: {_points(result.score)} / {result.max_score} ({result.fraction:.0%})"
        f"    rubric {result.rubric_version}",
        "",
    ]
    for criterion in result.criteria:
        mark = "x" if criterion.met else " "
        lines.append(
            f"[{mark}] {criterion.id} ({_points(criterion.awarded)}/{criterion.points})",
        )
        for paragraph in criterion.feedback.splitlines():
            lines.append(textwrap.indent(textwrap.fill(paragraph, width=84), "    "))
        if criterion.evidence:
            lines.append(
                textwrap.indent(
                    textwrap.fill(f'evidence: "{criterion.evidence}"', width=84), "    ",
                ),
            )
    if result.misconceptions:
        lines += ["", "Misconceptions:"]
        for hit in result.misconceptions:
            lines.append(textwrap.indent(textwrap.fill(f"! {hit.id}: {hit.correction}", 84), "  "))
            if hit.evidence:
                lines.append(
                    textwrap.indent(textwrap.fill(f'evidence: "{hit.evidence}"', 82), "    "),
                )
    if result.capped_reason:
        lines += ["", f"Capped: {result.capped_reason}"]
    return "\n".join(lines)
