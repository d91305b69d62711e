"""Write the criterion reader's training pairs: `manage.py export_criterion_pairs OUT.json`.

Per labelled (answer, criterion) pair of the rounds the decision model was fitted on (its
`fitted_on` in semantic_model.json): the learner unit the semantic layer finds closest to the
criterion and the first sentences the pattern layer credits it in (as many as the criterion
stage reads, free_text.STAGE_PATTERN_SENTENCES), each labelled by whether the answer makes the
point. And pairs from the bank itself: a criterion's paraphrases and the model-answer sentences
its patterns credit as yes; three paraphrases of each other criterion of its question and three
statements of each of its question's misconceptions as no (the second are the hard ones: on the
point's own topic, in the author's words, and wrong). `tools/train_belief_reader.py --kind
criterion` trains on the file. Held-out rounds never reach it.

`--with-wrong-versions` adds every wrong version of each criterion (the bank's `wrong_versions`)
as no. The shipped reader was trained without them: with them, measured on rounds 7-14 with each
round left out of the stage's fit, fluent wrong answers were not held down any better and partial
answers lost (README, "Session 14").
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from questions.bank import Bank, FollowUp, Question, load_bank
from questions.grading import semantic
from questions.grading.calibration import decision_model_rounds
from questions.grading.embedding import encoder
from questions.grading.evaluation import LabelledAnswer, _target, round_answers
from questions.grading.free_text import rubric_evidence, stage_units
from questions.grading.matching import _matching_sentences, used_concepts
from questions.grading.text import analyse

# Bank pairs sample paraphrases and statements with this seed: the file is the same on every run.
SEED = 0
PER_ITEM = 3


class Command(BaseCommand):
    help = "Write the criterion reader's training pairs (development rounds and the bank) as JSON."
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("out", type=Path, help="the JSON file to write")
        parser.add_argument(
            "--dir", type=Path,
            default=Path(settings.BASE_DIR) / "tests" / "questions" / "evaluation_set",
            help="evaluation set directory",
        )
        parser.add_argument(
            "--with-wrong-versions", action="store_true",
            help="add each criterion's wrong versions as no (measured in session 14, not shipped)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        bank = load_bank(content_dir=Path(settings.BASE_DIR) / "questions" / "content")
        rounds = decision_model_rounds(options["dir"])
        encoder().remember_sentences()
        rows: list[dict[str, Any]] = []
        for round_ in rounds:
            for answer in round_answers(round_=round_, bank=bank):
                target = _target(bank, answer.question, answer.follow_up)
                if target.type == "free_text":
                    rows.extend(answer_pairs(round_name=round_.name, answer=answer, target=target))
        from_bank = bank_pairs(bank=bank, wrong_versions=options["with_wrong_versions"])
        options["out"].write_text(
            json.dumps({"rounds": [r.name for r in rounds], "answers": rows, "bank": from_bank}),
            encoding="utf-8",
        )
        self.stdout.write(
            f"wrote {options['out']}: {len(rows)} answer pairs ({sum(r['label'] for r in rows)} yes) "
            f"from {len(rounds)} rounds, {len(from_bank)} bank pairs "
            f"({sum(r['label'] for r in from_bank)} yes)",
        )
        encoder().remember_sentences(on=False)


def answer_pairs(
    *, round_name: str, answer: LabelledAnswer, target: Question | FollowUp,
) -> list[dict[str, Any]]:
    """The units the criterion stage would read for each labelled criterion of one answer."""
    evidence = rubric_evidence(question=target, answer=answer.text)
    rows: list[dict[str, Any]] = []
    for position, criterion in enumerate(target.rubric):
        if criterion.id not in answer.expected:
            continue
        units = stage_units(evidence=evidence, position=position)
        rows.extend(
            {
                "round": round_name, "answer": answer.key, "style": answer.category,
                "criterion": semantic.statement_of(criterion.earns), "unit": unit_text,
                "label": bool(answer.expected[criterion.id]),
            }
            for unit_text in units
        )
    return rows


def bank_pairs(*, bank: Bank, wrong_versions: bool = False) -> list[dict[str, Any]]:
    rng = random.Random(SEED)
    rows: list[dict[str, Any]] = []
    for target in bank.free_text_targets():
        model = analyse(
            text=target.model_answer, concepts=target.concepts,
            concept_ids=used_concepts(target), contrasts=target.contrasts,
        )
        for criterion in target.rubric:
            statement = semantic.statement_of(criterion.earns)
            found = _matching_sentences(model, criterion.match, criterion.unless, misconception=False)
            yes = [*criterion.paraphrases, *(model.sentences[i].sentence.text for i in sorted(found))]
            rows.extend({"criterion": statement, "unit": text, "label": True} for text in yes)
            if wrong_versions:
                rows.extend({"criterion": statement, "unit": text, "label": False} for text in criterion.wrong_versions)
            for other in target.rubric:
                if other.id != criterion.id:
                    rows.extend(
                        {"criterion": statement, "unit": text, "label": False}
                        for text in rng.sample(list(other.paraphrases), min(PER_ITEM, len(other.paraphrases)))
                    )
            for misconception in target.misconceptions:
                rows.extend(
                    {"criterion": statement, "unit": text, "label": False}
                    for text in rng.sample(
                        list(misconception.statements), min(PER_ITEM, len(misconception.statements)),
                    )
                )
    return rows
