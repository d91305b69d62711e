"""questions.grading: free-text relations, negation, misconceptions, the cap, units, choices."""

from __future__ import annotations

from pathlib import Path

import pytest

from questions.bank import Concept, load_bank
from questions.grading import KEYWORD_LIST_CAP, grade, semantic
from questions.grading.choice import ChoiceError, parse_choices
from questions.grading.matching import used_concepts
from questions.grading.text import analyse, keyword_list_reason, split_sentences
from questions.grading.units import find_quantities

CONTENT_DIR = Path(__file__).resolve().parents[2] / "questions" / "content"


@pytest.fixture(scope="module")
def bank():
    return load_bank(content_dir=CONTENT_DIR)


def met(result) -> set[str]:
    return {c.id for c in result.criteria if c.met}


def flagged(result) -> set[str]:
    return {m.id for m in result.misconceptions}


@pytest.fixture
def patterns_only():
    """The pattern layer alone (the semantic layer and its readers off)."""
    saved = semantic.use_model(None)
    try:
        yield
    finally:
        semantic.use_model(saved)


# --- Relations inside one sentence ---------------------------------------------------------


def test_relation_needs_both_concepts_in_one_sentence(bank, patterns_only):
    question = bank.question("prefill-decode-ttft")
    together = grade(question=question, answer="Prefill is compute-bound.")
    apart = grade(question=question, answer="Prefill comes first. Some work is compute-bound.")
    assert "prefill-compute-bound" in met(together)
    assert "prefill-compute-bound" not in met(apart)


# A known error of the criterion reader (session 13): it reads the two sentences together and
# credits "prefill is compute-bound" although neither says it. Strict: when a retrained reader
# gets it right this test fails, and the check moves into the test above, whole grader.
@pytest.mark.xfail(strict=True, reason="known error: the criterion reader joins two sentences into one claim")
def test_the_whole_grader_does_not_join_two_sentences_into_one_claim(bank):
    question = bank.question("prefill-decode-ttft")
    apart = grade(question=question, answer="Prefill comes first. Some work is compute-bound.")
    assert "prefill-compute-bound" not in met(apart)


def test_contrast_keeps_each_property_on_its_own_side(bank):
    question = bank.question("prefill-decode-ttft")
    for answer in (
        "Prefill is compute-bound while decode is memory-bound.",
        "Prefill is compute-bound and decode is memory-bound.",
        "Prefill is compute-bound, decode memory-bound.",
        "Compute-bound prefill is very different from memory-bound decode.",
        "Decode, unlike prefill, is memory-bound; prefill is compute-bound.",
        "prefill is compute bound decode is memory bound",
    ):
        result = grade(question=question, answer=answer)
        assert {"prefill-compute-bound", "decode-memory-bound"} <= met(result), answer
        assert flagged(result) == set(), answer


def test_swapping_the_bounds_is_a_misconception_not_a_match(bank):
    question = bank.question("prefill-decode-ttft")
    result = grade(question=question, answer="Prefill is memory-bound while decode is compute-bound.")
    assert "swapped-bounds" in flagged(result)
    assert not {"prefill-compute-bound", "decode-memory-bound"} & met(result)
    feedback = result.criterion("decode-memory-bound").feedback
    assert "Not credited" in feedback and "swapped-bounds" in feedback


@pytest.mark.parametrize(
    "answer",
    [
        "Decode is not compute-bound.",
        "Decode isn't compute-bound.",
        "Decode isnt compute bound at all.",
        "Decode is never compute-bound at batch 1.",
        "Decode is no longer compute-bound once you leave prefill.",
        "Decode is memory-bound rather than compute-bound.",
        "Decode is memory-bound, not compute-bound.",
    ],
)
def test_negation_stops_a_misconception(bank, answer):
    result = grade(question=bank.question("prefill-decode-ttft"), answer=answer)
    assert "swapped-bounds" not in flagged(result)


def test_negation_scope_ends_at_the_clause(bank):
    question = bank.question("prefill-decode-ttft")
    result = grade(question=question, answer="Decode is not compute-bound but memory-bound.")
    assert "decode-memory-bound" in met(result)
    result = grade(question=question, answer="Decode isn't parallel and is memory-bound.")
    assert "decode-memory-bound" in met(result)


def test_rather_than_denies_only_the_phrase_after_it(bank):
    question = bank.question("weight-only-quant-speedup")
    answer = (
        "Decode is memory-bound. With 4-bit instead of 16-bit weights you move 4x fewer bytes "
        "per step."
    )
    assert "fewer-bytes" in met(grade(question=question, answer=answer))


def test_reported_beliefs_are_not_misconceptions(bank):
    question = bank.question("prefill-decode-ttft")
    answer = "A common mistake is to think decode is compute-bound; it is memory-bound."
    result = grade(question=question, answer=answer)
    assert flagged(result) == set()
    assert "decode-memory-bound" in met(result)



def test_a_denied_belief_is_not_that_belief(bank):
    # Written for this test: "It is not that X; Y" denies X. Blind writers put it in strong
    # answers to this question, and rounds 15 and 17 each had one held to 50% for the belief.
    question = bank.question("small-model-quant-gain")
    answer = (
        "It's not that a small model turns compute-bound; at the same batch it does the same FLOPs "
        "per weight byte, so it is still limited by memory. What changes is that fixed per-step "
        "overheads and KV cache reads take a bigger share of its short step, and quantization does "
        "not shrink those."
    )
    assert flagged(grade(question=question, answer=answer)) == set()


def test_serving_many_conversations_together_is_batching_in_plain_words(bank):
    # Written for this test. "Serving many conversations together" is batching, so the belief
    # "inference is compute-bound" is not read into the batched case (its `unless`); until
    # session 17 the plain-words answers of five blind rounds were held to 50% for it.
    question = bank.question("inference-bottleneck")
    answer = (
        "Writing the reply one word at a time is slow because every word needs all of the model's "
        "numbers brought in from memory, and the chip finishes the sums long before they arrive. "
        "Reading the question is different: all its words go through together, so there the math "
        "is the limit. Serving many conversations together means one trip to memory feeds all of "
        "them, so inference moves towards being limited by the math."
    )
    result = grade(question=question, answer=answer)
    assert flagged(result) == set()
    assert result.fraction == 1.0

def test_a_pronoun_carries_the_subject_into_the_next_sentence(bank):
    question = bank.question("inference-bottleneck")
    result = grade(
        question=question,
        answer="Decode is the token-by-token phase. It is memory-bound as a result.",
    )
    criterion = result.criterion("decode-bandwidth")
    assert criterion.met
    # The evidence spans both sentences, because the second needs the first.
    assert criterion.evidence == (
        "Decode is the token-by-token phase. It is memory-bound as a result."
    )


# Blind rounds 14 and 15: a strong answer was held to 50% for "prefill is memory-bound" because
# "That" did not carry decode over and the comparison clause's "input tokens" took the property.
PRONOUN_THEN_COMPARISON = (
    "Output tokens come out of decode, one per sequence per forward pass, and each pass has to "
    "stream all the weights plus the KV cache from HBM. That is memory-bound, so even with a "
    "healthy batch the GPU emits far fewer output tokens per second than it ingests input tokens."
)


def test_a_rival_named_after_the_pronouns_clause_does_not_take_its_property(bank, patterns_only):
    result = grade(question=bank.question("output-tokens-cost-more"), answer=PRONOUN_THEN_COMPARISON)
    assert "swapped-bounds" not in flagged(result)
    # The second sentence says decode is memory-bound, and the mark sheet quotes both.
    assert result.criterion("output-is-decode").met
    assert result.criterion("output-is-decode").evidence == PRONOUN_THEN_COMPARISON


def test_a_rival_in_the_pronouns_own_clause_keeps_the_contrast(bank, patterns_only):
    question = bank.question("output-tokens-cost-more")
    swapped = grade(
        question=question,
        answer="Output tokens come out of decode. It is compute-bound, unlike prefill, which waits on memory.",
    )
    assert "swapped-bounds" in flagged(swapped)
    right = grade(
        question=question,
        answer="Output tokens come out of decode. It is memory-bound, unlike prefill, which is compute-bound.",
    )
    assert "swapped-bounds" not in flagged(right)
    assert right.criterion("output-is-decode").met


def test_a_relative_clause_after_a_denied_rival_belongs_to_the_rival(bank, patterns_only):
    question = bank.question("output-tokens-cost-more")
    right = grade(question=question, answer="Decode is memory-bound, unlike prefill, which is compute-bound.")
    assert "swapped-bounds" not in flagged(right)
    assert right.criterion("output-is-decode").met
    swapped = grade(question=question, answer="Decode is compute-bound, unlike prefill, which waits on memory.")
    assert "swapped-bounds" in flagged(swapped)


def test_evidence_is_the_span_of_the_sentence_that_matched(bank):
    answer = "TTFT is mostly queueing plus prefill.  Decode is memory-bound: it streams the weights."
    result = grade(question=bank.question("prefill-decode-ttft"), answer=answer)
    criterion = result.criterion("decode-memory-bound")
    start, end = criterion.evidence_span
    assert answer[start:end] == criterion.evidence
    assert criterion.evidence == "Decode is memory-bound: it streams the weights."
    assert result.criterion("kv-small-effect").evidence is None


def test_answer_wide_criteria_accept_names_spread_over_sentences(bank):
    question = bank.question("prefill-decode-ttft")
    result = grade(
        question=question, answer="First comes prefill over the prompt. Then decode, token by token.",
    )
    assert "two-phases" in met(result)


def test_a_misconception_voids_the_criterion_it_contradicts(bank):
    question = bank.question("8b-16-users-24gb")
    answer = (
        "The weights are 16 GB in BF16. It fits easily with room to spare for 16 users. "
        "Anyway it doesn't fit with the KV cache."
    )
    result = grade(question=question, answer=answer)
    assert "ignores-kv-cache" in flagged(result)
    assert not result.criterion("verdict").met


def test_unless_lets_a_qualified_statement_through(bank):
    question = bank.question("8b-16-users-24gb")
    answer = "With FP8 weights and an FP8 KV cache it fits: about 8 GB plus 8 GiB."
    result = grade(question=question, answer=answer)
    assert "ignores-kv-cache" not in flagged(result)
    assert "what-would-work" in met(result)


# --- Keyword lists -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        "prefill, decode, compute bound, memory bound, KV cache, bandwidth",
        "- prefill\n- decode\n- memory bandwidth\n- compute",
        "Bottlenecks: HBM bandwidth / KV cache size / FLOPs / batch size",
        "prefill -> compute\ndecode -> memory\nkv cache -> grows",
        "static vs continuous\nwaits for longest\njoin/leave each step\nKV paging",
        # Terms run together without commas are no sentence: no articles, no prepositions.
        "prefill compute bound decode memory bound KV cache batching quantization speculative decoding",
    ],
)
def test_keyword_lists_are_detected(answer):
    assert keyword_list_reason(answer) is not None


@pytest.mark.parametrize(
    "answer",
    [
        "Decode is memory-bound.",
        "Prefill processes the prompt in parallel, so it is compute-bound.",
        "Weights: 8B params x 2 bytes = 16 GB. KV: 2 x 32 x 8 x 128 x 2 = 128 KiB per token.",
        "Because each step reads every weight, and the tensor cores wait on memory.",
        # Round 9's strong answer on rotations, capped at 35% as a list: its clauses' verbs
        # (breaks, set, rounds, mixes, spreads, fold, run) were not known as verbs.
        "Low-bit quantization breaks on outliers: a handful of channels set the scale, and everything "
        "else rounds to a few levels. A Hadamard matrix mixes every channel into every other and "
        "spreads an outlier's energy evenly. Many rotations fold into the weights offline, and the rest "
        "run online.",
        # Round 45's sentence, read as a list: no verb of its own was known ("applies", "remove").
        "SmoothQuant applies a Gaussian smoothing filter to the weight matrix to remove spikes "
        "before rounding.",
    ],
)
def test_explanations_are_not_keyword_lists(answer):
    assert keyword_list_reason(answer) is None


def test_a_word_of_a_negation_cue_is_not_read_as_a_concept(bank):
    # "no longer" is a negation cue; its "longer" says nothing about size or time, though a size
    # word "longer" is what the belief that output tokens are bigger must say.
    question = bank.question("output-tokens-cost-more")

    def size_words(answer: str) -> bool:
        analysis = analyse(
            text=answer, concepts=question.concepts, concept_ids=used_concepts(question),
            contrasts=question.contrasts,
        )
        return analysis.sentences[0].present("token_size_claim")

    assert not size_words("Once the prompt is cached, the provider no longer charges full price for it.")
    assert size_words("Output tokens are longer than input tokens, so they cost more.")


def test_keyword_list_is_capped_at_35_percent(bank):
    # Since the criterion stage withdraws points its reader clearly denies (session 15), most
    # keyword lists earn less than the cap on their own; this one still earns more, so the cap
    # is what holds it down.
    question = bank.question("continuous-batching-throughput")
    answer = "static vs continuous\nwaits for longest\njoin/leave each step\nKV paging"
    result = grade(question=question, answer=answer)
    assert sum(c.awarded for c in result.criteria) > KEYWORD_LIST_CAP * result.max_score
    assert result.score == pytest.approx(KEYWORD_LIST_CAP * result.max_score)
    assert result.capped_reason is not None


def test_a_keyword_list_states_no_belief_but_a_sentence_beside_it_can(bank):
    # Blind writers' keyword lists name both bounds ("compute-bound, memory-bound") beside both
    # phases; read as one comma-separated sentence, that paired decode with compute-bound and
    # told 13 of them (rounds 7-20) they hold the swapped-bounds belief.
    question = bank.question("prefill-decode-ttft")
    listed = (
        "prefill, decode, TTFT, TPOT, compute-bound, memory-bandwidth-bound, HBM, KV cache, "
        "weights read every step, queueing, roofline, one token per step"
    )
    result = grade(question=question, answer=listed)
    assert result.capped_reason is not None and "short notes" in result.capped_reason
    assert result.misconceptions == ()
    stated = grade(question=question, answer=listed + ". Decode is compute-bound and prefill is memory-bound.")
    assert "swapped-bounds" in flagged(stated)


def test_sentences_split_on_punctuation_and_lines_but_not_decimals():
    text = "Bandwidth is 3.35 TB/s, e.g. on an H100. Decode is slow!\n- bullet one\n1. numbered"
    assert [s.text for s in split_sentences(text)] == [
        "Bandwidth is 3.35 TB/s, e.g. on an H100.",
        "Decode is slow!",
        "bullet one",
        "numbered",
    ]


def test_a_concepts_absent_words_keep_it_out_of_a_sentence_that_has_one():
    shared = Concept(
        id="shared", patterns=(r"point\w* (?:at|to) the same",), absent=("count", "referenc"),
    )
    analysis = analyse(
        text=(
            "The four block tables point at the same blocks. They point to the same blocks, "
            "each with a reference count of 4. Tables that point at the same blocks: counted."
        ),
        concepts={"shared": shared}, concept_ids=["shared"],
    )
    # The words are stems, found anywhere in the sentence, before or after the concept and
    # across a colon ("counted" holds "count").
    assert [s.present("shared") for s in analysis.sentences] == [True, False, False]


# --- Results -------------------------------------------------------------------------------


def test_grading_is_deterministic_and_serialisable(bank):
    question = bank.question("batching-almost-free")
    answer = question.model_answer
    first, second = grade(question=question, answer=answer), grade(question=question, answer=answer)
    assert first == second
    data = first.to_dict()
    assert set(data) >= {"score", "max_score", "criteria", "misconceptions", "capped_reason"}
    assert set(data["criteria"][0]) >= {"id", "met", "points", "feedback", "evidence"}
    assert data["rubric_version"] == question.rubric_version
    assert first.criteria[0].decided_by == "rubric"


def test_empty_answer_scores_zero(bank):
    result = grade(question=bank.question("inference-bottleneck"), answer="   ")
    assert result.score == 0 and not met(result)


# --- Numbers -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value", "unit"),
    [
        ("16 GiB", 16, "GiB"),
        ("16GB", 16, "GB"),
        ("1.6e10 bytes", 1.6e10, "B"),
        ("16,384 MiB", 16384, "MiB"),
        ("about 16 GB", 16, "GB"),
        ("~120 tokens/s", 120, "tokens/s"),
        ("25 ms", 25, "ms"),
        ("120 t/s", 120, "tokens/s"),
        ("3.35 TB/s", 3.35, "TB/s"),
        ("989 TFLOPS", 989, "TFLOP/s"),
        ("$0.46 per million tokens", 0.46, "USD"),
    ],
)
def test_quantities_are_parsed_with_their_units(text, value, unit):
    (quantity,) = [q for q in find_quantities(text, dimension=None) if q.unit is not None]
    assert quantity.value == pytest.approx(value)
    assert quantity.unit.name == unit


def test_a_model_size_is_not_a_byte_count():
    quantities = find_quantities("Llama 3.1 8B needs 16 GB", dimension="bytes")
    assert [(q.value, q.unit.name if q.unit else None) for q in quantities] == [
        (3.1, None), (8e9, None), (16, "GB"),
    ]


@pytest.mark.parametrize(
    "answer",
    [
        "128 KiB",
        "131072 bytes",
        "131,072 B",
        "0.125 MiB",
        "about 128 KiB per token",
        "2 x 32 x 8 x 128 x 2 bytes = 131,072 bytes = 128 KiB",
        "1.31e5 bytes",
    ],
)
def test_numeric_answers_in_any_byte_unit(bank, answer):
    result = grade(question=bank.question("kv-bytes-per-token"), answer=answer)
    assert result.criterion("value").met, answer


def test_gb_written_for_gib_is_accepted_with_a_note(bank):
    result = grade(question=bank.question("kv-bytes-per-token"), answer="128 KB")
    value = result.criterion("value")
    assert value.met
    assert "1 GiB is 1.074 GB" in value.feedback


def test_numeric_feedback_shows_the_worked_solution_and_traps(bank):
    question = bank.question("kv-bytes-per-token")
    result = grade(question=question, answer="512 KiB")
    value = result.criterion("value")
    assert not value.met
    assert "Worked solution" in value.feedback and question.numeric.solution in value.feedback
    assert flagged(result) == {"used-query-heads"}


def test_numeric_time_answers_convert_units(bank):
    question = bank.question("prefill-time-estimate")
    for answer in ("130 ms", "0.13 s", "about 0.129 seconds", "~125ms"):
        assert grade(question=question, answer=answer).criterion("value").met, answer
    assert not grade(question=question, answer="65 ms").criterion("value").met
    assert "used-full-peak" in flagged(grade(question=question, answer="65 ms"))


def test_numeric_answer_without_a_number_says_so(bank):
    result = grade(question=bank.question("kv-bytes-per-token"), answer="quite a lot")
    assert result.score == 0
    assert result.criterion("value").feedback.startswith("No number with a unit found")


# --- Multiple choice -----------------------------------------------------------------------


def test_multiple_choice_accepts_indexes_and_letters(bank):
    question = bank.question("decode-limit-quick-check")
    correct = next(i for i, c in enumerate(question.choices) if c.correct)
    assert grade(question=question, answer=str(correct)).score == 1
    assert grade(question=question, answer=chr(ord("A") + correct)).score == 1
    wrong = grade(question=question, answer=str((correct + 1) % len(question.choices)))
    assert wrong.score == 0
    assert "Correct: HBM memory bandwidth" in wrong.criteria[0].feedback


def test_choice_parsing():
    assert parse_choices("0, 2", count=4) == {0, 2}
    assert parse_choices("[1]", count=4) == {1}
    assert parse_choices("b d", count=4) == {1, 3}
    with pytest.raises(ChoiceError):
        parse_choices("7", count=4)
    with pytest.raises(ChoiceError):
        parse_choices("maybe", count=4)


def test_unreadable_choice_scores_zero_with_a_reason(bank):
    result = grade(question=bank.question("decode-limit-quick-check"), answer="the first one")
    assert result.score == 0
    assert result.criteria[0].feedback.startswith("Could not read the choice")


# --- Follow-ups ----------------------------------------------------------------------------


def test_follow_ups_are_graded_against_their_own_rubric(bank):
    follow_up = bank.question("prefill-decode-ttft").follow_up("cut-ttft")
    result = grade(
        question=follow_up,
        answer="Trim the system prompt, cache the shared prefix, and stream the tokens.",
    )
    assert met(result) == {"fewer-prompt-tokens", "prefix-cache", "stream"}
    assert result.rubric_version == follow_up.rubric_version


@pytest.mark.parametrize(("answer", "read_as"), [("131072", "read as bytes"), ("128", "read as KiB")])
def test_a_right_number_without_its_unit_earns_half_and_says_the_unit(bank, answer, read_as):
    result = grade(question=bank.question("kv-bytes-per-token"), answer=answer)
    value = result.criterion("value")
    assert (value.met, value.awarded, value.points) == (False, 1.5, 3)
    assert value.feedback.startswith("Right number, say the unit")
    assert read_as in value.feedback and 'write "128 KiB"' in value.feedback
    assert "could mean bytes or KiB" in value.feedback


def test_a_wrong_number_without_a_unit_earns_nothing(bank):
    value = grade(question=bank.question("kv-bytes-per-token"), answer="1000").criterion("value")
    assert value.awarded == 0 and value.feedback.startswith("Not quite")


# Written for this test. Dividing FLOPs per token by peak FLOP/s is the compute check the
# "checks-compute" point earns; until session 17 the misconception "FLOPs decide decode speed"
# matched it too ("peak + flops + divide"), so plain-words answers that made the check were held
# to 50% and told they held the belief (six blind rounds had one).
CHECKS_THE_COMPUTE_SIDE = (
    "Each new word needs every weight read once, so I would divide the 16 GB of weights by the "
    "card's 3.35 TB/s, about 4.8 ms, or roughly 200 words a second at most. I would also check the "
    "arithmetic side: about two operations per weight per word, divided by the chip's peak FLOPs, "
    "and keep whichever limit is tighter."
)


def test_checking_the_compute_side_is_not_read_as_flops_deciding_decode(bank, patterns_only):
    result = grade(question=bank.question("fastest-possible-generation"), answer=CHECKS_THE_COMPUTE_SIDE)
    assert flagged(result) == set()
    assert "checks-compute" in met(result)


def test_flops_deciding_decode_is_still_flagged(bank, patterns_only):
    result = grade(
        question=bank.question("fastest-possible-generation"),
        answer="Decode is compute-bound, so tokens per second is the GPU's FLOPs divided by the FLOPs per token.",
    )
    assert flagged(result) == {"flops-decide-decode"}


def test_the_whole_grader_does_not_hold_that_answer_to_half(bank):
    result = grade(question=bank.question("fastest-possible-generation"), answer=CHECKS_THE_COMPUTE_SIDE)
    assert result.misconceptions == ()
    assert result.capped_reason is None
    assert result.fraction > 0.5


# Blind rounds 4-17: every fluent wrong answer to expert-parallel-all-to-all earned the 2-point
# definition by naming "expert parallelism" while defining it wrongly.
def test_naming_expert_parallelism_does_not_define_it(bank, patterns_only):
    question = bank.question("expert-parallel-all-to-all")
    wrong = grade(
        question=question,
        answer=(
            "Expert parallelism means replicating every expert on every GPU and splitting the "
            "batch, so each GPU runs the complete MoE layer for its share of tokens."
        ),
    )
    assert not wrong.criterion("definition").met
    for right in (
        "Expert parallelism places whole experts on different GPUs instead of slicing each one.",
        "With 256 routed experts over 64 GPUs, each GPU holds 4 experts of every MoE layer.",
        "Instead of cutting every specialist sub-network into slivers, each chip keeps a few complete specialists.",
    ):
        assert grade(question=question, answer=right).criterion("definition").met, right


# Blind rounds 6-17: the fluent wrong answer to when-self-host and self-host-or-api kept
# coming back as "scale your own GPUs to zero, so you only pay while busy" and earned the
# utilisation and when-not points for naming them.
@pytest.mark.parametrize(
    ("slug", "voided"),
    [
        ("when-self-host", {"volume-utilisation", "when-not"}),
        ("self-host-or-api", {"volume-utilisation", "when-it-loses"}),
    ],
)
def test_an_idle_gpu_that_costs_nothing_is_a_misconception(bank, slug, voided):
    question = bank.question(slug)
    wrong = grade(
        question=question,
        answer=(
            "Self-host when traffic is low and spiky: you can scale the GPUs to zero between bursts "
            "and only pay while they are busy, whereas an API charges a fixed monthly minimum "
            "whatever your utilisation."
        ),
    )
    assert "idle-gpu-is-free" in flagged(wrong)
    assert not voided & met(wrong)
    assert wrong.fraction <= 0.35
    right = grade(
        question=question,
        answer=(
            "An API bills per token and scales to zero, while a rented GPU costs the same every hour "
            "whether busy or idle, so self-hosting only wins with steady, high volume; with low or "
            "spiky traffic you pay for idle capacity."
        ),
    )
    assert "idle-gpu-is-free" not in flagged(right)
    assert "volume-utilisation" in met(right)


