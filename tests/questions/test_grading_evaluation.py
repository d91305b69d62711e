"""The deterministic grader against the labelled evaluation set (thresholds from issue 4)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from questions.bank import BankError, load_bank
from questions.grading.evaluation import (
    STYLES,
    EvaluationReport,
    LabelledAnswer,
    cohen_kappa,
    discover_rounds,
    evaluate,
    figures,
    load_evaluation_set,
    round_answers,
)

ROOT = Path(__file__).resolve().parents[2]
EVALUATION_DIR = Path(__file__).resolve().parent / "evaluation_set"
SEED_SLUGS = [
    "prefill-decode-ttft", "inference-bottleneck", "quantization-tradeoff",
    "batching-almost-free", "when-self-host", "8b-16-users-24gb", "weight-only-quant-speedup",
    "fastest-possible-generation", "continuous-batching-throughput",
]


# The rounds written with the patterns (the top-level files, heldout, heldout2) are held to
# the bounds answer by answer; round 3, written blind, is held to its own record below.
PINNED_ROUNDS = ("development", "heldout", "heldout2")


@pytest.fixture(scope="module")
def bank():
    return load_bank(content_dir=ROOT / "questions" / "content")


@pytest.fixture(scope="module")
def rounds():
    return {r.name: r for r in discover_rounds(EVALUATION_DIR)}


@pytest.fixture(scope="module")
def report(bank, rounds) -> EvaluationReport:
    answers = [
        a for name in PINNED_ROUNDS for a in round_answers(round_=rounds[name], bank=bank)
    ]
    return evaluate(answers=answers, bank=bank)


def test_every_seed_question_has_six_kinds_of_labelled_answer(report):
    for slug in SEED_SLUGS:
        kinds = Counter(o.answer.category for o in report.outcomes if o.answer.question == slug)
        assert sum(kinds.values()) >= 6, slug
        assert set(kinds) == set(STYLES), (slug, kinds)


def test_the_held_out_answers_are_there(report):
    held_out = [o for o in report.outcomes if o.answer.split == "heldout"]
    assert len(held_out) >= 2 * len(SEED_SLUGS)
    assert {o.answer.question for o in held_out} == set(SEED_SLUGS)


@pytest.mark.parametrize(
    ("category", "low", "high"),
    [("strong", 0.80, 1.0), ("paraphrase", 0.50, 1.0), ("keyword_list", 0.0, 0.35),
     ("wrong", 0.0, 0.35)],
)
def test_scores_stay_within_the_bounds_for_their_category(report, category, low, high):
    outside = [
        f"{o.answer.key}: {o.fraction:.0%}"
        for o in report.outcomes
        if o.answer.category == category and not low - 1e-9 <= o.fraction <= high + 1e-9
    ]
    assert outside == []


def test_labelled_misconceptions_are_flagged(report):
    missed = [
        f"{o.answer.key}: {', '.join(o.missed_misconceptions)}"
        for o in report.outcomes if o.missed_misconceptions
    ]
    assert missed == []
    assert all(o.result.misconceptions for o in report.outcomes if o.answer.category == "misconception")


def test_strong_answers_never_trip_a_misconception(report):
    assert [
        f"{o.answer.key}: {o.unexpected_misconceptions}"
        for o in report.outcomes
        if o.answer.category in ("strong", "paraphrase") and o.unexpected_misconceptions
    ] == []


def test_agreement_with_the_labels(report):
    # Measured 98% on the dev split and 96% on the held-out split when this was written; the
    # floor leaves room for wording changes, not for the grader to get noticeably worse.
    assert report.overall >= 0.93
    assert report.split_agreement("heldout") >= 0.90
    for key, (agreed, total) in report.per_criterion().items():
        assert agreed / total >= 0.75, key


def test_report_lists_no_problems_and_serialises(report):
    assert report.problems == []
    data = report.to_dict()
    assert data["answers"] == len(report.outcomes)
    assert set(data["per_category"]) == set(STYLES)
    assert data["misconceptions"]["flagged"] == data["misconceptions"]["expected"]


# --- Round 3: written blind, frozen before the grader saw it ----------------------------------


@pytest.fixture(scope="module")
def round3(bank, rounds):
    round_ = rounds["heldout3"]
    return round_, figures(evaluate(answers=round_answers(round_=round_, bank=bank), bank=bank))


def test_round_three_covers_every_free_text_question_in_six_styles(bank, round3):
    round_, _ = round3
    answers = round_answers(round_=round_, bank=bank)
    # The 42 free-text questions the bank had when the round was written (questions added
    # since wait for round 4).
    covered = {a.question for a in answers}
    assert len(covered) == 42
    assert all(bank.question(slug).type == "free_text" for slug in covered)
    for slug in covered:
        kinds = Counter(a.category for a in answers if a.question == slug)
        assert set(kinds) == set(STYLES), slug


def test_round_three_keeps_its_first_run_record(round3):
    round_, _ = round3
    first = round_.first_run
    assert first is not None and first["grader"] == "rubric"
    # What was measured the first time, before any tuning on the round (see round.json).
    assert first["figures"]["answers"] == 252
    assert first["figures"]["agreement"] == pytest.approx(0.7959, abs=1e-4)
    assert first["figures"]["styles"]["misconception"]["graded_right"] == 16


def test_round_three_has_not_regressed_since_its_first_run(round3):
    round_, now = round3
    first = round_.first_run["figures"]
    assert now["agreement"] >= first["agreement"]
    assert now["kappa"] >= first["kappa"]
    for style, counts in first["styles"].items():
        assert now["styles"][style]["graded_right"] >= counts["graded_right"], style


def test_a_label_for_a_retired_criterion_is_refused_without_a_declared_change(bank, rounds):
    with pytest.raises(BankError, match="compute-sooner"):
        load_evaluation_set(directory=rounds["heldout3"].path, bank=bank)


def test_cohens_kappa():
    assert cohen_kappa([(True, True), (False, False)] * 5) == pytest.approx(1.0)
    # Agreement no better than chance: kappa 0.
    assert cohen_kappa([(True, True), (True, False), (False, True), (False, False)]) == 0.0
    # Everyone says "met": chance agreement is total, kappa is undefined.
    assert cohen_kappa([(True, True)] * 4) is None
    # 8 of 10 agree, each side says "met" half the time: (0.8 - 0.5) / 0.5.
    pairs = [(True, True)] * 4 + [(False, False)] * 4 + [(True, False), (False, True)]
    assert cohen_kappa(pairs) == pytest.approx(0.6)


def test_near_misses_are_counted_against_the_labels(bank):
    # A plain-words answer (labels by hand): the grader misses two points it makes, and quotes
    # the closest sentence for one of them (TTFT is prefill); the report counts that near miss as
    # a point truly made and the two as false misses. (Before the criterion reader it missed
    # three: the reader credits "the longer question only adds a little" as kv-small-effect.)
    answer = LabelledAnswer(
        id="plain", question="prefill-decode-ttft", follow_up=None, category="paraphrase", split="dev",
        text=(
            "The first step reads the whole question at once, so a long question means a long wait before "
            "anything appears. After that each new word costs about the same, because the machine mostly spends "
            "its time fetching the model's numbers from memory, and the longer question only adds a little to that."
        ),
        expected={
            "two-phases": True, "prefill-compute-bound": False, "ttft-is-prefill": True,
            "decode-memory-bound": True, "kv-small-effect": True,
        },
        misconceptions=(), path=ROOT, line=1,
    )
    data = figures(evaluate(answers=[answer], bank=bank))
    assert data["near_misses"] == {"quoted": 1, "truly_made": 1, "false_misses": 2}
