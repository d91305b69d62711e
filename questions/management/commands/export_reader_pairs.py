"""Write the belief reader's training pairs: `manage.py export_reader_pairs OUT.json`.

Per labelled (answer, misconception) pair of the rounds the decision model was fitted on (its
`fitted_on` in semantic_model.json), the learner unit the semantic layer finds closest to the
belief, labelled by whether the answer holds it; and pairs from the bank itself: a belief's
other statements as yes, its question's criteria, three paraphrases per criterion and three
statements of each other belief as no; and hard negatives, sentences that are right by
construction and often close in words to the belief: every sentence of the question's model
answer and of the belief's own correction, as no; and, from the same rounds, every sentence of
each strong or plain-words answer that holds no belief, against each of its question's beliefs,
as no: right sentences on the belief's own topic, in a writer's words rather than the bank's
(the reader's commonest false flag on held-out answers was such a sentence).
`--with-right-versions` adds each belief's right versions (the bank's `right_versions`: true
sentences on the belief's topic, close in words, among them explicit denials) as no, both among
the bank pairs and among the hard negatives of the extra pass. `--rounds NAME ...` takes the
answer pairs from these development rounds instead (the reader stage must then be fitted on
rounds outside them: `fit_semantic_model --reader-stage --rounds ...`).
`tools/train_belief_reader.py` trains on the file. Held-out rounds never reach it.
"""

from __future__ import annotations

import dataclasses
import json
import random
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from questions.bank import Bank, FollowUp, Question, load_bank
from questions.grading import semantic
from questions.grading.belief_reader import belief_text
from questions.grading.calibration import decision_model_rounds, graded_free_text
from questions.grading.embedding import encoder
from questions.grading.evaluation import LabelledAnswer, Round, discover_rounds
from questions.grading.text import split_sentences

# Bank pairs sample paraphrases and other beliefs' statements with this seed: the file is the
# same on every run.
SEED = 0
PER_ITEM = 3
# Answers of these styles hold no belief when their labels list none: every sentence is right.
RIGHT_STYLES = frozenset({"strong", "paraphrase"})