# Blind rounds 6-24: misconceptions stated in the writers' own words and missed. Each belief is
# flagged; each right sentence on the same topic is not.
@pytest.mark.parametrize(
    ("slug", "misconception", "belief", "right"),
    [
        (
            "cuda-graphs-small-batch", "bandwidth-bound",
            "In eager mode PyTorch writes every intermediate activation back to HBM between ops and "
            "reads it again, which multiplies the memory traffic and gets you to 6 ms.",
            "With --enforce-eager the CPU launches hundreds of kernels one by one and the GPU waits "
            "between them, so the step is CPU-bound at 6 ms; CUDA graphs replay it with one launch.",
        ),
        (
            "copy-on-write-sampling", "cow-copies-everything",
            "As soon as a sample generates its first token, copy-on-write gives that sample its own copy "
            "of the prompt's blocks, so after the first decode step you are back to four full copies.",
            "When a sample writes its first token, copy-on-write gives it its own copy of the partially "
            "filled last prompt block; the full blocks stay shared, one copy instead of four copies of "
            "the prompt.",
        ),
        (
            "prefill-decode-disaggregation", "decode-recomputes",
            "The prefill pool hands the decode pool just the prompt tokens and the first token; the "
            "decode instance rebuilds the KV cache locally, so nothing big crosses the network.",
            "The prefill instance builds the KV cache and sends it to the decode instance over RDMA; "
            "the decode instance does not rebuild it, it starts generating at once.",
        ),
        (
            "semantic-cache-risks", "prefix-cache-stores-answers",
            "Prefix caching stores the response for an exactly identical prompt and returns it verbatim.",
            "Prefix caching stores the keys and values of an exactly repeated prefix; the answer is "
            "generated fresh every time.",
        ),
        (
            "tensor-vs-pipeline-serving", "pp-cuts-latency",
            "For latency I'd actually pick pipeline parallelism: with 4 stages each GPU runs 20 of the 80 "
            "layers, so the token comes out about four times faster, without TP's all-reduces.",
            "Pipeline stages run one after another for a single token, so PP does not cut per-token "
            "latency; it raises capacity, and TP is what cuts latency.",
        ),
        (
            "long-context-cost", "flash-attention-fixes-it",
            "FlashAttention never stores the full set of keys and values, so the KV memory stays roughly "
            "constant and a 128k request fits in the same memory as a 4k one.",
            "FlashAttention never builds the 128k x 128k score matrix, but the KV cache still holds every "
            "token's keys and values: 16 GiB at 128k.",
        ),
        (
            "when-self-host", "always-cheaper",
            "Running an open-weights model on your own H100 is cheaper per token at any scale: you are "
            "cutting out the middleman.",
            "Self-hosting is cheaper per token only when steady, high volume keeps the GPU busy; at low "
            "volume the API wins.",
        ),
        # Rounds 8-17: the belief set beside a semantic cache, which used to excuse it; the right
        # sentence sets the same two caches side by side.
        (
            "semantic-cache-risks", "prefix-cache-stores-answers",
            "Prefix caching keeps the model's output for a prompt and returns it when the exact same "
            "prompt comes back, while a semantic cache relaxes the match to similar meaning.",
            "A semantic cache returns stored answers for similar questions, while a prefix cache "
            "generates every answer fresh from an identical prompt start.",
        ),
        # "a wrong answer" is an output, not a reported belief: the sentence is the writer's claim.
        (
            "semantic-cache-risks", "prefix-cache-stores-answers",
            "Prefix caching is the strict version of the same idea: it also stores the finished answer, "
            "but only returns it for an identical prompt, so it never gives a wrong answer.",
            "A semantic cache can give a wrong answer, because it returns an answer written for a "
            "different question.",
        ),
        (
            "fp8-e4m3-vs-e5m2", "fp8-needs-no-scale",
            "FP8 tensors need no scale factor: floating point is self-scaling, so scales are only "
            "needed for INT8.",
            "FP8 is not self-scaling: every FP8 tensor needs a scale factor, per channel for weights "
            "and per token for activations.",
        ),
        (
            "rotation-quantization", "rotation-gathers-outliers",
            "The rotation sorts the channels by magnitude so the outliers end up next to each other "
            "and can be kept in FP16 while the rest go to 4 bits.",
            "A Hadamard rotation spreads each outlier's energy across all channels, so one 4-bit scale "
            "fits the whole vector.",
        ),
        (
            "dp-attention-wide-ep", "wide-ep-for-capacity",
            "Wide expert parallelism is purely a memory-capacity measure: the 256 experts do not fit "
            "on one node, so they are spread over hundreds of GPUs.",
            "Spreading the experts over 320 GPUs gathers about 640 tokens on each expert per step, "
            "which makes the expert matmuls compute-bound.",
        ),
        (
            "right-size-gpu", "kv-negligible",
            "The KV cache is small change next to the 16 GB of weights, a few hundred MB even with "
            "20 users, so a 24 GB L4 holds everything.",
            "The KV cache is no small change here: 20 users at 8k need about 20 GiB, more than the "
            "weights.",
        ),
        (
            "right-size-gpu", "decode-needs-flops",
            "For speed what matters is the GPU's tensor-core throughput, so the H100's 990 TFLOPS "
            "make it about three times faster per user.",
            "For speed what matters is memory bandwidth: each step reads the 16 GB of weights, so an "
            "L40S at 864 GB/s gives about 54 tokens/s per user.",
        ),
        (
            "prefix-cache-benchmark-unique-prompts", "server-returns-stored-answer",
            "vLLM recognises the identical request and serves the stored completion from the first "
            "run, so the model never runs.",
            "vLLM reuses the cached keys and values of the identical prompt, skips its prefill and "
            "still decodes every output token.",
        ),
        (
            "draft-model-vs-medusa-eagle", "heads-need-no-training",
            "The big advantage of Medusa heads is that they need no training: they work with any "
            "checkpoint out of the box.",
            "Medusa heads must be trained for the exact model they sit on, on top of its frozen last "
            "hidden state.",
        ),
        (
            "preemption-swap-vs-recompute", "recompute-decodes-again",
            "Recomputation prefills the prompt, and then every token the request had already produced "
            "is decoded again, one step at a time.",
            "The engine runs one prefill over the prompt plus every token generated so far; those "
            "tokens are known, so nothing is decoded again.",
        ),
        (
            "expert-parallel-all-to-all", "ep-is-replicas",
            "Expert parallelism means every GPU holds a full copy of all the experts and different "
            "requests are sent to different GPUs.",
            "Attention can run data-parallel with a full copy of the model's attention weights per GPU, "
            "while each GPU holds 8 of the 256 whole experts.",
        ),
        (
            "fp8-vs-int4", "int4-more-accurate",
            "Accuracy-wise INT4 is actually safer, because integers are represented exactly while FP8 "
            "adds rounding error.",
            "INT4 weights lose more accuracy than FP8, which is usually within noise of BF16, so check "
            "INT4 on your own evaluation.",
        ),
        (
            "fp8-vs-int4", "fp8-runs-anywhere",
            "FP8 works on any GPU through software emulation, so hardware isn't really a factor.",
            "FP8 needs FP8 tensor cores, so on an A100 it gives no speedup for prefill or large batches.",
        ),
        (
            "many-lora-adapters", "merge-each",
            "The standard approach is to merge each customer's LoRA into the base weights offline, so "
            "inference runs at full speed with no adapter overhead.",
            "Do not merge each customer's LoRA into its own copy: serve one base model and apply each "
            "request's adapter at run time.",
        ),
        (
            "8b-16-users-24gb", "ignores-kv-cache",
            "All 16 users share the same weights, so concurrency does not multiply the memory: the "
            "footprint is essentially the model.",
            "All 16 users share the weights, but each brings its own KV cache: 16 x 8,192 tokens x "
            "128 KiB is 16 GiB more, so it does not fit.",
        ),
        (
            "kv-cache-quantization", "kv-quant-shrinks-model",
            "An FP8 KV cache converts the model's key and value projections to FP8, so the 16 GB "
            "checkpoint comes down to about 8 GB.",
            "An FP8 KV cache halves the keys and values, 128 KiB to 64 KiB per token, while the 16 GB "
            "of weights stay as they are.",
        ),
        (
            "sse-chunks-vs-tokens", "chunk-is-token",
            "Counting chunks is exact: the server emits one SSE event per generated token, so the "
            "number of data: events equals the number of tokens.",
            "vLLM usually sends one chunk per token, but a chunk can be empty or carry several tokens, "
            "so read usage.completion_tokens instead.",
        ),
        (
            "prefix-cache-what-must-match", "shared-text-anywhere",
            "Any block whose hash is already in the table is reused instead of recomputed, wherever it "
            "sits in the prompt.",
            "A block is reused only if every token before it matches too, so a shared document after a "
            "different system prompt is recomputed.",
        ),
        (
            "flashattention-same-flops", "approximate",
            "The catch is that it approximates the softmax per block, so the result is a close "
            "approximation of exact attention.",
            "The online softmax keeps a running maximum and sum per row, so FlashAttention computes the "
            "exact softmax block by block.",
        ),
        (
            "weight-only-quant-speedup", "weight-quant-shrinks-kv",
            "Once the weights are 4-bit, the keys and values the layers produce are also 4-bit, so "
            "attention reads a quarter of the cache.",
            "The keys and values stay 16-bit: the weights are dequantized for the multiply, and the "
            "speedup comes from reading a quarter of the weight bytes.",
        ),
        (
            "moe-memory-vs-active", "every-expert-runs",
            "In decode every expert runs on every token and the router only reweights their outputs, "
            "so each step reads all 93 GB.",
            "The router scores all 8 experts for each token but runs only the top 2, so a batch-1 step "
            "reads about 12.9B parameters.",
        ),
        (
            "long-context-cost", "long-context-cache-stays-small",
            "RoPE scaling compresses the cache beyond 8k, so a 128k request needs about the same memory "
            "as a 4k one.",
            "At 128 KiB per token, a 128k request holds 16 GiB of keys and values, as much as the "
            "weights.",
        ),
        (
            "long-context-cost", "prefill-grows-linearly",
            "Prefill grows linearly with length, so a 128k prompt takes 32 times as long as a 4k one.",
            "Prefill's linear layers grow linearly, but attention grows quadratically, so a 128k prompt "
            "takes far more than 32 times as long.",
        ),
        (
            "outliers-awq-gptq-smoothquant", "gptq-is-training",
            "GPTQ is quantization-aware training: it fine-tunes the model with simulated 4-bit rounding.",
            "GPTQ quantizes a 70B model in a few GPU hours, while quantization-aware training would "
            "need a training run.",
        ),
        (
            "outliers-awq-gptq-smoothquant", "smoothquant-smooths-weights",
            "SmoothQuant smooths the weight distribution: it clips the outlier weights before rounding "
            "them to INT4.",
            "SmoothQuant smooths the activations: it divides each outlier channel by a factor and "
            "multiplies the matching weights by it, so both fit INT8.",
        ),
        # Session 20: fluent wrong answers of rounds 7-17 credited for the point they get
        # backwards, and beliefs stated in words no rule read.
        (
            "weight-only-vs-w8a8-kernels", "blackwell-converts-fp4",
            "Blackwell widens the MXFP4 values to FP8 before the multiply, since its FP4 units are "
            "meant for training.",
            "On the B200 it is native FP4 on the tensor cores; the H100 unpacks the weights to BF16.",
        ),
        (
            "weight-only-vs-w8a8-kernels", "cpu-dequantizes-to-float",
            "On a laptop CPU llama.cpp expands every 4-bit block to FP32 and runs a float matmul.",
            "llama.cpp on a CPU takes integer dot products of Q8 activation blocks with the 4-bit "
            "weights, while the H100 dequantizes to FP16.",
        ),
        (
            "many-lora-adapters", "average-adapters",
            "Since LoRA updates add linearly, average all 500 adapters into a single adapter and serve "
            "that one model.",
            "Never average the adapters: keep one shared base and add each request's own BA, gathered "
            "per request in the batch.",
        ),
        (
            "ttft-tpot-itl-definitions", "ttft-wrong-stop",
            "TTFT is the time until the response headers come back from the server.",
            "TTFT runs from sending the request to the first chunk with generated text, not to the "
            "moment the response headers come back.",
        ),
        (
            "ttft-tpot-itl-definitions", "itl-between-requests",
            "ITL is the time between two consecutive requests reaching the server.",
            "ITL is the gap between successive streamed chunks of one response, pooled over all "
            "requests.",
        ),
        (
            "ttft-tpot-itl-definitions", "tpot-misdefined",
            "TPOT is the server's throughput over the whole run, total tokens divided by wall-clock "
            "time.",
            "TPOT is end-to-end latency minus TTFT, divided by the output tokens minus one.",
        ),
        (
            "tensor-vs-pipeline-serving", "layout-swapped",
            "The standard layout is TP across nodes and PP inside each node.",
            "The standard layout is TP inside each node and PP across nodes.",
        ),
        (
            "tensor-vs-pipeline-serving", "tp-is-replicas",
            "Tensor parallelism loads a complete copy of the model on every GPU and spreads the "
            "incoming requests between them.",
            "Tensor parallelism does not keep a whole copy on each GPU; it splits every layer's "
            "matrices, so each GPU reads a quarter of the weights.",
        ),
        (
            "client-bottleneck", "client-never-bottleneck",
            "The load generator can never be the bottleneck, since a CPU parses tokens far faster than "
            "the GPU makes them.",
            "If total throughput rises when the load is split over two client processes, the client "
            "was the bottleneck.",
        ),
        # Round 28's fluent wrong answer (read again in session 27, when a false flag stopped
        # holding it to 35%).
        (
            "self-host-or-api", "idle-gpu-is-free",
            "Self-hosting wins when your traffic is low and bursty: you only pay for the GPU-seconds "
            "you actually use, since the engine idles at near-zero cost between requests.",
            "Self-hosting loses when your traffic is low and bursty: you pay for every GPU-hour, "
            "and the engine costs the same between requests as during them.",
        ),
        (
            "batch-invariance-temperature-zero", "seed-fixes-it",
            "The fix is to set a fixed seed per request so the sampler gives the same output every time.",
            "A fixed seed does not help at temperature 0; batch-invariant kernels keep one reduction "
            "order whatever the batch.",
        ),
        (
            "batch-invariance-temperature-zero", "batch-does-not-matter",
            "The batch does not matter, because each sequence's math is independent of the other "
            "requests.",
            "The batch a request lands in changes the kernels' split-K strategy and so the order of the "
            "additions.",
        ),
        (
            "fp8-e4m3-vs-e5m2", "e-m-swapped",
            "E5M2 has five mantissa bits, which makes it the more precise of the two formats.",
            "E4M3 has four exponent bits and three mantissa bits, so it is the more precise format.",
        ),
        (
            "when-self-host", "idle-gpu-is-free",
            "Your own GPU only costs money while it is generating, so quiet hours are free.",
            "A rented GPU costs the same whether it is busy or idle, so self-hosting needs steady "
            "volume.",
        ),
        (
            "inference-bottleneck", "compute-is-the-limit",
            "To make a single stream faster you need more FLOPs: generation speed tracks the GPU's "
            "TFLOP/s rating.",
            "At batch 1 decode is memory-bound: a GPU with more bandwidth makes a single stream faster, "
            "a higher TFLOP/s rating does not.",
        ),
        (
            "speculative-when-it-hurts", "always-faster",
            "Every verification pass emits at least one token, so speculation can never make serving "
            "slower.",
            "At 64 concurrent requests the compute is already busy, so verifying rejected drafts lowers "
            "throughput.",
        ),
        (
            "quantization-tradeoff", "free-lunch",
            "A 4-bit AWQ model behaves the same as the original for any task, so there is no need to "
            "rerun your evaluations.",
            "8-bit is close to lossless, but 4-bit loses accuracy on harder tasks, so always rerun your "
            "evaluations.",
        ),
        (
            "fp8-vs-int4", "int4-always-faster",
            "INT4 is the faster option at every batch size, because it moves half the bytes of FP8.",
            "INT4 is faster at small batch, where decode is memory-bound; at large batch FP8 on FP8 "
            "tensor cores wins.",
        ),
        (
            "long-context-cost", "flash-attention-fixes-it",
            "Memory is less of a problem than people think: FlashAttention keeps the footprint close "
            "to the 4k case.",
            "FlashAttention never builds the n x n score matrix, but the KV cache still holds 16 GiB "
            "for 128k tokens.",
        ),
        (
            "weight-only-vs-w8a8-kernels", "fp4-everywhere",
            "MXFP4 is native on both chips: the H100 and the B200 both run the matmul in FP4.",
            "Only the B200 runs the matmul in FP4; the H100 unpacks MXFP4 to BF16 and multiplies in "
            "16-bit.",
        ),
        (
            "outliers-awq-gptq-smoothquant", "gptq-quantizes-activations",
            "GPTQ quantizes both the weights and the activations to 4 bits, so the matmul runs in "
            "integer arithmetic.",
            "GPTQ is weight-only: it rounds the weights column by column with a Hessian from "
            "calibration data and leaves the activations in 16-bit.",
        ),
        (
            "prefix-cache-what-must-match", "cache-changes-output",
            "With prefix caching on, the answers come out a little different from a cold run, so "
            "evaluations should turn it off.",
            "A prefix cache hit reuses the exact keys and values a cold prefill would compute, so "
            "the answer is the same.",
        ),
        (
            "hidden-costs-self-hosting", "instant-scaling",
            "An autoscaler adds GPU replicas within seconds when traffic rises and removes them at "
            "night.",
            "An autoscaler needs minutes to start a GPU replica and load a 16 GB model, so you keep "
            "spare replicas for spikes.",
        ),
        (
            "draft-model-vs-medusa-eagle", "heads-need-no-training",
            "Medusa heads read the hidden state every transformer has, so a published set just works "
            "on any model.",
            "Medusa heads are trained for one base model on its own hidden states, so each model needs "
            "its own heads.",
        ),
        (
            "fp8-vs-int4", "int4-always-faster",
            "For speed, INT4 wins every time.",
            "INT4 wins at small-batch decode; once the batch makes the step compute-bound, FP8 wins.",
        ),
        (
            "self-host-or-api", "always-cheaper",
            "On pure cost, self-hosting wins pretty much every time.",
            "Self-hosting wins on cost only above a break-even volume, with the GPUs kept busy.",
        ),
        (
            "chunked-prefill-trade-off", "chunking-saves-kv",
            "The engine never has to hold the KV cache of the whole 8k prompt, only a chunk's worth.",
            "The engine still has to hold the KV cache of the whole 8k prompt; chunking changes when "
            "it is computed.",
        ),
        (
            "gqa-mqa-kv-cache", "gqa-saves-flops",
            "The big practical win is compute: with a quarter of the KV heads, attention FLOPs drop 4x.",
            "GQA keeps all 32 query heads, so the attention FLOPs stay the same; the cache shrinks 4x.",
        ),
        (
            "p99-from-twenty-requests", "twenty-is-enough",
            "Numpy interpolates between samples, so it gives a perfectly valid P99 for 20 requests.",
            "Twenty requests give no valid P99: the 99th percentile of 20 values is just the slowest one.",
        ),
        (
            "p99-from-twenty-requests", "mean-instead",
            "I would replace the P99 with the mean TTFT over the 20 requests.",
            "The mean hides the tail, so keep the P99 and send enough requests to measure it.",
        ),
        (
            "tensor-vs-pipeline-serving", "pp-cuts-latency",
            "For latency, pipeline parallelism is just as good: with two stages each token is computed in "
            "half the time.",
            "For latency, pipeline parallelism does not help: each token still passes through every stage in turn.",
        ),
        (
            "prefill-decode-disaggregation", "decode-recomputes",
            "The decode tier runs its own forward pass over the prompt to build its cache.",
            "The decode tier receives the KV cache over the network and starts generating at once.",
        ),
        (
            "preemption-swap-vs-recompute", "recompute-decodes-again",
            "After recomputation it has to generate all the tokens it had produced so far again.",
            "Recomputation prefills the prompt and the tokens it had produced so far in one pass.",
        ),
        (
            "open-vs-closed-loop", "more-users-fixes-it",
            "The fix is simply to scale the closed loop up to a thousand users.",
            "A thousand closed-loop users still each wait for a reply before sending, so the tail is still hidden.",
        ),
        (
            "p99-from-twenty-requests", "mean-instead",
            "Instead of chasing the tail, report the mean TTFT over all 20 requests.",
            "Report the mean beside the P99 if you like, but send enough requests to measure the tail.",
        ),
        (
            "benchmark-warmup", "warmup-pointless",
            "Once the server reports healthy there is nothing left to warm up.",
            "Even with the weights loaded, graph capture and the allocator still need a few requests to settle.",
        ),
        (
            "prefix-cache-what-must-match", "cache-changes-output",
            "A cache hit does not give you the same result as a cold run.",
            "A cache hit gives the same result as a cold run: the cached keys and values are exact.",
        ),
        (
            "speculative-decoding-how", "draft-quality",
            "With speculative decoding the output drifts toward the small model's style.",
            "The output follows the target model's distribution exactly, whatever the draft proposes.",
        ),
        (
            "batch-vs-interactive-cost", "batching-speeds-each-request",
            "In a big batch each sequence gets its tokens faster.",
            "In a big batch each sequence gets its tokens a little slower, but the GPU serves many more of them.",
        ),
        (
            "8b-16-users-24gb", "ignores-kv-cache",
            "All 16 users share the loaded weights, so adding users does not add memory.",
            "The users share the weights, but each one adds its own KV cache: 1 GiB at 8k tokens.",
        ),
        (
            "moe-batch-erodes-advantage", "batch-stays-active",
            "Each token touches only its 37B active parameters, so a step reads about 37 GB whatever the batch size.",
            "At batch 64 the step reads the union of the experts the tokens pick, about 222 of 256 per layer.",
        ),
        (
            "arithmetic-intensity", "decode-compute-bound",
            "Decode at batch size 1 is compute-bound.",
            "Decode at batch size 1 is memory-bound; only a batch of hundreds makes it compute-bound.",
        ),
        (
            "chunked-prefill-trade-off", "chunking-saves-kv",
            "You only need KV cache for the current chunk instead of the whole prompt.",
            "The KV cache of the whole prompt is still stored; chunking changes when it is computed.",
        ),
        (
            "kv-cache-quantization", "kv-quant-shrinks-model",
            "Turning on an FP8 KV cache basically converts the model to FP8.",
            "An FP8 KV cache leaves the weights in BF16 and halves only the cache.",
        ),
        (
            "quantization-tradeoff", "fewer-flops",
            "With 4-bit weights the GPU does a quarter of the arithmetic per token.",
            "With 4-bit weights the GPU reads a quarter of the bytes, and the multiplies still run in 16-bit.",
        ),
        (
            "flashattention-same-flops", "approximate",
            "Each tile's partial outputs are merged with a correction, which approximates the true softmax.",
            "Each tile's partial outputs are rescaled by the running maximum, so the result equals exact attention.",
        ),
        (
            "dp-attention-wide-ep", "wide-ep-for-capacity",
            "The reason to go wide with the experts is capacity: 671B parameters do not fit on one "
            "node.",
            "Wide EP is chosen so that each expert sees a large batch of tokens per step; fitting the "
            "model needs far fewer GPUs.",
        ),
        (
            "fp8-e4m3-vs-e5m2", "fp8-needs-no-scale",
            "FP8 is a real floating-point format, so you don't need any scale factors: cast the "
            "weights and run.",
            "FP8 still needs a per-tensor scale factor to map values into its narrow range, though no "
            "zero-point.",
        ),
        (
            "batch-invariance-temperature-zero", "seed-fixes-it",
            "The fix is simple: pass a fixed seed with every request.",
            "A fixed seed does not help at temperature 0; the difference comes from the batch "
            "changing the reduction order.",
        ),
        (
            "self-host-or-api", "idle-gpu-is-free",
            "Self-hosting wins when traffic is low, because an idle GPU draws very little power.",
            "Self-hosting wins when traffic is high and steady, because a rented GPU costs the same "
            "per hour busy or idle.",
        ),
        (
            "when-self-host", "always-cheaper",
            "Self-hosting saves money at basically any scale once the model runs.",
            "Self-hosting saves money only at high, steady volume; at low traffic the idle hours cost "
            "more than the API bill.",
        ),
        (
            "long-context-cost", "prefill-grows-linearly",
            "Prefill is just a bigger batch of tokens through the same matmuls, so it scales linearly "
            "with the prompt.",
            "Prefill's attention grows with the square of the prompt, so a 128k prompt costs more "
            "than 32 times a 4k one.",
        ),
        (
            "outliers-awq-gptq-smoothquant", "gptq-is-training",
            "GPTQ is a quantization-aware fine-tuning method that runs a short round of gradient "
            "descent on calibration data.",
            "GPTQ rounds the weights one column at a time and corrects the rest with second-order "
            "information from calibration data.",
        ),
        (
            "many-lora-adapters", "average-adapters",
            "Average their BA products layer by layer and fold the result into the base weights once.",
            "Keep one base model in memory and apply each request's own small adapter at run time.",
        ),
        (
            "expert-parallel-all-to-all", "ep-is-free",
            "With EP each expert is self-contained on its GPU, so the MoE layers run with no "
            "collective communication at all.",
            "With EP each token is sent to the GPU that holds its expert, which is an all-to-all in "
            "every MoE layer.",
        ),
        (
            "continuous-batching-throughput", "faster-steps",
            "Every decode step finishes faster because the kernels work on smaller tensors.",
            "Every decode step costs about the same; continuous batching keeps the batch full, so "
            "more tokens come out of each step.",
        ),
        (
            "client-bottleneck", "client-never-bottleneck",
            "A load generator just sends JSON, so the client is never what limits an LLM benchmark.",
            "A single-process Python client can saturate its CPU parsing the stream, so check the "
            "client before blaming the GPU.",
        ),
        (
            "rotation-quantization", "rotation-gathers-outliers",
            "Rotation is a way of sorting the outliers into a few known channels that stay in 16-bit.",
            "Rotation spreads each outlier's energy across all channels, so no channel stands out and "
            "4-bit works.",
        ),
        (
            "kv-cache-quantization", "kv-quant-shrinks-model",
            "Setting the KV cache to FP8 is a cheap way to run the whole model in FP8.",
            "Setting the KV cache to FP8 halves the cache, but the weights stay in BF16.",
        ),
        (
            "when-self-host", "idle-gpu-is-free",
            "Replicas scale to zero when nobody is calling, so an idle GPU costs you nothing.",
            "An idle GPU you rent still costs its hourly price, so low traffic favours the API.",
        ),
        (
            "long-context-cost", "prefill-grows-linearly",
            "Prefill is a fixed number of FLOPs per token, so 32x more tokens means 32x the prefill "
            "time.",
            "Prefill's weight matmuls grow linearly, but its attention grows with the square of the "
            "prompt.",
        ),
        (
            "open-vs-closed-loop", "more-users-fixes-it",
            "Just keep raising the number of closed-loop users until you offer more than the target "
            "rate.",
            "Closed-loop users wait for each reply, so adding more of them never makes arrivals "
            "independent of the server.",
        ),
        (
            "preemption-swap-vs-recompute", "recompute-decodes-again",
            "Recomputation replays each of the already-generated tokens through the model one decode "
            "step at a time.",
            "Recomputation runs the prompt and the generated tokens through one prefill pass, in "
            "parallel.",
        ),
        (
            "outliers-awq-gptq-smoothquant", "smoothquant-smooths-weights",
            "SmoothQuant is W8A8. Its trick is to smooth the weights so they fit INT8 better.",
            "SmoothQuant is W8A8. Its trick is to divide the activation outliers by a factor and "
            "multiply the weights by it.",
        ),
        (
            "chunked-prefill-trade-off", "chunking-saves-kv",
            "With chunking the engine only has to keep that chunk's KV cache on the GPU.",
            "With chunking every chunk's keys and values stay in the cache, since later chunks attend "
            "to them.",
        ),
        (
            "fp8-vs-int4", "int4-more-accurate",
            "On accuracy I actually lean toward INT4, since its grid is evenly spaced.",
            "On accuracy FP8 is usually closer to BF16 than INT4, because 8 bits hold more "
            "information than 4.",
        ),
        (
            "quantization-tradeoff", "free-lunch",
            "With modern methods it barely trades anything: a 4-bit model is effectively the same "
            "model.",
            "A 4-bit model is smaller and faster, and it trades some accuracy that you have to "
            "measure on your own tasks.",
        ),
        (
            "client-bottleneck", "client-never-bottleneck",
            "The client is basically never the bottleneck in LLM benchmarks, so any load generator "
            "keeps up.",
            "A single Python client can become the bottleneck: parsing thousands of streamed chunks a "
            "second saturates one core.",
        ),
        (
            "fp8-e4m3-vs-e5m2", "fp8-needs-no-scale",
            "You do not need the per-channel scales and calibration that INT8 requires; just cast and "
            "run.",
            "FP8 tensors still carry a scale, per tensor or per block, because E4M3 tops out at 448.",
        ),
        (
            "expert-parallel-all-to-all", "ep-is-free",
            "With EP each expert computes locally on its own GPU, so EP removes communication from "
            "the MoE layers.",
            "With EP each token is sent to the GPU holding its expert and the result is sent back, an "
            "all-to-all each way.",
        ),
        (
            "outliers-awq-gptq-smoothquant", "smoothquant-smooths-weights",
            "SmoothQuant goes after the weights' outliers and flattens them so the weights fit INT8.",
            "SmoothQuant goes after the activations' outliers and moves them into the weights with a "
            "per-channel factor.",
        ),
        (
            "weight-only-quant-speedup", "fewer-flops",
            "Quantization makes the arithmetic itself cheaper, so each layer finishes sooner.",
            "Quantization makes the weights smaller, so each step reads fewer bytes; the arithmetic "
            "still runs in 16-bit.",
        ),
        # Round 25 (after its first run).
        (
            "dp-attention-wide-ep", "wide-ep-for-capacity",
            "On the expert side, wide EP is about fitting the model: 671B parameters are too "
            "much for one node.",
            "Wide EP is about tokens per expert: with one expert per GPU each expert sees a "
            "big batch from the whole cluster.",
        ),
        (
            "fp8-e4m3-vs-e5m2", "fp8-needs-no-scale",
            "Nothing else really has to accompany the tensor, so you can cast BF16 weights "
            "straight to FP8 and run.",
            "A per-tensor scale has to accompany every FP8 tensor, because E4M3 tops out at "
            "448.",
        ),
        (
            "fp8-vs-int4", "fp8-runs-anywhere",
            "FP8 is just a storage and compute format, so it works on whatever GPUs you have, "
            "A100s included.",
            "FP8 compute needs Hopper or Ada tensor cores; an A100 has no FP8 math, so there "
            "it only saves memory.",
        ),
        (
            "hidden-costs-self-hosting", "instant-scaling",
            "With an autoscaler you spin replicas up the moment requests come in and down to "
            "zero when traffic stops.",
            "An autoscaler adds replicas when traffic rises, but each new replica takes "
            "minutes to load its weights, so one stays warm.",
        ),
        (
            "long-context-cost", "prefill-grows-linearly",
            "Prefill cost is proportional to the number of tokens, so a 128k prompt is simply "
            "32x a 4k prompt.",
            "A 128k prompt costs more than 32x a 4k prompt, because attention grows "
            "quadratically with the prompt.",
        ),
        (
            "outliers-awq-gptq-smoothquant", "smoothquant-smooths-weights",
            "Weight matrices have outlier values that blow up the INT8 range, so it smooths "
            "the weights.",
            "Activations have outlier channels that blow up the INT8 range, so it moves that "
            "difficulty into the weights.",
        ),
        (
            "reading-a-benchmark", "aggregate-is-per-user",
            "12,000 tokens per second is a spectacular user experience: a 500-token answer "
            "would stream in about 40 ms.",
            "12,000 tokens per second is the total over all users; each one may see only 30 "
            "tokens per second.",
        ),
        (
            "right-size-gpu", "kv-negligible",
            "The KV cache for 20 chat users is a rounding error next to the weights.",
            "The KV cache for 20 chat users at 8k tokens is about 20 GiB, more than the 16 GB "
            "of weights.",
        ),
        (
            "rotation-quantization", "rotation-gathers-outliers",
            "The rotation is a way of isolating the outliers, which you then keep in FP16.",
            "The rotation spreads each outlier's energy across all the channels, so no "
            "channel stands out.",
        ),
        (
            "self-host-or-api", "idle-gpu-is-free",
            "You scale replicas to zero when there is no traffic, so you effectively pay per "
            "use.",
            "Replicas scaled to zero take minutes to come back, so for steady service you pay "
            "for a warm GPU all day.",
        ),
        (
            "speculative-decoding-how", "draft-quality",
            "The small model drafts and the large model checks, so what you get is a blend "
            "that sits between the small and the large model.",
            "The small model drafts and the large model checks, so the output follows the "
            "large model's distribution exactly.",
        ),
        (
            "tensor-vs-pipeline-serving", "pp-cuts-latency",
            "With PP on two GPUs each GPU runs half the layers, so a token's forward pass "
            "takes half the time.",
            "With PP on two GPUs a token still passes through both halves in turn, so one "
            "request gets no faster.",
        ),
        (
            "moe-memory-vs-active", "moe-needs-only-active-memory",
            "Active parameters set the memory, total parameters set the speed.",
            "Total parameters set the memory, active parameters set the speed.",
        ),
        (
            "weight-only-quant-speedup", "weight-quant-shrinks-kv",
            "Weight-only quantization speeds up generation mainly by shrinking the KV cache: "
            "it is a quarter of the size.",
            "Weight-only quantization speeds up decode by shrinking the weights each step "
            "reads; the KV cache stays in BF16.",
        ),
        (
            "when-self-host", "idle-gpu-is-free",
            "A GPU's cost scales with the number of tokens it processes, so low traffic means "
            "a low bill.",
            "A rented GPU costs the same per hour with many tokens or none, so low traffic "
            "means a high cost per token.",
        ),
        # Round 26 (after its first run).
        (
            "chunked-prefill-trade-off", "chunking-saves-kv",
            "The point is memory: only one chunk is resident at a time, so a 32k prompt takes "
            "a fraction of the KV memory.",
            "The point is latency: every chunk's keys and values stay in the cache, since "
            "later chunks attend to them.",
        ),
        (
            "client-bottleneck", "client-never-bottleneck",
            "The client is almost never the issue; a load generator just fires off HTTP "
            "requests and waits.",
            "The client can be the issue: one Python process parsing thousands of streamed "
            "chunks a second saturates a core.",
        ),
        (
            "dp-attention-wide-ep", "wide-ep-for-capacity",
            "For the experts, the reason to go wide is memory: 671B parameters are too many "
            "for one node.",
            "For the experts, the reason to go wide is tokens per expert: each expert then "
            "sees a large batch.",
        ),
        (
            "expert-parallel-all-to-all", "ep-is-replicas",
            "Expert parallelism means every GPU holds a full replica of the MoE model, all "
            "experts included.",
            "Expert parallelism means each GPU holds a few of the experts, and each token "
            "travels to the GPU holding its expert.",
        ),
        (
            "flashattention-same-flops", "fewer-flops",
            "Because FlashAttention works block by block it can skip blocks whose scores "
            "would be negligible after softmax.",
            "Because FlashAttention works block by block it never writes the score matrix to "
            "HBM, yet it computes every score.",
        ),
        (
            "fp8-e4m3-vs-e5m2", "fp8-needs-no-scale",
            "FP8 is a floating-point format, so you do not need calibration or scale factors "
            "the way you do for integer quantization.",
            "FP8 is a floating-point format, but you still need a scale per tensor or per "
            "block, as with integer quantization.",
        ),
        (
            # The prompt's chunks pipelined in order are exact and do cut the time to first token
            # (sequence pipeline parallelism): only pieces that attend to themselves are the belief.
            "long-context-prefill-parallel", "pipeline-splits-prompt",
            "Split the 1M-token prompt into micro-batches; the micro-batches are independent, so "
            "each can run on its own GPU with no communication.",
            "Add pipeline parallelism: split the 1M-token prompt into micro-batches and feed "
            "them through the stages.",
        ),
        (
            "tensor-vs-pipeline-serving", "layout-swapped",
            "For 70B across two nodes of 4 GPUs I'd run PP=4 inside each node and TP=2 across "
            "the nodes.",
            "For 70B across two nodes of 4 GPUs I'd run TP=4 inside each node and PP=2 across "
            "the nodes.",
        ),
        (
            "weight-only-vs-w8a8-kernels", "cpu-dequantizes-to-float",
            "On the CPU, llama.cpp does the classic thing: it dequantizes each 4-bit block "
            "back to FP32 using the block scale.",
            "On the CPU, llama.cpp quantizes the activations to 8 bits and runs integer dot "
            "products on the 4-bit blocks.",
        ),
        (
            "constrained-decoding-json", "retry-until-valid",
            "The server validates the output against the schema, and if it fails to parse, "
            "the request is automatically re-run.",
            "The server masks every token the schema does not allow at each step, so the "
            "output always parses.",
        ),
        (
            "inference-bottleneck", "compute-is-the-limit",
            "How fast you generate comes down to how many FLOP/s the tensor cores deliver.",
            "How fast you generate at batch 1 comes down to how many bytes per second the "
            "memory delivers.",
        ),
        # Round 27 (after its first run).
        (
            "client-bottleneck", "client-never-bottleneck",
            "The client just sends HTTP requests; that is trivial work compared to running a "
            "transformer.",
            "The client parses every streamed chunk in Python, which is real work at "
            "thousands of chunks a second.",
        ),
        (
            "draft-model-vs-medusa-eagle", "heads-need-no-training",
            "Medusa heads just read the hidden state, so you can drop a published head onto "
            "whatever model you serve.",
            "Medusa heads read the hidden state, so each head has to be trained for the model "
            "you serve.",
        ),
        (
            "fp8-e4m3-vs-e5m2", "fp8-needs-no-scale",
            "FP8 carries its own exponent, so you don't need the scale factors and "
            "calibration that integer quantization requires.",
            "FP8 carries its own exponent, but it still needs a scale per tensor or block, as "
            "integer quantization does.",
        ),
        (
            "many-lora-adapters", "average-adapters",
            "Each LoRA is a low-rank delta on the same base, so you can average the 500 "
            "deltas and fold the result in once.",
            "Each LoRA is a low-rank delta on the same base, so you keep one base and apply "
            "each delta to its own requests.",
        ),
        (
            "outliers-awq-gptq-smoothquant", "gptq-is-training",
            "GPTQ is essentially a short quantization-aware fine-tune on calibration data.",
            "GPTQ rounds one column at a time and corrects the rest using second-order "
            "statistics from calibration data.",
        ),
        (
            "p99-from-twenty-requests", "mean-instead",
            "A better number is the mean TTFT: averaging all 20 requests smooths out the "
            "noise.",
            "A better number is a median with a confidence interval, and a P99 needs a few "
            "thousand requests.",
        ),
        (
            "self-host-or-api", "idle-gpu-is-free",
            "The node pool scales to zero, so when nobody is sending requests you're not "
            "paying anything.",
            "A node pool that scales to zero takes minutes to bring a replica back, so you "
            "keep one warm and pay for it.",
        ),
        (
            "when-self-host", "always-cheaper",
            "With no provider margin, per token you come out ahead regardless of how "
            "much traffic you have.",
            "With no provider margin you come out ahead only when traffic keeps the GPU "
            "busy most of the day.",
        ),
        (
            "long-context-cost", "long-context-cache-stays-small",
            "RoPE scaling compresses positions, so the KV cache stays the same size as for "
            "the 8k training context.",
            "RoPE scaling changes positions, not sizes: the KV cache grows by 128 KiB with "
            "every token of the 128k.",
        ),
        # Round 28 (after its first run).
        (
            "decode-attention-intensity", "batching-helps-attention",
            "Batching does help attention: the queries of all 64 sequences are stacked, so "
            "attention's intensity grows with the batch just like the weight matmuls.",
            "With the weight matmuls, one weight read serves every sequence in the batch, so "
            "intensity rises with batch size.",
        ),
        (
            "dp-attention-wide-ep", "wide-ep-for-capacity",
            "The expert side is about memory: going to EP64 or wider is simply how you make "
            "the model fit.",
            "The expert side is about tokens: going to EP64 or wider gathers enough tokens per "
            "expert for its matmul.",
        ),
        (
            "fp8-e4m3-vs-e5m2", "fp8-needs-no-scale",
            "Unlike INT8, FP8 needs no side information at all, so you cast a BF16 tensor "
            "straight to E4M3.",
            "Like INT8, FP8 needs a scale per tensor or block stored beside it before the cast "
            "to E4M3.",
        ),
        (
            "long-context-cost", "prefill-grows-linearly",
            "Prefill compute is 2 x parameters x tokens, so at 128k its TTFT is 32 times longer.",
            "The matmuls grow 32 times but attention grows about 1,024 times, so TTFT is well "
            "over 32 times longer.",
        ),
        (
            "prefix-cache-benchmark-unique-prompts", "server-returns-stored-answer",
            "The remaining 499 requests get the stored completion back without the model "
            "running at all.",
            "The remaining 499 requests reuse the cached KV blocks of the prompt, and the "
            "model still generates every output token.",
        ),
        (
            "sliding-window-attention-sinks", "window-too-small",
            "4,096 tokens is simply not enough history, so size the window to the model's "
            "trained context.",
            "The window holds enough history; what breaks is the loss of the first few tokens, "
            "the attention sinks.",
        ),
        (
            "ttft-tpot-itl-definitions", "itl-between-requests",
            "ITL, inter-token latency, is the gap between consecutive requests arriving at "
            "the server.",
            "ITL, inter-token latency, is the gap between consecutive tokens arriving in one "
            "stream.",
        ),
        (
            "when-self-host", "idle-gpu-is-free",
            "Scale the replicas to zero when traffic drops, so you only pay for GPU time you "
            "actually use.",
            "Scaling to zero takes minutes to bring a replica back, so you keep one warm and "
            "pay for its idle hours.",
        ),
        # Round 29 (after its first run).
        (
            "draft-model-vs-medusa-eagle", "heads-need-no-training",
            "Medusa and EAGLE are generic heads that attach to any transformer's hidden states at "
            "load time, so there is nothing to train.",
            "Medusa and EAGLE heads read the target's hidden states, so each has to be trained for "
            "the model you serve.",
        ),
        (
            "fp8-e4m3-vs-e5m2", "fp8-needs-no-scale",
            "The exponent adapts to every value, so you can cast BF16 weights and activations "
            "straight to FP8 without calibration or scale factors.",
            "The exponent adapts within a range, so you store a scale per tensor before you cast "
            "BF16 weights and activations to FP8.",
        ),
        (
            "long-context-cost", "prefill-grows-linearly",
            "Prefill cost is simply proportional to the token count, so a 128k prompt is just 32 "
            "times a 4k one.",
            "Prefill's matmuls grow with the token count and attention with its square, so a 128k "
            "prompt costs far more than 32 times a 4k one.",
        ),
        (
            "long-context-prefill-parallel", "pipeline-splits-prompt",
            "Cut the 1M-token prompt into pieces that only look at their own tokens and prefill "
            "them separately.",
            "Cut the 1M-token prompt into chunks and feed them into the pipeline as micro-batches.",
        ),
        (
            "open-vs-closed-loop", "more-users-fixes-it",
            "Coordinated omission is really a problem of running too few clients, so I'd just run "
            "a closed-loop test with a large enough user count.",
            "Coordinated omission comes from the closed loop itself, so I'd run an open-loop test "
            "at the target arrival rate.",
        ),
        (
            "rotation-quantization", "rotation-gathers-outliers",
            "The rotation is lined up with the outlier directions, so it concentrates all the "
            "large-magnitude activity into a handful of channels.",
            "The rotation spreads each outlier's energy evenly across all channels, so no channel "
            "stands out.",
        ),
        (
            "ttft-tpot-itl-definitions", "tpot-misdefined",
            "TPOT is simply the end-to-end latency divided by the number of output tokens.",
            "TPOT is the end-to-end latency minus TTFT, divided by the number of output tokens "
            "minus one.",
        ),
        (
            "when-self-host", "always-cheaper",
            "An H100 pushes thousands of tokens a second for a fraction of what an API charges, "
            "whatever your actual traffic looks like.",
            "An H100 pushes thousands of tokens a second for a fraction of what an API charges, "
            "but only while your traffic keeps it busy.",
        ),
        # Round 28's fluent wrong answers.
        (
            "fp8-e4m3-vs-e5m2", "e-m-swapped",
            "In E4M3 the 4 is the number of mantissa bits, so E4M3 is the wide-range format.",
            "In E4M3 the 4 is the number of exponent bits, so E5M2 is the wide-range format.",
        ),
        (
            "weight-only-quant-speedup", "weight-quant-shrinks-kv",
            "It speeds things up because low-precision weights shrink the KV cache: the keys and "
            "values come out of the quantized projections.",
            "It speeds things up because low-precision weights are fewer bytes to read; the keys "
            "and values stay in 16-bit.",
        ),
        # Round 29's fluent wrong answers: a second belief each, now flagged, holds them to 35%.
        (
            "moe-memory-vs-active", "moe-needs-only-active-memory",
            "The active count is what lives in GPU memory; the other experts stay in host RAM.",
            "The total count is what lives in GPU memory, since any expert can be picked.",
        ),
        (
            "moe-batch-erodes-advantage", "memory-by-active",
            "The GPUs only need to hold the active 37B, with the other experts paged in from CPU "
            "memory.",
            "The GPUs need to hold all 671B, since the router can pick any expert at any step.",
        ),
        (
            "long-context-cost", "long-context-cache-stays-small",
            "The KV cache stays the same size because it only keeps the last few thousand tokens.",
            "The KV cache grows by 128 KiB with every token, to 16 GiB at 128k.",
        ),
        (
            "when-self-host", "idle-gpu-is-free",
            "Your own GPU only draws power when it is serving a request, so idle time is "
            "effectively free.",
            "Your own GPU is billed by the hour whether it serves or not, so idle time costs the "
            "same as busy time.",
        ),
        # Round 30 (after its first run).
        (
            "8b-16-users-24gb", "bf16-one-byte",
            "Llama 3.1 8B is stored in BF16, which is a one-byte brain-float format, so the "
            "weights come to roughly 8 GB.",
            "Llama 3.1 8B is stored in BF16, which is a two-byte brain-float format, so the "
            "weights come to roughly 16 GB.",
        ),
        (
            "arithmetic-intensity", "decode-compute-bound",
            "In other words, batch-1 decode is compute-bound: the tensor cores are busy executing "
            "the math for every layer.",
            "In other words, batch-1 decode is memory-bound: the tensor cores wait on the weights "
            "for every layer.",
        ),
        (
            "batch-invariance-temperature-zero", "seed-fixes-it",
            "Set the seed parameter on the request, or force top_k=1, and the sampler will make "
            "the same choice every time.",
            "Setting the seed parameter on the request does not help: at temperature 0 nothing is "
            "sampled, and the logits differ with the batch.",
        ),
        (
            "batching-almost-free", "weights-per-sequence",
            "Each sequence in the batch still needs its own pass over the weights, since every "
            "sequence loads the weight matrices for itself.",
            "The sequences in the batch share one pass over the weights, since the step loads "
            "the weight matrices once for all of them.",
        ),
        (
            "continuous-batching-scheduler", "faster-tokens",
            "The big win is that every token is generated faster, so users see a lower time per "
            "output token than with static batching.",
            "The big win is throughput: the batch stays full, while users see about the same time "
            "per output token as with static batching.",
        ),
        (
            "dp-attention-wide-ep", "wide-ep-for-capacity",
            "The expert side is a memory problem: going wide, to dozens or hundreds of GPUs, is "
            "how you make the full expert set fit.",
            "The expert side is about tokens per expert: going wide gathers about 640 tokens on "
            "each expert per step.",
        ),
        (
            "long-context-cost", "prefill-grows-linearly",
            "Prefill cost scales with the number of tokens, so 128k is simply 32 times that, a "
            "clean 32x.",
            "Prefill's matmuls scale with the number of tokens and attention with its square, so "
            "128k costs well over 32 times as much as 4k.",
        ),
        (
            "long-context-prefill-parallel", "pipeline-splits-prompt",
            "With 8 pipeline stages the prompt flows through all the stages at once, so each "
            "stage handles an eighth of the layers and prefill is 8 times faster.",
            "You cut the 1M-token prompt into micro-batches of 32k tokens and feed them into a "
            "pipeline of 8 stages.",
        ),
        (
            "p99-from-twenty-requests", "mean-instead",
            "Rather than chase a tail percentile, I'd switch to the mean TTFT, which uses every "
            "sample.",
            "Rather than trust a P99 of 20 samples, I'd run at least 1,000 requests and report "
            "the P99 with a confidence interval.",
        ),
        (
            "prefix-cache-what-must-match", "shared-text-anywhere",
            "So the request doesn't need to start the same way as an earlier one: the contract's "
            "blocks will hit wherever they appear.",
            "So the request has to start the same way as an earlier one: the contract's blocks "
            "only hit when every token before them matches.",
        ),
        (
            "when-self-host", "always-cheaper",
            "Even a single rented H100 at a couple of dollars an hour comes out ahead whatever "
            "your volume.",
            "A single rented H100 at a couple of dollars an hour only comes out ahead when your "
            "volume keeps it busy.",
        ),
        # Round 30's fluent wrong answers.
        (
            "expert-parallel-all-to-all", "ep-is-replicas",
            "Expert parallelism is running a full replica of the MoE model on each GPU and "
            "routing different requests to different replicas.",
            "Expert parallelism is putting a different subset of the experts on each GPU and "
            "sending each token to the GPUs that hold its experts.",
        ),
        (
            "dp-attention-wide-ep", "tp-splits-cache",
            "Each GPU computes attention for a different subset of heads, and the latent cache is "
            "sharded by heads so each GPU stores only its own heads' part.",
            "Each GPU computes attention for its own sequences, and the latent cache is divided "
            "by sequence so each GPU stores only its own sequences' part.",
        ),
        (
            "moe-memory-vs-active", "moe-needs-only-active-memory",
            "The experts are stored in compressed form and decompressed on demand, so memory is "
            "about 12.9B x 2 bytes = 26 GB.",
            "All experts are stored in BF16 because any token may pick any of them, so memory is "
            "about 46.7B x 2 bytes = 93 GB.",
        ),
        # Two beliefs rounds 3-25 wrote as their fluent wrong answer again and again.
        (
            "kv-cache-runs-out", "drops-oldest-tokens",
            "When the cache fills, vLLM switches to a sliding window and evicts the oldest tokens "
            "of each running sequence.",
            "When the cache fills, vLLM preempts the newest running request and frees its blocks.",
        ),
        (
            "8b-16-users-24gb", "bf16-one-byte",
            "BF16 stores one byte per parameter, so the weights are about 8 GB.",
            "BF16 takes two bytes per parameter, so the weights are 16 GB; FP8 at one byte per "
            "parameter would be 8 GB.",
        ),
        # Rounds 31 and 32 (after their first runs).
        (
            "self-host-or-api", "idle-gpu-is-free",
            "If you use autoscaling the GPUs scale down when traffic is quiet, so idle hours don't "
            "cost you anything.",
            "Even with autoscaling a replica takes minutes to come back, so you keep GPUs warm and "
            "idle hours cost you the full hourly rate.",
        ),
        (
            "hidden-costs-self-hosting", "instant-scaling",
            "With Kubernetes autoscaling you spin GPU replicas up when traffic arrives and down when "
            "it drops, so you only pay for what you use.",
            "Kubernetes autoscaling spins GPU replicas up minutes after traffic arrives, so you keep "
            "spare replicas warm and pay for them while they wait.",
        ),
        (
            "ttft-tpot-itl-definitions", "ttft-is-prefill",
            "TTFT is how long the model's prefill takes: the time the GPU spends processing the "
            "prompt before the first token is produced.",
            "TTFT is measured by the client from sending the request to the first streamed token, "
            "so queueing and the network are in it as well as prefill.",
        ),
        (
            "dp-attention-wide-ep", "wide-ep-for-capacity",
            "The wide expert parallelism is a capacity decision: the experts are spread across "
            "hundreds of GPUs simply to have somewhere to put them.",
            "Wide expert parallelism is about the batch each expert sees: spread over hundreds of "
            "GPUs, every expert gets many tokens per step and its weight read is amortised.",
        ),
        (
            "expert-parallel-all-to-all", "ep-is-replicas",
            "Expert parallelism is the MoE-friendly way to scale: instead of slicing every weight "
            "matrix across GPUs, which needs an all-reduce after every layer, you put a complete "
            "replica of the model on each GPU, experts included, and send different requests to "
            "different GPUs.",
            "Expert parallelism is the MoE-friendly way to scale: instead of slicing every weight "
            "matrix across GPUs, which needs an all-reduce after every layer, you put different "
            "experts on different GPUs and send each token to the GPUs that hold its experts.",
        ),
        (
            "flashattention-same-flops", "approximate",
            "The output is a very close approximation of standard attention rather than bit-for-bit "
            "the same, which is why people describe it as giving the same result.",
            "The online softmax rescales each tile's partial sums, so the output is exactly the same "
            "as standard attention up to floating-point rounding.",
        ),
        (
            "arithmetic-intensity", "decode-compute-bound",
            "Decode at batch 1 is actually on the compute side of that line: each token goes through "
            "billions of FLOPs.",
            "Decode at batch 1 is far on the memory side of that line: each weight byte read does "
            "about one FLOP.",
        ),
        (
            "tensor-vs-pipeline-serving", "pp-cuts-latency",
            "For latency, PP is actually the better choice: with 4 stages each token's forward pass "
            "takes about a quarter of the time.",
            "For latency, TP is the better choice: with 4 stages of PP each token still passes "
            "through every layer in turn, one stage after another.",
        ),
        (
            "open-vs-closed-loop", "more-users-fixes-it",
            "The fix is simply to crank up the concurrency: with enough virtual users there is "
            "always a backlog in front of the server.",
            "No number of closed-loop users fixes it: each still waits for its own reply, so "
            "arrivals still slow down when the server does.",
        ),
        (
            "semantic-cache-risks", "prefix-cache-stores-answers",
            "Prefix caching keys on the exact prompt prefix and, when the same prompt comes in "
            "again, serves the stored completion instead of regenerating it.",
            "Prefix caching keys on the exact prompt prefix and reuses its stored keys and values, "
            "so only the new tokens are prefilled and the answer is still generated.",
        ),
        (
            "long-context-cost", "prefill-grows-linearly",
            "Every token costs the same amount of compute, so a prompt 32x longer takes 32x longer "
            "to prefill.",
            "Attention compares every token with every earlier one, so a prompt 32x longer takes "
            "more than 32x longer to prefill.",
        ),
        (
            "chunked-prefill-trade-off", "chunking-saves-kv",
            "Because only one chunk's keys and values are kept at a time, a 100k-token prompt no "
            "longer needs a KV cache for all 100k tokens.",
            "Every chunk's keys and values stay in the cache, because later chunks attend to them: "
            "the prompt still needs a cache for all 100k tokens.",
        ),
        (
            "many-lora-adapters", "average-adapters",
            "Average the 500 B\u00b7A products into one delta, merge it into the base weights "
            "once, and serve a single model.",
            "Keep the 500 B\u00b7A products separate, load the base weights once, and apply each "
            "request's own adapter in a batched LoRA kernel.",
        ),
        (
            "batch-invariance-temperature-zero", "seed-fixes-it",
            "Set a fixed seed in the request (or globally with --seed) and the same prompt always "
            "produces the same answer.",
            "A seed only pins the sampler; at temperature 0 the logits themselves change with the "
            "batch, so the same prompt can still produce a different answer.",
        ),
        # Round 34 (after its first run).
        (
            "expert-parallel-all-to-all", "ep-is-replicas",
            "Expert parallelism is the MoE version of data parallelism: every GPU holds a complete "
            "copy of all the experts, and the incoming requests are divided between GPUs.",
            "Expert parallelism is not a version of data parallelism: every GPU holds a different "
            "subset of the experts, and each token is sent to the GPU that holds its expert.",
        ),
        (
            "batch-vs-interactive-cost", "batching-speeds-each-request",
            "Each read of the weights now serves 200 sequences, and every one of those sequences "
            "also gets its tokens out quicker than it would in a small batch.",
            "Each read of the weights now serves 200 sequences, and every one of those sequences "
            "gets its tokens out a little slower than it would in a small batch.",
        ),
        (
            "fp8-vs-int4", "fp8-runs-anywhere",
            "FP8 is just a number format, so it works on whatever GPUs you already have: an A100 "
            "fleet gets the same 2x matmul speedup as an H100.",
            "FP8 needs FP8 tensor cores: an A100 fleet gets no matmul speedup from it, unlike an "
            "H100.",
        ),
        (
            "open-vs-closed-loop", "more-users-fixes-it",
            "The fix is simply scale. If you run the closed loop with enough virtual users, say "
            "1,000 instead of 32, a stall is fully covered.",
            "The fix is an open loop. However many closed-loop users you run, each still waits for "
            "its reply, so a stall still slows the arrivals.",
        ),
        (
            "self-host-or-api", "idle-gpu-is-free",
            "Even spiky or low traffic is fine, since the idle periods cost nothing.",
            "Spiky or low traffic is where it loses, since the idle periods cost the full hourly "
            "rate.",
        ),
        (
            "weight-only-vs-w8a8-kernels", "cpu-dequantizes-to-float",
            "On a CPU, llama.cpp expands each 4-bit weight back into a float32 and does an "
            "ordinary FP32 multiply-add with the float activations using AVX.",
            "On a CPU, llama.cpp quantizes the activations to 8-bit and multiplies them with the "
            "4-bit weights in integer dot products (AVX2/AVX-512 VNNI).",
        ),
        # Round 35 (after its first run).
        (
            "dp-attention-wide-ep", "wide-ep-for-capacity",
            "Wide EP is fundamentally a memory-capacity decision.",
            "Wide EP is not a memory-capacity decision: the weights already fit on one node, and "
            "going wide gathers enough tokens on each expert.",
        ),
        (
            "long-context-cost", "prefill-grows-linearly",
            "Prefill is straightforward: compute is about 2 FLOPs per parameter per token, so it "
            "scales linearly with prompt length.",
            "Prefill is not straightforward: attention grows with the square of the prompt, so it "
            "scales faster than the prompt length.",
        ),
        (
            "p99-from-twenty-requests", "mean-instead",
            "What I'd do is report the mean TTFT with its standard deviation.",
            "What I'd do is report the P99 with its confidence interval, from enough requests.",
        ),
        (
            "prefix-cache-what-must-match", "shared-text-anywhere",
            "That means common content doesn't have to be at the start.",
            "That means common content has to be at the start, or it is recomputed.",
        ),
        (
            "right-size-gpu", "decode-needs-flops",
            "For 20 concurrent users the real question is compute, so I'd compare cards by dense "
            "TFLOPS per dollar.",
            "For 20 concurrent users the real question is memory bandwidth, so I'd compare cards "
            "by GB/s per dollar.",
        ),
        (
            "rotation-quantization", "rotation-gathers-outliers",
            "A well-chosen orthogonal matrix gathers the large-magnitude outlier features into a "
            "small, fixed set of channels.",
            "A well-chosen orthogonal matrix spreads the large-magnitude outlier features across "
            "all the channels.",
        ),
        (
            "semantic-cache-risks", "prefix-cache-stores-answers",
            "Prefix caching keeps the responses to prompts it has seen and replays them.",
            "Prefix caching keeps the keys and values of prompts it has seen and reuses them.",
        ),
        (
            "small-model-quant-gain", "proportional-always",
            "Going from 16-bit to 4-bit quantization should give close to a 4x speedup for any "
            "model, 1B or 70B.",
            "Going from 16-bit to 4-bit quantization gives close to a 4x speedup only where the "
            "weight read dominates the step, as on a 70B model.",
        ),
        (
            "weight-only-quant-speedup", "weight-quant-shrinks-kv",
            "Because the projections now produce lower-precision keys and values, the KV cache "
            "shrinks along with them.",
            "The projections still produce BF16 keys and values, so the KV cache stays the same "
            "size.",
        ),
        # Round 36's missed misconception answers, in their writers' words.
        (
            "batch-invariance-temperature-zero", "seed-fixes-it",
            "The fix is simply to pin the seed.",
            "The fix is to use batch-invariant kernels, whatever seed the request carries.",
        ),
        (
            "batch-invariance-temperature-zero", "seed-fixes-it",
            "With a fixed seed, the sampler produces the same sequence of random numbers every "
            "time and the outputs become reproducible.",
            "With batch-invariant kernels, every batch size produces the same sums and the outputs "
            "become reproducible.",
        ),
        (
            "benchmark-warmup", "warmup-pointless",
            "Honestly, warm-up requests are mostly cargo cult from the days of JIT-compiled services.",
            "Warm-up requests absorb the one-off costs: graph capture, allocator growth and cold "
            "caches.",
        ),
        (
            "benchmark-warmup", "warmup-pointless",
            "I start measuring from the first request after the health check.",
            "I start measuring once the first few requests have run and the latencies have settled.",
        ),
        (
            "client-bottleneck", "client-never-bottleneck",
            "The client can basically be ruled out.",
            "The client can run out of CPU or connections long before the GPU is full.",
        ),
        (
            "long-context-cost", "prefill-grows-linearly",
            "Prefill time is predictable, scaling in a straight line with prompt length.",
            "Prefill time grows faster than the prompt once attention's share of the work "
            "dominates.",
        ),
        (
            "long-context-cost", "prefill-grows-linearly",
            "A 128k prompt is simply 32 times the work of a 4k one.",
            "A 128k prompt is far more than 32 times the attention work of a 4k one.",
        ),
        (
            "many-lora-adapters", "average-adapters",
            "You can average the 500 B A products into one combined delta and fold it into the base.",
            "You keep the 500 B A products apart and apply each request's own next to the shared "
            "base.",
        ),
        (
            "open-vs-closed-loop", "more-users-fixes-it",
            "The cure is simply to scale up the virtual users.",
            "The cure is to send requests on a timer at the target rate, whatever has finished.",
        ),
        (
            "quantization-tradeoff", "free-lunch",
            "With today's methods 4-bit quantization really doesn't trade anything you'd notice.",
            "With today's methods 4-bit quantization costs a little accuracy, so measure it on "
            "your own tasks.",
        ),
        (
            "quantization-tradeoff", "free-lunch",
            "The calibration step takes care of it, so there's no need to re-run evals.",
            "The calibration step helps, but re-run your evals on the quantized checkpoint.",
        ),
        (
            "rotation-quantization", "rotation-gathers-outliers",
            "The rotation is chosen to concentrate those outliers: it maps the high-magnitude "
            "directions onto a small, fixed set of channels.",
            "The rotation is chosen to spread those outliers: it mixes the high-magnitude "
            "directions across every channel.",
        ),
        (
            "self-host-or-api", "idle-gpu-is-free",
            "Scale replicas to zero overnight and you only pay for the GPU-hours you actually use.",
            "A reserved GPU bills you for every hour, whether it serves anyone or sits idle.",
        ),
        # Round 37's missed misconception answers, in their writers' words.
        (
            "dp-attention-wide-ep", "wide-ep-for-capacity",
            "The experts go wide for a simpler reason, memory.",
            "The experts go wide so that each one sees enough tokens per step to run efficiently.",
        ),
        (
            "draft-model-vs-medusa-eagle", "draft-shares-target-memory",
            "A separate draft model is the most memory-friendly option: adding a 1B drafter costs "
            "almost no extra GPU memory.",
            "A separate draft model is the least memory-friendly option: a 1B drafter adds its own "
            "weights and its own KV cache.",
        ),
        (
            "fp8-vs-int4", "fp8-runs-anywhere",
            "The nice thing about FP8 is that it's hardware-agnostic: it's just an 8-bit number "
            "format.",
            "The catch with FP8 is that it needs FP8 tensor cores: Hopper or Ada, not an A100.",
        ),
        (
            "long-context-cost", "prefill-grows-linearly",
            "Prefill costs 2 x parameters x tokens, so it scales linearly with length.",
            "Prefill's attention share grows with the square of the length.",
        ),
        (
            "long-context-prefill-parallel", "pipeline-splits-prompt",
            "Cut the prompt into chunks of 64k tokens; the chunks are independent, so they can be "
            "prefilled side by side.",
            "Cut the prompt into chunks of 64k tokens; the chunks flow through the pipeline back "
            "to back.",
        ),
        (
            "p99-from-twenty-requests", "twenty-is-enough",
            "The sample size is fine: 20 requests give a perfectly valid P99 as long as they are "
            "representative.",
            "With 20 requests the P99 is just the slowest one, so I'd collect a few thousand.",
        ),
        (
            "ttft-tpot-itl-definitions", "tpot-misdefined",
            "TPOT is the generation speed of the server expressed per token: it's essentially the "
            "inverse of output throughput.",
            "TPOT is one request's time after its first token divided by its output tokens minus "
            "one.",
        ),
        (
            "weight-only-quant-speedup", "fewer-flops",
            "With INT4 weights the GPU multiplies 4-bit integers instead of 16-bit floats.",
            "With INT4 weights the GPU still multiplies in 16-bit after unpacking the weights.",
        ),
        # Round 38's misconception answers (and two of its fluent wrong ones).
        (
            "fp8-vs-int4", "int4-always-faster",
            "INT4 is the faster format, full stop.",
            "INT4 is the faster format at batch 1, where decode waits on memory.",
        ),
        (
            "fp8-vs-int4", "int4-always-faster",
            "INT4 gives you more tokens per second at any batch size.",
            "INT4 gives you more tokens per second at small batch sizes.",
        ),
        (
            "hidden-costs-self-hosting", "instant-scaling",
            "Traffic peaks aren't the problem people think: with autoscaling you add replicas the "
            "moment a spike arrives.",
            "With autoscaling you add replicas minutes after a spike arrives, once the weights "
            "have loaded.",
        ),
        (
            "kv-cache-quantization", "kv-quant-shrinks-model",
            "Setting the KV cache to FP8 effectively runs the model in FP8.",
            "Setting the KV cache to FP8 halves the cache while the weights stay in BF16.",
        ),
        (
            "kv-cache-quantization", "kv-quant-shrinks-model",
            "Storing the key and value projections in 8-bit roughly halves the model's footprint.",
            "Storing the cached keys and values in 8-bit roughly halves the cache's footprint.",
        ),
        (
            "reading-a-benchmark", "aggregate-is-per-user",
            "12,000 tokens/s is impressive, because that is the speed each user gets: a 500-token "
            "answer would stream out in about 40 ms.",
            "12,000 tokens/s is the total over all users; the speed each user gets is far lower.",
        ),
        (
            "semantic-cache-risks", "prefix-cache-stores-answers",
            "Prefix caching only matches when the prompt begins with exactly the same tokens, and "
            "then it serves the response that was generated for that earlier prompt.",
            "Prefix caching only matches when the prompt begins with exactly the same tokens, and "
            "then it reuses the keys and values computed for that earlier prompt.",
        ),
        (
            "moe-memory-vs-active", "moe-needs-only-active-memory",
            "Active parameters determine memory and total parameters determine speed, so the "
            "model is slow but small.",
            "Total parameters determine memory and active parameters determine speed, so the "
            "model is fast but big.",
        ),
        (
            # Round 37: the sentence's own "never" denies something else, not the float path.
            "weight-only-vs-w8a8-kernels", "cpu-dequantizes-to-float",
            "llama.cpp on a CPU expands each 4-bit block to FP32 using the block scale and runs a "
            "float32 matmul, so the quantization only saves memory bandwidth, never compute.",
            "llama.cpp on a CPU does not expand the 4-bit blocks to FP32: it quantizes the "
            "activations to 8-bit and takes integer dot products.",
        ),
        (
            # Round 31: its flag had rested on the definition of chunked prefill.
            "chunked-prefill-trade-off", "chunking-saves-kv",
            "Because only one chunk is in flight at a time, the engine only needs to keep the KV "
            "cache for the current chunk rather than the whole prompt.",
            "Because only one chunk is in flight at a time, the engine builds the KV cache for the "
            "whole prompt chunk by chunk.",
        ),
        (
            "moe-batch-erodes-advantage", "memory-by-active",
            "Memory only needs about 37 GB for the active experts.",
            "Memory needs about 671 GB for all the experts, though each token uses 37B.",
        ),
        # Round 39's misconception answers: 13 missed at its first run.
        (
            "client-bottleneck", "client-never-bottleneck",
            "A benchmark client just sends HTTP requests; that is trivially cheap compared to "
            "running a transformer on a GPU, so in practice it is never where the limit is.",
            "A benchmark client parsing thousands of SSE events per second can pin a core, so it "
            "can be where the limit is.",
        ),
        (
            "cuda-graphs-small-batch", "bandwidth-bound",
            "The bound only counts the weights, but in practice decode is bandwidth-bound on "
            "everything it touches.",
            "At batch 1 the step is CPU-bound: the GPU waits while the CPU issues each kernel.",
        ),
        (
            "dp-attention-wide-ep", "wide-ep-for-capacity",
            "The expert side goes wide for memory reasons: packing all 256 experts on 8 GPUs "
            "leaves almost no room for the KV cache.",
            "The expert side goes wide so that each expert sees enough tokens per step to keep "
            "its matmuls efficient.",
        ),
        (
            "draft-model-vs-medusa-eagle", "heads-need-no-training",
            "Medusa and EAGLE reuse the target's hidden states, and they don't require any "
            "training: the heads are projections derived from the LM head.",
            "Medusa and EAGLE reuse the target's hidden states, and their heads must be trained "
            "for each target model.",
        ),
        (
            "flashattention-same-flops", "approximate",
            "FlashAttention computes the softmax blockwise with per-block normalizers, which is "
            "close to, but not exactly, the global softmax.",
            "FlashAttention computes the softmax blockwise and rescales the partial sums, which "
            "gives exactly the global softmax.",
        ),
        (
            "gqa-mqa-kv-cache", "gqa-saves-flops",
            "Both reduce the work attention does, cutting attention FLOPs by 4x.",
            "Both keep every query head, so the attention FLOPs are unchanged while the KV cache "
            "shrinks by 4x.",
        ),
        (
            "hidden-costs-self-hosting", "instant-scaling",
            "With a Kubernetes autoscaler, peaks are handled by spinning up extra replicas as "
            "traffic arrives.",
            "With a Kubernetes autoscaler, a new replica takes minutes to load its weights, so you "
            "keep spare capacity for the peak.",
        ),
        (
            "long-context-cost", "prefill-grows-linearly",
            "Prefill time scales roughly linearly with tokens, so a 128k prompt costs about 32 "
            "times a 4k one.",
            "Prefill attention grows with the square of the length, so a 128k prompt costs far "
            "more than a 4k one.",
        ),
        (
            "moe-batch-erodes-advantage", "batch-stays-active",
            "That is why MoE is so attractive: you get the quality of a 671B model at the serving "
            "cost of a 37B one at any batch.",
            "At batch 64 the tokens choose different experts, so a step reads the union of them, "
            "about 222 of 256 per layer.",
        ),
        (
            "rotation-quantization", "rotation-gathers-outliers",
            "The rotation reorders the channel basis so that the outliers are concentrated into a "
            "small, fixed set of dimensions.",
            "The rotation mixes every channel into every other, so an outlier's energy is spread "
            "across all of them.",
        ),
        (
            "speculative-decoding-how", "draft-quality",
            "The big model accepts a token from the draft model as long as it is plausible enough, "
            "so the final text is a blend of the two models.",
            "The big model accepts a token from the draft model only under a rule that reproduces "
            "its own distribution, so the text is the big model's.",
        ),
        (
            "speculative-when-it-hurts", "always-faster",
            "It should not actually lower throughput: speculative decoding is lossless and always "
            "at least as fast.",
            "Speculative decoding is lossless, but at 64 concurrent requests it can lower "
            "throughput.",
        ),
        (
            "weight-only-vs-w8a8-kernels", "fp4-everywhere",
            "Both Hopper and Blackwell run it in FP4 on the tensor cores, so on the H100 the "
            "matmul is W4A4.",
            "Only Blackwell runs it in FP4 on the tensor cores; the H100 unpacks the weights to "
            "BF16 and multiplies in 16-bit.",
        ),
        # Round 40's misconception answers: 8 missed at its first run; and its fluent wrong
        # answers' beliefs, which the questions list (three missed).
        (
            "decode-attention-intensity", "batching-helps-attention",
            "The attention kernel batches all sequences' queries into one big matmul against the "
            "KV cache, so as you add sequences the tensor cores get more work per byte loaded.",
            "Each sequence reads its own KV cache, so adding sequences adds bytes in proportion "
            "and attention gets no more work per byte loaded.",
        ),
        (
            "fp8-vs-int4", "int4-more-accurate",
            "Integer quantization is more precise than a floating-point 8-bit format because "
            "integers are exact.",
            "INT4 carries more accuracy risk than FP8, so evaluate it on your own tasks.",
        ),
        (
            "gqa-mqa-kv-cache", "gqa-groups-requests",
            "GQA and MQA are a way for the server to group requests so they can share attention "
            "state.",
            "GQA lets a group of query heads inside one request share a KV head, so each "
            "request's cache is smaller.",
        ),
        (
            "many-lora-adapters", "average-adapters",
            "LoRA updates are additive, so you can sum or average all 500 B·A products into one "
            "delta and merge it into the base weights once.",
            "Keep one base model and apply each request's own B·A product on the fly, batching "
            "requests for different adapters with SGMV kernels.",
        ),
        (
            "moe-batch-erodes-advantage", "memory-by-active",
            "You only need the active experts resident, about 37 GB in FP8.",
            "Every expert has to be resident, about 671 GB in FP8, although a token reads 37B.",
        ),
        (
            "preemption-swap-vs-recompute", "recompute-decodes-again",
            "Recomputation re-prefills the prompt and then decodes all the output tokens again "
            "one step at a time.",
            "Recomputation runs the prompt and the tokens already generated through one prefill "
            "pass, so no token is decoded again.",
        ),
        (
            "reading-a-benchmark", "aggregate-is-per-user",
            "Each user would see text streaming at 12,000 tokens per second, far beyond reading "
            "speed.",
            "12,000 tokens per second is shared by every concurrent stream, so ask how many "
            "streams there were.",
        ),
        (
            "rotation-quantization", "rotation-gathers-outliers",
            "The rotation's job is to collect the outliers: it aligns that outlier energy into a "
            "small fixed set of channels.",
            "The rotation spreads each outlier's energy across all channels, so no channel stands "
            "out.",
        ),
        (
            "fp8-e4m3-vs-e5m2", "fp8-needs-no-scale",
            "Neither format needs a scale factor, because the FP8 tensor cores normalize each input "
            "internally.",
            "Each FP8 tensor needs a scale factor, per tensor or per block, to map its values into "
            "the format's range.",
        ),
        (
            "fp8-e4m3-vs-e5m2", "e-m-swapped",
            "The digit after E is the number of precision bits, so E5M2 carries 5 bits of "
            "significand against E4M3's 4.",
            "The digit after E is the number of exponent bits, so E4M3 keeps three mantissa bits "
            "and E5M2 only two.",
        ),
        (
            "moe-memory-vs-active", "every-expert-runs",
            "It is about as fast as a 7B model, because all eight experts always run for every "
            "token.",
            "Only two of the eight experts run for each token, so a step reads about 12.9B "
            "parameters.",
        ),
        # Round 41's missed misconception answers, in the writers' words.
        (
            "client-bottleneck", "client-never-bottleneck",
            "Load generators are doing almost nothing compared with the server: sending a few HTTP "
            "requests and reading the stream is trivial next to running a transformer on a GPU.",
            "One Python client parsing thousands of SSE events per second can pin a core, so the "
            "client can be the limit.",
        ),
        (
            "kv-cache-runs-out", "drops-oldest-tokens",
            "When the KV cache fills, it evicts the oldest KV blocks of each long sequence, so the "
            "model keeps generating but can no longer attend to the start of the prompt.",
            "vLLM does not evict the oldest KV blocks of a running sequence; it preempts a whole "
            "request and recomputes it later.",
        ),
        (
            "many-lora-adapters", "average-adapters",
            "The efficient approach is to fold the adapters together: average the 500 customers' "
            "deltas into one combined update.",
            "The efficient approach is to keep one base model and apply each customer's adapter to "
            "its own requests.",
        ),
        (
            "quantization-tradeoff", "free-lunch",
            "Honestly, with modern methods it doesn't really trade anything anymore, you just get a "
            "smaller, faster model.",
            "It trades some accuracy for memory and speed, so run your evals on the quantized "
            "checkpoint.",
        ),
        (
            "semantic-cache-risks", "prefix-cache-stores-answers",
            "Prefix caching stores the response generated for a given prompt and serves it again "
            "when the exact same prompt comes back.",
            "Prefix caching stores only the keys and values of a repeated prompt prefix; the "
            "answer is generated fresh every time.",
        ),
        (
            "ttft-tpot-itl-definitions", "ttft-is-prefill",
            "TTFT is the time the server spends on prefill, running the prompt through the model "
            "to produce the first token.",
            "TTFT is measured by the client from sending the request to the first token, so it "
            "includes queueing as well as prefill.",
        ),
        (
            # Round 33's, missed until round 41's words were added.
            "ttft-tpot-itl-definitions", "ttft-is-prefill",
            "TTFT is the server-side prefill time, so it depends only on prompt length and model "
            "size.",
            "TTFT is measured by the client, so it includes queueing, prefill and the network.",
        ),
        # Round 41's fluent wrong answers.
        (
            "gqa-mqa-kv-cache", "gqa-groups-requests",
            "GQA groups incoming requests that share the same prompt so they can use one KV cache.",
            "GQA groups query heads inside the model so that several share one key and value head.",
        ),
        (
            "ttft-tpot-itl-definitions", "itl-between-requests",
            "ITL is the time between one request finishing and the next one starting.",
            "ITL is the gap between successive streamed tokens within one response.",
        ),
        (
            "ttft-tpot-itl-definitions", "tpot-misdefined",
            "TPOT is total tokens, input plus output, divided by the wall-clock duration of the "
            "benchmark. E2E is TTFT plus one ITL.",
            "TPOT is (E2E - TTFT) / (output tokens - 1).",
        ),
        (
            # Round 41's fluent wrong answer.
            "fp8-e4m3-vs-e5m2", "fp8-needs-no-scale",
            "FP8 tensors carry no extra metadata; the hardware picks the exponent bias "
            "automatically per instruction.",
            "Each FP8 tensor carries a scale factor, per tensor or per block, chosen from its "
            "largest value.",
        ),
        (
            # Round 33's misconception answer, missed until then.
            "fp8-e4m3-vs-e5m2", "fp8-needs-no-scale",
            "Scale factors are an INT8 concept, where the grid is uniform; FP8 makes them "
            "unnecessary.",
            "Scale factors matter for FP8 as much as for INT8: E4M3 reaches only 448.",
        ),
        (
            # Round 33's misconception answer, in round 40's verbs folded into round 35's pattern.
            "rotation-quantization", "rotation-gathers-outliers",
            "The rotation collects all the outlier energy into a small, fixed set of channels.",
            "The rotation spreads the outlier energy evenly over all the channels.",
        ),
        # Round 42's misconception answers.
        (
            "gqa-mqa-kv-cache", "gqa-groups-requests",
            "GQA groups incoming requests so that sequences in the same group share a set of "
            "key/value heads, and MQA goes further with one KV cache shared by every request.",
            "GQA groups the query heads inside a layer so that each group shares one key and value "
            "head; every request keeps its own cache.",
        ),
        (
            "prefix-cache-benchmark-unique-prompts", "server-returns-stored-answer",
            "After the first request it already has the full completion for that exact input and "
            "hands it back without running the model.",
            "After the first request it already has the prompt's keys and values, so it skips the "
            "prefill and still generates every output token.",
        ),
        (
            "semantic-cache-risks", "semantic-cache-is-safe",
            "A semantic cache is low-risk: you're giving back answers the model already produced, "
            "so the quality is the model's own quality.",
            "A semantic cache is risky: a near-duplicate question can get an answer that was "
            "written for a different question.",
        ),
        (
            "batch-vs-interactive-cost", "batching-speeds-each-request",
            "Large batches are efficient across the board, and every sequence in the batch "
            "finishes faster than it would on its own.",
            "Large batches raise throughput, but every sequence in the batch finishes later than "
            "it would on its own.",
        ),
        (
            "dp-attention-wide-ep", "wide-ep-for-capacity",
            "Expert parallelism goes wide because of capacity: the experts are most of the 671B "
            "parameters.",
            "Expert parallelism goes wide so that each expert sees enough tokens per step for an "
            "efficient matmul.",
        ),
        (
            # "aren't really paying" is the belief's own words, not a denial of it.
            "draft-model-vs-medusa-eagle", "draft-shares-target-memory",
            "The separate draft model is basically free in memory terms: it reads the target's KV "
            "cache, so you aren't really paying for a second model.",
            "The separate draft model is a second model in memory: its own weights and its own KV "
            "cache.",
        ),
        (
            "fp8-vs-int4", "fp8-runs-anywhere",
            "FP8 is mostly a portability choice: it's a standard format that any modern GPU, "
            "including the A100, can run.",
            "FP8 matmuls need FP8 tensor cores: the H100 has them and the A100 does not.",
        ),
        (
            "weight-only-vs-w8a8-kernels", "blackwell-converts-fp4",
            "On the B200 it's also weight-only: the FP4 tensor cores are really meant for "
            "training.",
            "On the B200 the FP4 tensor cores multiply the MXFP4 weights directly.",
        ),
        (
            "when-self-host", "idle-gpu-is-free",
            "You autoscale down to zero overnight and on quiet days so you're not paying for an "
            "idle card.",
            "A replica takes minutes to load its weights, so you pay for the GPU through quiet "
            "hours too.",
        ),
        # Round 42's fluent wrong answers.
        (
            "moe-memory-vs-active", "every-expert-runs",
            "The model runs all 8 experts in parallel on every token, then averages them with the "
            "router's weights.",
            "The router picks 2 of the 8 experts for every token, so only 12.9B parameters run.",
        ),
        (
            "moe-batch-erodes-advantage", "memory-by-active",
            "You only need to store the active experts on the GPUs, about 37 GB.",
            "You need to store every expert on the GPUs, about 671 GB in FP8.",
        ),
        (
            "weight-only-quant-speedup", "weight-quant-shrinks-kv",
            "The smaller weights also make the KV cache four times smaller.",
            "The KV cache stays in BF16; only the weights get smaller.",
        ),
        (
            "weight-only-vs-w8a8-kernels", "fp4-everywhere",
            "All four cases run the matmul in 4-bit: the H100 emulates FP4 through its FP8 tensor "
            "cores.",
            "The H100 has no FP4 tensor cores, so it unpacks the 4-bit weights to BF16 before each "
            "matmul.",
        ),
        # Round 43's misconception answers.
        (
            "fastest-possible-generation", "pcie-sets-the-limit",
            "The ceiling is set by the host link. Each decode step the GPU has to hand its result "
            "back to the CPU, so every token involves a round trip over PCIe.",
            "The ceiling is set by HBM bandwidth: every token reads all the weights from memory.",
        ),
        (
            "fp8-vs-int4", "int4-always-faster",
            "INT4 is the performance choice, full stop.",
            "INT4 is the memory choice; at large batches FP8 runs faster on FP8 tensor cores.",
        ),
        (
            "fp8-vs-int4", "int4-always-faster",
            "Since inference is about moving weights, INT4 wins on throughput at every batch size, "
            "from a single stream up to hundreds of concurrent requests.",
            "INT4 wins on throughput at small batch sizes, where moving the weights is the cost.",
        ),
        (
            "outliers-awq-gptq-smoothquant", "smoothquant-smooths-weights",
            "SmoothQuant targets W8A8, and the problem it fixes is outlier weights: a few weight "
            "channels have very large magnitudes that blow up the INT8 range.",
            "SmoothQuant targets W8A8, and the problem it fixes is outlier activations: it moves "
            "them into the weights with a per-channel scale.",
        ),
        (
            "semantic-cache-risks", "prefix-cache-stores-answers",
            "Prefix caching is basically the exact-match version of the same idea: vLLM hashes the "
            "prompt's tokens, and if an identical prompt was seen before it returns the completion "
            "it generated last time instead of running the model again.",
            "Prefix caching also needs an exact match, but it reuses the prompt's KV blocks and "
            "still generates the answer.",
        ),
        (
            "when-self-host", "always-cheaper",
            "Pretty much whenever you have the engineering skills, because it is cheaper.",
            "When you have the engineering skills and enough steady traffic to keep the GPU busy, "
            "because then it is cheaper.",
        ),
        # Round 43's fluent wrong answers.
        (
            "long-context-cost", "prefill-grows-linearly",
            "FlashAttention makes attention linear in sequence length, so prefill time grows "
            "roughly in proportion to the prompt.",
            "FlashAttention makes attention's memory linear in sequence length, but prefill "
            "compute still grows quadratically.",
        ),
        (
            "long-context-cost", "long-context-cache-stays-small",
            "The KV cache grows only logarithmically with context; the 128k request needs maybe "
            "two or three times the cache of a 4k one.",
            "The KV cache grows linearly with context: the 128k request needs 32 times the cache "
            "of a 4k one.",
        ),
        (
            "tensor-vs-pipeline-serving", "tp-is-replicas",
            "Tensor parallelism runs a full copy of the model on each GPU and sends different "
            "requests to each one.",
            "Tensor parallelism splits every weight matrix across the GPUs, and all of them work "
            "on each request.",
        ),
        (
            "self-host-or-api", "idle-gpu-is-free",
            "A small open model on your own GPU has no per-token charge, so the occasional request "
            "is essentially free.",
            "A small open model on your own GPU has no per-token charge, but you pay for the GPU "
            "by the hour even when requests are occasional.",
        ),
        (
            "when-self-host", "idle-gpu-is-free",
            "Your own GPU autoscales to zero and costs nothing between requests.",
            "Your own GPU costs the same by the hour between requests as during them.",
        ),
        (
            "draft-model-vs-medusa-eagle", "draft-shares-target-memory",
            "A separate draft model is the most memory-efficient choice because it shares the "
            "target's weights and KV cache.",
            "A separate draft model costs memory: its own weights and its own KV cache.",
        ),
        # Round 44's misconception answers and fluent wrong answers.
        (
            "sse-chunks-vs-tokens", "chunk-is-token",
            "Counting chunks is actually the right idea, since streaming servers emit exactly one "
            "SSE event per decoded token.",
            "Servers often emit one SSE event per decoded token, but chunks can also be empty or "
            "carry several tokens.",
        ),
        (
            "semantic-cache-risks", "prefix-cache-stores-answers",
            "Prefix caching is the exact-match version of the same idea: the engine stores the "
            "completion for a given prompt prefix and, when a new request starts with exactly the "
            "same tokens, it returns that stored completion instead of generating.",
            "Prefix caching reuses the stored keys and values for an exactly repeated prefix and "
            "still generates the completion every time.",
        ),
        (
            "draft-model-vs-medusa-eagle", "draft-shares-target-memory",
            "The draft-model approach is the lightweight one: the small model runs inside the "
            "target's memory footprint, reusing the target's KV cache and hidden states, so it adds "
            "essentially no GPU memory.",
            "A separate draft model adds its own weights and its own KV cache, so it takes extra GPU "
            "memory.",
        ),
        (
            "dp-attention-wide-ep", "wide-ep-for-capacity",
            "671B parameters is simply too much to hold on a handful of GPUs, so the experts are "
            "spread across many GPUs with wide EP.",
            "671B parameters would fit on fewer GPUs; the experts are spread across many GPUs so "
            "that each expert gets enough tokens per step.",
        ),
        (
            "moe-batch-erodes-advantage", "memory-by-active",
            "Since only 37B parameters are active, you only need about 37 GB of memory.",
            "Only 37B parameters are active per token, yet memory must hold all 671B, about 671 GB "
            "in FP8.",
        ),
        (
            "weight-only-vs-w8a8-kernels", "blackwell-converts-fp4",
            "MXFP4 is a storage format: on load the engine converts the weights to FP8 once, "
            "because FP8 is the native precision for both Hopper and Blackwell tensor cores.",
            "On Hopper the engine unpacks MXFP4 to BF16 for the matmul, while on Blackwell the FP4 "
            "tensor cores compute in FP4 directly.",
        ),
        (
            "weight-only-vs-w8a8-kernels", "blackwell-converts-fp4",
            "In all four cases the matmul runs in FP8.",
            "In three of the four cases the matmul runs in 16-bit or integer math; only the B200 "
            "runs it in FP4.",
        ),
        # Round 45's misconception answers.
        (
            "fp8-e4m3-vs-e5m2", "fp8-needs-no-scale",
            "You can cast BF16 weights and activations directly to E4M3 without computing any scale "
            "factors.",
            "Before casting BF16 weights and activations to E4M3, compute a scale factor per tensor "
            "so the values fit E4M3's range of 448.",
        ),
        (
            "gqa-mqa-kv-cache", "gqa-groups-requests",
            "Instead of every request keeping its own keys and values, the engine puts requests "
            "into groups and lets each group share one set of KV heads.",
            "Within one request, GQA puts query heads into groups and lets each group share one "
            "set of KV heads; every request keeps its own cache.",
        ),
        (
            "long-context-cost", "prefill-grows-linearly",
            "FlashAttention makes attention scale linearly in sequence length, so the compute is "
            "proportional to the token count.",
            "FlashAttention makes attention's memory linear in sequence length; its compute still "
            "grows with the prompt's length times itself.",
        ),
        (
            "long-context-cost", "prefill-grows-linearly",
            "A 128k prompt is 32 times the tokens of a 4k prompt, so it takes about 32 times as long "
            "to prefill.",
            "A 128k prompt is 32 times the tokens of a 4k prompt, and it takes far more than 32 "
            "times as long to prefill.",
        ),
        (
            "rotation-quantization", "rotation-gathers-outliers",
            "The rotation is a learned reordering of the hidden dimensions that collects the "
            "outlier channels into one contiguous block.",
            "The rotation mixes every channel into every other, so the outlier energy is spread "
            "evenly across all the dimensions.",
        ),
        (
            "when-self-host", "always-cheaper",
            "With your own GPU you're only paying the raw hardware cost, so self-hosting is cheaper "
            "at basically any scale.",
            "Self-hosting is cheaper only at high, steady volume that keeps the GPU busy; at low "
            "traffic you pay for idle hours.",
        ),
        # Round 45's fluent wrong answer.
        (
            "outliers-awq-gptq-smoothquant", "smoothquant-smooths-weights",
            "SmoothQuant applies a Gaussian smoothing filter to the weight matrix, which removes "
            "spikes before rounding.",
            "SmoothQuant divides each activation channel by a scale and multiplies the matching "
            "weight row by it, moving the outliers into the weights.",
        ),
        # Round 46's misconception answers. "even at batch 1." ends its sentence: one stream, not
        # the many streams that would excuse a compute bound.
        (
            "arithmetic-intensity", "decode-compute-bound",
            "Decode is the compute-heavy phase, so decode sits at the compute roof even at batch 1.",
            "Decode is only compute-heavy at a batch of 300 or more.",
        ),
        (
            "dp-attention-wide-ep", "wide-ep-for-capacity",
            "DeepSeek-V3 is too big to sit comfortably on a node, so the experts, which are the bulk "
            "of the parameters, are spread across as many GPUs as possible.",
            "DeepSeek-V3 fits on one node of eight H200s; the experts are spread across 320 GPUs so "
            "that each expert sees about 640 tokens per step.",
        ),
        (
            "fp8-vs-int4", "fp8-runs-anywhere",
            "You can deploy the same FP8 checkpoint on whatever fleet you have, A100s included, and "
            "get the same kind of speedup; the GPU generation does not really matter.",
            "FP8 matmuls need FP8 tensor cores: Hopper, Ada or newer, not the A100.",
        ),
        (
            "gqa-mqa-kv-cache", "gqa-groups-requests",
            "With GQA the server groups incoming queries that have similar prompts so they can "
            "attend over one shared KV cache.",
            "With GQA the query heads of one request are split into groups, and each group shares "
            "a single KV head.",
        ),
        (
            "output-tokens-cost-more", "swapped-bounds",
            "Generating output is the compute-heavy part: the tensor cores are saturated doing it.",
            "Decode only becomes compute-heavy when large batches saturate the GPU.",
        ),
        (
            "outliers-awq-gptq-smoothquant", "smoothquant-smooths-weights",
            "SmoothQuant flattens the weight distribution by clipping and redistributing the extreme "
            "weight values across channels.",
            "SmoothQuant divides each activation channel by a scale and multiplies the matching "
            "weight row by it, moving the outliers into the weights.",
        ),
        (
            "rotation-quantization", "rotation-gathers-outliers",
            "The rotation re-orients the space so that all of the outlier energy is collected into "
            "a small number of channels.",
            "The rotation mixes every channel into every other, so the outlier energy is spread "
            "evenly across all the dimensions.",
        ),
        # Round 46's fluent wrong answers.
        (
            "moe-batch-erodes-advantage", "memory-by-active",
            "Memory is sized by the active parameters: only about 37 GB of FP8 weights need to live "
            "on the GPUs.",
            "Memory is sized by the total: all 671 GB of FP8 weights need to live on the GPUs.",
        ),
        (
            "long-context-cost", "long-context-cache-stays-small",
            "The KV cache for a 128k request is only a little larger than for a 4k one.",
            "The KV cache for a 128k request is 32 times larger than for a 4k one.",
        ),
        (
            "long-context-cost", "prefill-grows-linearly",
            "Prefill is unaffected because FlashAttention makes it linear in sequence length.",
            "FlashAttention cuts the memory traffic, but prefill attention stays quadratic in "
            "sequence length.",
        ),
        # Rounds 3-46's misconception answers: compute takes over once the weights are small.
        (
            "small-model-quant-gain", "small-model-compute-bound",
            "A 1B model has so few weights that the GPU reads them almost instantly, so the tensor "
            "cores become the limit even at batch 1.",
            "A 1B model's 2 GB of weights are read in well under a millisecond, so the weight read is "
            "no longer most of the step time.",
        ),
        # Words that claim nothing state no belief. Round 23's strong answer opened "First: 12,000
        # tokens per second of what?": a question asks, it does not claim that each user sees
        # 12,000.
        (
            "when-self-host", "idle-gpu-is-free",
            "Replicas scale to zero, so an idle GPU costs you nothing.",
            "Why would an idle GPU cost you nothing once replicas scale to zero? Capacity for the "
            "peak is paid for by the hour.",
        ),
        # Round 46: "flattens", "clipping" and "redistributing" are in no list of verbs, but a
        # long clause with articles and prepositions is written as a sentence and claims what it
        # says (above). The same words as a list of terms claim nothing.
        (
            "outliers-awq-gptq-smoothquant", "smoothquant-smooths-weights",
            "SmoothQuant flattens the weight distribution by clipping and redistributing the extreme "
            "weight values across channels.",
            "SmoothQuant, flattens the weight distribution, clipping, extreme weight values, channels",
        ),
        # Round 47's misconception answers, in their writers' words.
        (
            "8b-16-users-24gb", "bf16-one-byte",
            "BF16 is the compact \"brain float\" format, one byte per value, which is exactly why "
            "everyone serves in it.",
            "BF16 is the brain float format, two bytes per value, so 8B weights take about 16 GB.",
        ),
        (
            "continuous-batching-scheduler", "faster-tokens",
            "Its main benefit is that every token comes out faster: each forward step is shorter and "
            "per-request time per output token falls.",
            "Its main benefit is throughput: a finished sequence leaves at once and a waiting request "
            "takes its place.",
        ),
        (
            "draft-model-vs-medusa-eagle", "heads-need-no-training",
            "The big practical advantage is that these heads are generic: they are derived from the "
            "target's own LM head, so there's nothing to train.",
            "The heads must be trained for the target model before they are any use.",
        ),
        # Round 23's: read by meaning in "So I'd simply default to EAGLE everywhere", a sentence
        # that names no training, until the belief required it (round 47).
        (
            "draft-model-vs-medusa-eagle", "heads-need-no-training",
            "The key point is that both plug straight into any model: the heads just read the hidden "
            "states the model already produces, so there's no training step.",
            "The heads read the hidden states the model already produces, but they are trained for "
            "that one model before they are any use.",
        ),
        (
            "fp8-vs-int4", "fp8-runs-anywhere",
            "Since it's just a number format, any modern datacenter GPU, A100 included, gets the same "
            "roughly 2x compute speedup, so there's no hardware consideration in the decision.",
            "FP8 matmuls need Hopper or Ada tensor cores: an A100 gets the memory saving and no "
            "compute speedup.",
        ),
        (
            "long-context-prefill-parallel", "pipeline-splits-prompt",
            "Cut the 1M tokens into four 250k pieces and hand each piece to a different pipeline "
            "stage group, so the four pieces are processed at the same time.",
            "Pipeline parallelism splits the layers between the stages; every stage still sees the "
            "whole prompt, one after another.",
        ),
        (
            "many-lora-adapters", "merge-each",
            "Cleanest approach: for each customer compute W + BA once offline, and store the 500 "
            "merged checkpoints on fast NVMe.",
            "Keep one base model on the GPU and apply each customer's low-rank B and A at run time, "
            "batching requests for different adapters together.",
        ),
        (
            "prefix-cache-what-must-match", "shared-text-anywhere",
            "The prefix cache looks up a block whenever the same chunk shows up, say a shared "
            "document pasted into the middle of a prompt after a different user question.",
            "A shared document pasted into the middle of a prompt after a different user question "
            "misses the prefix cache: only the exact leading tokens are reused.",
        ),
        (
            "fp8-e4m3-vs-e5m2", "e5m2-for-inference",
            "E5M2 has more dynamic range, and range matters more than precision for weights and "
            "activations at inference time.",
            "Inference uses E4M3. It has less dynamic range than E5M2 but one more bit of mantissa, "
            "and precision matters more than range for weights and activations at inference time.",
        ),
        (
            "fp8-e4m3-vs-e5m2", "e-m-swapped",
            "Inference uses E5M2, because the \"5\" is the number of mantissa bits; E4M3 has more "
            "exponent bits and therefore more range.",
            "E5M2 has 5 exponent bits and 2 mantissa bits, so it has the range and E4M3 the precision.",
        ),
        (
            "prefill-decode-disaggregation", "swapped-bounds",
            "You do it because prefill is memory-bound and decode is compute-bound, so each half gets "
            "the GPU type it needs.",
            "You do it because prefill is compute-bound and decode is memory-bound, so each pool is "
            "tuned for its own bound.",
        ),
        # Round 48's misconception and wrong answers, in their own words.
        (
            "dp-attention-wide-ep", "wide-ep-for-capacity",
            "For the experts, the reason to go wide is simply that the model is too big: 256 "
            "experts per layer across 58 layers is hundreds of gigabytes of expert weights.",
            "Wide EP is chosen so each expert sees enough tokens per step to make its matmul "
            "efficient.",
        ),
        (
            # Tensor parallelism said to shard the latent cache itself.
            "dp-attention-wide-ep", "tp-splits-cache",
            "Data-parallel attention is used because splitting it with TP would make it "
            "communication-bound; TP would perfectly shard the latent cache across GPUs, but the "
            "all-reduce costs more than it saves.",
            "MLA's cache is a single shared latent per token, so tensor parallelism would force "
            "every GPU to keep a full copy of it instead of a slice.",
        ),
        (
            "fp8-e4m3-vs-e5m2", "fp8-needs-no-scale",
            "No calibration or scale factors are needed; that is the main reason FP8 has displaced "
            "INT8.",
            "FP8 still needs scale factors, per tensor or per block, chosen by calibration.",
        ),
        (
            "fp8-e4m3-vs-e5m2", "fp8-needs-no-scale",
            "Being a floating-point format, FP8 carries its own exponent, so each value scales "
            "itself.",
            "FP8 still needs scale factors, per tensor or per block, chosen by calibration.",
        ),
        (
            "fp8-vs-int4", "int4-more-accurate",
            "INT4 is also the more accurate of the two, because integers represent values exactly "
            "while floating point always introduces rounding error.",
            "FP8 is the more accurate of the two; INT4 needs careful calibration to stay close.",
        ),
        (
            "inference-bottleneck", "compute-is-the-limit",
            "More TFLOPs means more tokens per second, so if you want generation faster you buy a "
            "chip with higher peak FLOP/s.",
            "More memory bandwidth means more tokens per second, because decode reads every weight "
            "for each token.",
        ),
        (
            "quantization-tradeoff", "fewer-flops",
            "When the weights are stored in 4-bit, the matrix multiplications themselves run on "
            "4-bit integers, so each multiply-add is far cheaper than in FP16.",
            "With 4-bit weights the matrix multiplications still run in FP16 after the weights are "
            "dequantized; only the bytes read shrink.",
        ),
        (
            "when-self-host", "always-cheaper",
            "That saving is there whatever your traffic looks like, so even a small team benefits.",
            "The saving is there only at high, steady utilisation; at low traffic the API is "
            "cheaper.",
        ),
        # Round 49's misconception and fluent wrong answers.
        (
            "hidden-costs-self-hosting", "one-gpu-is-enough",
            "The GPU line is fine as long as the model fits on one H100, so one card is all the "
            "hardware you need.",
            "$1,825 is 730 hours of one GPU at full price, which assumes that one GPU is all you "
            "need and that it's busy all the time.",
        ),
        (
            "semantic-cache-risks", "semantic-cache-is-safe",
            "A semantic cache cuts latency because on a hit the model doesn't run at all. It's also "
            "low-risk: returning the stored answer gives the user exactly what the model would have "
            "said anyway.",
            "A semantic cache cuts latency because on a hit the model doesn't run at all. It is not "
            "low-risk: the stored answer was written for another question and may be wrong for "
            "this one.",
        ),
        (
            "weight-only-vs-w8a8-kernels", "cpu-dequantizes-to-float",
            "On a CPU, llama.cpp does the same conversion to FP32 and uses standard BLAS.",
            "On a CPU, llama.cpp keeps the 4-bit blocks and multiplies them with 8-bit integer dot "
            "products.",
        ),
        (
            "quantization-tradeoff", "free-lunch",
            "The rounding error is fully removed at dequantization time, so the outputs are "
            "bit-identical to the original model.",
            "The rounding error stays after dequantization, so the outputs drift slightly from the "
            "original model.",
        ),
        (
            "benchmark-warmup", "warmup-primes-cache",
            "The warm-up also fills the KV cache with the benchmark prompts so that the measured "
            "requests reflect the cached steady state.",
            "The warm-up uses different prompts from the same distribution, so the measured "
            "requests do not hit the prefix cache.",
        ),
        # Round 50's misconception and fluent wrong answers.
        (
            "expert-parallel-all-to-all", "ep-is-replicas",
            "Expert parallelism is basically data parallelism for MoE models: you put a full copy "
            "of the model, all experts included, on each GPU and spread incoming requests across "
            "them.",
            "Expert parallelism is not data parallelism: rather than a full copy of the model on "
            "each GPU, each GPU holds a subset of whole experts.",
        ),
        (
            "gqa-mqa-kv-cache", "gqa-groups-requests",
            "GQA is a serving-level optimization: instead of every request keeping its own KV "
            "cache, requests are grouped so that a group of queries shares one set of keys and "
            "values.",
            "GQA is a change to the model: inside every request, a group of query heads shares one "
            "set of keys and values.",
        ),
        (
            "inference-bottleneck", "compute-is-the-limit",
            "If you want a single user's stream to go faster, get a card with more TFLOP/s.",
            "If you want a single user's stream to go faster, get a card with more memory "
            "bandwidth.",
        ),
        (
            "benchmark-warmup", "warmup-pointless",
            "Honestly, warm-up is mostly a leftover habit from the days of JIT-compiled web "
            "servers.",
            "Warm-up is not a leftover habit: the first requests pay for graph capture and memory "
            "allocation.",
        ),
        (
            "benchmark-warmup", "warmup-pointless",
            "Once the server reports ready, the very first request behaves exactly like the "
            "thousandth, so I'd start the clock on request one.",
            "Even after the server reports ready, the first requests pay for graph capture, so I "
            "start the clock after a warm-up.",
        ),
        (
            "benchmark-warmup", "warmup-primes-cache",
            "Warm-up also fills the KV cache so that later requests can reuse it, so you should "
            "warm up with the same prompts you measure.",
            "You should not warm up with the same prompts you measure, or prefix caching makes "
            "their TTFT artificially low.",
        ),
        (
            "rotation-quantization", "rotation-gathers-outliers",
            "Rotations help by reorganising the hidden dimensions so that all the outlier channels "
            "are rotated into a small, fixed set of coordinates.",
            "Rotations help by spreading each outlier channel's magnitude across all the "
            "coordinates, so none stands out.",
        ),
        (
            "speculative-decoding-how", "draft-quality",
            "The text ends up as a mix of the two models, and quality sits somewhere between the "
            "draft and the target.",
            "The text is exactly what the target model alone would have sampled; the draft only "
            "proposes tokens.",
        ),
        (
            "dp-attention-wide-ep", "wide-ep-for-capacity",
            "On the expert side it is about fitting the model: the experts are spread over "
            "hundreds of GPUs to get enough aggregate HBM to hold them all.",
            "On the expert side it is about tokens per expert: spread over 320 GPUs, each expert "
            "sees about 640 tokens per step.",
        ),
        (
            "prefix-cache-what-must-match", "shared-text-anywhere",
            "So any repeated chunk of text can hit, whether it is the system prompt at the top or "
            "a retrieved document pasted in the middle of the prompt; what matters is that the "
            "exact tokens appear again.",
            "Only an exact prefix hits: a document pasted in the middle of the prompt after "
            "different instructions is recomputed.",
        ),
        (
            "fp8-e4m3-vs-e5m2", "fp8-needs-no-scale",
            "E5M2 has the wider range, which avoids any overflow; it's also why scale factors "
            "aren't needed at inference.",
            "E4M3 still needs scale factors at inference, per tensor or per block, to use its "
            "range.",
        ),
    ],
)
def test_misconceptions_in_the_writers_words_are_flagged(
    bank, patterns_only, slug, misconception, belief, right,
):
    question = bank.question(slug)
    assert misconception in flagged(grade(question=question, answer=belief))
    assert misconception not in flagged(grade(question=question, answer=right))


