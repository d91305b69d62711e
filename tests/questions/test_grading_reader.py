"""The belief reader (a cross-encoder for misconceptions) and the stage that combines it with
the decision model: no database."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator

import numpy as np
import pytest

from questions.bank import load_bank
from questions.grading import belief_reader, calibration, grade, semantic
from tests.questions.test_grading_semantic import CONTENT_DIR


@pytest.fixture(scope="module")
def bank():
    return load_bank(content_dir=CONTENT_DIR)


@pytest.fixture
def without_reader() -> Iterator[None]:
    """The grader with the decision model deciding misconceptions alone."""
    shipped = semantic.load_model()
    saved = semantic.use_model(
        semantic.SemanticModel(criterion=shipped.criterion, misconception=shipped.misconception),
    )
    try:
        yield
    finally:
        semantic.use_model(saved)


def _pairs(*, reader_direction: float, seed: int = 0) -> list[calibration.ReaderPair]:
    rng = np.random.default_rng(seed)
    decision = rng.normal(-2.0, 2.0, size=600)
    reader = rng.normal(-1.0, 3.0, size=600)
    label = decision + reader_direction * reader + rng.normal(0, 1.0, size=600) > 0.5
    return [
        calibration.ReaderPair(
            round="r", answer=f"a{i}", style="misconception", item="m",
            decision_logit=float(d), reader_logit=float(r), label=bool(y),
        )
        for i, (d, r, y) in enumerate(zip(decision, reader, label, strict=True))
    ]


def test_the_reader_is_asked_only_where_its_answer_can_change_the_verdict():
    pairs = _pairs(reader_direction=1.0)
    stage = calibration.fit_reader_stage(pairs)
    low, high = stage.band
    assert 0.0 < low < calibration.MISCONCEPTION_THRESHOLD < high < 1.0
    threshold = stage.logistic.threshold
    highest = max(p.reader_logit for p in pairs) + calibration.READER_MARGIN
    lowest = min(p.reader_logit for p in pairs) - calibration.READER_MARGIN
    # Just below the band, not even the most confident reader flags; just above it, not even
    # the most doubtful clears: the verdict without asking is the verdict asking would give.
    below, above = low * 0.99, high + (1 - high) * 0.01
    assert stage.decides(decision_probability=below) is False
    assert stage.probability(decision_probability=below, reader_logit=highest) < threshold
    assert stage.decides(decision_probability=above) is True
    assert stage.probability(decision_probability=above, reader_logit=lowest) >= threshold
    # Inside the band the reader decides.
    middle = (low + high) / 2
    assert stage.decides(decision_probability=middle) is None
    assert stage.probability(decision_probability=middle, reader_logit=highest) >= threshold
    assert stage.probability(decision_probability=middle, reader_logit=lowest) < threshold


def test_a_stage_that_would_read_the_reader_backwards_is_refused():
    with pytest.raises(ValueError, match="must rise with both readers' log-odds"):
        calibration.fit_reader_stage(_pairs(reader_direction=-1.0))


def test_the_shipped_stage_was_fitted_on_rounds_neither_reader_was_trained_on():
    document = json.loads(semantic.MODEL_FILE.read_text(encoding="utf-8"))
    assert set(document["reader"]["fitted_on"]).isdisjoint(document["fitted_on"])
    # A reader trained on more rounds than the decision model's names them in its weights file.
    assert set(document["reader"]["fitted_on"]).isdisjoint(belief_reader.trained_on(belief_reader.READER_FILE))
    assert set(document["criterion_reader"]["fitted_on"]).isdisjoint(
        belief_reader.trained_on(belief_reader.CRITERION_READER_FILE),
    )
    stage = semantic.load_model().reader
    assert stage is not None
    assert stage.logistic.features == semantic.READER_FEATURES
    assert all(w > 0 for w in stage.logistic.weights)


def test_the_reader_is_loaded_once_per_process_even_from_many_threads(monkeypatch):
    monkeypatch.setattr(belief_reader, "_readers", {})
    found: list[object] = []
    threads = [threading.Thread(target=lambda: found.append(belief_reader.reader())) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({id(r) for r in found}) == 1


# Written for these tests, not taken from any evaluation round. The GQA answer states the
# belief "GQA mainly saves FLOPs" without the words the decision model leans on.
GQA_ARITHMETIC = (
    "In GQA several query heads share one key/value head; MQA takes that to a single KV head. "
    "Llama 3.1 8B has 32 query heads and 8 KV heads. Sharing heads mostly saves arithmetic: "
    "attention needs a quarter of the multiplications, which is why prompts are processed faster."
)


def test_a_belief_in_other_words_that_the_decision_model_misses_is_caught_by_the_reader(bank):
    result = grade(question=bank.question("gqa-mqa-kv-cache"), answer=GQA_ARITHMETIC)
    assert [m.id for m in result.misconceptions] == ["gqa-saves-flops"]
    assert result.misconceptions[0].evidence == GQA_ARITHMETIC[GQA_ARITHMETIC.index("Sharing heads"):]
    assert result.fraction <= 0.5


def test_without_the_reader_that_answer_passes_above_half(bank, without_reader):
    result = grade(question=bank.question("gqa-mqa-kv-cache"), answer=GQA_ARITHMETIC)
    assert result.misconceptions == ()
    assert result.fraction > 0.5


COMPUTE_BOUND = (
    "Generating text is slow because of sheer arithmetic: every token needs billions of "
    "multiply-adds, and the GPU cannot do them any faster, for the prompt and the reply alike. "
    "That is why a newer card with more tensor throughput, or FP8, makes generation roughly "
    "twice as fast. Memory mostly matters in that the weights and the KV cache must fit."
)
# The same frame and many of the same words, stating what is right.
BANDWIDTH_BOUND = (
    "Generating text is slow because of data movement, not arithmetic: every token needs all "
    "the weights read from memory, and the GPU finishes the multiply-adds long before the bytes "
    "arrive. Only the prompt, processed in one pass, keeps the tensor cores busy. Memory also "
    "matters in that the weights and the KV cache must fit."
)


def test_the_reader_flags_the_belief_and_not_the_same_words_stating_the_opposite(bank):
    question = bank.question("inference-bottleneck")
    wrong = grade(question=question, answer=COMPUTE_BOUND)
    assert "compute-is-the-limit" in {m.id for m in wrong.misconceptions}
    assert wrong.fraction <= 0.5
    right = grade(question=question, answer=BANDWIDTH_BOUND)
    assert right.misconceptions == ()
    assert right.fraction >= 0.75


def test_without_the_reader_the_belief_is_not_flagged(bank, without_reader):
    assert grade(question=bank.question("inference-bottleneck"), answer=COMPUTE_BOUND).misconceptions == ()


# Written for these tests, not taken from any evaluation round: the first three sentences are
# right and closest to the belief in the bi-encoder's space (they name Medusa's and EAGLE's heads);
# the last one states the belief without its words ("costs no preparation" for "needs no
# training"), and only the belief reader, reading it against the belief, sees that.
SPECULATIVE_THREE_WAYS = (
    "A separate draft model, say a 1B model from the same family, needs the same tokenizer and "
    "brings its own weights and KV cache into GPU memory, and it drafts one token per pass. "
    "Medusa adds a few extra heads to the target's last hidden state, each guessing a token "
    "further ahead, and the target checks the candidates as a tree in one forward pass. "
    "EAGLE drafts with a small one-layer head that predicts the target's hidden features, so its "
    "guesses are accepted more often than Medusa's. "
)
NO_PREPARATION = "So I would just switch on EAGLE for whatever model I run, since it costs no preparation."
WHEN_HEADS_EXIST = (
    "I would choose a family draft model when I can train nothing and EAGLE when heads exist "
    "for my model."
)


def test_a_belief_stated_away_from_the_closest_sentence_is_caught_by_the_second_look(bank):
    result = grade(
        question=bank.question("draft-model-vs-medusa-eagle"),
        answer=SPECULATIVE_THREE_WAYS + NO_PREPARATION,
    )
    assert [m.id for m in result.misconceptions] == ["heads-need-no-training"]
    assert result.misconceptions[0].evidence == NO_PREPARATION
    assert result.fraction <= 0.5


def test_without_the_second_look_that_answer_passes_above_half(bank, monkeypatch):
    monkeypatch.setattr(semantic, "SECOND_LOOK_FROM", None)
    result = grade(
        question=bank.question("draft-model-vs-medusa-eagle"),
        answer=SPECULATIVE_THREE_WAYS + NO_PREPARATION,
    )
    assert result.misconceptions == ()
    assert result.fraction > 0.5


def test_the_second_look_leaves_a_right_choice_rule_alone(bank):
    result = grade(
        question=bank.question("draft-model-vs-medusa-eagle"),
        answer=SPECULATIVE_THREE_WAYS + WHEN_HEADS_EXIST,
    )
    assert result.misconceptions == ()
    assert result.fraction >= 0.8


# A known error of the belief reader (found by tests/questions/test_challenges.py in session 11,
# after round 12's first run): the sentence says a long prompt DOES slow the first token, and the
# reader reads it as the belief that it does not ("... does not delay the first token, it only
# changes the later tokens"): same frame, opposite direction. Strict: when a retrained reader
# gets it right this test fails, and the mark is moved into the passing tests above.
LONG_PROMPT_SLOWS_FIRST_TOKEN = (
    "Prefill is memory-bound because it streams the prompt, while decode is compute-bound because "
    "each token needs heavy matrix math. So a long prompt slows the first token but not the rest."
)


@pytest.mark.xfail(strict=True, reason="known error: the reader misses the direction of this sentence")
def test_a_long_prompt_slowing_the_first_token_is_not_read_as_ttft_independent_of_the_prompt(bank):
    result = grade(question=bank.question("prefill-decode-ttft"), answer=LONG_PROMPT_SLOWS_FIRST_TOKEN)
    assert "ttft-independent-of-prompt" not in {m.id for m in result.misconceptions}
