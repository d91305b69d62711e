"""The four question sets that go with the 2026 lessons grade as intended.

Every model answer (question and follow-up) earns full marks with no misconception; a list of the
right keywords, without explanation, scores at most the keyword-list cap; each set's tell-tale
wrong beliefs are flagged; numeric answers parse in the units people write.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from questions.bank import load_bank
from questions.grading import KEYWORD_LIST_CAP, grade

CONTENT_DIR = Path(__file__).resolve().parents[2] / "questions" / "content"
LESSONS_DIR = Path(__file__).resolve().parents[2] / "courses" / "content" / "lessons"
NEW_SETS = {
    "attention-long-context": "attention-kernels-long-context",
    "moe-expert-parallelism": "moe-and-expert-parallelism",
    "low-precision": "low-precision-fp8-fp4",
    "serving-features": "serving-features",
}

# One keyword list per free-text question: the right terms, no sentences that explain them.
KEYWORD_LISTS = {
    "flashattention-same-flops": "tiling, SRAM, online softmax, HBM, exact, N x N",
    "decode-attention-intensity": "memory-bound, own cache, GQA, FP8 KV, 1 FLOP/byte, ridge",
    "sliding-window-attention-sinks": "attention sinks, softmax, first tokens, StreamingLLM, window",
    "long-context-prefill-parallel": "context parallelism, ring attention, overlap, load balance",
    "moe-batch-erodes-advantage": "total params, active params, union of experts, bandwidth, 222",
    "expert-parallel-all-to-all": "expert parallelism, all-to-all, dispatch, combine, InfiniBand",
    "moe-load-imbalance": "load imbalance, hot experts, redundant experts, EPLB, slowest GPU",
    "dp-attention-wide-ep": "DP attention, MLA latent, replicated, wide EP, tokens per expert",
    "fp8-e4m3-vs-e5m2": "E4M3, E5M2, mantissa, range, gradients, per-channel scales",
    "outliers-awq-gptq-smoothquant": "GPTQ Hessian, AWQ salient channels, SmoothQuant migration, W8A8",
    "weight-only-vs-w8a8-kernels": "weight-only, W4A16, Marlin, FP4 tensor cores, Blackwell, Q8, VNNI",
    "rotation-quantization": "Hadamard, rotation, outliers spread, W4A4, QuaRot",
    "constrained-decoding-json": "logit mask, FSM, grammar, XGrammar, CPU overlap",
    "many-lora-adapters": "shared base, SGMV, Punica, S-LoRA, host memory, paging",
    "cuda-graphs-small-batch": "kernel launches, CPU-bound, CUDA graphs, capture sizes, padding",
    "batch-invariance-temperature-zero": "batch composition, split-K, reduction order, batch-invariant",
}

# Answers that state a wrong belief, and the misconception each must trigger.
MISCONCEPTIONS = [
    (
        "flashattention-same-flops",
        "FlashAttention is faster because it does fewer FLOPs than standard attention.",
        "fewer-flops",
    ),
    (
        "moe-batch-erodes-advantage",
        "It only needs memory for the active parameters, so it fits like a 37B model.",
        "memory-by-active",
    ),
    (
        "weight-only-vs-w8a8-kernels",
        "On the H100 the MXFP4 model computes in FP4 on its tensor cores, so it is fast everywhere.",
        "fp4-everywhere",
    ),
    (
        "batch-invariance-temperature-zero",
        "GPUs are non-deterministic by nature, so the answers differ.",
        "gpu-random",
    ),
    (
        "sliding-window-attention-sinks",
        "The window was too small; use a bigger window.",
        "window-too-small",
    ),
]


@pytest.fixture(scope="module")
def bank():
    return load_bank(content_dir=CONTENT_DIR)


def _new_questions(bank):
    return [q for s in bank.sets if s.slug in NEW_SETS for q in s.questions]


def test_the_four_sets_hold_at_least_twenty_questions_linked_to_their_lessons(bank):
    sets = {s.slug: s for s in bank.sets}
    assert set(NEW_SETS) <= set(sets)
    questions = _new_questions(bank)
    assert len(questions) >= 20
    for set_slug, lesson in NEW_SETS.items():
        for question in sets[set_slug].questions:
            assert question.lesson.split("#")[0] == lesson, question.slug
            assert question.type in ("free_text", "numeric", "multiple_choice")
            assert question.follow_ups, question.slug
            if question.type == "free_text":
                assert question.misconceptions, question.slug


def test_every_new_free_text_question_has_a_keyword_list_check(bank):
    free_text = {q.slug for q in _new_questions(bank) if q.type == "free_text"}
    assert free_text == set(KEYWORD_LISTS)


@pytest.mark.parametrize(("slug", "answer"), sorted(KEYWORD_LISTS.items()))
def test_a_keyword_list_scores_low(bank, slug, answer):
    result = grade(question=bank.question(slug), answer=answer)
    assert result.fraction <= KEYWORD_LIST_CAP + 1e-9, (slug, result.fraction)
    assert result.capped_reason is not None or result.fraction < KEYWORD_LIST_CAP


@pytest.mark.parametrize(("slug", "answer", "misconception"), MISCONCEPTIONS)
def test_wrong_beliefs_are_flagged(bank, slug, answer, misconception):
    result = grade(question=bank.question(slug), answer=answer)
    assert misconception in {m.id for m in result.misconceptions}


@pytest.mark.parametrize(
    ("slug", "answer", "full"),
    [
        ("mla-cache-per-token", "70,272 bytes", True),
        ("mla-cache-per-token", "about 68.6 KiB", True),
        ("mla-cache-per-token", "5,856 KiB", False),
        ("moe-experts-touched-batch", "about 222 experts", True),
        ("moe-experts-touched-batch", "512", False),
        ("nvfp4-bits-per-weight", "42.7 GB", True),
        ("nvfp4-bits-per-weight", "35.3 GB", False),
        ("kv-offload-reload-time", "86 ms", True),
        ("kv-offload-reload-time", "0.086 s", True),
        ("kv-offload-reload-time", "687 ms", False),
    ],
)
def test_numeric_answers_in_the_units_people_write(bank, slug, answer, full):
    question = bank.question(slug)
    result = grade(question=question, answer=answer)
    value_points = question.numeric.points
    awarded = result.score
    if full:
        assert awarded >= value_points, (answer, result.to_dict())
    else:
        assert awarded < value_points, (answer, result.to_dict())


def test_new_questions_link_to_real_headings(bank):
    import re

    from markdown.extensions.toc import slugify

    for question in _new_questions(bank):
        lesson, _, anchor = question.lesson.partition("#")
        text = (LESSONS_DIR / f"{lesson}.md").read_text(encoding="utf-8")
        anchors = {slugify(h, "-") for h in re.findall(r"^#{2,3} (.+)$", text, flags=re.M)}
        assert anchor in anchors, (question.slug, anchor)