def test_a_belief_quoted_to_open_a_sentence_is_reported_not_held(bank, patterns_only):
    # Round 24's strong answer opened '"GPUs are random" isn't really it.'
    question = bank.question("when-self-host")
    quoted = '"An idle GPU costs you nothing" is what the autoscaler sales pitch says; it is not so.'
    stated = "An idle GPU costs you nothing, as the autoscaler sales pitch says."
    assert "idle-gpu-is-free" not in flagged(grade(question=question, answer=quoted))
    assert "idle-gpu-is-free" in flagged(grade(question=question, answer=stated))


# The fluent wrong answers blind writers kept giving, made beliefs of their questions: each is
# flagged, earns nothing for the point it contradicts and holds the answer to a wrong answer's
# score; the right account of the same mechanism is not flagged and earns that point.
@pytest.mark.parametrize(
    ("slug", "misconception", "criterion", "belief", "right"),
    [
        (
            # Rounds 21, 22 and 23 alike (40-80% before the belief existed).
            "long-context-prefill-parallel", "pipeline-splits-prompt", "context-parallel",
            "Add pipeline parallelism with micro-batching: cut the 1M-token prompt into 64 "
            "micro-batches and push them through the stages, each micro-batch attending only to its "
            "own tokens, so prefill time drops with the number of stages.",
            "Micro-batches that attend only to their own tokens would change the model's output; "
            "context parallelism splits the sequence across GPUs and passes key and value blocks "
            "around a ring.",
        ),
        (
            # Nineteen rounds (3-25): "evicts" earned the preemption point and the answer up to 43%.
            "kv-cache-runs-out", "drops-oldest-tokens", "preemption",
            "When the cache fills, vLLM switches to a sliding-window mode: it evicts the oldest tokens "
            "of each running sequence, so generation continues with a truncated context. Latency does "
            "not change; it only shows up as lower quality on long chats.",
            "The scheduler preempts the newest running request: it evicts it, frees its blocks and "
            "later recomputes it from the prompt and the tokens it had generated, so no sequence "
            "loses context.",
        ),
        (
            # Thirteen rounds sized the weights at 8 GB "since BF16 stores each parameter in one
            # byte", and the 8 GB earned the weights point; one byte in FP8 is a fix.
            "8b-16-users-24gb", "bf16-one-byte", "weights-16gb",
            "An 8B model in BF16 is 8 GB, since bfloat16 stores each parameter in one byte.",
            "In BF16 the weights are 8B x 2 bytes = 16 GB. Quantized to FP8, one byte per parameter, "
            "they are about 8 GB, which leaves room for an FP8 KV cache.",
        ),
        (
            # Rounds 5, 11, 16, 24 and 25: "share" earned the sharing point.
            "gqa-mqa-kv-cache", "gqa-groups-requests", "sharing",
            "GQA and MQA are ways of grouping queries from different requests so that they share a "
            "KV cache, which cuts memory roughly by the batch size.",
            "GQA shares each KV head across a group of query heads inside the model, and MQA uses a "
            "single KV head, so every request's own cache is several times smaller.",
        ),
        (
            # Rounds 18, 22, 24 and 25: "weights" and "KV cache" earned the separate-model point.
            "draft-model-vs-medusa-eagle", "draft-shares-target-memory", "separate-model-cost",
            "A separate draft model is the cheapest option, since it shares the target's weights and "
            "KV cache and so uses no extra memory.",
            "A separate draft model shares only the tokenizer: it needs its own weights and its own KV "
            "cache in GPU memory.",
        ),
        (
            # Ten rounds (16-40): "each token's logits have to be copied back to the host, so the
            # bound is PCIe bandwidth divided by the logits' size" (up to 50% before the belief).
            "fastest-possible-generation", "pcie-sets-the-limit", "bytes-over-bandwidth",
            "The limit is set by the PCIe link, because every generated token has to cross from the "
            "GPU to the host. Take the PCIe bandwidth of 64 GB/s and divide by the size of one "
            "token's logits, 512 KB.",
            "Each step reads every weight from HBM, so divide the model's bytes by the memory "
            "bandwidth: 16 GB over 3.35 TB/s is about 4.8 ms per token.",
        ),
        (
            # Eleven rounds (7-40): "real engines typically exceed this figure thanks to CUDA graphs".
            "fastest-possible-generation", "engines-beat-the-bound", "real-efficiency",
            "Real engines typically exceed this figure thanks to tensor-core overlap.",
            "Real engines reach about 70% of that bound, so treat it as a ceiling.",
        ),
        (
            # Rounds 12, 14, 15, 28, 33, 35, 39 and 40: round 40's earned the bandwidth point (60%).
            "weight-only-quant-speedup", "decode-compute-bound", "decode-memory-bound",
            "Prefill benefits the most, while decode was already compute-bound and stays about the "
            "same.",
            "Decode at small batch is memory-bandwidth-bound: each step reads every weight to make "
            "one token.",
        ),
        (
            # Nine rounds' wrong answers (16, 18, 20, 27, 29, 32, 34, 37, 41).
            "hidden-costs-self-hosting", "one-gpu-is-enough", "redundancy",
            "Redundancy isn't needed because one H100 can serve requests from multiple regions.",
            "One H100 is a single point of failure, so production needs at least two replicas.",
        ),
        (
            # Rounds 37 and 41: "cloud providers bill idle GPUs at a fraction of the rate".
            "hidden-costs-self-hosting", "idle-gpu-is-free", "idle",
            "During decode the card drops into a low-power state and cloud providers bill idle "
            "GPUs at a fraction of the rate, so idle capacity costs little.",
            "You size for the daily peak, so average utilisation is 30-50% and the idle capacity "
            "makes the cost per token 2-3x the full-load figure.",
        ),
    ],
)
def test_a_recurring_wrong_account_is_a_belief_and_the_right_one_earns_its_point(
    bank, patterns_only, slug, misconception, criterion, belief, right,
):
    question = bank.question(slug)
    wrong = grade(question=question, answer=belief)
    assert misconception in flagged(wrong)
    assert not wrong.criterion(criterion).met
    assert wrong.fraction <= 0.35
    told = grade(question=question, answer=right)
    assert misconception not in flagged(told)
    assert told.criterion(criterion).met


