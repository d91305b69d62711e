"""Fitting the semantic layer's decision model on labelled rounds, and measuring it honestly.

The semantic layer finds, per criterion and per misconception, the learner's unit (sentence
or adjacent pair) closest in meaning and reads a few features about it (see
`semantic.CRITERION_FEATURES`). Whether that unit says the criterion, or states the
misconception, is a logistic regression over those features, fitted here on every labelled
(answer, criterion) and (answer, misconception) pair of the development rounds. The pattern
layer's credit stands on its own, so each model is fitted only on the pairs the patterns did
not decide: what it learns is when meaning alone is enough.

Fitting is Newton's method on the L2-penalised log-likelihood of standardised features:
deterministic, a few milliseconds, no dependency beyond numpy. The honest estimate of how it
does on answers nobody tuned it for is leave-one-round-out: fit on every round but one, grade
the one left out with the whole grader, repeat for each round.

    python manage.py fit_semantic_model --loro     # leave-one-round-out figures
    python manage.py fit_semantic_model --write    # fit on every development round
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from questions.bank import Bank, FollowUp, Question
from questions.grading import belief_reader, semantic
from questions.grading.evaluation import (
    LabelledAnswer,
    Round,
    _target,
    discover_rounds,
    evaluate,
    figures,
    round_answers,
)
from questions.grading.free_text import criterion_stage_inputs, rubric_evidence
from questions.grading.semantic import (
    CRITERION_FEATURES,
    MISCONCEPTION_FEATURES,
    Logistic,
    SemanticEvidence,
    SemanticModel,
)

# L2 penalty on the standardised weights: a handful of features and thousands of pairs need
# little, but it keeps a feature that is constant in one fold from running away.
L2 = 1.0
# A criterion is credited at even odds. A misconception is flagged from 0.25: a missed one lets
# an answer built on it through uncapped, while a false flag costs only when it caps an answer
# that earned more than half. Leave-one-round-out: 0.2 catches more (round 5: 36 of 58
# misconception answers against 32) but caps a strong answer in each of rounds 1 and 2; 0.3
# misses two more in round 5 and spares no strong answer. Telling a learner who understood
# that they did not is the worse error, so 0.25.
CRITERION_THRESHOLD = 0.5
MISCONCEPTION_THRESHOLD = 0.25


@dataclass(frozen=True)
class Pair:
    """One (answer, criterion) or (answer, misconception) pair with its features and label."""

    round: str
    answer: str
    kind: str  # "criterion" | "misconception"
    item: str
    features: dict[str, float]
    label: bool


def decision_model_rounds(directory: Path) -> list[Round]:
    """The development rounds the decision model was fitted on (its `fitted_on`): what the belief
    and criterion readers are trained on. Never a held-out round."""
    fitted_on = set(json.loads(semantic.MODEL_FILE.read_text(encoding="utf-8"))["fitted_on"])
    return [r for r in discover_rounds(directory) if r.name in fitted_on and not r.held_out]


def graded_free_text(
    *, rounds: Iterable[Round], bank: Bank,
) -> Iterator[tuple[Round, LabelledAnswer, Question | FollowUp, SemanticEvidence]]:
    """Every labelled free-text answer of the rounds, with its question and the semantic
    layer's evidence (its candidates per criterion and misconception)."""
    for round_ in rounds:
        for answer in round_answers(round_=round_, bank=bank):
            target = _target(bank, answer.question, answer.follow_up)
            if target.type == "free_text":
                yield round_, answer, target, rubric_evidence(question=target, answer=answer.text).meaning


def collect(*, rounds: Iterable[Round], bank: Bank) -> list[Pair]:
    """Every labelled pair's features (the features do not depend on the decision model)."""
    pairs: list[Pair] = []
    for round_, answer, target, meaning in graded_free_text(rounds=rounds, bank=bank):
        for criterion, candidate in zip(
            target.rubric, meaning.criterion_candidates, strict=True,
        ):
            if criterion.id in answer.expected:
                pairs.append(
                    Pair(
                        round=round_.name, answer=answer.key, kind="criterion",
                        item=criterion.id, features=dict(candidate.features),
                        label=answer.expected[criterion.id],
                    ),
                )
        for misconception, candidate in zip(
            target.misconceptions, meaning.misconception_candidates, strict=True,
        ):
            pairs.append(
                Pair(
                    round=round_.name, answer=answer.key, kind="misconception",
                    item=misconception.id, features=dict(candidate.features),
                    label=misconception.id in answer.misconceptions,
                ),
            )
    return pairs


def fit_logistic(
    *, x: np.ndarray, y: np.ndarray, names: Sequence[str], threshold: float, l2: float = L2,
) -> Logistic:
    """Penalised logistic regression by Newton's method (deterministic)."""
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    z = (x - mean) / scale
    design = np.hstack([z, np.ones((len(z), 1))])
    beta = np.zeros(design.shape[1])
    penalty = np.full(design.shape[1], l2)
    penalty[-1] = 0.0
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-(design @ beta)))
        gradient = design.T @ (p - y) + penalty * beta
        hessian = (design * (p * (1 - p))[:, None]).T @ design + np.diag(penalty)
        step = np.linalg.solve(hessian, gradient)
        beta -= step
        if np.abs(step).max() < 1e-10:
            break
    return Logistic(
        features=tuple(names), mean=mean, scale=scale, weights=beta[:-1],
        bias=float(beta[-1]), threshold=threshold,
    )