class Command(BaseCommand):
    help = "Write the belief reader's training pairs (development rounds and the bank) as JSON."
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("out", type=Path, help="the JSON file to write")
        parser.add_argument(
            "--dir", type=Path,
            default=Path(settings.BASE_DIR) / "tests" / "questions" / "evaluation_set",
            help="evaluation set directory",
        )
        parser.add_argument(
            "--with-right-versions", action="store_true",
            help="add each belief's right versions (the bank's right_versions) as no",
        )
        parser.add_argument(
            "--rounds", nargs="+", metavar="NAME",
            help="development rounds to take answer pairs from (default: the decision model's)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        bank = load_bank(content_dir=Path(settings.BASE_DIR) / "questions" / "content")
        rounds = training_rounds(directory=options["dir"], names=options["rounds"])
        encoder().remember_sentences()
        rows: list[dict[str, Any]] = []
        right_sentences: list[dict[str, Any]] = []
        # The unit a pair reads is the one the sentence vectors find closest; the readers only
        # judge it afterwards, so they are switched off while the answers are read (only the
        # sentence model runs).
        in_use = semantic.use_model(None)
        try:
            if in_use is not None:
                semantic.use_model(dataclasses.replace(in_use, reader=None, criterion_stage=None))
            for round_, answer, target, meaning in graded_free_text(rounds=rounds, bank=bank):
                right_sentences.extend(
                    right_answer_sentences(round_name=round_.name, answer=answer, target=target),
                )
                for misconception, candidate in zip(
                    target.misconceptions, meaning.misconception_candidates, strict=True,
                ):
                    if candidate.match is not None:
                        rows.append({
                            "round": round_.name, "answer": answer.key,
                            "belief": belief_text(misconception), "unit": candidate.match.unit.text,
                            "label": misconception.id in answer.misconceptions,
                        })
        finally:
            semantic.use_model(in_use)
        right_versions = options["with_right_versions"]
        from_bank = bank_pairs(bank=bank, right_versions=right_versions)
        hard = hard_negatives(bank=bank, right_versions=right_versions)
        options["out"].write_text(
            json.dumps({
                "rounds": [r.name for r in rounds], "answers": rows, "bank": from_bank,
                "hard_negatives": hard, "right_sentences": right_sentences,
            }),
            encoding="utf-8",
        )
        self.stdout.write(
            f"wrote {options['out']}: {len(rows)} answer pairs "
            f"({sum(r['label'] for r in rows)} yes) from {len(rounds)} rounds, "
            f"{len(from_bank)} bank pairs ({sum(r['label'] for r in from_bank)} yes), "
            f"{len(hard)} hard negatives, {len(right_sentences)} right answer sentences",
        )
        encoder().remember_sentences(on=False)


def training_rounds(*, directory: Path, names: list[str] | None) -> list[Round]:
    """The decision model's rounds, or the named ones, each a development round."""
    if not names:
        return decision_model_rounds(directory)
    by_name = {r.name: r for r in discover_rounds(directory)}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise CommandError(f"no such round: {', '.join(unknown)} (rounds: {', '.join(by_name)})")
    held = [n for n in names if by_name[n].held_out]
    if held:
        raise CommandError(f"held-out rounds never train a reader: {', '.join(held)}")
    return [by_name[n] for n in names]


def right_answer_sentences(
    *, round_name: str, answer: LabelledAnswer, target: Question | FollowUp,
) -> list[dict[str, Any]]:
    """Each sentence of a strong or plain-words answer that holds no belief, against each of its
    question's beliefs, as no (none for other answers)."""
    if answer.category not in RIGHT_STYLES or answer.misconceptions:
        return []
    return [
        {"round": round_name, "answer": answer.key, "belief": belief_text(m),
         "unit": sentence.text, "label": False}
        for m in target.misconceptions if m.statements
        for sentence in split_sentences(answer.text)
    ]


def hard_negatives(*, bank: Bank, right_versions: bool = False) -> list[dict[str, Any]]:
    """Per belief: each sentence of its question's model answer and of its own correction, and
    with `right_versions` its right versions."""
    rows: list[dict[str, Any]] = []
    for target in bank.free_text_targets():
        answer_sentences = [s.text for s in split_sentences(target.model_answer)]
        for misconception in target.misconceptions:
            if not misconception.statements:
                continue
            belief = belief_text(misconception)
            rows.extend(
                {"belief": belief, "unit": sentence, "label": False}
                for sentence in [
                    *answer_sentences,
                    *(s.text for s in split_sentences(misconception.correction)),
                    *(misconception.right_versions if right_versions else ()),
                ]
            )
    return rows


def bank_pairs(*, bank: Bank, right_versions: bool = False) -> list[dict[str, Any]]:
    """Per belief: its other statements as yes; its question's criteria, paraphrases and other
    beliefs' statements as no; with `right_versions`, its own right versions as no."""
    rng = random.Random(SEED)
    rows: list[dict[str, Any]] = []
    for target in bank.free_text_targets():
        for misconception in target.misconceptions:
            if not misconception.statements:
                continue
            belief = belief_text(misconception)
            rows.extend(
                {"belief": belief, "unit": s, "label": True} for s in misconception.statements[1:]
            )
            if right_versions:
                rows.extend(
                    {"belief": belief, "unit": s, "label": False} for s in misconception.right_versions
                )
            for criterion in target.rubric:
                rows.append({"belief": belief, "unit": criterion.earns, "label": False})
                rows.extend(
                    {"belief": belief, "unit": p, "label": False}
                    for p in rng.sample(list(criterion.paraphrases), min(PER_ITEM, len(criterion.paraphrases)))
                )
            for other in target.misconceptions:
                if other.id != misconception.id and other.statements:
                    rows.extend(
                        {"belief": belief, "unit": s, "label": False}
                        for s in rng.sample(list(other.statements), min(PER_ITEM, len(other.statements)))
                    )
    return rows