def test_an_answer_built_on_two_beliefs_is_held_to_35_percent_and_on_one_to_50(bank):
    """Round 28's fluent wrong answer: two of its four points credited for words around wrong
    models, and two beliefs flagged; it scored 50% until two beliefs held it to 35%."""
    question = bank.question("fp8-vs-int4")
    one_belief = (
        "FP8 stores weights in 8 bits but the math is done in FP32 for stability, so it's the "
        "slowest of the quantized formats and mainly useful when a model doesn't fit. INT4 runs "
        "on INT4 tensor cores at four times the BF16 rate, so it's the one that speeds up "
        "large-batch and prefill-heavy serving. On accuracy, integer formats are exact and evenly "
        "spaced, so INT4 is more faithful than FP8, which loses precision in its short mantissa."
    )
    held = grade(question=question, answer=one_belief)
    assert flagged(held) == {"int4-math"}
    assert held.fraction == pytest.approx(0.50)
    assert "rests on a misconception" in held.capped_reason and "50%" in held.capped_reason
    two = grade(
        question=question,
        answer=one_belief + " And FP8 works on any GPU, since it's just a storage format.",
    )
    assert flagged(two) == {"int4-math", "fp8-runs-anywhere"}
    assert two.fraction == pytest.approx(0.35)
    assert two.capped_reason == (
        "The answer rests on 2 misconceptions (see below), so it is held to 35% whatever else "
        "it gets right."
    )


