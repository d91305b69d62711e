"""The criterion reader (a cross-encoder reading a criterion and the learner's sentence) and the
stage that decides a criterion from it, the decision model and the patterns: no database."""

from __future__ import annotations

import dataclasses
import json
import threading

import numpy as np
import pytest

from questions.grading import belief_reader, calibration, grade, semantic


def _rows(*, reader_direction: float, seed: int = 0) -> list[calibration.CriterionStageRow]:
    rng = np.random.default_rng(seed)
    decision = rng.normal(-1.0, 3.0, size=800)
    reader = rng.normal(0.0, 3.0, size=800)
    pattern = rng.random(800) < 0.4
    label = decision + reader_direction * reader + 2.0 * pattern + rng.normal(0, 1.0, size=800) > 0.5
    return [
        calibration.CriterionStageRow(
            round="r", answer=f"a{i}", style="strong", item="c",
            features={"decision_logit": float(d), "reader_logit": float(r), "pattern": float(p)},
            label=bool(y),
        )
        for i, (d, r, p, y) in enumerate(zip(decision, reader, pattern, label, strict=True))
    ]


def test_the_reader_is_asked_only_where_its_answer_can_change_the_verdict():
    rows = _rows(reader_direction=1.0)
    stage = calibration.fit_criterion_stage(rows)
    low, high = stage.reader_range
    seen = [r.features["reader_logit"] for r in rows]
    assert low < min(seen) and high > max(seen)
    for decision_logit in np.linspace(-12, 12, 49):
        for pattern in (False, True):
            verdict = stage.decides(decision_logit=float(decision_logit), pattern=pattern)
            readings = [
                stage.met({"decision_logit": float(decision_logit), "reader_logit": r, "pattern": float(pattern)})
                for r in np.linspace(low, high, 41)
            ]
            if verdict is None:
                # Undecided only where the reader's answer does change it.
                assert any(readings) and not all(readings)
            else:
                assert all(reading == verdict for reading in readings)
    # Clear cases need no reader: far below with no pattern, far above with one.
    assert stage.decides(decision_logit=-12.0, pattern=False) is False
    assert stage.decides(decision_logit=12.0, pattern=True) is True


def test_with_the_reader_asked_the_stage_withdraws_credit_only_when_all_but_sure_and_the_reader_clearly_says_no():
    stage = calibration.fit_criterion_stage(_rows(reader_direction=1.0))

    def features(reader_logit: float, decision_logit: float = 0.0) -> dict[str, float]:
        return {"decision_logit": decision_logit, "reader_logit": reader_logit, "pattern": 1.0}

    def decision_logit_at(probability: float, reader_logit: float) -> float:
        # The stage is monotone in the decision model's log-odds: bisect for the probability.
        low, high = -50.0, 50.0
        for _ in range(80):
            middle = (low + high) / 2
            if stage.logistic.probability(features(reader_logit, middle)) < probability:
                low = middle
            else:
                high = middle
        return (low + high) / 2

    assert stage.verdict(features(8.0)) is True
    # Below the threshold but not all but sure: the patterns' credit stands.
    unsure = features(-0.5, decision_logit_at(0.3, -0.5))
    assert semantic.WITHDRAW_BELOW < stage.logistic.probability(unsure) < stage.logistic.threshold
    assert stage.verdict(unsure) is None
    # All but sure and the reader clearly says no: withdrawn.
    clear_no = semantic.WITHDRAW_READER_BELOW - 1.0
    assert stage.verdict(features(clear_no, decision_logit_at(semantic.WITHDRAW_BELOW / 2, clear_no))) is False
    # All but sure, but the reader's no is weak (a right short clause, "decode memory-bound")
    # or it says yes (a one-point check's decision model far below): the credit stands.
    for reader_logit in (semantic.WITHDRAW_READER_BELOW + 0.5, 0.5):
        low = decision_logit_at(semantic.WITHDRAW_BELOW / 2, reader_logit)
        assert stage.verdict(features(reader_logit, low)) is None


def test_a_stage_that_would_read_the_reader_backwards_is_refused():
    with pytest.raises(ValueError, match="must rise with both readers' log-odds"):
        calibration.fit_criterion_stage(_rows(reader_direction=-1.0))


def test_the_stage_survives_the_model_file_round_trip(tmp_path):
    stage = calibration.fit_criterion_stage(_rows(reader_direction=1.0))
    document = calibration.with_criterion_stage(
        {"criterion": {}, "misconception": {}}, stage=stage, rounds=["r"], rows=800,
    )
    again = semantic.CriterionStage.from_dict(json.loads(json.dumps(document))["criterion_reader"]["stage"])
    features = {"decision_logit": 0.3, "reader_logit": -0.7, "pattern": 1.0}
    assert again.logistic.probability(features) == pytest.approx(stage.logistic.probability(features), abs=1e-5)
    assert again.reader_range == pytest.approx(stage.reader_range, abs=1e-5)


