"""Fit the semantic layer's decision model on the labelled rounds, or measure it honestly.

    manage.py fit_semantic_model --loro    # leave-one-round-out: fit on all rounds but one,
                                           # grade that one with the whole grader, per round
    manage.py fit_semantic_model --write   # fit on every development round and write
                                           # questions/grading/semantic_model.json

    manage.py fit_semantic_model --reader-stage
                                           # fit the belief reader's stage (see
                                           # calibration.fit_reader_stage) on the rounds
                                           # with a first run that the decision model was
                                           # not fitted on, with leave-one-round-out
                                           # figures, and add it to the model file
    manage.py fit_semantic_model --criterion-stage
                                           # the same for the criterion reader's stage
                                           # (calibration.fit_criterion_stage)

Held-out rounds (status "held-out" in their round.json) are never fitted on by the decision
model. The reader stage is fitted only on rounds with a first run that the decision model (and
so the reader) was not fitted on, never on a sealed one; a round it was fitted on has been
tuned on, and its round.json says so.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from questions.bank import Bank, load_bank
from questions.grading import belief_reader, calibration, semantic
from questions.grading.embedding import encoder
from questions.grading.evaluation import Round, discover_rounds, render_rounds

FittedStage = TypeVar("FittedStage", semantic.ReaderStage, semantic.CriterionStage)


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
        parser.add_argument(
            "--reader-stage", action="store_true",
            help="fit the belief reader's stage on rounds with a first run the decision model was not fitted on",
        )
        parser.add_argument(
            "--criterion-stage", action="store_true",
            help="fit the criterion reader's stage on rounds with a first run the decision model was not fitted on",
        )
        parser.add_argument(
            "--rounds", nargs="+", metavar="NAME",
            help=(
                "with --reader-stage or --criterion-stage: fit on these rounds only (each must "
                "have a first run and be unseen by the readers)"
            ),
        )
        parser.add_argument(
            "--threshold", type=float, default=None,
            help=(
                "with --reader-stage: flag a misconception from this stage probability (default "
                f"{calibration.MISCONCEPTION_THRESHOLD}); with --criterion-stage: credit a criterion "
                f"from it (default {calibration.CRITERION_THRESHOLD})"
            ),
        )

    def handle(self, *args: Any, **options: Any) -> None:
        bank = load_bank(content_dir=Path(settings.BASE_DIR) / "questions" / "content")
        threshold = options["threshold"]
        if threshold is not None and not 0.0 < threshold < 1.0:
            raise CommandError(f"--threshold must be between 0 and 1, not {threshold}")
        if options["reader_stage"]:
            self._reader_stage(
                bank=bank, directory=options["dir"], names=options["rounds"],
                threshold=calibration.MISCONCEPTION_THRESHOLD if threshold is None else threshold,
            )
            return
        if options["criterion_stage"]:
            self._criterion_stage(
                bank=bank, directory=options["dir"], names=options["rounds"],
                threshold=calibration.CRITERION_THRESHOLD if threshold is None else threshold,
            )
            return
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
            self.stdout.write(
                "the belief reader's and the criterion reader's stages were fitted on the old "
                "decision model and are not kept: fit them again with --reader-stage and "
                "--criterion-stage",
            )
        encoder().remember_sentences(on=False)

    def _reader_stage(
        self, *, bank: Bank, directory: Path, threshold: float, names: list[str] | None,
    ) -> None:
        document, rounds = _stage_rounds(
            directory, stage="reader stage", names=names,
            readers_trained_on=belief_reader.trained_on(belief_reader.READER_FILE),
        )
        decision = dataclasses.replace(semantic.load_model(), reader=None)
        encoder().remember_sentences()
        belief_reader.reader().remember_pairs()
        previous = semantic.use_model(decision)
        try:
            pairs = calibration.collect_reader_pairs(rounds=rounds, bank=bank, model=decision)
        finally:
            semantic.use_model(previous)
        self.stderr.write(f"{len(pairs)} reader pairs from {len(rounds)} rounds")
        self._left_out_table(
            "reader stage", rounds=rounds, bank=bank,
            model_without=lambda name: dataclasses.replace(
                decision,
                reader=_stage([p for p in pairs if p.round != name], threshold=threshold, left_out=name),
            ),
        )
        stage = _stage(pairs, threshold=threshold, left_out=None)
        calibration.write_model(
            calibration.with_reader_stage(
                document, stage=stage, rounds=[r.name for r in rounds], pairs=len(pairs),
            ),
            path=semantic.MODEL_FILE,
        )
        low, high = stage.band
        self.stdout.write(
            f"wrote the reader stage to {semantic.MODEL_FILE}: weights "
            f"{[round(float(w), 3) for w in stage.logistic.weights]}, the reader is asked for "
            f"decision-model probabilities {low:.4f} to {high:.4f}",
        )
        belief_reader.reader().remember_pairs(on=False)
        encoder().remember_sentences(on=False)

    def _left_out_table(
        self, stage: str, *, rounds: list[Round], bank: Bank,
        model_without: Callable[[str], semantic.SemanticModel],
    ) -> None:
        """Each round graded with the stage fitted on the others, next to its first run."""
        columns: list[tuple[str, Any]] = []
        for round_ in rounds:
            columns.append((
                f"{round_.name} left out",
                calibration.graded_with(model_without(round_.name), round_=round_, bank=bank),
            ))
            columns.append((f"{round_.name} first run", round_.first_run["figures"]))
            self.stderr.write(f"  graded {round_.name}")
        self.stdout.write(f"The {stage}, each round left out of its fit, next to the round's first run")
        self.stdout.write(render_rounds(columns))

    def _criterion_stage(
        self, *, bank: Bank, directory: Path, threshold: float, names: list[str] | None,
    ) -> None:
        document, rounds = _stage_rounds(
            directory, stage="criterion stage", names=names,
            readers_trained_on=belief_reader.trained_on(belief_reader.CRITERION_READER_FILE),
        )
        decision = dataclasses.replace(semantic.load_model(), criterion_stage=None)
        encoder().remember_sentences()
        belief_reader.reader().remember_pairs()
        belief_reader.criterion_reader().remember_pairs()
        rows = calibration.collect_criterion_stage_rows(rounds=rounds, bank=bank, model=decision)
        self.stderr.write(f"{len(rows)} criterion stage rows from {len(rounds)} rounds")
        self._left_out_table(
            "criterion stage", rounds=rounds, bank=bank,
            model_without=lambda name: dataclasses.replace(
                decision,
                criterion_stage=_criterion_stage(
                    [r for r in rows if r.round != name], threshold=threshold, left_out=name,
                ),
            ),
        )
        stage = _criterion_stage(rows, threshold=threshold, left_out=None)
        calibration.write_model(
            calibration.with_criterion_stage(
                document, stage=stage, rounds=[r.name for r in rounds], rows=len(rows),
            ),
            path=semantic.MODEL_FILE,
        )
        self.stdout.write(
            f"wrote the criterion stage to {semantic.MODEL_FILE}: weights "
            f"{dict(zip(stage.logistic.features, (round(float(w), 3) for w in stage.logistic.weights), strict=True))}"
            f", the reader is asked for its log-odds from {stage.reader_range[0]:.2f} to {stage.reader_range[1]:.2f}",
        )
        belief_reader.criterion_reader().remember_pairs(on=False)
        belief_reader.reader().remember_pairs(on=False)
        encoder().remember_sentences(on=False)


def _stage_rounds(
    directory: Path, *, stage: str, names: list[str] | None = None,
    readers_trained_on: frozenset[str] = frozenset(),
) -> tuple[dict[str, Any], list[Round]]:
    """The model document and the rounds a reader's stage is fitted on: graded once (a first
    run), never fitted on by the decision model and never trained on by the reader (a reader
    trained on more rounds than the decision model's names them in its weights file), and, when
    `names` are given, only those."""
    document = json.loads(semantic.MODEL_FILE.read_text(encoding="utf-8"))
    trained_on = set(document["fitted_on"]) | readers_trained_on
    rounds = [
        r for r in discover_rounds(directory) if r.first_run is not None and r.name not in trained_on
    ]
    if names:
        allowed = {r.name for r in rounds}
        refused = [n for n in names if n not in allowed]
        if refused:
            raise CommandError(
                f"the {stage} cannot be fitted on {', '.join(refused)}: a round must have a first "
                f"run and be unseen by the readers ({', '.join(sorted(allowed)) or 'none qualifies'})",
            )
        rounds = [r for r in rounds if r.name in names]
    if len(rounds) < 2:
        raise CommandError(
            f"the {stage} needs at least two rounds with a first run that the decision model was "
            f"not fitted on; found {len(rounds)}",
        )
    return document, rounds


def _criterion_stage(
    rows: list[calibration.CriterionStageRow], *, threshold: float, left_out: str | None,
) -> semantic.CriterionStage:
    return _fitted("criterion stage", lambda: calibration.fit_criterion_stage(rows, threshold=threshold), left_out)


def _stage(
    pairs: list[calibration.ReaderPair], *, threshold: float, left_out: str | None,
) -> semantic.ReaderStage:
    return _fitted("reader stage", lambda: calibration.fit_reader_stage(pairs, threshold=threshold), left_out)


def _fitted(stage: str, fit: Callable[[], FittedStage], left_out: str | None) -> FittedStage:
    """A stage's fit, or a CommandError naming which fit read its evidence backwards."""
    try:
        return fit()
    except ValueError as error:
        fitted = f"with {left_out} left out" if left_out else "on every round"
        raise CommandError(f"the {stage} fitted {fitted}: {error}; nothing was written") from error