def test_a_bigger_batch_said_to_lower_intensity_does_not_earn_the_point_that_it_raises_it(bank):
    question = bank.question("arithmetic-intensity")
    lowered = grade(
        question=question,
        answer="Increasing the batch size actually lowers intensity, since the sequences compete "
        "for the same cache.",
    )
    assert "batching-raises-it" not in met(lowered)
    raised = grade(
        question=question,
        answer="Increasing the batch size raises the intensity, since every sequence reuses each "
        "weight read.",
    )
    assert "batching-raises-it" in met(raised)


def test_a_point_is_not_earned_where_the_learner_says_they_do_not_know_it(bank):
    """Blind writers label a point the learner disclaims as missed (rounds 4, 22 and 28): a
    sentence that says "I don't remember how" is close in words to the point, not the point."""
    question = bank.question("outliers-awq-gptq-smoothquant")
    awq = (
        "AWQ is weight-only: it finds the salient weight channels from activation magnitudes "
        "on calibration data and scales them up before rounding. "
    )
    disclaimed = grade(
        question=question,
        answer=awq + "GPTQ is also weight-only, but I don't remember how it works internally. "
        "SmoothQuant is the one that also quantizes activations, but I'm not sure how it does it.",
    )
    assert met(disclaimed) == {"awq"}
    stated = grade(
        question=question,
        answer=awq + "SmoothQuant is the one that also quantizes activations, to INT8 like the "
        "weights.",
    )
    assert met(stated) == {"awq", "smoothquant"}
    # Not knowing in the second person is a fact, not an admission: the point is still made.
    paged = grade(
        question=bank.question("paged-attention-fragmentation"),
        answer="Earlier engines gave each request one contiguous KV buffer sized for the "
        "maximum sequence length, because you don't know how long the output will be.",
    )
    assert "old-scheme" in met(paged)


def test_otherwise_inside_a_clause_keeps_the_claim_and_opening_a_sentence_supposes(
    bank, patterns_only,
):
    # Round 26's misconception answer: "... you never need to hold the KV cache for the entire
    # prompt, so a 32k prompt takes a fraction of the KV memory it would otherwise need" states the
    # belief; the "otherwise" compares, it does not suppose.
    question = bank.question("chunked-prefill-trade-off")
    stated = (
        "Chunking saves memory: the engine only needs to hold that chunk's KV cache, a fraction of "
        "what it would otherwise need."
    )
    supposed = (
        "Every chunk's keys and values stay in the cache. Otherwise, the engine would only need to "
        "hold that chunk's KV cache."
    )
    assert "chunking-saves-kv" in flagged(grade(question=question, answer=stated))
    assert "chunking-saves-kv" not in flagged(grade(question=question, answer=supposed))