def _matrix(pairs: Sequence[Pair], names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    x = np.array([[p.features[n] for n in names] for p in pairs], dtype=np.float64)
    y = np.array([p.label for p in pairs], dtype=np.float64)
    return x, y


def fit(pairs: Sequence[Pair]) -> SemanticModel:
    """Both decision models, each on the pairs its pattern layer did not decide."""
    fitted: dict[str, Logistic] = {}
    for kind, names, threshold in (
        ("criterion", CRITERION_FEATURES, CRITERION_THRESHOLD),
        ("misconception", MISCONCEPTION_FEATURES, MISCONCEPTION_THRESHOLD),
    ):
        used = [n for n in names if n != "pattern"]
        chosen = [p for p in pairs if p.kind == kind and not p.features["pattern"]]
        x, y = _matrix(chosen, used)
        fitted[kind] = fit_logistic(x=x, y=y, names=used, threshold=threshold)
    return SemanticModel(criterion=fitted["criterion"], misconception=fitted["misconception"])


def graded_with(
    model: SemanticModel | None, *, round_: Round, bank: Bank,
) -> dict[str, Any]:
    """A round's figures when the whole grader uses this decision model."""
    previous = semantic.use_model(model)
    try:
        return figures(evaluate(answers=round_answers(round_=round_, bank=bank), bank=bank))
    finally:
        semantic.use_model(previous)


def leave_one_round_out(
    *, rounds: Sequence[Round], bank: Bank, pairs: Sequence[Pair],
    progress: Callable[[str], None] = lambda _: None,
) -> dict[str, dict[str, Any]]:
    """Per round: its figures when the model is fitted on every other round."""
    results: dict[str, dict[str, Any]] = {}
    for round_ in rounds:
        model = fit([p for p in pairs if p.round != round_.name])
        results[round_.name] = graded_with(model, round_=round_, bank=bank)
        progress(round_.name)
    return results


@dataclass(frozen=True)
class ReaderPair:
    """One (answer, misconception) pair with a candidate unit: both readers' log-odds, label."""

    round: str
    answer: str
    style: str
    item: str
    decision_logit: float
    reader_logit: float
    label: bool


def collect_reader_pairs(
    *, rounds: Iterable[Round], bank: Bank, model: SemanticModel,
) -> list[ReaderPair]:
    """Per labelled (answer, misconception) pair whose misconception has a candidate unit, the
    decision model's and the belief reader's log-odds that the unit states it."""
    found: list[tuple[Round, LabelledAnswer, str, float, str, str]] = []
    for round_, answer, target, meaning in graded_free_text(rounds=rounds, bank=bank):
        for misconception, candidate in zip(
            target.misconceptions, meaning.misconception_candidates, strict=True,
        ):
            if candidate.match is not None:
                found.append((
                    round_, answer, misconception.id,
                    semantic.logit(model.misconception.probability(candidate.features)),
                    belief_reader.belief_text(misconception), candidate.match.unit.text,
                ))
    logits = belief_reader.reader().logits([(belief, unit) for *_, belief, unit in found])
    return [
        ReaderPair(
            round=round_.name, answer=answer.key, style=answer.category, item=item,
            decision_logit=decision, reader_logit=reader_logit,
            label=item in answer.misconceptions,
        )
        for (round_, answer, item, decision, _, _), reader_logit in zip(found, logits, strict=True)
    ]


# The reader's log-odds beyond those seen in fitting, by this much either way, still count as
# possible when the band where it can change a decision is worked out.
READER_MARGIN = 2.0


def fit_reader_stage(
    pairs: Sequence[ReaderPair], *, threshold: float = MISCONCEPTION_THRESHOLD,
) -> semantic.ReaderStage:
    """The logistic over both readers' log-odds (flagged from `threshold`), and the band of
    decision-model probabilities where the reader's answer can change the verdict."""
    x = np.array([[p.decision_logit, p.reader_logit] for p in pairs], dtype=np.float64)
    y = np.array([p.label for p in pairs], dtype=np.float64)
    logistic = fit_logistic(x=x, y=y, names=semantic.READER_FEATURES, threshold=threshold)
    # z = a * decision_logit + b * reader_logit + c on the raw scale.
    a, b = logistic.weights / logistic.scale
    c = logistic.bias - float((logistic.weights * logistic.mean / logistic.scale).sum())
    if a <= 0 or b <= 0:
        raise ValueError(
            f"the reader stage must rise with both readers' log-odds (weights {a:.3f}, {b:.3f}); "
            "refusing a stage that would read evidence backwards",
        )
    target = semantic.logit(logistic.threshold)
    lowest, highest = x[:, 1].min() - READER_MARGIN, x[:, 1].max() + READER_MARGIN
    band = (
        semantic.sigmoid((target - c - b * highest) / a), semantic.sigmoid((target - c - b * lowest) / a),
    )
    return semantic.ReaderStage(logistic=logistic, band=band)


def model_document(*, model: SemanticModel, rounds: Sequence[str], pairs: int) -> dict[str, Any]:
    return {
        "about": (
            "The semantic layer's decision model (questions/grading/calibration.py): logistic "
            "regressions over the features of the unit closest in meaning to each criterion "
            "and misconception, fitted on the pairs the pattern layer did not decide."
        ),
        "command": "python manage.py fit_semantic_model --write",
        "fitted_on": list(rounds),
        "pairs": pairs,
        "criterion": model.criterion.to_dict(),
        "misconception": model.misconception.to_dict(),
    }


def with_reader_stage(
    document: dict[str, Any], *, stage: semantic.ReaderStage, rounds: Sequence[str], pairs: int,
) -> dict[str, Any]:
    """The model document with the reader stage added (or replaced)."""
    return {
        **document,
        "reader": {
            "about": (
                "The belief reader's stage (belief_reader.py, calibration.fit_reader_stage): a "
                "logistic over the decision model's and the cross-encoder's log-odds that a "
                "unit states a misconception, fitted on rounds neither was trained on."
            ),
            "command": "python manage.py fit_semantic_model --reader-stage",
            "fitted_on": list(rounds),
            "pairs": pairs,
            "stage": stage.to_dict(),
        },
    }


def write_model(document: dict[str, Any], path: Path = semantic.MODEL_FILE) -> None:
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")


@dataclass(frozen=True)
class CriterionStageRow:
    """One labelled (answer, criterion) pair the criterion stage decides: what it reads, label."""

    round: str
    answer: str
    style: str
    item: str
    features: dict[str, float]
    label: bool


def collect_criterion_stage_rows(
    *, rounds: Iterable[Round], bank: Bank, model: SemanticModel,
) -> list[CriterionStageRow]:
    """Per labelled (answer, criterion) pair that the criterion stage decides, its inputs
    (free_text.criterion_stage_inputs) under this decision model."""
    rows: list[CriterionStageRow] = []
    for round_ in rounds:
        for answer in round_answers(round_=round_, bank=bank):
            target = _target(bank, answer.question, answer.follow_up)
            if target.type != "free_text":
                continue
            evidence = rubric_evidence(question=target, answer=answer.text)
            inputs = criterion_stage_inputs(evidence=evidence, question=target, decider=model)
            rows.extend(
                CriterionStageRow(
                    round=round_.name, answer=answer.key, style=answer.category,
                    item=criterion.id, features=features, label=bool(answer.expected[criterion.id]),
                )
                for criterion, features in zip(target.rubric, inputs, strict=True)
                if features is not None and criterion.id in answer.expected
            )
    return rows


def fit_criterion_stage(
    rows: Sequence[CriterionStageRow], *, threshold: float = CRITERION_THRESHOLD,
) -> semantic.CriterionStage:
    """The logistic over the decision model's and the criterion reader's log-odds and the
    pattern flag; refuses one that would read either reader's evidence backwards."""
    names = semantic.CRITERION_STAGE_FEATURES
    x = np.array([[row.features[n] for n in names] for row in rows], dtype=np.float64)
    y = np.array([row.label for row in rows], dtype=np.float64)
    logistic = fit_logistic(x=x, y=y, names=names, threshold=threshold)
    weights = dict(zip(names, logistic.weights, strict=True))
    if weights["decision_logit"] <= 0 or weights["reader_logit"] <= 0:
        raise ValueError(
            "the criterion stage must rise with both readers' log-odds (weights "
            f"{weights['decision_logit']:.3f}, {weights['reader_logit']:.3f}); refusing a stage "
            "that would read evidence backwards",
        )
    readings = x[:, list(names).index("reader_logit")]
    return semantic.CriterionStage(
        logistic=logistic,
        reader_range=(float(readings.min()) - READER_MARGIN, float(readings.max()) + READER_MARGIN),
    )


def with_criterion_stage(
    document: dict[str, Any], *, stage: semantic.CriterionStage, rounds: Sequence[str], rows: int,
) -> dict[str, Any]:
    """The model document with the criterion stage added (or replaced)."""
    return {
        **document,
        "criterion_reader": {
            "about": (
                "The criterion reader's stage (belief_reader.criterion_reader, "
                "calibration.fit_criterion_stage): a logistic over the decision model's and the "
                "cross-encoder's log-odds that the learner's sentences make a point, and whether "
                "the patterns credit it, fitted on rounds neither was trained on."
            ),
            "command": "python manage.py fit_semantic_model --criterion-stage",
            "fitted_on": list(rounds),
            "rows": rows,
            "stage": stage.to_dict(),
        },
    }