def test_the_shipped_stage_was_fitted_on_rounds_neither_reader_was_trained_on():
    document = json.loads(semantic.MODEL_FILE.read_text(encoding="utf-8"))
    assert set(document["criterion_reader"]["fitted_on"]).isdisjoint(document["fitted_on"])
    stage = semantic.load_model().criterion_stage
    assert stage is not None
    assert stage.logistic.features == semantic.CRITERION_STAGE_FEATURES
    assert stage.logistic.weights[0] > 0 and stage.logistic.weights[1] > 0


def test_the_criterion_reader_is_loaded_once_per_process_even_from_many_threads(monkeypatch):
    monkeypatch.setattr(belief_reader, "_readers", {})
    found: list[object] = []
    threads = [
        threading.Thread(target=lambda: found.append(belief_reader.criterion_reader())) for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({id(r) for r in found}) == 1


@pytest.fixture(scope="module")
def bank():
    from questions.bank import load_bank
    from tests.questions.test_grading_semantic import CONTENT_DIR

    return load_bank(content_dir=CONTENT_DIR)


@pytest.fixture
def without_criterion_stage():
    """The grader as it was before the criterion reader: patterns or the decision model credit."""
    saved = semantic.use_model(dataclasses.replace(semantic.load_model(), criterion_stage=None))
    try:
        yield
    finally:
        semantic.use_model(saved)


# Written for these tests, not taken from any evaluation round: the bottleneck in plain words,
# no "memory-bound", "bandwidth", "prefill" or "KV cache".
PLAIN_BOTTLENECK = (
    "When the model writes its reply one word at a time, each new word means hauling all of its "
    "billions of numbers out of the graphics card's memory, and the chip's arithmetic units sit "
    "mostly idle waiting for that data to arrive. Reading the question at the start is different: "
    "the whole question is handled in one go, so there the arithmetic is what keeps the chip busy. "
    "How many people can be served at once is capped by the room left in memory for each "
    "conversation's saved state. And serving many conversations together lets one trip through "
    "memory feed all of them, which is how the arithmetic finally becomes the limit."
)


def test_a_point_in_plain_words_that_the_decision_model_misses_is_credited_by_the_reader(bank):
    result = grade(question=bank.question("inference-bottleneck"), answer=PLAIN_BOTTLENECK)
    met = {c.id for c in result.criteria if c.met}
    assert {"decode-bandwidth", "prefill-compute"} <= met
    assert result.criterion("decode-bandwidth").evidence.startswith("When the model writes its reply")
    assert result.misconceptions == ()
    assert result.fraction >= 0.5


def test_without_the_stage_that_answer_is_marked_below_half(bank, without_criterion_stage):
    result = grade(question=bank.question("inference-bottleneck"), answer=PLAIN_BOTTLENECK)
    assert result.fraction < 0.5


# Written for this test: every sentence on its point's topic, every one wrong.
WRONG_DEFINITIONS = (
    "TTFT is the time the GPU spends on prefill alone, measured on the server from when the prompt is "
    "scheduled to when its KV cache is built. TPOT is end-to-end latency divided by the prompt length. "
    "ITL is just another name for TPOT, one number per request."
)


def test_the_stage_gives_python_verdicts_never_numpy_booleans(bank):
    # np.False_ is not False: a numpy verdict once slipped past `verdict is False` unnoticed.
    from questions.grading.free_text import criterion_verdicts, rubric_evidence

    question = bank.question("ttft-tpot-itl-definitions")
    evidence = rubric_evidence(question=question, answer=WRONG_DEFINITIONS)
    verdicts = criterion_verdicts(evidence=evidence, question=question)
    assert verdicts and all(v is None or type(v) is bool for v in verdicts)
    stage = semantic.load_model().criterion_stage
    assert type(stage.logistic.probability({"decision_logit": 0.0, "reader_logit": 0.0, "pattern": 1.0})) is float


def test_a_sentence_on_the_points_topic_that_states_it_wrongly_loses_the_patterns_credit(bank, monkeypatch):
    question = bank.question("ttft-tpot-itl-definitions")
    result = grade(question=question, answer=WRONG_DEFINITIONS)
    # "ITL is just another name for TPOT" names ITL and TPOT together, which the patterns credit
    # as the point about the gaps between tokens; the reader clearly says no and the stage is all
    # but sure, so the point is withdrawn and the answer earns nothing.
    assert not result.criterion("itl-gaps").met
    assert result.score == 0
    monkeypatch.setattr(semantic, "WITHDRAW_BELOW", 0.0)
    kept = grade(question=question, answer=WRONG_DEFINITIONS)
    assert kept.criterion("itl-gaps").met
    assert kept.criterion("itl-gaps").evidence == "ITL is just another name for TPOT, one number per request."