# Blind rounds 7-17: plain-words answers (no field jargon) that earned under 50% because the
# patterns knew only the field's names for a point. Each sentence earns its point by the patterns
# alone; each near miss on the same topic does not.
@pytest.mark.parametrize(
    ("slug", "criterion", "earns", "near_miss"),
    [
        (
            "decode-attention-intensity", "intensity",
            "Four readers share each stored pair, so it is about four operations per byte read, far "
            "below the 295 the chip needs.",
            "Batching raises the operations per byte of attention, as it does for the weights.",
        ),
        (
            "decode-attention-intensity", "own-cache",
            "Each user has their own private notes on earlier words, and nobody else can use them.",
            "Every user reads the same stored model numbers, fetched once for all of them.",
        ),
        (
            "fp8-e4m3-vs-e5m2", "e4m3",
            "Running a trained model uses the 4-and-3 version: it only goes up to 448, but its steps "
            "are finer.",
            "Running a trained model uses the 5-and-2 version for its range.",
        ),
        (
            "fp8-e4m3-vs-e5m2", "e5m2-gradients",
            "The 5-and-2 format's huge span suits the error signals flowing backwards.",
            "The 4-and-3 format's span suits the error signals flowing backwards.",
        ),
        (
            "long-context-prefill-parallel", "context-parallel",
            "Split the prompt itself: give each group of chips its own slice of the words.",
            "Split each layer's weight matrices across more chips.",
        ),
        (
            "long-context-prefill-parallel", "ring-overlap",
            "Each group computes on the slice it holds and at the same time hands it to its neighbour.",
            "Each group waits until it has received every slice before it computes anything.",
        ),
        (
            "long-context-prefill-parallel", "costs",
            "It only speeds up reading the prompt, not writing the reply one word at a time.",
            "It speeds up reading the prompt and writing the reply alike.",
        ),
        (
            "many-lora-adapters", "shared-base",
            "Keep one copy of the original model and add each customer's small correction on the fly.",
            "Keep one copy of the model per customer, each with its correction merged in.",
        ),
        (
            "many-lora-adapters", "batch-across",
            "A specialised routine picks out each request's own correction within the group.",
            "Each customer's requests are served in a group of their own.",
        ),
        # Round 29's strong and plain-words answers.
        (
            "fp8-e4m3-vs-e5m2", "e4m3",
            "The 4+3 layout is the one used when running a trained model: its extra fine-digit bit "
            "buys precision at the cost of a smaller maximum, 448.",
            "The 5+2 layout is the one used when running a trained model, for its range.",
        ),
        (
            "long-context-prefill-parallel", "context-parallel",
            "Slicing each layer has run out of road at 8, so split the input text itself: give "
            "each group of chips its own stretch of the million-word input.",
            "Slicing each layer has run out of road at 8, so split each layer across even more "
            "chips.",
        ),
        (
            "long-context-prefill-parallel", "costs",
            "None of this helps the later word-by-word writing phase, which has one new word per "
            "step.",
            "All of this helps the later word-by-word writing phase as much as the reading.",
        ),
        (
            "open-vs-closed-loop", "coordinated-omission",
            "During a stall the closed-loop clients are stuck waiting, so the requests real users "
            "would have sent are never issued or measured.",
            "During a stall the closed-loop clients are stuck waiting, so the test takes longer "
            "to finish.",
        ),
        (
            "preemption-swap-vs-recompute", "recompute",
            "When it resumes, the engine runs one prefill over the original prompt plus every token "
            "generated so far.",
            "When it resumes, the engine decodes every token again, one at a time.",
        ),
        # Round 30's strong and plain-words answers.
        (
            "open-vs-closed-loop", "open-loop",
            "In the second style, questions are fired on a timetable, five per second on average, "
            "whether or not earlier answers have come back.",
            "In the second style, each pretend user waits for the full answer before asking "
            "again.",
        ),
        (
            "open-vs-closed-loop", "coordinated-omission",
            "Coordinated omission: when the server hiccups, the pretend users wait politely, so "
            "the questions that would have piled up are never sent and their waits never get "
            "recorded.",
            "Coordinated omission: when the server hiccups, the pretend users wait politely, so "
            "the test takes longer to finish.",
        ),
        (
            "open-vs-closed-loop", "littles-law",
            "A simple rule shows the cap: people in the system = arrival rate x time each one "
            "spends.",
            "A simple rule shows the cap: the server gets slower as more people use it.",
        ),
        (
            "rotation-quantization", "spread",
            "One giant value becomes many moderate values spread over all positions, so nothing "
            "sticks out.",
            "One giant value stays where it is, so it still sets the yardstick for the group.",
        ),
        (
            "rotation-quantization", "enables",
            "Not just the model's stored numbers but also the in-flight values and the "
            "per-conversation memory of earlier words can be kept in 4 bits.",
            "Only the model's stored numbers can be kept in 4 bits; the rest stays in 16.",
        ),
        (
            "batch-vs-interactive-cost", "large-batch-throughput",
            "Every pass over the weights now yields 200 tokens instead of 8.",
            "Every pass over the weights now takes a little longer than before.",
        ),
        # Round 34's strong and plain-words answers.
        (
            "long-context-prefill-parallel", "ring-overlap",
            "Every rank computes attention with the K/V block it holds while it sends that K/V "
            "block on to its neighbour and receives the next one.",
            "Every rank computes attention with the K/V block it holds, then waits for the next "
            "one to arrive.",
        ),
        (
            "small-model-quant-gain", "weights-not-dominant",
            "A 1-billion-number model is only about 2 GB, which the card reads in a fraction of a "
            "millisecond.",
            "A 1-billion-number model is only about 2 GB, so it fits on any card.",
        ),
        (
            # "Once they're gone" is the sink tokens leaving (every partial answer of rounds 12-34
            # says it), not the limit of the fix.
            "sliding-window-attention-sinks", "fix-and-limit",
            "It only keeps the model stable: anything outside the window is still gone.",
            "Once they're gone, that probability lands on ordinary tokens and the hidden states go "
            "haywire.",
        ),
        # Round 35's plain-words and strong answers.
        (
            "batch-invariance-temperature-zero", "reduction-order",
            "The low-level routines pick different ways to split up their sums depending on the "
            "size of the group.",
            "The low-level routines run the same sums whatever the size of the group.",
        ),
        (
            "batch-invariance-temperature-zero", "fix",
            "The fix is to use routines that always add things up in the same fixed order "
            "regardless of group size.",
            "The fix is to send each request on its own, so the group never changes.",
        ),
        (
            # The bank's own paraphrase of the contrast: what KV quantization leaves alone.
            "kv-cache-quantization", "vs-weights",
            "KV quantization leaves the weights untouched.",
            "KV quantization also shrinks the weights.",
        ),
        # Round 36's plain-words answer: pipeline parallelism as an assembly line.
        (
            "tensor-vs-pipeline-serving", "pp-stages",
            "Give each card a consecutive range of layers, like an assembly line.",
            "Give each card a full copy of the model and split the users between them.",
        ),
        (
            "tensor-vs-pipeline-serving", "pp-latency",
            "Each word still walks through every station in order, so one user's reply is no "
            "faster.",
            "Each word skips most of the stations, so one user's reply comes out faster.",
        ),
        (
            "tensor-vs-pipeline-serving", "layout",
            "The usual arrangement is slicing within a server and the assembly line between "
            "servers.",
            "The usual arrangement is the assembly line within a server and slicing between "
            "servers.",
        ),
        # Round 37's plain-words answers: an open loop, Little's law, chunked prefill.
        (
            "open-vs-closed-loop", "open-loop",
            "In the second kind, questions are fired off on a timetable, averaging 5 per second, "
            "no matter whether earlier questions have been answered.",
            "In the second kind, each person asks again as soon as the last answer arrives.",
        ),
        (
            "open-vs-closed-loop", "littles-law",
            "Questions per second equals people in the system divided by time per answer.",
            "Questions per second equals whatever the server can answer.",
        ),
        (
            # A negation ends where "and their ..." starts a new clause: the first "never" does
            # not deny the second clause's own "never get recorded".
            "open-vs-closed-loop", "coordinated-omission",
            "The trap, called coordinated omission, is that when the server freezes the simulated "
            "people freeze too, so the questions never get asked and their long waits never get "
            "recorded.",
            "The trap, called coordinated omission, is a name for a slow server.",
        ),
        (
            "chunked-prefill-trade-off", "mixed-with-decode",
            "In each round, process one slice together with the next word for everyone already "
            "being answered.",
            "In each round, process one slice and nothing else.",
        ),
        (
            "chunked-prefill-trade-off", "itl-benefit",
            "No round can take very long, so the gaps between words for existing users stay short "
            "and even.",
            "Each round takes as long as its slice needs.",
        ),
        (
            "chunked-prefill-trade-off", "ttft-cost",
            "The long question's own first word arrives a bit later.",
            "The long question's own first word arrives as soon as before.",
        ),
        # Round 38's strong and plain-words answers.
        (
            "batching-almost-free", "weights-read-once",
            "Put 32 sequences into the same step and the weights still come in once.",
            "Put 32 sequences into the same step and the weights come in 32 times.",
        ),
        (
            "fp8-vs-int4", "fp8-compute",
            "The 8-bit floating-point option shrinks both the model's stored numbers and the "
            "intermediate numbers flowing through it.",
            "The 8-bit floating-point option shrinks only the model's stored numbers.",
        ),
        (
            "fp8-vs-int4", "accuracy",
            "Squeezing each number into 16 levels loses more accuracy.",
            "Squeezing each number into fewer bytes loses more accuracy.",
        ),
        (
            "fp8-vs-int4", "hardware",
            "Those fast 8-bit circuits exist only on newer chips; the older A100 lacks them.",
            "Those fast 8-bit circuits exist on every chip, the A100 included.",
        ),
        # Round 39's strong answer (and three earlier strong answers in the same words).
        (
            "prefill-decode-ttft", "prefill-compute-bound",
            "Because thousands of tokens reuse every weight that gets loaded, the GPU is limited "
            "by its FLOPs, and the work grows about linearly with the number of prompt tokens.",
            "Because each output token rereads every weight, the GPU waits on memory, and the "
            "work grows with the number of output tokens.",
        ),
        # Round 40's paraphrases (29-43% at its first run).
        (
            "flashattention-same-flops", "io-bound",
            "It builds a giant table comparing every word with every other word and writes the "
            "whole table out to main memory.",
            "It builds a giant table comparing every word with every other word and keeps it on "
            "the chip.",
        ),
        (
            "flashattention-same-flops", "tiling-sram",
            "It runs chunks of the other words past a few rows, so the giant table never exists in "
            "main memory.",
            "It runs the other words past a few rows, one after another.",
        ),
        (
            "preemption-swap-vs-recompute", "swap",
            "Parking: copy the conversation's notes out to the main computer's memory and copy "
            "them back when space frees up.",
            "Parking: keep the conversation's notes where they are and wait.",
        ),
        (
            "preemption-swap-vs-recompute", "cost-comparison",
            "Parking them takes roughly 5 ms each way over a fast link.",
            "Parking them is quick.",
        ),
        (
            "chunked-prefill-trade-off", "split-prompt",
            "The fix is to set a maximum amount of work per round and read the long message in "
            "slices of that size.",
            "The fix is to set a maximum amount of work per round.",
        ),
        (
            "chunked-prefill-trade-off", "mixed-with-decode",
            "Everyone already mid-reply gets their next word, and the remaining room is filled "
            "with the next slice of the new message.",
            "Everyone already mid-reply gets their next word, and the new message waits.",
        ),
        (
            "chunked-prefill-trade-off", "ttft-cost",
            "The cost: the user with the long message waits a bit longer for their first word.",
            "The cost: the user with the long message waits.",
        ),
        # Round 41's paraphrase of copy-on-write.
        (
            "copy-on-write-sampling", "copy-on-write",
            "The moment one answer needs to write onto a page others still share, the system "
            "photocopies just that page and hands the copy to the writer.",
            "The moment one answer needs to write onto a page others still share, the system "
            "notices.",
        ),
        (
            "copy-on-write-sampling", "saving",
            "For an 8B model the question's notes take about 132 MB rather than 504 MB for four "
            "separate copies.",
            "The question's notes take much less room than four separate copies.",
        ),
        (
            "copy-on-write-sampling", "beam-search",
            "For a search that keeps several candidate answers, a new branch simply points at its "
            "parent's pages, and pages nobody points to are freed.",
            "A new branch simply points at its parent's pages.",
        ),
        # Round 42's paraphrase of the continuous-batching scheduler.
        (
            "continuous-batching-scheduler", "per-step",
            "The newer way re-decides the group after every single word-generating round.",
            "The newer way re-decides the group now and then.",
        ),
        (
            "continuous-batching-scheduler", "static-problem",
            "Requests that need short answers hold their place while a long one finishes, and "
            "newcomers queue.",
            "Requests that need short answers hold their place, and newcomers queue.",
        ),
        # Round 42's strong answer: words between the verb and the count.
        (
            "batch-vs-interactive-cost", "large-batch-throughput",
            "Each step still reads the weights once, but now that one read produces, say, 200 "
            "tokens instead of 8.",
            "Each step still reads the weights once.",
        ),
        # Rounds 41 and 42's strong answers: GPTQ under its own heading, the mechanism in the next
        # sentence with a pronoun; the same mechanism under AWQ's heading is not GPTQ's.
        (
            "outliers-awq-gptq-smoothquant", "gptq",
            "GPTQ: post-training, weight-only. It walks through a layer's weight matrix column by "
            "column, rounds each column, and pushes the error onto the columns not yet quantized, "
            "using the inverse Hessian.",
            "AWQ: post-training, weight-only. It walks through a layer's weight matrix column by "
            "column, rounds each column, and pushes the error onto the columns not yet quantized, "
            "using the inverse Hessian.",
        ),
        # Round 45's strong answer: the tile loaded into on-chip SRAM, in a sentence that names
        # no score matrix and no HBM.
        (
            "flashattention-same-flops", "tiling-sram",
            "A thread block loads a tile of queries into on-chip SRAM/registers, then streams tiles "
            "of K and V through, computing scores, softmax contribution and the partial output on "
            "chip.",
            "A thread block loads a row of queries, then streams K and V through, computing scores, "
            "softmax contribution and the partial output.",
        ),
        # Round 44's strong answer: the ring's overlap said with "simultaneously".
        (
            "long-context-prefill-parallel", "ring-overlap",
            "At each step a rank computes blockwise attention of its queries against the K/V block "
            "it holds, while simultaneously sending that K/V block to the next rank.",
            "At each step a rank computes blockwise attention of its queries against the K/V block "
            "it holds, then sends that K/V block to the next rank.",
        ),
        # Round 48's paraphrases and misconception answer: the points in plain words.
        (
            "moe-load-imbalance", "imbalance",
            "Real users are not uniform: the same few specialists get swamped, and the cards "
            "holding them have far more work than the rest.",
            "Real users write different things, and each card holds a few specialists.",
        ),
        (
            "moe-load-imbalance", "slowest-gpu",
            "Each layer can only move on when every card has finished its share, so the whole "
            "system runs at the speed of the most overloaded card.",
            "Each layer can only move on when every card has finished its share.",
        ),
        (
            "open-vs-closed-loop", "closed-loop",
            "In the first, you have a fixed crew of simulated callers, and each one places a call, "
            "waits until the answer is fully back, then places the next.",
            "In the first, you have a crew of simulated callers who place calls.",
        ),
        (
            "open-vs-closed-loop", "open-loop",
            "In the second, calls are placed according to a timetable, say five per second at "
            "random moments, no matter whether earlier calls have been answered.",
            "In the second, calls are placed by the crew as fast as they can.",
        ),
        (
            "dp-attention-wide-ep", "latent-replicated",
            "MLA's cache is a single shared latent per token, so tensor parallelism would force "
            "every GPU to keep a full copy of it instead of a slice.",
            "MLA's cache is a shared latent per token, so tensor parallelism would have every GPU "
            "keep a slice of it.",
        ),
        # Round 49's paraphrase names the formats by their splits with a hyphen.
        (
            "fp8-e4m3-vs-e5m2", "e4m3",
            "So the 4-3 format is about twice as exact but only reaches 448.",
            "So the other format is about twice as exact but only reaches 448.",
        ),
        (
            "fp8-e4m3-vs-e5m2", "e5m2-gradients",
            "The 5-2 format is for training, where the correction signals used to adjust the model "
            "swing across a huge range of sizes.",
            "The other format is for training, where the correction signals used to adjust the "
            "model swing across a huge range of sizes.",
        ),
        # Round 49's fluent wrong answer: the B200 named, its speed put in wider float math; and
        # a zero-point offset, which is not a scale.
        (
            "weight-only-vs-w8a8-kernels", "blackwell-fp4",
            "The B200 has FP4 tensor cores, so the matmul runs in FP4 at twice the FP8 rate.",
            "The B200 is faster simply because of its higher FP32 throughput.",
        ),
        (
            "fp8-e4m3-vs-e5m2", "scales",
            "FP8 tensors carry scale factors, per channel or per block, because outliers would "
            "otherwise clip.",
            "What comes with an FP8 tensor is a zero-point offset per tensor, like asymmetric INT8.",
        ),
        # Round 50's paraphrases: the cache as "notes", attention's shares as percentages.
        (
            "decode-attention-intensity", "intensity",
            "With 32 lookup heads sharing 8 sets of notes, every byte of notes fetched supports "
            "about 4 calculations.",
            "With 32 lookup heads sharing 8 sets of notes, every byte of notes is fetched again "
            "for each user.",
        ),
        (
            "decode-attention-intensity", "levers",
            "The only remedies make the notes smaller: more sharing between heads, storing the "
            "notes at lower precision such as 8 bits, or only keeping the most recent part of the "
            "conversation.",
            "The only remedy is a chip that does more calculations per second.",
        ),
        (
            "sliding-window-attention-sinks", "softmax-why",
            "When each word decides how much to look at every earlier word, those shares always "
            "add up to exactly 100%.",
            "When each word decides how much to look at every earlier word, it mostly looks at "
            "the recent ones.",
        ),
        (
            "sliding-window-attention-sinks", "first-tokens-sinks",
            "During training the model learns to put that leftover on the first handful of words, "
            "whatever they happen to be.",
            "During training the model learns to put that leftover on the most recent words.",
        ),
    ],
)
def test_points_in_the_writers_plain_words_are_credited(bank, patterns_only, slug, criterion, earns, near_miss):
    question = bank.question(slug)
    assert criterion in met(grade(question=question, answer=earns))
    assert criterion not in met(grade(question=question, answer=near_miss))


def test_without_distances_a_sentence_only_when_it_opens_a_supposition(bank, patterns_only):
    question = bank.question("tensor-vs-pipeline-serving")
    supposed = "Without micro-batches, PP cuts latency by the number of stages."
    assert "pp-cuts-latency" not in flagged(grade(question=question, answer=supposed))
    stated = "PP cuts latency as well as TP does, without any all-reduce."
    assert "pp-cuts-latency" in flagged(grade(question=question, answer=stated))


# Blind rounds 7-17: "than people think" and "naive attention" hid the beliefs of their
# sentences, read as reports of someone else's view.
@pytest.mark.parametrize(
    ("answer", "is_flagged"),
    [
        ("Memory is less of a problem than people think once FlashAttention is used.", True),
        ("People often think memory is less of a problem once FlashAttention is used.", False),
        ("FlashAttention removes the memory problem that naive attention has at 128k tokens.", True),
        ("The naive view is that FlashAttention removes the memory problem of a 128k request.", False),
        ("Naively, FlashAttention removes the memory problem of a 128k request.", False),
    ],
)
def test_a_comparison_with_a_belief_or_a_naive_method_still_states_its_own(
    bank, patterns_only, answer, is_flagged,
):
    question = bank.question("long-context-cost")
    assert ("flash-attention-fixes-it" in flagged(grade(question=question, answer=answer))) is is_flagged


# Blind rounds 7 and 10-17: the definition of expert parallelism was read as the belief that it
# needs no communication, because three of the belief's statements began with that definition.
def test_defining_expert_parallelism_is_not_the_belief_that_it_is_free(bank):
    question = bank.question("expert-parallel-all-to-all")
    definition = grade(
        question=question,
        answer=(
            "Expert parallelism gives each GPU a subset of whole experts instead of slicing every expert "
            "across all GPUs: with 256 routed experts on 32 GPUs, each GPU holds 8 complete experts."
        ),
    )
    assert "ep-is-free" not in flagged(definition)
    belief = grade(
        question=question,
        answer=(
            "Expert parallelism puts whole experts on different GPUs. Its big advantage over tensor "
            "parallelism is that it is communication-free: with tensor parallelism every layer ends in "
            "an all-reduce, but with expert parallelism each expert runs locally and nothing is exchanged."
        ),
    )
    assert "ep-is-free" in flagged(belief)


# Round 45's answers, whole: alone, their sentences did not all earn the points below (the
# partial earned a point by meaning in a sentence the patterns credit with another).
ROUND_45_DP_REASONS = (
    "Data-parallel attention is used because attention is compute-bound and TP would make every "
    "GPU wait on the slowest shard; with DP each GPU runs a full attention replica on the whole "
    "batch, and the results are averaged across GPUs for stability. Wide expert parallelism is "
    "chosen because all-to-all communication is cheaper than all-reduce: the more GPUs you spread "
    "experts across, the less data each one sends, so latency falls as EP grows. Tensor "
    "parallelism everywhere is avoided mainly because MLA's latent is too small to shard evenly "
    "across 8 GPUs."
)
ROUND_45_EXPERTS_FOR_PREFILL = (
    "Add expert parallelism. Long prompts are slow because the MLP experts get overloaded, so "
    "spreading the experts across more GPUs splits the prompt's tokens across devices and cuts "
    "prefill time linearly. The ring part comes from the all-to-all dispatch, which passes tokens "
    "around a ring of GPUs; it's fully overlapped with compute, so the only cost is extra GPU "
    "memory to hold the duplicated attention weights. It also speeds up decode by the same factor."
)
ROUND_45_BATCHING_KV_SHARED = (
    "Batching is nearly free because the KV cache is shared across the batch: sequences in the "
    "same batch reuse each other's keys and values, so the attention computation is done once and "
    "broadcast to all of them. The GPU is compute-bound in decode, and sharing the attention work "
    "cuts the FLOPs per sequence by roughly the batch size. That is also why bigger batches make "
    "each request faster, up to the point where the KV cache becomes too polluted by unrelated "
    "prompts and accuracy degrades."
)
ROUND_45_LOOPS_SWAPPED = (
    "A closed-loop test sends requests at a fixed rate from a schedule and closes each connection "
    "when the response comes back, while an open-loop test keeps connections open and streams many "
    "requests down each one in parallel. Coordinated omission is when several clients coordinate "
    "and accidentally send identical prompts, which get served from the prefix cache and skew the "
    "latency low. For an SLO check I'd use the closed loop, because a fixed-rate test is what "
    "reflects a stable production load, and I'd deduplicate prompts to avoid coordinated omission."
)
ROUND_45_METHODS_MIXED_UP = (
    "GPTQ quantizes both weights and activations to INT4 and uses a lookup table so the GPU can "
    "run 4-bit GEMMs directly. AWQ keeps the 1% largest weights in FP16 and stores the rest in "
    "INT4, a mixed-precision scheme found by magnitude pruning. SmoothQuant applies a Gaussian "
    "smoothing filter to the weight matrix to remove spikes before rounding, and leaves "
    "activations in FP16. So GPTQ is the one that quantizes activations."
)
ROUND_45_FLASH_PARTIAL = (
    "Standard attention is memory-bound, not compute-bound: it materializes the full N x N "
    "attention matrix in HBM, writing it out and reading it back for the softmax and again for "
    "multiplying by V. FlashAttention tiles Q, K and V into blocks that fit in on-chip SRAM and "
    "does the whole computation there in one fused kernel, so the N x N matrix never goes to HBM "
    "and far fewer bytes move."
)

# Round 47's answers, whole: alone, their sentences were not read as below.
ROUND_47_SSE_USAGE_AVOIDED = (
    "SSE chunks are limited by the TCP maximum segment size, so a long token gets split across "
    "several chunks and you'll over-count whenever the model emits long words. The fix is to "
    "re-tokenize the final text with the model's tokenizer, which is the ground truth: the "
    "tokenizer is deterministic, so encoding the output string gives exactly the tokens that "
    "were generated. Server-reported usage counts should be avoided because they include the "
    "prompt tokens and system prompt, which inflates the output count."
)
ROUND_47_ONE_TOKEN_PER_GPU = (
    "Tensor parallelism can't be used for DeepSeek-V3's attention because MLA's heads are not "
    "independent: the latent projection mixes all heads, so splitting them would need an "
    "all-reduce after every head, which is too slow. Data-parallel attention avoids that "
    "communication by running the full model on each GPU. Wide expert parallelism is chosen "
    "because the router only picks one expert per token, so with many GPUs each GPU processes "
    "exactly one token and latency drops to the time of a single expert. It also eliminates the "
    "all-to-all, since each token stays on the GPU that owns its expert."
)
ROUND_47_FP8_OUTLIER_COPY = (
    "Inference uses E5M2, because the \"5\" is the number of mantissa bits, which gives it the "
    "higher precision that weights and activations need; E4M3 has more exponent bits and "
    "therefore more range, which is why training uses it for gradients. What must accompany an "
    "FP8 tensor is a BF16 copy of the outlier rows: FP8 can't represent outliers at all, so "
    "engines keep the largest 1% of values in a separate 16-bit sparse matrix and add it back "
    "after the matmul, similar to LLM.int8()."
)
ROUND_47_QUARTER_OF_THE_BYTES = (
    "Quantizing weights from 16-bit to 4-bit makes the model about four times smaller in bytes, "
    "so every time the GPU loads the weights it has to transfer a quarter of the data. That "
    "means less time moving data per generated token, which is where the speedup comes from."
)

# Round 48's fluent wrong answer, whole: in it, the wrong victim earned the point by meaning.
ROUND_48_LONGEST_PROMPT_VICTIM = (
    "Swapping means the engine swaps the victim's model weights out of HBM to make room for more "
    "KV blocks, then reloads them when the batch shrinks, which is why it needs a large swap "
    "partition on disk. Recomputation instead keeps the weights and recomputes the attention "
    "scores on every step without storing any KV cache for that request, trading compute for "
    "memory permanently. Swapping is preferred on small GPUs and recomputation on large ones. The "
    "scheduler preempts the request with the longest prompt, since it holds the most memory."
)

# Round 49's partial answer, whole: the launches and the graphs, and no fixed shapes.
ROUND_49_CAPTURED_WITHOUT_SIZE = (
    "With --enforce-eager, every kernel in the decode step is launched separately from Python. A "
    "1B model's step is hundreds of tiny kernels, each taking only microseconds on the GPU, so the "
    "launch overhead on the CPU dominates and the GPU sits idle between kernels: 6 ms. Without "
    "the flag, vLLM uses CUDA graphs: the step's kernels are captured once and then replayed with "
    "a single launch, which removes most of that overhead and brings the step down to about 2 ms."
)

# Rounds 48 and 49's partial answers, whole: shared blocks and copy-on-write, and no reference
# count.
ROUND_48_SHARED_WITHOUT_COUNT = (
    "The prompt's KV blocks are computed once and all four samples' block tables point to the "
    "same physical blocks. When a sample is about to write into a block that's still shared, "
    "typically the last partially filled prompt block, the engine copies just that block for it "
    "(copy-on-write); the full blocks stay shared."
)
ROUND_49_SHARED_WITHOUT_COUNT = (
    "The prompt is only prefilled once, and all four samples' block tables point to the same "
    "physical blocks, so the prompt's KV is stored a single time. When a sample needs to write "
    "into a block that is still shared, the engine does copy-on-write: it copies only that block "
    "and gives the sample its own version, while everything else stays shared."
)

# Round 49's fluent wrong answers, whole: alone, their sentences did not earn the points they
# were credited with.
ROUND_49_WEIGHTS_SWAPPED = (
    "Swapping means the engine moves the victim's model weights to CPU memory so that their space "
    "can be used for extra KV blocks, and pages the weights back when the batch shrinks; it costs "
    "a full weight transfer but keeps every request's cache intact. Recomputation instead keeps "
    "the cache but recomputes the attention scores of each token on every step instead of caching "
    "them, trading memory for FLOPs. Recompute is always preferred for long sequences because "
    "decode is compute-bound, and swapping is reserved for short ones. The scheduler picks "
    "whichever request has the longest prompt as the victim since it frees the most memory."
)
ROUND_49_CLOSED_LOOP_FOR_SLO = (
    "An open-loop test is one where the load generator doesn't read the responses: it fires "
    "requests and never checks results, so it only measures throughput. A closed-loop test "
    "validates every response and feeds the measured latency back into the controller, which "
    "adjusts the rate to hold a target P99, like a PID loop. Coordinated omission is when several "
    "client machines accidentally synchronize their clocks and send bursts at the same instant, "
    "which overloads the server and makes the percentiles look worse than real traffic. Because "
    "the closed loop controls for latency directly, it's the right tool for checking an SLO."
)
ROUND_49_EP_SLICES_EXPERTS = (
    "Expert parallelism splits each expert's weight matrix column-wise across GPUs, so every GPU "
    "holds one slice of every expert; that is why it scales better than tensor parallelism, which "
    "splits whole layers across GPUs. Its communication is a single all-gather of the router "
    "logits at the start of each forward pass, after which every GPU knows the routing for all "
    "layers and can compute locally. Because the all-gather happens once per step rather than "
    "once per layer and only carries a few floats per token, it is effectively free even over "
    "Ethernet."
)

# Round 11's fluent wrong answer, whole: swapping writes the weights out to NVMe.
ROUND_11_WEIGHTS_TO_NVME = (
    "The two differ in what gets evicted. Swapping writes the victim's share of the model weights "
    "out to NVMe so the freed HBM can hold more KV blocks, and reloads them when the victim "
    "resumes; recomputation keeps the weights but re-runs only the last layer's attention for the "
    "victim, which is nearly free. Swap's cost is disk I/O at around 7 GB/s, so it only wins on "
    "machines with very fast local NVMe; everywhere else recompute is better. The engine always "
    "preempts the request with the longest context, since that frees the most blocks at once."
)

