"""The semantic layer: meaning credited in plain words, opposites and misconceptions not.

These run the real model (all-MiniLM-L6-v2 from `python -m questions.grading.model_files`,
which `make test` runs first) on real bank questions. Each credit test also checks that the
pattern layer alone does not give the credit, so it pins what the semantic layer adds.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from questions.bank import BankError, Question, load_bank
from questions.grading import calibration, grade, semantic
from questions.grading.embedding import SentenceEncoder, encoder
from questions.grading.evaluation import (
    RightVersionFlag,
    WrongVersionCredit,
    right_versions_flagged,
    wrong_versions_credited,
)
from tests.questions.test_bank import GOOD_QUESTION, load_error, set_file, write_bank

CONTENT_DIR = Path(__file__).resolve().parents[2] / "questions" / "content"
# Beliefs left to the pattern layer by design (see docs/content-format.md): sentence similarity
# cannot tell them from the right sentence on the same topic.
PATTERN_ONLY_MISCONCEPTIONS = {
    # Swaps: the belief is the right sentence with two words exchanged, which no reading by
    # meaning tells apart.
    ("prefill-decode-ttft", "swapped-bounds"),
    ("output-tokens-cost-more", "swapped-bounds"),
    ("output-tokens-cost-more", "swapped-parallelism"),
    ("prefill-decode-disaggregation", "swapped-bounds"),
    # Beliefs on the same topic as the point they void, which the readers put together: with
    # statements, every "the rotation spreads the outliers" of rounds 7-17 read as gathering them,
    # and "FP8 is not self-scaling: it needs a scale" as FP8 needing none.
    ("rotation-quantization", "rotation-gathers-outliers"),
    ("fp8-e4m3-vs-e5m2", "fp8-needs-no-scale"),
    ("dp-attention-wide-ep", "wide-ep-for-capacity"),
    ("weight-only-quant-speedup", "weight-quant-shrinks-kv"),
    ("moe-memory-vs-active", "every-expert-runs"),
    ("long-context-cost", "long-context-cache-stays-small"),
    ("long-context-cost", "prefill-grows-linearly"),
    ("outliers-awq-gptq-smoothquant", "gptq-is-training"),
    ("outliers-awq-gptq-smoothquant", "smoothquant-smooths-weights"),
    ("fp8-vs-int4", "int4-more-accurate"),
    ("fp8-vs-int4", "fp8-runs-anywhere"),
    ("expert-parallel-all-to-all", "ep-is-replicas"),
    # Session 20: wrong accounts the blind writers of rounds 7-17 give again and again, in the
    # words of the point they contradict ("the B200 converts FP4 to FP8", "TP across nodes").
    ("tensor-vs-pipeline-serving", "layout-swapped"),
    ("fp8-e4m3-vs-e5m2", "e-m-swapped"),
    ("weight-only-vs-w8a8-kernels", "blackwell-converts-fp4"),
    ("weight-only-vs-w8a8-kernels", "cpu-dequantizes-to-float"),
    ("many-lora-adapters", "average-adapters"),
    ("ttft-tpot-itl-definitions", "ttft-wrong-stop"),
    ("ttft-tpot-itl-definitions", "itl-between-requests"),
    ("ttft-tpot-itl-definitions", "tpot-misdefined"),
    ("tensor-vs-pipeline-serving", "tp-is-replicas"),
    ("client-bottleneck", "client-never-bottleneck"),
    ("batch-invariance-temperature-zero", "seed-fixes-it"),
    ("batch-invariance-temperature-zero", "batch-does-not-matter"),
    # Session 33: the same kind, from rounds 7-40 ("the limit is set by the PCIe link", "real
    # engines typically exceed this figure", "decode was already compute-bound"): each is the
    # point it voids with its limit or its direction swapped.
    ("fastest-possible-generation", "pcie-sets-the-limit"),
    ("fastest-possible-generation", "engines-beat-the-bound"),
    ("weight-only-quant-speedup", "decode-compute-bound"),
    # Session 34: two stories the fluent wrong answers to the self-hosting spreadsheet tell ("one
    # H100 is enough for production", "cloud providers bill idle GPUs at a fraction of the rate"),
    # each the point it voids denied.
    ("hidden-costs-self-hosting", "one-gpu-is-enough"),
    ("hidden-costs-self-hosting", "idle-gpu-is-free"),
    # Session 42: round 49's warm-up that fills the cache with the measured prompts on purpose,
    # which by meaning sits on the prefix-cache point it voids.
    ("benchmark-warmup", "warmup-primes-cache"),
}


@pytest.fixture(scope="module")
def bank():
    return load_bank(content_dir=CONTENT_DIR)


@pytest.fixture
def patterns_only() -> Iterator[None]:
    """The grader with the semantic layer switched off, to show what it adds."""
    saved = semantic.use_model(None)
    try:
        yield
    finally:
        semantic.use_model(saved)


def met(question: Question, answer: str) -> dict[str, bool]:
    return {c.id: c.met for c in grade(question=question, answer=answer).criteria}


# A sentence from blind round 3 (open-vs-closed-loop, plain-words style): no term of the
# field, yet it defines a closed-loop test. On its own, in an answer that says nothing else
# the rubric asks for, the decision model does not credit it (see PLAIN_DECODE below for a
# plain-words answer that is credited).
PLAIN_WORDS = (
    "In the first kind you have a fixed number of simulated users, each sending a request, "
    "waiting for the reply, then sending the next, so the server's own speed sets the pace: "
    "if it slows down, requests arrive more slowly."
)


def test_a_sentence_close_in_words_that_states_the_opposite_is_not_credited(bank):
    opposite = (
        "In the first kind the simulated users never wait for the reply before sending the "
        "next request, so the server's own speed sets the pace: if it slows down, requests "
        "arrive just as fast."
    )
    assert not met(bank.question("open-vs-closed-loop"), opposite)["closed-loop"]


# From blind round 3 (gqa-mqa-kv-cache, misconception style): right numbers, wrong reason.
# Its "the attention FLOPs drop 4x" is in the patterns since session 21 (round 11 said it too),
# so the number is left out here: the patterns miss this wording, the meaning does not.
GQA_FLOPS = (
    "GQA and MQA cut the number of key/value heads, so attention does proportionally less "
    "math: with 8 KV heads instead of 32, the attention FLOPs fall to a quarter, and that is where the "
    "speedup comes from. The KV cache shrinks 4x too, from 512 KiB to 128 KiB per token. "
    "Quality-wise GQA is close to full MHA, MQA degrades more."
)


def test_a_misconception_in_other_words_is_caught_and_holds_the_score_at_half(bank):
    result = grade(question=bank.question("gqa-mqa-kv-cache"), answer=GQA_FLOPS)
    assert [m.id for m in result.misconceptions] == ["gqa-saves-flops"]
    assert result.fraction <= 0.5
    assert "misconception" in (result.capped_reason or "")
    # The mark sheet quotes the learner's own sentence as the evidence.
    assert result.misconceptions[0].evidence == GQA_FLOPS.split(" The KV cache")[0]


def test_the_same_misconception_is_missed_by_patterns_alone(bank, patterns_only):
    assert grade(question=bank.question("gqa-mqa-kv-cache"), answer=GQA_FLOPS).misconceptions == ()


# From round 4 (continuous-batching-throughput, misconception style): the belief is stated
# outright, but "no GPU waits" puts a negation in the same sentence.
PIPELINE_OF_GPUS = (
    "Static batching wastes slots, since short requests finish early and sit idle until the "
    "longest in the batch is done. Continuous batching fixes that by keeping a pipeline of GPUs "
    "busy: while one GPU decodes batch A, the next batch is already being prefilled on another "
    "GPU, so requests flow continuously through the cluster and no GPU waits. Throughput then "
    "scales with the number of GPUs you add."
)


def test_a_negation_in_another_clause_does_not_hide_a_misconception(bank):
    result = grade(question=bank.question("continuous-batching-throughput"), answer=PIPELINE_OF_GPUS)
    assert "more-hardware" in {m.id for m in result.misconceptions}
    assert result.fraction <= 0.5


# Written for these tests, not taken from any evaluation round: weight-only-quant-speedup
# answered by an engineer from another field, with no term of ours.
PLAIN_DECODE = (
    "When the model writes one word at a time, the chip spends most of each step hauling "
    "every stored number of the model out of memory rather than doing arithmetic."
)
PLAIN_REST = (
    " Storing each number in 4 bits instead of 16 means a quarter of the bytes to haul, so "
    "each step finishes sooner. The arithmetic itself is still done at 16 bits, so jobs that "
    "were already limited by arithmetic, like reading a long prompt, barely speed up."
)


def test_a_plain_words_explanation_earns_the_point_in_the_learners_own_words(bank):
    result = grade(question=bank.question("weight-only-quant-speedup"), answer=PLAIN_DECODE + PLAIN_REST)
    point = result.criterion("decode-memory-bound")
    assert point.met
    assert point.evidence == PLAIN_DECODE
    assert result.fraction >= 0.5
    assert result.misconceptions == ()


def test_without_the_semantic_layer_that_answer_scores_under_half(bank, patterns_only):
    result = grade(question=bank.question("weight-only-quant-speedup"), answer=PLAIN_DECODE + PLAIN_REST)
    assert not result.criterion("decode-memory-bound").met
    assert result.fraction < 0.5


def test_the_same_words_denying_the_point_do_not_earn_it(bank):
    # A reference that says "that fetching, not the math, takes the time" is not a denial:
    # read as one, it used to agree with this sentence, which is.
    opposite = (
        "When the model writes one word at a time, the chip never waits on memory for the "
        "model's stored numbers; every step is spent on arithmetic."
    )
    result = grade(question=bank.question("weight-only-quant-speedup"), answer=opposite + PLAIN_REST)
    assert not result.criterion("decode-memory-bound").met


@pytest.mark.parametrize(
    ("text", "denial"),
    [
        ("Fetching the weights, not the math, takes the time.", False),
        ("Decode is memory-bound, not compute-bound.", False),
        ("Decode is not memory-bound.", True),
        ("The chip never waits on memory.", True),
    ],
)
def test_a_contrast_with_not_is_not_a_denial(text, denial):
    assert semantic.negated(text) is denial


# Written for these tests: right about what batching does to the GPU, then the belief that it
# makes each request faster, in words none of the bank's statements use.
BATCH_FASTER = (
    "Each decode step has to read all of the model's weights from memory once, and the GPU's "
    "arithmetic units mostly sit idle while it does. If sixteen requests share that step, the "
    "weights are read once and used sixteen times, so total tokens per second rise almost "
    "sixteen-fold. Batching also cuts each user's wait: every request finishes sooner than it "
    "would alone."
)


def test_a_misconception_in_plain_words_is_flagged_and_holds_the_score_at_half(bank):
    result = grade(question=bank.question("batching-almost-free"), answer=BATCH_FASTER)
    assert [m.id for m in result.misconceptions] == ["batching-cuts-latency"]
    assert result.misconceptions[0].evidence == BATCH_FASTER[BATCH_FASTER.index("Batching also"):]
    assert result.fraction <= 0.5


def test_patterns_alone_let_that_misconception_through_above_half(bank, patterns_only):
    result = grade(question=bank.question("batching-almost-free"), answer=BATCH_FASTER)
    assert result.misconceptions == ()
    assert result.fraction > 0.5


def test_a_misconception_found_by_meaning_does_not_override_the_patterns_reading(bank):
    # Close in words to "inference is limited by compute", but the patterns read it (relations
    # and negation) as the point that belief contradicts, so it is credited, not flagged.
    answer = (
        "Generating each token requires reading all model weights from GPU memory, and GPUs "
        "have way more compute than memory bandwidth, so decode is limited by bandwidth."
    )
    result = grade(question=bank.question("inference-bottleneck"), answer=answer)
    assert "compute-is-the-limit" not in {m.id for m in result.misconceptions}
    assert result.criterion("decode-bandwidth").met


# --- The decision model ----------------------------------------------------------------------


def test_the_decision_model_reads_the_features_the_layer_computes():
    model = semantic.load_model()
    # The pattern layer's credit stands on its own; the model decides the rest by meaning.
    assert set(model.criterion.features) == set(semantic.CRITERION_FEATURES) - {"pattern"}
    assert set(model.misconception.features) == set(semantic.MISCONCEPTION_FEATURES) - {"pattern"}
    assert model.criterion.threshold == calibration.CRITERION_THRESHOLD
    assert model.misconception.threshold == calibration.MISCONCEPTION_THRESHOLD


def test_fitting_is_deterministic_and_learns_the_direction_of_the_evidence():
    rng = np.random.default_rng(0)
    similarity = rng.uniform(0.3, 0.95, size=400)
    label = (similarity + rng.normal(0, 0.08, size=400)) > 0.7
    x = np.stack([similarity, rng.uniform(0, 1, size=400)], axis=1)
    first = calibration.fit_logistic(x=x, y=label.astype(float), names=["similarity", "noise"], threshold=0.5)
    again = calibration.fit_logistic(x=x, y=label.astype(float), names=["similarity", "noise"], threshold=0.5)
    assert first.to_dict() == again.to_dict()
    assert first.probability({"similarity": 0.9, "noise": 0.5}) > 0.9
    assert first.probability({"similarity": 0.5, "noise": 0.5}) < 0.1
    assert abs(first.weights[1]) < abs(first.weights[0]) / 10


def test_pairs_the_patterns_decided_do_not_move_the_fit():
    def pair(similarity: float, label: bool, pattern: bool) -> list[calibration.Pair]:
        features = dict.fromkeys(semantic.CRITERION_FEATURES, 0.0)
        features.update({"similarity": similarity, "pattern": float(pattern)})
        misconception = dict.fromkeys(semantic.MISCONCEPTION_FEATURES, 0.0)
        misconception["similarity"] = similarity
        return [
            calibration.Pair(round="r", answer="a", kind="criterion", item="c", features=features, label=label),
            calibration.Pair(
                round="r", answer="a", kind="misconception", item="m", features=misconception,
                label=label,
            ),
        ]

    plain = [p for s in np.linspace(0.3, 0.95, 40) for p in pair(float(s), s > 0.7, False)]
    decided = [p for s in np.linspace(0.3, 0.95, 40) for p in pair(float(s), False, True)]
    assert calibration.fit(plain).criterion.to_dict() == calibration.fit(plain + decided).criterion.to_dict()


@pytest.mark.parametrize(
    ("sentence", "opposes"),
    [
        # The negation is about the network, not about the cost.
        ("Self-hosting is always cheaper than paying per token, since there's no network.", False),
        ("Self-hosting is not cheaper than paying per token.", True),
        ("Self-hosting isn't cheaper, because you keep paying for idle GPUs.", True),
    ],
)
def test_polarity_is_read_in_the_clauses_about_the_reference(sentence, opposes):
    reference = "Self-hosting is cheaper because you stop paying per token."
    polarity = semantic.Polarity.of(sentence)
    assert polarity.opposes(
        words=semantic.content_words(reference), reference_negated=semantic.negated(reference),
    ) is opposes


@pytest.mark.parametrize(
    ("slug", "answer", "not_flagged"),
    [
        (
            "prefill-decode-ttft",
            "A longer prompt makes prefill longer so TTFT goes up.",
            "ttft-independent-of-prompt",
        ),
        (
            "batching-almost-free",
            "Batching does not make any single request faster; each user's time per token "
            "stays the same or gets a little worse, but the GPU serves many more of them.",
            "batching-cuts-latency",
        ),
        (
            "quantization-tradeoff",
            "Quantization is not free: 4-bit weights can measurably hurt some tasks, so "
            "evaluate it.",
            "free-lunch",
        ),
        # The right mechanism, which the readers took for two beliefs that it never states
        # (round 26's strong answer opened with it): `requires` asks the belief to be named.
        (
            "speculative-when-it-hurts",
            "Speculation works by spending spare compute to cut the number of sequential decode "
            "steps.",
            "always-faster",
        ),
        (
            "speculative-when-it-hurts",
            "Speculation works by spending spare compute to cut the number of sequential decode "
            "steps.",
            "speeds-prefill",
        ),
        # The opposite of the belief, which the readers took for it once "otherwise" no longer
        # made the sentence a supposition (round 11's misconception answer).
        (
            "batching-almost-free",
            "Batching is almost free because the GPU reads the weights once per step for the whole "
            "batch, and since decode is memory-bound the compute units would otherwise sit underused.",
            "weights-per-sequence",
        ),
        # True of ordinary attention (round 27's strong answer); the belief is about MLA's latent.
        (
            "dp-attention-wide-ep",
            "Tensor parallelism works by splitting heads across GPUs, which for normal MHA/GQA also "
            "splits the KV cache.",
            "tp-splits-cache",
        ),
        # Round 28's strong and misconception answers: tensor parallelism would duplicate the
        # latent (the belief's opposite), said in words the patterns did not yet know.
        (
            "dp-attention-wide-ep",
            "Tensor parallelism splits attention by heads; with GQA that also splits the KV heads "
            "and therefore the cache, but with MLA each GPU would need the same full latent, so the "
            "cache gets duplicated across the TP group and most of the capacity is lost.",
            "tp-splits-cache",
        ),
        (
            "dp-attention-wide-ep",
            "Attention is data-parallel because MLA's latent is shared by all the heads: tensor "
            "parallelism would have to put the same latent on every GPU, so you would replicate "
            "the cache instead of splitting it.",
            "tp-splits-cache",
        ),
        # Round 29's strong answers: one shared base with per-request adapters (the opposite of
        # merging each), and the rotation exact with only the quantization approximate.
        (
            "many-lora-adapters",
            "Keep one copy of the base model on the GPU and treat the 500 LoRAs as small "
            "per-request add-ons.",
            "merge-each",
        ),
        (
            "rotation-quantization",
            "The model's output does not change, because the rotation is undone in the weights. "
            "Only the quantization after the rotation is approximate.",
            "rotation-changes-model",
        ),
        # True of Blackwell (round 26's misconception answer, about another belief).
        (
            "weight-only-vs-w8a8-kernels",
            "The B200 has native FP4 tensor cores and runs MXFP4 as W4A4.",
            "fp4-everywhere",
        ),
        # The weights sized right in BF16 (round 21's partial answer), close in words to the belief
        # that BF16 takes one byte.
        (
            "8b-16-users-24gb",
            "I don't think so. The weights are 8B x 2 bytes so about 16 GB in BF16.",
            "bf16-one-byte",
        ),
        # Round 42's strong answers: the latency cost in the belief's metric, and the contrast
        # between the two quantizations in the belief's words.
        (
            "batching-almost-free",
            "Batching raises throughput nearly linearly. And each individual user sees a slightly "
            "slower time per output token.",
            "batching-cuts-latency",
        ),
        (
            "kv-cache-quantization",
            "So weight quantization shrinks the model; KV quantization shrinks the per-request "
            "state.",
            "kv-quant-shrinks-model",
        ),
        # Round 43's strong answers: a step and throughput named together, bytes per token that
        # fall with the batch, and a server said to do little prompt work.
        (
            "continuous-batching-throughput",
            "And since decode at these batch sizes is memory-bandwidth-bound, the step time is "
            "dominated by reading the weights once, so a step with 64 active sequences costs "
            "barely more than one with 8; keeping it full turns directly into several times more "
            "tokens per second (benchmarks like the vLLM/Orca ones report up to an order of "
            "magnitude or more versus naive batching).",
            "faster-steps",
        ),
        (
            "moe-batch-erodes-advantage",
            "Per sequence, generation is much slower than at batch 1; per generated token the "
            "bytes still fall, from 37.6 GB to about 9 GB, so batching still helps throughput.",
            "batch-stays-active",
        ),
        (
            "prefix-cache-benchmark-unique-prompts",
            "25 ms is scheduling plus one decode step. Throughput is overstated too, since the "
            "server is doing almost no prompt work.",
            "server-returns-stored-answer",
        ),
        # Round 44: a strong answer's sentence on gradients, and the prompt's chunks pipelined in
        # order, which is exact and does cut the time to first token (sequence pipeline
        # parallelism).
        (
            "fp8-e4m3-vs-e5m2",
            "E5M2 is the format for gradients in FP8 training, since gradients span many more "
            "orders of magnitude and need the range.",
            "e5m2-for-inference",
        ),
        (
            "long-context-prefill-parallel",
            "Split the 1M-token prompt into micro-batches of 32k tokens and feed them into a "
            "pipeline of several stages: while stage 2 works on the first chunk, stage 1 is already "
            "processing the second, so prefill finishes roughly N times faster with N stages.",
            "pipeline-splits-prompt",
        ),
    ],
)
def test_correct_statements_are_not_flagged(bank, slug, answer, not_flagged):
    flagged = {m.id for m in grade(question=bank.question(slug), answer=answer).misconceptions}
    assert not_flagged not in flagged


def test_a_list_of_terms_earns_nothing_from_its_items(bank):
    question = bank.question("client-bottleneck")
    result = grade(
        question=question,
        answer="asyncio event loop, client CPU, connection pool, engine metrics, more load generators",
    )
    assert result.capped_reason is not None
    assert [c.id for c in result.criteria if c.met] == []
    assert all("Named in a list" in c.feedback for c in result.criteria if "pool" in c.id)


def test_every_model_answer_earns_full_marks_and_flags_nothing(bank):
    """Every free-text model answer and every multiple-choice question's correct choices, graded
    by the whole grader (the one place the suite grades them all for full marks)."""
    problems = []
    for question in bank.questions.values():
        for target in [question, *question.follow_ups]:
            if target.type == "multiple_choice":
                answer = ",".join(str(i) for i, c in enumerate(target.choices) if c.correct)
            elif target.type == "free_text":
                answer = target.model_answer
            else:
                continue
            result = grade(question=target, answer=answer)
            if result.fraction < 1 or result.misconceptions:
                problems.append(
                    (question.slug, getattr(target, "slug", ""), result.fraction,
                     [m.id for m in result.misconceptions]),
                )
    assert problems == []


def test_every_misconception_has_statements_unless_it_is_pattern_only_by_design(bank):
    missing = [
        (question.slug, m.id)
        for question in bank.questions.values() if question.type == "free_text"
        for m in question.misconceptions
        if not m.statements and (question.slug, m.id) not in PATTERN_ONLY_MISCONCEPTIONS
    ]
    assert missing == []


def test_grading_is_deterministic(bank):
    question = bank.question("inference-bottleneck")
    first = grade(question=question, answer=PLAIN_WORDS).to_dict()
    assert all(grade(question=question, answer=PLAIN_WORDS).to_dict() == first for _ in range(3))


def test_the_model_is_loaded_once_per_process_even_from_many_threads():
    seen: list[SentenceEncoder] = []
    threads = [threading.Thread(target=lambda: seen.append(encoder())) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({id(e) for e in seen}) == 1
    assert seen[0] is encoder()


def test_the_encoder_reproduces_the_published_similarities():
    # sentence-transformers' quickstart prints these for all-MiniLM-L6-v2.
    vectors = encoder().encode(
        ["The new movie is awesome", "The new movie is so great",
         "The cat sits outside", "The cat plays in the garden"],
    )
    assert float(vectors[0] @ vectors[1]) == pytest.approx(0.8939, abs=5e-4)
    assert float(vectors[2] @ vectors[3]) == pytest.approx(0.6788, abs=5e-4)


# --- The bank fields the semantic layer reads ------------------------------------------------


def test_paraphrases_and_statements_load(tmp_path):
    text = set_file(GOOD_QUESTION.format(slug="q1")).replace(
        'match = ["alpha"]\n', 'match = ["alpha"]\nparaphrases = ["The first letter comes first."]\n', 1,
    ).replace(
        'correction = "No."', 'correction = "No."\nstatements = ["Beta is the first letter."]',
    )
    question = load_bank(content_dir=write_bank(tmp_path, ("demo.toml", text))).question("q1")
    assert question.rubric[0].paraphrases == ("The first letter comes first.",)
    assert question.misconceptions[0].statements == ("Beta is the first letter.",)


def test_wrong_versions_load_and_do_not_change_what_grades(tmp_path):
    (tmp_path / "with").mkdir()
    (tmp_path / "without").mkdir()
    plain = set_file(GOOD_QUESTION.format(slug="q1"))
    text = plain.replace(
        'match = ["alpha"]\n', 'match = ["alpha"]\nwrong_versions = ["Alpha comes last of all."]\n', 1,
    )
    question = load_bank(content_dir=write_bank(tmp_path / "with", ("demo.toml", text))).question("q1")
    assert question.rubric[0].wrong_versions == ("Alpha comes last of all.",)
    # Only the criterion reader's training reads them: attempts keep their rubric version.
    without = load_bank(content_dir=write_bank(tmp_path / "without", ("demo.toml", plain))).question("q1")
    assert question.rubric_version == without.rubric_version


def test_the_wrong_version_check_grades_each_alone_and_names_those_credited(tmp_path, patterns_only):
    text = set_file(GOOD_QUESTION.format(slug="q1")).replace(
        'match = ["alpha"]\n', 'match = ["alpha"]\nwrong_versions = ["Alpha is the last letter of all."]\n', 1,
    ).replace(
        'earns = "Alpha again."\n', 'earns = "Alpha again."\nwrong_versions = ["Gamma comes first of all."]\n', 1,
    )
    bank = load_bank(content_dir=write_bank(tmp_path, ("demo.toml", text)))
    total, credited = wrong_versions_credited(bank=bank)
    # The patterns read naming, not truth: the sentence that names alpha earns the point.
    assert total == 2
    assert credited == [WrongVersionCredit(target="q1", criterion="first", sentence="Alpha is the last letter of all.")]


def test_right_versions_load_and_do_not_change_what_grades(tmp_path):
    (tmp_path / "with").mkdir()
    (tmp_path / "without").mkdir()
    plain = set_file(GOOD_QUESTION.format(slug="q1"))
    text = plain.replace(
        'correction = "No."', 'correction = "No."\nright_versions = ["Beta is the answer to another question."]',
    )
    question = load_bank(content_dir=write_bank(tmp_path / "with", ("demo.toml", text))).question("q1")
    assert question.misconceptions[0].right_versions == ("Beta is the answer to another question.",)
    # Only the belief reader's training reads them: attempts keep their rubric version.
    without = load_bank(content_dir=write_bank(tmp_path / "without", ("demo.toml", plain))).question("q1")
    assert question.rubric_version == without.rubric_version


def test_the_right_version_check_grades_each_alone_and_names_those_flagged(tmp_path, patterns_only):
    text = set_file(GOOD_QUESTION.format(slug="q1")).replace(
        'correction = "No."',
        'correction = "No."\nright_versions = ["Beta is the answer to another question.", "Gamma comes third of all."]',
    )
    bank = load_bank(content_dir=write_bank(tmp_path, ("demo.toml", text)))
    total, flagged = right_versions_flagged(bank=bank)
    # The patterns read naming, not truth: the true sentence that names beta is flagged.
    assert total == 2
    assert flagged == [
        RightVersionFlag(target="q1", misconception="wrong", sentence="Beta is the answer to another question."),
    ]


@pytest.mark.parametrize(
    ("insert", "message"),
    [
        ('paraphrases = ["Alpha."]', "one sentence of 3 to 60 words"),
        ('paraphrases = ["Alpha comes first.", "alpha comes first."]', "repeats"),
        ('paraphrases = "Alpha comes first."', "must be a list of strings"),
        ('wrong_versions = ["Alpha."]', "one sentence of 3 to 60 words"),
        (
            'paraphrases = ["Alpha comes first."]\nwrong_versions = ["Alpha comes first."]',
            "is also a paraphrase: a wrong version must state the point wrongly",
        ),
    ],
)
def test_bad_paraphrases_are_refused_with_the_line(tmp_path, insert, message):
    text = set_file(GOOD_QUESTION.format(slug="q1")).replace(
        'match = ["alpha"]\n', f'match = ["alpha"]\n{insert}\n', 1,
    )
    error = load_error(write_bank(tmp_path, ("demo.toml", text)))
    assert message in error.message
    assert isinstance(error, BankError) and error.line > 1


@pytest.mark.parametrize(
    ("insert", "message"),
    [
        ('right_versions = ["Beta."]', "one sentence of 3 to 60 words"),
        (
            'statements = ["Beta is the first letter."]\nright_versions = ["beta is the first letter."]',
            "is also a statement of the belief: a right version must not hold it",
        ),
    ],
)
def test_bad_right_versions_are_refused_with_the_line(tmp_path, insert, message):
    text = set_file(GOOD_QUESTION.format(slug="q1")).replace('correction = "No."', f'correction = "No."\n{insert}', 1)
    error = load_error(write_bank(tmp_path, ("demo.toml", text)))
    assert message in error.message
    assert "right_versions" in error.message


@pytest.mark.parametrize(
    ("insert", "message"),
    [
        ('requires = ["gamma"]\nstatements = ["Beta is the first letter."]', "unknown concept 'gamma'"),
        (
            'requires = ["alpha + gamma"]\nstatements = ["Beta is the first letter."]',
            "match 'alpha + gamma': unknown concept 'gamma'",
        ),
        (
            'requires = ["alpha + "]\nstatements = ["Beta is the first letter."]',
            "empty concept between '+'",
        ),
        ('requires = ["alpha"]', "'requires' narrows what the semantic layer flags by its 'statements'"),
    ],
)
def test_bad_requires_are_refused_with_the_line(tmp_path, insert, message):
    text = set_file(GOOD_QUESTION.format(slug="q1")).replace('correction = "No."', f'correction = "No."\n{insert}', 1)
    error = load_error(write_bank(tmp_path, ("demo.toml", text)))
    assert message in error.message
    assert error.line > 1


def test_requires_moves_the_rubric_version_only_where_it_is_set(tmp_path):
    (tmp_path / "with").mkdir()
    (tmp_path / "without").mkdir()
    plain = set_file(GOOD_QUESTION.format(slug="q1")).replace(
        'correction = "No."', 'correction = "No."\nstatements = ["Beta is the first letter."]', 1,
    )
    text = plain.replace('correction = "No."', 'correction = "No."\nrequires = ["alpha"]', 1)
    with_requires = load_bank(content_dir=write_bank(tmp_path / "with", ("demo.toml", text))).question("q1")
    without = load_bank(content_dir=write_bank(tmp_path / "without", ("demo.toml", plain))).question("q1")
    assert with_requires.misconceptions[0].requires == ("alpha",)
    assert without.misconceptions[0].requires == ()
    assert with_requires.rubric_version != without.rubric_version


# Blind rounds 10-17: six of the seven strong answers to paged-attention-fragmentation open with
# "PagedAttention borrows the idea of virtual memory", which the semantic layer read as paging to
# the CPU; the belief `requires` memory off the GPU, and a sentence that names none is not it.
@pytest.mark.parametrize(
    ("slug", "misconception", "sentence", "is_flagged"),
    [
        (
            "paged-attention-fragmentation", "paging-means-cpu",
            "PagedAttention borrows the idea of virtual memory paging.", False,
        ),
        ("paged-attention-fragmentation", "paging-means-cpu", "PagedAttention borrows virtual memory's trick.", False),
        (
            "paged-attention-fragmentation", "paging-means-cpu",
            "PagedAttention pages the KV cache out to host RAM whenever the GPU fills up.", True,
        ),
        (
            "output-tokens-cost-more", "output-is-bigger",
            "An output token costs the provider far more GPU time than an input token.", False,
        ),
        (
            "output-tokens-cost-more", "output-is-bigger",
            "Output tokens are bigger than input tokens, so they cost more.", True,
        ),
        ("arithmetic-intensity", "decode-compute-bound", "Decode at batch 1 processes one token.", False),
        # Round 9's partial answer opens so, and was held to 50% for a belief it never states.
        ("long-context-cost", "flash-attention-fixes-it", "The main cost is memory.", False),
        (
            "long-context-cost", "flash-attention-fixes-it",
            "With FlashAttention a 128k request needs little more memory than a 4k one.", True,
        ),
        (
            "arithmetic-intensity", "decode-compute-bound",
            "With one user, the chip's calculating power is what holds generation back.", True,
        ),
        # Rounds 14, 16 and 17: three strong answers were held to 50% for saying the opposite.
        ("semantic-cache-risks", "semantic-cache-is-safe", "A semantic cache, by contrast, changes outputs.", False),
        (
            "semantic-cache-risks", "semantic-cache-is-safe",
            "A semantic cache changes the output, because it returns an answer written for a different question.",
            False,
        ),
        (
            "semantic-cache-risks", "semantic-cache-is-safe",
            "Handing back the stored reply to a similar question leaves what users get unchanged.", True,
        ),
        # Rounds 8 and 10: the definition of expert parallelism, in the strong answers' words.
        (
            "expert-parallel-all-to-all", "ep-is-free",
            "Expert parallelism assigns entire experts to different GPUs instead of slicing each one.", False,
        ),
        (
            "expert-parallel-all-to-all", "ep-is-free",
            "It is preferred over tensor parallelism because it gets rid of the communication.", True,
        ),
    ],
)
def test_a_belief_is_only_read_by_meaning_where_a_sentence_names_what_it_requires(
    bank, slug, misconception, sentence, is_flagged,
):
    found = {m.id for m in grade(question=bank.question(slug), answer=sentence).misconceptions}
    assert (misconception in found) is is_flagged


# Blind rounds 11-16: strong answers say TP "normally splits the KV cache ... but with MLA there is
# nothing per-head to split"; the sentence earns latent-replicated by its words, which the belief
# voids, so the reading by meaning gives way.
def test_explaining_why_tp_cannot_split_the_mla_cache_is_not_the_belief_that_it_does(bank):
    question = bank.question("dp-attention-wide-ep")
    result = grade(
        question=question,
        answer=(
            "Tensor parallelism gives each GPU a subset of heads, which for ordinary GQA also splits "
            "the KV cache. With MLA there is nothing per-head to split: every GPU needs the full "
            "latent, so TP would store the same cache on each GPU."
        ),
    )
    assert "tp-splits-cache" not in {m.id for m in result.misconceptions}
    assert result.criterion("latent-replicated").met
    belief = grade(
        question=question,
        answer="With TP-8 each GPU keeps only an eighth of the MLA latent cache, so memory is not a problem.",
    )
    assert "tp-splits-cache" in {m.id for m in belief.misconceptions}


# --- Evidence: the sentence that earned the point ---------------------------------------------

# The first sentence also names the KV cache and the prompt's length (patterns of the
# kv-small-effect point), but it is about TTFT; the last one explains the "barely".
KV_AND_TTFT = (
    "A request has two phases, prefill and decode. Doubling the prompt doubles TTFT, because "
    "prefill has to build the KV cache for twice as many prompt tokens. Decode is memory-bound: "
    "each step reads all the weights to make one token. TPOT barely moves, because the weights "
    "dominate the bytes read per step and the KV cache of the longer prompt adds only a little."
)


def test_evidence_is_the_sentence_that_earned_the_point_not_the_first_that_matched(bank):
    result = grade(question=bank.question("prefill-decode-ttft"), answer=KV_AND_TTFT)
    barely = result.criterion("kv-small-effect")
    assert barely.met
    assert barely.evidence == KV_AND_TTFT[KV_AND_TTFT.index("TPOT barely") :]
    ttft = result.criterion("ttft-is-prefill")
    assert ttft.evidence is not None and ttft.evidence.startswith("Doubling the prompt doubles TTFT")


def test_every_met_criterion_quotes_the_learners_own_words(bank):
    result = grade(question=bank.question("prefill-decode-ttft"), answer=KV_AND_TTFT)
    met_criteria = [c for c in result.criteria if c.met]
    assert len(met_criteria) >= 3
    for criterion in met_criteria:
        start, end = criterion.evidence_span
        assert KV_AND_TTFT[start:end] == criterion.evidence


def test_a_point_nearly_made_in_plain_words_is_quoted_back_as_the_closest_sentence(bank):
    # "A long question means a long wait before anything appears" is TTFT-is-prefill in plain
    # words; the decision model puts it just under its threshold, so the point is missed but
    # the mark sheet quotes what was read (and offers the challenge).
    answer = (
        "The first step reads the whole question at once, so a long question means a long wait before "
        "anything appears. After that each new word costs about the same, because the machine mostly spends "
        "its time fetching the model's numbers from memory, and the longer question only adds a little to that."
    )
    result = grade(question=bank.question("prefill-decode-ttft"), answer=answer)
    by_id = {criterion.id: criterion for criterion in result.criteria}
    assert not by_id["ttft-is-prefill"].met
    assert by_id["ttft-is-prefill"].closest == (
        "The first step reads the whole question at once, so a long question means a long wait before "
        "anything appears."
    )
    assert by_id["ttft-is-prefill"].to_dict()["closest"] == by_id["ttft-is-prefill"].closest
    # Met points quote their evidence instead; a point nothing came near quotes nothing.
    assert by_id["decode-memory-bound"].met and by_id["decode-memory-bound"].closest is None
    assert by_id["two-phases"].closest is None and "closest" not in by_id["two-phases"].to_dict()


def test_a_sentence_that_states_a_misconception_is_never_quoted_as_a_near_miss(bank):
    # Round 6's blind GQA misconception (development data now): its sentence about FLOPs is
    # the nearest unit to the "benefit" point, but it states the belief the grader flags, so
    # the mark sheet quotes it under the misconception and never as "closest you came".
    answer = (
        "GQA and MQA reduce the number of key/value heads, with groups of query heads sharing one K/V head "
        "(MQA uses a single one). The main payoff is computational: with 8 KV heads instead of 32, the attention "
        "layer only has to compute a quarter as many score matrices and weighted sums, so attention FLOPs fall "
        "by 4x, and with MQA by 32x. That is why these models prefill long prompts so much faster; attention's "
        "quadratic cost is cut by the grouping factor. The cache gets smaller as well, as a side effect. The "
        "cost is a little quality, since fewer heads compute attention patterns, but for GQA it is minor."
    )
    result = grade(question=bank.question("gqa-mqa-kv-cache"), answer=answer)
    assert [hit.id for hit in result.misconceptions] == ["gqa-saves-flops"]
    benefit = next(criterion for criterion in result.criteria if criterion.id == "benefit")
    assert not benefit.met and benefit.closest is None


def test_switching_the_semantic_layer_off_before_it_was_ever_loaded_switches_it_back_on(bank):
    """A first use_model(None) in a process used to hand back None for "not loaded yet", and
    putting that back left the semantic layer off for every later grade (an xfail test passed
    or failed by test order)."""
    question = bank.question("prefill-decode-ttft")
    answer = "The whole prompt goes through the model in one pass that keeps the arithmetic units busy."
    assert met(question, answer)["prefill-compute-bound"]
    saved_loaded = semantic._model
    semantic._model = semantic._UNLOADED
    try:
        saved = semantic.use_model(None)
        assert not met(question, answer)["prefill-compute-bound"]
        semantic.use_model(saved)
        assert saved is not None
        assert met(question, answer)["prefill-compute-bound"]
    finally:
        semantic._model = saved_loaded
