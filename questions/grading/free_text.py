"""The deterministic rubric grader for free-text answers."""

from __future__ import annotations

from collections.abc import Sequence

from questions.bank import Criterion, FollowUp, Question
from questions.grading.matching import (
    _alternatives,
    _matching_sentences,
    alternatives_held,
    used_concepts,
)
from questions.grading.results import (
    KEYWORD_LIST_CAP,
    MISCONCEPTION_CAP,
    CriterionResult,
    GradeResult,
    MisconceptionHit,
    total,
)
from questions.grading.semantic import semantic_evidence
from questions.grading.text import (
    AnswerAnalysis,
    analyse,
    evidence_span,
    keyword_list_reason,
)


def _answer_wide(analysis: AnswerAnalysis, match: Sequence[str]) -> list[int] | None:
    """Sentences that together hold one alternative anywhere in the answer, or None.

    Answer-wide criteria are about naming things, so a sentence that also states a
    misconception still counts as naming them.
    """
    for alternative in _alternatives(match):
        used: list[int] = []
        for concept_id in alternative:
            where = next(
                (
                    index for index, sentence in enumerate(analysis.sentences)
                    if sentence.present(concept_id)
                ),
                None,
            )
            if where is None:
                break
            used.append(where)
        else:
            return sorted(set(used))
    return None


def grade_rubric(
    *, question: Question | FollowUp, answer: str, apply_keyword_cap: bool = True,
) -> tuple[tuple[CriterionResult, ...], tuple[MisconceptionHit, ...], str | None]:
    """Per-criterion results, misconceptions found and the keyword-list reason (if capped)."""
    analysis = analyse(
        text=answer, concepts=question.concepts, concept_ids=used_concepts(question),
        contrasts=question.contrasts,
    )

    meaning = semantic_evidence(question=question, analysis=analysis)
    hits: list[MisconceptionHit] = []
    tainted: dict[int, set[str]] = {}
    # Sentences that state a misconception by meaning earn no criterion by meaning.
    wrong_sentences: set[int] = set()
    voided: dict[str, str] = {}
    for misconception, semantic in zip(
        question.misconceptions, meaning.misconceptions, strict=True,
    ):
        found = (
            _matching_sentences(
                analysis, misconception.match, misconception.unless, misconception=True,
            )
            if misconception.match else {}
        )
        # `unless` guards the patterns ("compute-bound" near "batching"); the semantic match
        # already weighed the whole sentence against the right statements.
        if semantic is not None:
            wrong_sentences.update(range(semantic.unit.first, semantic.unit.last + 1))
        if not found and semantic is None:
            continue
        for index, alternative in found.items():
            tainted.setdefault(index, set()).update(alternative)
            wrong_sentences.add(index)
        if found:
            start, end = evidence_span(analysis=analysis, index=min(found))
        else:
            assert semantic is not None
            start = analysis.sentences[semantic.unit.first].sentence.start
            end = analysis.sentences[semantic.unit.last].sentence.end
        hits.append(
            MisconceptionHit(
                id=misconception.id, correction=misconception.correction,
                evidence=analysis.text[start:end], evidence_span=(start, end),
            ),
        )
        for criterion_id in misconception.voids:
            voided.setdefault(criterion_id, misconception.id)

    results: list[CriterionResult] = []
    for position, (criterion, semantic) in enumerate(
        zip(question.rubric, meaning.criteria, strict=True),
    ):
        # A sentence that states a misconception earns nothing for the same concepts
        # ("decode is compute-bound because it reads all the weights").
        sentences = sorted(
            _matching_sentences(
                analysis, criterion.match, criterion.unless, misconception=False,
                tainted=tainted,
            ),
        )
        span: tuple[int, int] | None = None
        if sentences:
            # The quoted evidence is the sentence that says the point, not merely the first
            # one a pattern holds in ("TTFT doubles as prefill builds the prompt's KV cache"
            # is not why TPOT barely moves): the one where most of the criterion's
            # alternatives hold, then the one closest in meaning to its references.
            earning = max(
                sentences,
                key=lambda index: (
                    alternatives_held(analysis, index, criterion.match, tainted=tainted),
                    meaning.sentence_similarity(criterion=position, index=index),
                    -index,
                ),
            )
            span = evidence_span(analysis=analysis, index=earning)
        elif criterion.scope == "answer":
            spread = _answer_wide(analysis, criterion.match)
            if spread is not None:
                span = (
                    evidence_span(analysis=analysis, index=spread[0])[0],
                    analysis.sentences[spread[-1]].sentence.end,
                )
        if span is None and semantic is not None and not (
            wrong_sentences & set(range(semantic.unit.first, semantic.unit.last + 1))
        ):
            # Said in other words: the learner's own sentence(s) are the evidence.
            span = (
                analysis.sentences[semantic.unit.first].sentence.start,
                analysis.sentences[semantic.unit.last].sentence.end,
            )
        if criterion.id in voided:
            results.append(
                CriterionResult(
                    id=criterion.id, met=False, points=criterion.points, awarded=0,
                    feedback=(
                        f"{criterion.feedback_missed} (Not credited: the answer states the "
                        f"misconception '{voided[criterion.id]}', which contradicts this point.)"
                    ),
                ),
            )
        elif span is not None:
            start, end = span
            results.append(
                CriterionResult(
                    id=criterion.id, met=True, points=criterion.points,
                    awarded=criterion.points, feedback=criterion.feedback_met,
                    evidence=analysis.text[start:end], evidence_span=(start, end),
                ),
            )
        else:
            results.append(
                CriterionResult(
                    id=criterion.id, met=False, points=criterion.points, awarded=0,
                    feedback=criterion.feedback_missed,
                ),
            )
    capped = keyword_list_reason(answer) if apply_keyword_cap else None
    if capped is not None:
        results = [
            _unless_explained(analysis, result, criterion)
            for result, criterion in zip(results, question.rubric, strict=True)
        ]
    return tuple(results), tuple(hits), capped


def _unless_explained(
    analysis: AnswerAnalysis, result: CriterionResult, criterion: Criterion,
) -> CriterionResult:
    """In an answer that is a list of terms, a point is only earned by a sentence that
    explains: naming "ridge point" between commas does not show what it is. Answer-wide
    points are about naming things ("names both phases"), so naming still earns them."""
    if not result.met or result.evidence_span is None or criterion.scope == "answer":
        return result
    start, end = result.evidence_span
    inside = [
        s for s in analysis.sentences if start <= s.sentence.start and s.sentence.end <= end
    ]
    if any(s.claims for s in inside):
        return result
    return CriterionResult(
        id=result.id, met=False, points=result.points, awarded=0,
        feedback=f"{criterion.feedback_missed} (Named in a list, not explained.)",
    )


def grade_free_text(*, question: Question | FollowUp, answer: str) -> GradeResult:
    criteria, misconceptions, capped = grade_rubric(question=question, answer=answer)
    cap = KEYWORD_LIST_CAP
    if capped is None and misconceptions:
        cap = MISCONCEPTION_CAP
        capped = (
            "The answer rests on a misconception (see below), so it is held to "
            f"{MISCONCEPTION_CAP:.0%} whatever else it gets right."
        )
    score, max_score = total(criteria=criteria, capped_reason=capped, cap=cap)
    return GradeResult(
        score=score, max_score=max_score, criteria=criteria, misconceptions=misconceptions,
        capped_reason=capped, rubric_version=question.rubric_version, cap=cap,
    )