# Round 50's fluent wrong answers, whole.
ROUND_50_LOOPS_MIXED_UP = (
    "A closed-loop test sends requests at a fixed rate and feeds the measured latency back into "
    "the generator to adjust the rate, like a control loop; an open-loop test has no feedback and "
    "just sends as fast as the connection allows. Coordinated omission happens when several "
    "clients send at exactly the same instant and their requests collide, so some are dropped by "
    "the load balancer and omitted from the results. For an SLO check you want the closed loop, "
    "since the feedback keeps the server right at its latency target, and Little's law then gives "
    "you the SLO directly as throughput divided by concurrency."
)
ROUND_50_FLOPS_CEILING = (
    "The main thing to check is the GPU's peak FLOPs, since tokens per second is just FLOP/s "
    "divided by FLOPs per token. An H100 has about 1,000 TFLOP/s of BF16, and at 2 FLOPs per "
    "parameter per token that caps an 8B model at about 60,000 tokens/s, so 12,000 is plausible at "
    "roughly 20% utilization. If their number is above the FLOP-derived ceiling, it is fake; if it "
    "is below, it is credible and can be compared directly with ours, because the model and batch "
    "size do not change the ceiling. Latency is a separate matter and does not affect throughput "
    "claims."
)

# Round 46's answers, whole: alone, their sentences did not earn the points below.
ROUND_46_DP_FOR_FITTING = (
    "Both halves are about fitting the model. At 671B parameters, DeepSeek-V3 is too big to "
    "sit comfortably on a node, so the experts, which are the bulk of the parameters, are "
    "spread across as many GPUs as possible; with EP320 each GPU only has to hold a sliver "
    "of the expert weights, leaving lots of memory for KV cache. Attention is a much "
    "smaller part of the weights, so it is cheap to replicate it on every GPU and run it "
    "data-parallel, with each GPU handling its own sequences and their MLA cache, which "
    "avoids the all-reduce that tensor parallelism would add on every layer."
)
ROUND_46_FP8_ZERO_POINT = (
    "Inference uses E5M2 because the mantissa is what matters for matmul accuracy and E5M2 "
    "has 5 mantissa bits against E4M3's 4. E4M3 has the larger exponent range, so it is "
    "reserved for the optimizer states during training, where values can be very large. FP8 "
    "tensors also need to carry a zero-point offset alongside them, since FP8 is unsigned "
    "and cannot represent negative numbers; the zero-point shifts the distribution so that "
    "negative activations map into the positive range."
)
ROUND_46_PREEMPTION_MIXED_UP = (
    "Swapping means the engine swaps the model weights of idle layers to CPU memory to free "
    "room for KV blocks; the cost is reloading those layers over NVLink when they are "
    "needed, which stalls every request in the batch. Recomputation means the engine "
    "recomputes attention without a KV cache for the preempted requests, doing the full "
    "quadratic attention at each step instead of caching. Swapping wins on GPUs with small "
    "HBM, recomputation on GPUs with high FLOPs. The scheduler always preempts the "
    "longest-running request, because it holds the most memory."
)

# Round 44's fluent wrong answers, whole: alone, their sentences did not earn the points below.
ROUND_44_LOOPS_SWAPPED = (
    "An open-loop test sends one request at a time and waits for each response, so "
    "there's no feedback from the server; a closed-loop test keeps a fixed request rate "
    "and closes the loop by adjusting concurrency to hit it. Coordinated omission is when "
    "multiple clients coordinate to send at the same instant, creating artificial bursts "
    "that make the tail latencies look worse than production. For SLO checks you want the "
    "closed loop, since it's the one that holds the rate constant, and by Little's law the "
    "latency then equals concurrency times rate."
)
ROUND_44_FP8_EVERYWHERE = (
    "In all four cases the matmul runs in FP8. MXFP4 and GPTQ are storage formats: on load, "
    "the engine converts the weights to FP8 once, because FP8 is the native precision for "
    "both Hopper and Blackwell tensor cores, and llama.cpp on a CPU emulates FP8 with "
    "float32 after unpacking. Because the math precision is the same everywhere, the speed "
    "is the same at batch 1 and at large batch; the only benefit of 4-bit is a smaller "
    "download and lower disk usage."
)


@pytest.mark.parametrize(
    ("slug", "criterion", "opposite", "made"),
    [
        # Round 30's fluent wrong answers, whole: each has a sentence close in meaning to the point
        # that says the opposite in words the criterion's `unless` names, so neither the patterns
        # nor the meaning may credit it there (each earned the point before).
        (
            "dp-attention-wide-ep", "tokens-per-expert",
            "Data-parallel attention is used because MLA's attention is too compute-heavy for "
            "one GPU: each GPU computes attention for a different subset of heads, and the "
            "latent cache is sharded by heads so each GPU stores only its own heads' part. Wide "
            "expert parallelism is chosen to reduce communication: with more GPUs, a token's 8 "
            "experts are more likely to sit on the same GPU as the token, so the all-to-all "
            "shrinks as EP grows. TP everywhere would force all-reduces on the expert outputs, "
            "which is the bigger cost.",
            "Wide expert parallelism is chosen so that each expert sees enough tokens: on 320 GPUs "
            "about 640 tokens reach each expert per step, against about 16 on 8.",
        ),
        (
            "inference-bottleneck", "prefill-compute",
            "The bottleneck is prefill. Prefill is memory-bound because the engine has to write "
            "the entire prompt into the KV cache token by token before anything else can run, "
            "and those writes saturate HBM. Decode, by contrast, is compute-bound: each new "
            "token needs a full softmax over the 128k-entry vocabulary and attention over every "
            "previous token, which is what keeps the tensor cores at 100%. That is also why "
            "batching does not help generation: adding sequences just piles more FLOPs onto an "
            "already saturated compute unit, so per-token latency rises linearly with batch "
            "size. The fix is faster tensor cores for decode and a faster PCIe link for "
            "prefill.",
            "Prefill is compute-bound because the whole prompt goes through each weight matrix at "
            "once.",
        ),
        (
            "moe-memory-vs-active", "kv-from-attention",
            "The 12.9B figure is the size of the shared trunk; the other 33.8B are the experts, "
            "which are stored in compressed form and decompressed on demand. So memory is about "
            "12.9B x 2 bytes = 26 GB plus a small expert archive. Decode speed, however, is "
            "governed by the total, because the router has to evaluate every expert on every "
            "token to decide which ones win, so each step reads all 46.7B parameters and runs "
            "like a 47B dense model. The KV cache is 8 times larger than Mistral 7B's since "
            "each expert keeps its own keys and values.",
            "The KV cache comes from the attention layers alone: 32 layers x 8 KV heads x 128 dims "
            "x K and V x 2 bytes = 128 KiB per token, the same as Mistral 7B.",
        ),
        # Rounds 12 and 14's fluent wrong answers gave tensor parallelism the pipeline's layout.
        (
            "tensor-vs-pipeline-serving", "tp-splits-layers",
            "Tensor parallelism puts different layers on different GPUs: GPU 0 holds the first 20 "
            "layers, GPU 1 the next 20, and so on, and tensors flow from one GPU to the next. "
            "Pipeline parallelism instead splits every matrix across the GPUs and has them process "
            "the pipeline of tokens in lockstep.",
            "Tensor parallelism splits every layer's weight matrices across the GPUs, so each reads "
            "only its share per token and latency drops.",
        ),
        # Round 38's fluent wrong answer named Little's law with the rate upside down.
        (
            "open-vs-closed-loop", "littles-law",
            "Little's law tells you that throughput equals latency divided by concurrency.",
            "Little's law tells you that throughput equals concurrency divided by latency.",
        ),
        # Round 36's partial answer: "each GPU holds 4 complete experts per layer" says where the
        # experts live; the cost point is about the all-to-all exchanges, which it never names.
        (
            "expert-parallel-all-to-all", "cost",
            "Expert parallelism puts whole experts on different GPUs: with 256 experts and 64 GPUs "
            "each GPU holds 4 complete experts per layer.",
            "The dispatch and combine all-to-alls run at every MoE layer, and each one holds up the "
            "step.",
        ),
        # Fifteen partial answers (rounds 5-38): "memory-bound" next to the draft earned the point
        # that the draft model costs memory the batch needed.
        (
            "speculative-when-it-hurts", "wasted-work",
            "At batch 1 the GPU is memory-bound, so the extra compute spent verifying draft tokens "
            "is basically free.",
            "A separate draft model also takes GPU memory that the batch's KV cache needed.",
        ),
        # Round 38's partial answer named --enforce-eager, which the question itself names, and
        # earned the point that graphs are captured per batch shape.
        (
            "cuda-graphs-small-batch", "shapes",
            "With --enforce-eager the step is CPU-bound: the CPU launches hundreds of small kernels "
            "one by one.",
            "Graphs are captured for fixed batch sizes, so each batch is padded up to a captured "
            "size.",
        ),
        # Round 39's fluent wrong answer named real engines and denied the gap to the bound.
        (
            "fastest-possible-generation", "real-efficiency",
            "Real engines usually hit close to 100% of that bound because the copy is "
            "asynchronous.",
            "Real engines reach about 70% of that bound, so treat it as a ceiling.",
        ),
        # Round 40's fluent wrong answer gave every expert its own KV cache.
        (
            "moe-memory-vs-active", "kv-from-attention",
            "So memory per GPU is about 7B x 2 bytes = 14 GB plus the 12.9B gate on GPU 0. The KV "
            "cache is multiplied by eight, since each expert keeps its own copy of the attention "
            "history.",
            "The KV cache comes from the attention layers, which the experts share, so it is "
            "Mistral 7B's 128 KiB per token.",
        ),
        # Round 41's fluent wrong answer: an off-peak discount on GPU-hours is not the batch
        # pricing that providers pass on.
        (
            "batch-vs-interactive-cost", "batch-pricing",
            "Also, electricity is cheaper at night, and cloud providers discount GPU-hours "
            "off-peak, which accounts for most of the difference.",
            "Providers pass it on: batch APIs charge half price for results within 24 hours.",
        ),
        # Naming EAGLE beside Medusa says nothing of how it drafts (rounds 3, 20 and 36 earned
        # the point that way).
        (
            "draft-model-vs-medusa-eagle", "eagle-features",
            "I'd use Medusa for chat, EAGLE for creative writing where the higher temperature "
            "helps, and a draft model for code.",
            "EAGLE drafts at the feature level of the target and is more accurate than Medusa.",
        ),
        # Round 41's partial answer (and rounds 6, 10, 18, 20, 24's): swapping described over PCIe,
        # with nothing said of what the copy costs.
        (
            "preemption-swap-vs-recompute", "cost-comparison",
            "With swapping, the KV blocks of the preempted request are copied out to CPU RAM over "
            "PCIe and then copied back to the GPU when it gets rescheduled.",
            "Swapping copies 2 GB of KV blocks over PCIe at about 25 GB/s, roughly 80 ms each way, "
            "while recomputing is one fast parallel prefill.",
        ),
        # Round 42's fluent wrong answers (in part or whole): the point's words saying something
        # else, which meaning alone or the patterns credited.
        (
            "arithmetic-intensity", "ridge",
            "The ridge point is where the KV cache exceeds the L2 cache.",
            "Compare it with the ridge point, peak FLOP/s over bandwidth, about 295 FLOP/byte on an "
            "H100.",
        ),
        (
            "batching-almost-free", "compute-was-idle",
            "Batching is cheap because the sequences in a batch share a single KV cache: their keys "
            "and values are merged, so attention runs once for the whole batch instead of once per "
            "sequence. The GPU is compute-bound during decode, and the merged attention removes "
            "most of the duplicate FLOPs, which is why adding sequences costs almost nothing.",
            "Decode is memory-bound, so the extra arithmetic uses tensor cores that were sitting "
            "idle.",
        ),
        (
            "batching-almost-free", "weights-read-once",
            "Batching is cheap because the sequences in a batch share a single KV cache: their keys "
            "and values are merged, so attention runs once for the whole batch instead of once per "
            "sequence.",
            "One read of the weights per step is shared by every sequence in the batch.",
        ),
        (
            "moe-batch-erodes-advantage", "fades",
            "Because only 37B parameters are active, you only need to store the active experts on "
            "the GPUs, about 37 GB, and the remaining experts are streamed from CPU memory on "
            "demand. At batch 1 this streaming over PCIe dominates, so decode is slow, maybe 50 ms "
            "per token. At batch 64 the experts are prefetched for the whole batch at once, so the "
            "PCIe cost is amortised and each sequence actually decodes faster than at batch 1. "
            "MoE's advantage therefore grows with batch size, since the expert loads are shared.",
            "As the batch grows, each step reads close to the whole model, so MoE's advantage "
            "fades.",
        ),
        (
            "moe-memory-vs-active", "kv-from-attention",
            "Larger batches make it faster per token because the experts are better load-balanced. "
            "The KV cache is also per expert, so it is eight times larger than a dense 7B model's.",
            "The KV cache comes from the attention layers, which every expert shares, so it is "
            "128 KiB per token, the same as a dense Mistral 7B.",
        ),
        # Round 43's fluent wrong answers.
        (
            "dp-attention-wide-ep", "dp-attention",
            "Data-parallel attention means every GPU computes attention for every sequence, which "
            "removes that communication.",
            "Data-parallel attention means every GPU computes attention for its own sequences.",
        ),
        (
            "dp-attention-wide-ep", "latent-replicated",
            "Tensor parallelism is avoided for attention because MLA's latent projection cannot be "
            "split column-wise, so the all-reduce after attention would have to carry the full "
            "uncompressed keys, which is too much NVLink traffic. Data-parallel attention means "
            "every GPU computes attention for every sequence, which removes that communication.",
            "Tensor parallelism is avoided for attention because MLA's latent is shared by all "
            "heads, so every GPU would hold a full copy of the cache.",
        ),
        (
            "dp-attention-wide-ep", "tokens-per-expert",
            "Data-parallel attention means every GPU computes attention for every sequence, which "
            "removes that communication. Wide expert parallelism is used for fault tolerance: with "
            "hundreds of GPUs each holding replicas of the experts, a failed GPU's experts can be "
            "served from elsewhere, and the router balances load by sending tokens to whichever "
            "replica is least busy.",
            "Wide expert parallelism gives each expert hundreds of tokens per step instead of a "
            "handful, so its matmul is efficient.",
        ),
        (
            "expert-parallel-all-to-all", "all-to-all",
            "The only communication it adds is a single all-reduce at the end of the model to "
            "combine the logits.",
            "Each MoE layer adds an all-to-all to dispatch tokens to their experts and another to "
            "combine the results.",
        ),
        (
            "draft-model-vs-medusa-eagle", "medusa-heads",
            "Medusa replaces the target's attention with multiple parallel attention heads, each "
            "handling a different future position, which is why it needs no verification step and "
            "is not lossless.",
            "Medusa adds several extra heads on the target's last hidden state, each guessing a "
            "token further ahead.",
        ),
        (
            "self-host-or-api", "privacy",
            "Quality and compliance are the same either way since all major APIs offer the same "
            "models you would host.",
            "Compliance can require that prompts never leave your own network.",
        ),
        (
            "batching-almost-free", "weights-read-once",
            "Batching is cheap because the GPU has thousands of CUDA cores and each sequence in the "
            "batch gets its own group of cores with its own copy of the weights in shared memory. "
            "Since the sequences run on separate cores, they don't interfere, and the only "
            "overhead is the kernel launch, which is amortised across the batch. The limit is the "
            "number of streaming multiprocessors: once every SM has a sequence, adding more forces "
            "time-slicing, and that is when batching starts to cost you.",
            "One read of the weights per step is amortised across every sequence in the batch.",
        ),
        # Round 24's fluent wrong answer makes the prefix cache the cure, not the cause ("The fix is
        # to turn on prefix caching, which stores the prompt's KV so that repeated prompts are
        # processed independently").
        (
            "prefix-cache-benchmark-unique-prompts", "cache-hits-inflate",
            "The fix is to turn on prefix caching, which stores the prompt's KV so that repeated "
            "prompts skip the prefill.",
            "Identical prompts hit the prefix cache, so prefill is skipped and TTFT looks far "
            "better than it is.",
        ),
        # Round 44's fluent wrong answers: the sequence split given to tensor parallelism, wide EP
        # said to slice each expert's matmul, every adapter summed and merged into the base, memory
        # sized by the active parameters, the two loops swapped with Little's law upside down, and
        # every chip said to compute in FP8 whatever the batch (the last four need the whole answer:
        # alone, the sentences did not earn the point before).
        (
            "long-context-prefill-parallel", "context-parallel",
            "Tensor parallelism splits the sequence across GPUs, so each GPU handles 1M/64 tokens of "
            "the prompt and the quadratic attention cost falls by 64 squared.",
            "Context parallelism splits the sequence across GPUs, so each GPU handles 1M/64 tokens "
            "of the prompt.",
        ),
        (
            "dp-attention-wide-ep", "tokens-per-expert",
            "Wide expert parallelism is used to reduce latency: with more GPUs, each expert's matmul "
            "is split into smaller pieces that run in parallel, so the per-token expert time drops "
            "roughly linearly with the number of GPUs.",
            "Wide expert parallelism gives each expert enough tokens per step to make its matmul "
            "efficient.",
        ),
        (
            "many-lora-adapters", "shared-base",
            "Sum all 500 BA updates into one combined delta and merge it into the base.",
            "Keep one shared base model and add each request's own low-rank update BA.",
        ),
        (
            "moe-batch-erodes-advantage", "batch1-active",
            "Since only 37B parameters are active, you only need about 37 GB of memory.",
            "At batch 1 a step reads only the 37.6B active parameters.",
        ),
        (
            "open-vs-closed-loop", "closed-loop",
            "An open-loop test sends one request at a time and waits for each response; a "
            "closed-loop test keeps a fixed request rate and closes the loop by adjusting "
            "concurrency to hit it.",
            "A closed-loop test keeps a fixed concurrency: each client waits for its response "
            "before sending the next.",
        ),
        (
            "open-vs-closed-loop", "slo-choice",
            ROUND_44_LOOPS_SWAPPED,
            "To check an SLO, run an open loop at the target arrival rate and time each request "
            "from its scheduled send time.",
        ),
        (
            "open-vs-closed-loop", "littles-law",
            ROUND_44_LOOPS_SWAPPED,
            "By Little's law, concurrency equals arrival rate times latency, so 32 users at 8 s "
            "each offer 4 requests per second.",
        ),
        (
            "weight-only-vs-w8a8-kernels", "blackwell-fp4",
            ROUND_44_FP8_EVERYWHERE,
            "On a B200 the matmul runs in FP4 on the tensor cores, activations included.",
        ),
        (
            "weight-only-vs-w8a8-kernels", "batch-effect",
            ROUND_44_FP8_EVERYWHERE,
            "The gain holds at small batch and fades at large batch, when the step turns "
            "compute-bound.",
        ),
        # Round 45's fluent wrong answers.
        (
            "batching-almost-free", "weights-read-once",
            ROUND_45_BATCHING_KV_SHARED,
            "Batching is nearly free because the weights are read once per step and shared across "
            "the whole batch.",
        ),
        (
            "batching-almost-free", "where-it-stops",
            ROUND_45_BATCHING_KV_SHARED,
            "It stops being free once the batch is large enough to make decode compute-bound, past "
            "the ridge point.",
        ),
        (
            "chunked-prefill-trade-off", "ttft-cost",
            "It improves TTFT, because short prompts no longer wait for each other one at a time, "
            "and it raises GPU utilization.",
            "The long prompt's own TTFT grows a little, since its prefill spans several steps.",
        ),
        (
            "chunked-prefill-trade-off", "itl-benefit",
            "The cost is inter-token latency: while a chunk is being prefilled, decodes are paused, "
            "so ITL gets worse the larger you make the chunk.",
            "Running decodes no longer stall behind a long prefill, so ITL stays smooth.",
        ),
        (
            "dp-attention-wide-ep", "dp-attention",
            ROUND_45_DP_REASONS,
            "With data-parallel attention each GPU runs attention for its own sequences.",
        ),
        (
            "dp-attention-wide-ep", "tokens-per-expert",
            ROUND_45_DP_REASONS,
            "Wide expert parallelism gives each expert enough tokens per step to make its matmul "
            "efficient.",
        ),
        (
            "expert-parallel-all-to-all", "definition",
            "Expert parallelism assigns each GPU a subset of the model's transformer layers, with "
            "the MoE layers placed on the GPUs that have the most memory.",
            "Expert parallelism gives each GPU a subset of whole experts instead of slicing every "
            "expert across all GPUs: with 256 routed experts on 32 GPUs, each GPU holds 8 complete "
            "experts.",
        ),
        (
            "long-context-prefill-parallel", "context-parallel",
            ROUND_45_EXPERTS_FOR_PREFILL,
            "Context parallelism splits the sequence across GPUs, so each GPU handles 1M/64 tokens "
            "of the prompt.",
        ),
        (
            "long-context-prefill-parallel", "ring-overlap",
            ROUND_45_EXPERTS_FOR_PREFILL,
            "Each GPU passes its KV block to the next GPU in the ring while it computes attention "
            "on the block it holds, so the transfer overlaps the compute.",
        ),
        (
            "open-vs-closed-loop", "open-loop",
            ROUND_45_LOOPS_SWAPPED,
            "An open-loop test sends requests at a fixed arrival rate, whether or not earlier ones "
            "have finished.",
        ),
        (
            "open-vs-closed-loop", "coordinated-omission",
            ROUND_45_LOOPS_SWAPPED,
            "Coordinated omission: a closed-loop client waits for each slow response before sending "
            "the next request, so the queueing delay a real user would see is never measured and "
            "the tail looks better than it is.",
        ),
        (
            "outliers-awq-gptq-smoothquant", "awq",
            ROUND_45_METHODS_MIXED_UP,
            "AWQ finds the 1% of salient weight channels by activation magnitude and scales them "
            "up before quantizing.",
        ),
        # Round 45's partial answer: the online softmax read by meaning in the sentence that says
        # standard attention is memory-bound.
        (
            "flashattention-same-flops", "online-softmax-exact",
            ROUND_45_FLASH_PARTIAL,
            "It keeps a running max and running sum for each row and rescales the partial "
            "output, so the softmax is exact.",
        ),
        # Round 46's fluent wrong answers: the point's words, said the wrong way round.
        (
            "arithmetic-intensity", "batching-raises-it",
            "Longer sequences push intensity up toward the ridge, whereas batching only adds "
            "scheduling overhead and lowers it.",
            "Batching reuses each weight across the batch and raises the intensity roughly in "
            "proportion to the batch size.",
        ),
        (
            "chunked-prefill-trade-off", "itl-benefit",
            "The cost is on decode: while chunks are processed, the engine pauses all running "
            "decodes, which makes inter-token latency spikier for other users.",
            "Because each step carries at most one chunk beside the decodes, running streams never "
            "stall behind a long prefill, so inter-token latency stays smooth.",
        ),
        (
            "chunked-prefill-trade-off", "split-prompt",
            "The engine splits the prompt into chunks and prefills them in parallel on different "
            "streams, so a long prompt finishes faster.",
            "The engine splits a long prompt into chunks of at most 512 tokens and prefills one "
            "chunk per step.",
        ),
        (
            "dp-attention-wide-ep", "tokens-per-expert",
            "It also lowers the number of tokens each expert processes, which keeps expert matmuls "
            "fast.",
            "With 320 GPUs each expert gathers about 640 tokens per step instead of 16, enough to "
            "make its matmul compute-bound.",
        ),
        (
            "dp-attention-wide-ep", "latent-replicated",
            ROUND_46_DP_FOR_FITTING,
            "MLA's latent is shared by all the heads, so tensor parallelism would replicate the "
            "cache on every GPU instead of splitting it.",
        ),
        (
            "long-context-cost", "prefill-quadratic",
            "The extra cost shows up in decode instead, where attention is quadratic per step, so "
            "each output token at 128k costs 1,000 times more than at 4k.",
            "Prefill attention grows quadratically with the prompt, so a 128k prompt takes several "
            "seconds to prefill.",
        ),
        (
            "long-context-cost", "decode-slower",
            "The extra cost shows up in decode instead, where attention is quadratic per step, so "
            "each output token at 128k costs 1,000 times more than at 4k.",
            "Each decode step reads the whole 16 GiB cache, so TPOT roughly doubles at batch 1.",
        ),
        (
            "fp8-e4m3-vs-e5m2", "scales",
            ROUND_46_FP8_ZERO_POINT,
            "FP8 tensors carry scale factors, per tensor or per block, because outliers would "
            "otherwise clip.",
        ),
        # The weights read fast, for the wrong reason: the compute-bound belief voids the point
        # (its writers label it missed in 18 of the 24 answers of rounds 3-46 that hold the belief).
        (
            "small-model-quant-gain", "weights-not-dominant",
            "A 1B model has so few weights that the GPU reads them almost instantly, so the tensor "
            "cores become the limit even at batch 1.",
            "A 1B model's 2 GB of weights are read in well under a millisecond, so the weight read is "
            "no longer most of the step time.",
        ),
        # Blind rounds 10-46's fluent wrong answers named the draft model beside memory or the KV
        # cache in another story (31 points credited): a draft model costs memory only where it
        # is said to take it.
        (
            "speculative-when-it-hurts", "wasted-work",
            "At 64 concurrent requests the draft model's KV cache is shared across all requests, so "
            "drafts from one user leak into another user's verification.",
            "The draft model's weights and KV cache take GPU memory away from the batch, so fewer "
            "sequences fit.",
        ),
        (
            "preemption-swap-vs-recompute", "swap",
            "Swapping means the engine swaps the model weights of idle layers to CPU memory to free "
            "room for KV blocks.",
            "Swapping copies the victim's KV blocks to CPU memory over PCIe and back later.",
        ),
        (
            "preemption-swap-vs-recompute", "victim",
            ROUND_46_PREEMPTION_MIXED_UP,
            "The scheduler preempts the most recently arrived request, which stalls mid-stream.",
        ),
        # Round 47's fluent wrong answers name the point's words and say the opposite.
        (
            "sse-chunks-vs-tokens", "use-server-usage",
            ROUND_47_SSE_USAGE_AVOIDED,
            "Ask the server for usage with stream_options include_usage and read completion_tokens.",
        ),
        (
            "sse-chunks-vs-tokens", "retokenize-off",
            "The fix is to re-tokenize the final text with the model's tokenizer, which is the ground "
            "truth: the tokenizer is deterministic.",
            "Re-tokenizing the final text can also differ from what was generated, since the same "
            "string can be tokenized differently.",
        ),
        (
            "quantization-tradeoff", "less-memory",
            "The weights themselves are untouched; their footprint on the GPU is exactly the same, "
            "which is why quantized checkpoints are the same size as the originals.",
            "Quantized weights take a quarter of the GPU memory, which leaves room for KV cache.",
        ),
        (
            "prefill-decode-disaggregation", "when-not",
            "The cost is an activation transfer at the split point, which is small, so there is "
            "essentially no downside and it beats chunked prefill at any scale.",
            "At small scale chunked prefill is enough, and the extra moving parts of two pools are "
            "not worth it.",
        ),
        (
            "dp-attention-wide-ep", "tokens-per-expert",
            ROUND_47_ONE_TOKEN_PER_GPU,
            "Spread over 320 GPUs, each expert sees enough tokens per step for its matmul to be "
            "compute-bound.",
        ),
        (
            "long-context-prefill-parallel", "ring-overlap",
            "Go from TP=8 to TP=64 across 8 nodes. The only cost is more GPUs, since communication "
            "is overlapped automatically by NCCL.",
            "Each GPU passes its KV blocks to the next around a ring while it computes attention on "
            "the block it holds, so the transfer overlaps compute.",
        ),
        (
            "fp8-e4m3-vs-e5m2", "scales",
            ROUND_47_FP8_OUTLIER_COPY,
            "FP8 tensors carry scale factors, per channel or per block, because outliers would "
            "otherwise clip.",
        ),
        # Round 47's partial answer: a method that "does something with outliers" is named, not
        # explained (and "SmoothQuant" is not the "smoothing" it does).
        (
            "outliers-awq-gptq-smoothquant", "smoothquant",
            "SmoothQuant does something with outliers too.",
            "SmoothQuant migrates the activation outliers into the weights with a per-channel "
            "smoothing scale, so both can be INT8.",
        ),
        # Round 48's partial answer: attention mass landing on the sinks says where it goes, not
        # why softmax sends it there.
        (
            "sliding-window-attention-sinks", "softmax-why",
            "Once you pass 4,096 tokens the window starts evicting the first tokens, and those "
            "first tokens act as attention sinks: a lot of attention mass in many heads lands on "
            "them.",
            "Softmax weights must sum to one, so heads with nothing to attend to dump their "
            "attention on the first tokens.",
        ),
        # Round 48's fluent wrong answer: the longest prompt is the wrong victim.
        (
            "preemption-swap-vs-recompute", "victim",
            ROUND_48_LONGEST_PROMPT_VICTIM,
            "The scheduler preempts the request with the most recent arrival, the lowest-priority "
            "one, so the oldest ones finish.",
        ),
        # Round 49's fluent wrong answers: power and clocks offered as intensity, the model's
        # weights swapped, the closed loop chosen for an SLO, each expert sliced, a kernel-speed
        # story of paging, a bigger footprint, and a warm-up that fills the cache on purpose.
        (
            "arithmetic-intensity", "definition",
            "Arithmetic intensity measures how many tokens per second a GPU produces per watt, "
            "i.e. how intensely the arithmetic units are being used relative to power draw.",
            "Arithmetic intensity is FLOPs performed per byte moved from memory.",
        ),
        (
            "arithmetic-intensity", "ridge",
            "Larger batches keep the clocks boosted, and the intensity climbs back toward the "
            "ridge of the power curve.",
            "Compare it with the ridge point, peak FLOP/s over bandwidth, about 295 FLOP/byte on "
            "an H100.",
        ),
        # Rounds 10-48's partial answers (round 21's, whole): batch-1 decode's weight "read once
        # and used for a single multiply-add" is the opposite of reuse across a batch.
        (
            "arithmetic-intensity", "batching-raises-it",
            "Arithmetic intensity is FLOPs per byte of memory traffic. Decode at batch 1 is low "
            "because it's a matrix-vector multiply: every BF16 weight (2 bytes) is read once and "
            "used for a single multiply-add (2 FLOPs), so you end up at about 1 FLOP per byte.",
            "Batching B sequences reuses each weight read B times, so intensity grows roughly "
            "with B.",
        ),
        (
            "arithmetic-intensity", "batching-raises-it",
            "Larger batches keep the clocks boosted, so the intensity climbs.",
            "Batching B sequences reuses each weight read B times, so intensity grows roughly "
            "with B.",
        ),
        (
            "preemption-swap-vs-recompute", "swap",
            "Swapping means the engine moves the victim's model weights to CPU memory so that "
            "their space can be used for extra KV blocks.",
            "Swapping copies the victim's KV blocks to CPU memory over PCIe and brings them back "
            "later.",
        ),
        (
            "preemption-swap-vs-recompute", "victim",
            ROUND_49_WEIGHTS_SWAPPED,
            "The scheduler preempts the request with the most recent arrival, the lowest-priority "
            "one, so the oldest ones finish.",
        ),
        (
            "open-vs-closed-loop", "slo-choice",
            ROUND_49_CLOSED_LOOP_FOR_SLO,
            "For an SLO check, use an open loop at the target arrival rate and read the P99.",
        ),
        # Rounds 13-48's misconception answers chose the closed loop for the SLO check in a
        # sentence that names the open loop only to set it aside.
        (
            "open-vs-closed-loop", "slo-choice",
            "So for an SLO check I'd use a closed loop with more users than expected peak; it's "
            "easier to configure and reproduce than an open-loop schedule.",
            "For an SLO check, use an open loop at the target arrival rate and read the P99.",
        ),
        (
            "open-vs-closed-loop", "coordinated-omission",
            ROUND_49_CLOSED_LOOP_FOR_SLO,
            "Coordinated omission is the closed loop hiding queueing: a slow response delays the "
            "next send, so the waiting is never measured.",
        ),
        (
            "expert-parallel-all-to-all", "definition",
            ROUND_49_EP_SLICES_EXPERTS,
            "Expert parallelism places whole experts on different GPUs rather than a slice of "
            "every expert on each.",
        ),
        (
            "paged-attention-fragmentation", "throughput",
            "The page summaries are kept in a page table in SRAM so the kernel never touches HBM, "
            "which is where its 2-4x speedup over FlashAttention comes from.",
            "Because little memory is wasted, 2-4x more sequences fit in the batch.",
        ),
        (
            "paged-attention-fragmentation", "blocks-on-demand",
            "The page summaries are kept in a page table in SRAM so the kernel never touches HBM, "
            "which is where its 2-4x speedup over FlashAttention comes from.",
            "The cache is split into fixed-size blocks allocated on demand as the sequence grows.",
        ),
        (
            "quantization-tradeoff", "less-memory",
            "The quantized model keeps the same weights in memory but adds codebook lookup tables "
            "next to them, so the memory footprint actually grows slightly.",
            "Quantization shrinks the weights, so the model takes less GPU memory.",
        ),
        # Rounds 25 and 49's partial answers: AWQ "protects the important weights" and says
        # nothing of how it finds them.
        (
            "outliers-awq-gptq-smoothquant", "awq",
            "AWQ is also weight-only; it protects the important weights during quantization.",
            "AWQ protects the salient weight channels, the ones that meet large activations, by "
            "scaling them up before rounding.",
        ),
        # Rounds 4-49's misconception answers: a beam that copies its parent's blocks at the fork
        # is the copy-everything belief said of beams.
        (
            "copy-on-write-sampling", "beam-search",
            "Beam search works the same way, with each new beam copying its parent's blocks when "
            "it forks.",
            "Beam search forks beams onto the parent's shared blocks, bumping their reference "
            "counts, and frees them when a beam is dropped.",
        ),
        # Rounds 28-34 and 49's partial answers: graphs captured once and replayed, with no size,
        # shape, padding or batch in the sentence, are the graphs point, not the fixed shapes
        # (the criterion reader took eight of them, two misconception answers' too, for shapes).
        (
            "cuda-graphs-small-batch", "shapes",
            ROUND_49_CAPTURED_WITHOUT_SIZE,
            "Graphs need fixed shapes, so vLLM captures a set of batch sizes and pads each real "
            "batch up to the nearest captured size.",
        ),
        # Rounds 3-49's partial answers: block tables that point at the same blocks, or blocks
        # that stay shared, with no count in the sentence, are the shared blocks, not their
        # reference counts (the criterion reader alone took 25 of them for the count).
        (
            "copy-on-write-sampling", "refcount",
            ROUND_48_SHARED_WITHOUT_COUNT,
            "The four samples' block tables all point at the same physical blocks for the prompt, "
            "each with a reference count of 4.",
        ),
        (
            "copy-on-write-sampling", "refcount",
            ROUND_49_SHARED_WITHOUT_COUNT,
            "Each shared block keeps a reference count of how many sequences use it, and is freed "
            "when it drops to zero.",
        ),
        (
            "benchmark-warmup", "prefix-cache-trap",
            "The warm-up also fills the KV cache with the benchmark prompts so that the measured "
            "requests reflect the cached steady state, which is what production looks like.",
            "If the warm-up sends the same prompts you then measure, prefix caching makes their "
            "TTFT artificially low.",
        ),
        # Round 50's fluent wrong and partial answers.
        (
            "dp-attention-wide-ep", "dp-attention",
            "Data-parallel attention means each GPU runs a different layer of attention, like a "
            "pipeline, so activations flow from GPU to GPU.",
            "Data-parallel attention means each GPU runs attention for its own sequences and keeps "
            "only their latents.",
        ),
        (
            "dp-attention-wide-ep", "tokens-per-expert",
            "Wide EP is used because spreading the experts gives more total FLOPs per token; the "
            "number of tokens per expert does not matter, since each expert processes its tokens "
            "one at a time.",
            "Wide EP gives each expert enough tokens per step, about 640 on 320 GPUs, for its "
            "matmul to be compute-bound.",
        ),
        (
            "open-vs-closed-loop", "closed-loop", ROUND_50_LOOPS_MIXED_UP,
            "In a closed loop a fixed number of clients each wait for the response before sending "
            "the next request.",
        ),
        (
            "open-vs-closed-loop", "coordinated-omission", ROUND_50_LOOPS_MIXED_UP,
            "Coordinated omission: when the server stalls, the closed-loop client stops sending, so "
            "the requests that would have queued go unmeasured and the percentiles look too good.",
        ),
        (
            "open-vs-closed-loop", "littles-law", ROUND_50_LOOPS_MIXED_UP,
            "By Little's law, 32 users each taking 8 seconds offer only 4 requests per second.",
        ),
        (
            "reading-a-benchmark", "workload", ROUND_50_FLOPS_CEILING,
            "Ask which model and precision they ran, and the input and output lengths.",
        ),
        (
            "reading-a-benchmark", "load-and-latency", ROUND_50_FLOPS_CEILING,
            "Ask at what concurrency it was measured and what TTFT and TPOT came with it.",
        ),
        (
            "outliers-awq-gptq-smoothquant", "awq",
            'AWQ is also weight-only; it\'s "activation-aware", it uses activations to decide '
            "which weights are important.",
            "AWQ uses activations to decide which weights are important and scales those channels "
            "up before rounding.",
        ),
        (
            "fp8-e4m3-vs-e5m2", "scales",
            "Inference uses E5M2, because activations have massive outliers and E5M2 has the wider "
            "range; it's also why scale factors aren't needed at inference.",
            "FP8 tensors carry scale factors, per tensor or per block, because outliers would "
            "otherwise clip.",
        ),
        # Rounds 5-50's misconception and fluent wrong answers: blocks paged out to CPU RAM and
        # back "on demand", or a block table that picks the pages relevant to each query, are not
        # PagedAttention's blocks (30 decisions of rounds 5-50 agree now, none away).
        (
            "paged-attention-fragmentation", "blocks-on-demand",
            "It pages the cache out to CPU RAM in blocks and pages blocks back into the GPU on "
            "demand when attention needs them, just like an OS swapping pages to disk.",
            "The cache is split into fixed-size blocks allocated on demand as the sequence grows, "
            "and a block table maps each sequence's logical blocks to physical blocks in GPU "
            "memory.",
        ),
        (
            "paged-attention-fragmentation", "blocks-on-demand",
            "The block table records which pages are relevant to each query.",
            "A block table records where each of the sequence's blocks lives in GPU memory.",
        ),
        # Rounds 11-36's fluent wrong answers swap the model weights out, each in its own verb,
        # which is not swapping the victim's KV blocks (four of them now score under the bar).
        (
            "preemption-swap-vs-recompute", "swap",
            "When KV blocks run out, the engine frees memory by swapping some layers' weights to CPU "
            "memory and streaming them back each step.",
            "Swapping copies the victim's KV blocks to CPU memory over PCIe and copies them back "
            "when it resumes.",
        ),
        (
            "preemption-swap-vs-recompute", "swap", ROUND_11_WEIGHTS_TO_NVME,
            "Swapping copies the victim's KV blocks to CPU memory over PCIe and copies them back "
            "when it resumes.",
        ),
    ],
)
def test_a_sentence_in_a_points_words_that_does_not_make_it_earns_nothing(
    bank, slug, criterion, opposite, made,
):
    question = bank.question(slug)
    assert criterion not in met(grade(question=question, answer=opposite))
    assert criterion in met(grade(question=question, answer=made))


@pytest.mark.parametrize(
    ("slug", "criterion", "answer", "earned"),
    [
        # Round 32's fluent wrong answer gives prefill the memory bound; read by meaning, the
        # sentence was prefill's point, and with it masked "This is why long prompts are slow"
        # came next closest. An answer that swaps the bounds makes the point nowhere by meaning.
        (
            "inference-bottleneck", "prefill-compute",
            "The bottleneck is prefill. Reading the prompt is the sequential part, because "
            "attention has to walk through the prompt token by token to build the KV cache, so it "
            "is limited by memory bandwidth. Decode is the cheap part: once the KV cache exists, "
            "each new token is just a lookup into it, which is compute-bound and runs at full "
            "tensor-core speed. This is why long prompts are slow and long outputs are nearly "
            "free. Batching does not change anything here, since each request is processed "
            "independently anyway, and the KV cache is small enough that it never really limits "
            "concurrency on a modern GPU.",
            False,
        ),
        # Round 22's plain words: the contrast puts "waiting on memory" on the other side, in
        # words the concepts do not know ("writing answers"); it is not the swap.
        (
            "prefill-decode-disaggregation", "independent-config",
            "It's splitting the work into two stations. One group of machines only reads the "
            "incoming question and builds the model's working notes about it; those notes are then "
            "shipped over a fast network link to a second group that only writes the answer word by "
            "word. The reason is that the two jobs clash when they share a machine: a long incoming "
            "question hogs the chip and freezes everyone's word-by-word output for a moment, while "
            "a crowd of ongoing answers delays new questions from getting started. The jobs also "
            "have different tastes: reading a question is heavy arithmetic and goes faster when "
            "spread over several chips; writing answers is mostly waiting on memory and benefits "
            "from serving many people at once with lots of memory for notes. Separate stations let "
            "you size and tune each for its own target, first-response delay on one side, smooth "
            "word rate on the other, and shift machines between them as traffic changes. The price: "
            "the notes for a 4,000-word prompt on a 70-billion-number model are about 1.2 GiB, "
            "around 25 ms over a 400 Gb/s link; plus the plumbing of a traffic dispatcher and two "
            "groups that can get out of balance. For a small deployment, just cutting long "
            "questions into chunks and interleaving them gets you most of the benefit.",
            True,
        ),
    ],
)
def test_an_answer_that_gives_prefill_the_memory_bound_makes_its_point_nowhere_by_meaning(
    bank, slug, criterion, answer, earned,
):
    result = grade(question=bank.question(slug), answer=answer)
    assert (criterion in met(result)) is earned


def test_a_rotation_said_to_be_exact_is_not_the_belief_that_it_changes_the_model(bank):
    """Round 32's strong answer: "Rounding is still approximate, but the rotation itself is
    exact." names the rotation and approximation, and says the rotation changes nothing."""
    question = bank.question("rotation-quantization")
    exact = grade(
        question=question,
        answer="Rounding is still approximate, but the rotation itself is exact.",
    )
    changed = grade(
        question=question,
        answer="The rotation itself is an approximation that alters what the model computes.",
    )
    assert "rotation-changes-model" not in flagged(exact)
    assert "rotation-changes-model" in flagged(changed)


def test_why_memory_holds_every_expert_does_not_stand_for_what_a_batch_reads(bank):
    """Round 30's strong answer said first that all experts have to be loaded (memory), then that a
    batch reads every expert each step: the criterion stage read the memory sentence for the batch
    point and withdrew it, until that sentence stopped counting for it."""
    answer = (
        "Memory follows the total, speed (at small batch) follows the active count.\n\n"
        "Memory: the router decides per token, at runtime, which 2 of the 8 experts to use, so all "
        "experts have to be loaded. 46.7B parameters in BF16 is about 93 GB, which doesn't fit on "
        "an 80 GB H100.\n\n"
        "Decode speed: at batch 1, a step reads the shared attention weights plus just the 2 "
        "chosen experts in each layer, around 12.9B parameters or ~26 GB.\n\n"
        "But that benefit erodes as the batch grows. Different tokens pick different experts; "
        "with roughly uniform routing each expert is skipped by a given token with probability "
        "3/4, so for 16 tokens the chance an expert is untouched is 0.75^16, about 1%. Already at "
        "modest batches essentially every expert is read every step, so bytes per step approach "
        "the full 93 GB."
    )
    assert {"memory-total", "active-decode", "batch-erodes"} <= met(
        grade(question=bank.question("moe-memory-vs-active"), answer=answer),
    )


def test_choosing_the_smallest_card_that_fits_is_not_the_belief_that_the_cache_is_negligible(bank):
    """Round 30's partial answer sized the cache right, then picked the smallest card that fits:
    read by meaning as "pick a GPU the weights fit on", that flagged the belief and voided the
    cache point it had just made."""
    result = grade(
        question=bank.question("right-size-gpu"),
        answer="The weights are about 16 GB in BF16 (8B params x 2 bytes). The KV cache is 128 KiB "
        "per token, so 20 users x 8k tokens is about 20 GiB. So I need roughly 40 GB including "
        "overhead: an L4 with 24 GB is too small, and an L40S with 48 GB or any 80 GB card works. "
        "I'd go with the L40S since it's the smallest card that fits.",
    )
    assert flagged(result) == set()
    assert {"weights-memory", "kv-memory"} <= met(result)


@pytest.mark.parametrize(
    ("slug", "misconception", "unrelated", "stated"),
    [
        # Round 30's misconception answers: an opening sentence read by meaning as a belief it
        # never names (each belief now `requires` the words it is about), beside the belief the
        # answer does state.
        (
            "batching-almost-free", "batching-cuts-latency",
            "Batching is almost free because GPUs are built for parallelism.",
            "Batching is almost free, and each request in the batch finishes faster too.",
        ),
        (
            # Round 20's plain words, the right direction: "slower" is not a word of this belief.
            "batching-almost-free", "batching-cuts-latency",
            "Each user makes every round a little longer, so an individual user's words come "
            "slightly slower.",
            "Batching lets every user's words come out sooner than they would alone.",
        ),
        (
            "when-self-host", "idle-gpu-is-free",
            "Pretty much whenever you have the engineering capacity, because self-hosting is simply "
            "the cheaper option.",
            "When traffic is spiky, self-host: your own GPU costs nothing while it sits idle.",
        ),
        # Rounds 31 and 32's strong answers: the right contrast, read by meaning as the belief.
        (
            "semantic-cache-risks", "prefix-cache-stores-answers",
            "Prefix caching is a different thing entirely: inside the inference engine, it reuses "
            "the KV cache for an exactly matching token prefix (e.g. a shared system prompt), "
            "saving prefill compute, and then the model generates a fresh answer. The output is "
            "the same as without the cache; only TTFT and cost improve. A semantic cache returns "
            "a stored answer to a different question.",
            "A prefix cache also stores the answer for a repeated prompt and returns it.",
        ),
        (
            "batch-vs-interactive-cost", "batching-speeds-each-request",
            "A chat product has per-request latency SLOs: time to first token and time per output "
            "token. Bigger batches make every sequence's step slower, so you cap the batch size to "
            "keep TPOT in budget.",
            "Big batches make each request finish faster, which is why the overnight job is cheaper.",
        ),
        # Round 33's strong answer opened on the break-even condition, read by meaning as the
        # belief that self-hosting always wins; the belief now requires a word that drops the
        # condition ("always", "at any volume", "as soon as", "low and bursty" ...).
        (
            "self-host-or-api", "always-cheaper",
            "Self-hosting beats the API when the fixed cost of GPUs is spread over enough tokens. A "
            "GPU bills the same whether it is generating or idle, while an API bills per token.",
            "Self-hosting beats the API basically whenever you can run the model yourself, because "
            "API prices include the provider's margin and you skip it.",
        ),
        # Round 34's strong answer said what does cut latency, tensor parallelism, and that
        # sentence was read by meaning as the pipeline belief; the belief now requires the
        # pipeline, its stages or its layers.
        (
            "tensor-vs-pipeline-serving", "pp-cuts-latency",
            "Each GPU reads only 1/8 of the weights per step, so the bandwidth floor drops to "
            "roughly 5 ms per token. TP is what cuts per-token latency.",
            "Pipeline parallelism cuts per-token latency because each GPU does less work.",
        ),
        # Round 35's strong answer: "big" sized the matrices, and the sentence gave decode its
        # intensity of about 1 FLOP/byte.
        (
            "arithmetic-intensity", "decode-compute-bound",
            "In batch-1 decode, the big matmuls are really matrix-vector products: each weight is "
            "used for one multiply-add (2 FLOPs), so intensity is ~1 FLOP/byte.",
            "Decode has a big arithmetic intensity, so it is limited by compute.",
        ),
        # Round 38's strong answer: a sentence about the time per output token was read by
        # meaning as the belief that TTFT ignores the prompt; the belief now requires the first
        # token, TTFT or prefill.
        (
            "prefill-decode-ttft", "ttft-independent-of-prompt",
            "So time per output token creeps up slightly with prompt length but nowhere near "
            "proportionally.",
            "Time to first token does not depend on how long the prompt is.",
        ),
        # Eight partial answers (rounds 17-38): a definition of pipeline parallelism was read as
        # the belief that it cuts latency; the belief now requires one sentence to name the
        # pipeline and a speed.
        (
            "tensor-vs-pipeline-serving", "pp-cuts-latency",
            "Tensor parallelism splits each weight matrix across GPUs, so every GPU reads less per "
            "token and latency drops. Pipeline parallelism puts different layers on different "
            "GPUs, which is simpler.",
            "Pipeline parallelism cuts per-token latency because each GPU does less work.",
        ),
        # Rounds 31, 34 and 38's partial answers: the definition of chunked prefill was read as
        # the belief that it saves KV memory; the belief now requires memory or what is stored.
        (
            "chunked-prefill-trade-off", "chunking-saves-kv",
            "Chunked prefill splits a long prompt's prefill into smaller chunks under a fixed token "
            "budget, e.g. 512 tokens per step, instead of one huge forward pass.",
            "Chunked prefill reduces the KV cache memory a prompt needs.",
        ),
        # Rounds 31, 36 and 38's partial answers: fewer bytes to move was read as the belief
        # that quantization removes parameters; it now requires a count or a removal.
        (
            "weight-only-quant-speedup", "smaller-means-fewer-parameters",
            "Quantizing the weights to 4 bits means there are about 4x fewer bytes of weights to "
            "move from memory to the compute units for every token.",
            "Quantization prunes the model down to a smaller number of weights.",
        ),
        # Rounds 21 and 39's strong answers: the mechanism was read as the belief that each step
        # gets faster (and 14 fluent wrong answers were flagged with it); it now requires a
        # speed, a cost or a latency.
        (
            "continuous-batching-throughput", "faster-steps",
            "Continuous (iteration-level) batching makes the scheduling decision at every decode "
            "step instead of once per batch.",
            "Continuous batching makes each decoding step faster.",
        ),
        # Round 22's strong answer: "several times more tokens per second" is throughput, neither
        # a faster step nor several devices.
        (
            "continuous-batching-throughput", "faster-steps",
            "Keep the batch full and you get several times more tokens per second.",
            "Continuous batching makes each decoding step faster.",
        ),
        (
            "continuous-batching-throughput", "more-hardware",
            "Keep the batch full and you get several times more tokens per second.",
            "Continuous batching spreads the batch across more GPUs.",
        ),
        # Round 39's paraphrase: "every word of the question" is the prompt read at once, not a
        # decode step.
        (
            "prefill-decode-ttft", "prompt-reprocessed-each-step",
            "First the model reads the whole question you gave it, and it can do that all at once: "
            "every word of the question goes through the network side by side.",
            "Every new token has to run the whole prompt through the model again.",
        ),
        # Round 47's partial answer: a quarter of the bytes to move was read as the belief that
        # the arithmetic shrinks; it now requires a word for arithmetic.
        (
            "weight-only-quant-speedup", "fewer-flops",
            ROUND_47_QUARTER_OF_THE_BYTES,
            "Low-bit weights make the multiplications cheaper, which is why it is faster.",
        ),
        # Round 47's paraphrase: "the layers exist" was read as the belief that the heads need
        # no training; it now requires training or a model the heads would work on.
        (
            "draft-model-vs-medusa-eagle", "heads-need-no-training",
            "Medusa if your serving software supports it and the layers exist.",
            "You can add Medusa heads to any model and switch them on with no training at all.",
        ),
        # Round 48's strong answer: a prefix cache said to be "a different thing" names nothing it
        # would hand back; the belief now requires an answer, output or similarity named.
        (
            "semantic-cache-risks", "prefix-cache-stores-answers",
            "Prefix caching is a different thing altogether.",
            "Prefix caching also stores and returns answers.",
        ),
    ],
)
def test_a_belief_is_not_read_in_a_sentence_that_names_nothing_it_is_about(
    bank, slug, misconception, unrelated, stated,
):
    question = bank.question(slug)
    assert misconception not in flagged(grade(question=question, answer=unrelated))
    assert misconception in flagged(grade(question=question, answer=stated))


def test_a_sentence_that_denies_the_belief_in_its_words_is_not_read_as_stating_it(bank):
    # Round 35's strong answer: the pattern layer reads "is not compute-bound" as a denial; by
    # meaning alone (decision model 0.14, belief reader 1.75) it read as the belief.
    question = bank.question("small-model-quant-gain")
    strong = (
        "Because in a 1B model the weight read is no longer what the step is spending its time "
        "on. In BF16 the weights are ~2 GB; an H100 at ~3 TB/s streams that in roughly 0.7 ms. "
        "4-bit cuts that to ~0.2 ms, but the step was never just that read. There is a fixed "
        "amount of work per step that does not depend on bytes per weight: hundreds of kernel "
        "launches, the sampler, the scheduler and other Python on the CPU side, detokenization."
        " For a small model those can be as large as or larger than the weight read.\n\nOther "
        "things also stay the same: the KV-cache reads (at a few thousand tokens of context and"
        " a moderate batch, the cache can be as big as the whole 2 GB of weights), activations,"
        " and on top of that the 4-bit kernels have to dequantize, which adds some work and may"
        " be less tuned than the BF16 path.\n\nSo it is Amdahl's law: quantization only shrinks "
        "the weight-read fraction of the step. If that was 30% of the step, even making it free"
        " saves 30%. Note that the small model is not \"compute-bound\"; at batch B the matmuls "
        "still do about B FLOPs per weight byte, same as a big model. The fixes are CUDA graphs"
        " to kill launch overhead, larger batches, or accepting that 4-bit pays off on bigger "
        "models."
    )
    assert 'Note that the small model is not "compute-bound"' in strong
    assert "small-model-compute-bound" not in flagged(grade(question=question, answer=strong))
    stated = strong.replace('is not "compute-bound"', "is compute-bound")
    assert "small-model-compute-bound" in flagged(grade(question=question, answer=stated))
    # Two negations that cancel deny nothing as a whole: round 34's fluent wrong answer keeps its
    # flag for splitting MLA's cache by heads.
    wrong = (
        "Tensor parallelism is avoided for attention because MLA's 128 heads cannot be divided "
        "evenly across 8 GPUs, and the softmax cannot be split. Data-parallel attention means "
        "each request's attention is split token-wise across all GPUs so that every GPU sees the "
        "whole batch. Wide EP is used because experts fire so rarely that giving each one its own "
        "GPU reduces the number of all-to-all messages to zero, which is why it beats TP."
    )
    dp_attention = bank.question("dp-attention-wide-ep")
    assert "tp-splits-cache" in flagged(grade(question=dp_attention, answer=wrong))


def test_a_latent_every_gpu_must_copy_is_not_the_belief_that_tensor_parallelism_splits_it(bank):
    # Round 48's misconception answer opened on the right account of the latent; "instead of a
    # slice" was read (belief reader 2.1) as the belief that tensor parallelism slices it.
    question = bank.question("dp-attention-wide-ep")
    right = (
        "For attention, DeepSeek's MLA cache is a single shared latent per token, so tensor "
        "parallelism would force every GPU to keep a full copy of it instead of a slice; "
        "data-parallel attention avoids that by giving each GPU its own sequences and their caches."
    )
    result = grade(question=question, answer=right)
    assert "tp-splits-cache" not in flagged(result)
    assert "latent-replicated" in met(result)


@pytest.mark.parametrize(
    ("slug", "misconception", "right", "stated"),
    [
        # Round 38's strong answers: each opened with a right sentence in a belief's words.
        (
            "decode-attention-intensity", "batching-helps-attention",
            "Batching helps the weight matmuls because the weights are a shared operand: one read "
            "of W serves all B sequences, so FLOPs per byte grow with B.",
            "Batching raises the arithmetic intensity of decode attention as well.",
        ),
        (
            # "nothing promises X" denies X.
            "sse-chunks-vs-tokens", "chunk-is-token",
            "Because nothing promises one SSE chunk per token; the mapping is loose in both "
            "directions.",
            "Each SSE chunk carries exactly one token, so counting chunks counts tokens.",
        ),
        (
            # Round 41's strong answer: the free speedup confined to batch 1 is the point.
            "speculative-when-it-hurts", "always-faster",
            "At batch 1 decode is bandwidth-bound and the tensor cores are mostly idle, so "
            "verifying k draft tokens in one target pass costs roughly the same time as generating "
            "one token: free speedup.",
            "Speculative decoding with a draft model is a free speedup at any batch size.",
        ),
        (
            # Round 48's strong answer: the weights "common to every sequence" are the shared
            # operand that attention lacks.
            "decode-attention-intensity", "batching-helps-attention",
            "The weight matmuls get better with batch because the weights are common to every "
            "sequence: load a weight matrix once and multiply it by B activation vectors, and "
            "FLOPs per byte scale with B.",
            "Batching raises the arithmetic intensity of attention, so at batch 64 attention "
            "becomes compute-bound.",
        ),
    ],
)
def test_a_right_sentence_in_a_beliefs_words_is_not_the_belief(
    bank, patterns_only, slug, misconception, right, stated,
):
    question = bank.question(slug)
    assert misconception not in flagged(grade(question=question, answer=right))
    assert misconception in flagged(grade(question=question, answer=stated))

