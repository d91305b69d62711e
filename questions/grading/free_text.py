"""The deterministic rubric grader for free-text answers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from questions.bank import Criterion, FollowUp, Misconception, Question
from questions.grading import belief_reader
from questions.grading.matching import (
    _alternatives,
    _matching_sentences,
    alternatives_held,
    denies,
    used_concepts,
)
from questions.grading.results import (
    KEYWORD_LIST_CAP,
    MISCONCEPTION_CAP,
    SEVERAL_MISCONCEPTIONS_CAP,
    CriterionResult,
    GradeResult,
    MisconceptionHit,
    total,
)
from questions.grading.semantic import (
    SemanticEvidence,
    SemanticModel,
    Unit,
    logit,
    negated,
    semantic_evidence,
    statement_of,
)
from questions.grading.semantic import model as semantic_model
from questions.grading.text import (
    AnswerAnalysis,
    analyse,
    evidence_span,
    is_term_list,
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


@dataclass(frozen=True)
class RubricEvidence:
    """What the pattern and semantic layers found in an answer, before any decision to cap."""

    analysis: AnswerAnalysis
    # Per misconception: sentence index -> the alternative of its `match` that holds there.
    misconception_sentences: tuple[dict[int, list[str]], ...]
    # Per criterion: the sentences its patterns credit, untainted by a misconception found.
    criterion_sentences: tuple[list[int], ...]
    # Per criterion: for an answer-wide criterion, the sentences that together name it.
    answer_wide: tuple[list[int] | None, ...]
    tainted: dict[int, set[str]]
    meaning: SemanticEvidence


def rubric_evidence(*, question: Question | FollowUp, answer: str) -> RubricEvidence:
    analysis = analyse(
        text=answer, concepts=question.concepts, concept_ids=used_concepts(question),
        contrasts=question.contrasts,
    )
    misconception_sentences = tuple(
        _matching_sentences(
            analysis, misconception.match, misconception.unless, misconception=True,
        )
        if misconception.match else {}
        for misconception in question.misconceptions
    )
    tainted: dict[int, set[str]] = {}
    for found in misconception_sentences:
        for index, alternative in found.items():
            tainted.setdefault(index, set()).update(alternative)
    # A sentence that states a misconception earns nothing for the same concepts
    # ("decode is compute-bound because it reads all the weights").
    criterion_sentences = tuple(
        sorted(
            _matching_sentences(
                analysis, criterion.match, criterion.unless, misconception=False,
                tainted=tainted,
            ),
        )
        for criterion in question.rubric
    )
    answer_wide = tuple(
        _answer_wide(analysis, criterion.match) if criterion.scope == "answer" else None
        for criterion in question.rubric
    )
    meaning = semantic_evidence(
        question=question, analysis=analysis,
        criterion_patterns=[
            bool(sentences) or spread is not None
            for sentences, spread in zip(criterion_sentences, answer_wide, strict=True)
        ],
        misconception_patterns=[bool(found) for found in misconception_sentences],
    )
    return RubricEvidence(
        analysis=analysis, misconception_sentences=misconception_sentences,
        criterion_sentences=criterion_sentences, answer_wide=answer_wide, tainted=tainted,
        meaning=meaning,
    )


# The criterion stage reads the semantic layer's closest unit and at most this many of the
# sentences the patterns credit.
STAGE_PATTERN_SENTENCES = 2
# Decision-model log-odds are clipped here: beyond it they say nothing more to the stage.
STAGE_LOGIT_CLIP = 12.0


def stage_units(*, evidence: RubricEvidence, position: int) -> list[str]:
    """The learner units the criterion stage reads for one criterion: the semantic layer's
    closest unit, then the first sentences the patterns credit it in."""
    candidate = evidence.meaning.criterion_candidates[position]
    units: list[str] = [candidate.match.unit.text] if candidate.match is not None else []
    for index in evidence.criterion_sentences[position][:STAGE_PATTERN_SENTENCES]:
        text = evidence.analysis.sentences[index].sentence.text
        if text not in units:
            units.append(text)
    return units


@dataclass(frozen=True)
class _StageRead:
    """What the criterion stage reads of one criterion, bar the criterion reader's log-odds."""

    units: tuple[str, ...]  # the semantic layer's closest unit, then the first pattern sentences
    decision_logit: float
    pattern: bool


def _stage_reads(
    *, evidence: RubricEvidence, question: Question | FollowUp, decider: SemanticModel,
) -> dict[int, _StageRead]:
    """Per criterion the stage decides, by position. An answer-wide criterion is about naming
    things, and with nothing to read there is nothing to decide: the stage leaves both alone."""
    reads: dict[int, _StageRead] = {}
    for position, (criterion, candidate, sentences) in enumerate(
        zip(
            question.rubric, evidence.meaning.criterion_candidates, evidence.criterion_sentences,
            strict=True,
        ),
    ):
        units = stage_units(evidence=evidence, position=position)
        if criterion.scope == "answer" or not units:
            continue
        decision = decider.criterion.probability(candidate.features) if candidate.match else 0.0
        reads[position] = _StageRead(
            units=tuple(units),
            decision_logit=max(-STAGE_LOGIT_CLIP, min(STAGE_LOGIT_CLIP, logit(decision))),
            pattern=bool(sentences),
        )
    return reads


def _stage_features(read: _StageRead, reader_logit: float) -> dict[str, float]:
    return {"decision_logit": read.decision_logit, "reader_logit": reader_logit, "pattern": float(read.pattern)}


def _reader_logits(
    question: Question | FollowUp, reads: Mapping[int, _StageRead],
) -> dict[int, float]:
    """Per criterion asked, the criterion reader's highest log-odds over its units (one batch)."""
    pairs: list[tuple[str, str]] = []
    owners: list[int] = []
    for position, read in reads.items():
        statement = statement_of(question.rubric[position].earns)
        pairs.extend((statement, text) for text in read.units)
        owners.extend([position] * len(read.units))
    best: dict[int, float] = {}
    if pairs:
        for position, value in zip(owners, belief_reader.criterion_reader().logits(pairs), strict=True):
            best[position] = max(best.get(position, value), value)
    return best


def criterion_stage_inputs(
    *, evidence: RubricEvidence, question: Question | FollowUp, decider: SemanticModel,
) -> list[dict[str, float] | None]:
    """Per criterion, everything the criterion stage reads (the decision model's log-odds for
    the closest unit, the criterion reader's highest log-odds over that unit and the pattern
    layer's sentences, whether the patterns credit it), or None where it does not decide.
    Fitting reads these; grading asks the reader only where it can change the verdict."""
    reads = _stage_reads(evidence=evidence, question=question, decider=decider)
    readings = _reader_logits(question, reads)
    return [
        _stage_features(reads[i], readings[i]) if i in reads else None
        for i in range(len(question.rubric))
    ]


def criterion_verdicts(
    *, evidence: RubricEvidence, question: Question | FollowUp,
) -> tuple[bool | None, ...]:
    """Per criterion, the criterion stage's verdict, or None where it has none (no stage fitted,
    a criterion it does not decide, or the reader asked and the stage unsure either way: then
    the patterns or the decision model credit). False withdraws their credit: where the stage
    is sure without the reader, or the reader clearly says no and the stage is all but sure
    (CriterionStage.verdict)."""
    decider = semantic_model()
    verdicts: list[bool | None] = [None] * len(question.rubric)
    if decider is None or decider.criterion_stage is None:
        return tuple(verdicts)
    stage = decider.criterion_stage
    asked: dict[int, _StageRead] = {}
    for position, read in _stage_reads(evidence=evidence, question=question, decider=decider).items():
        verdicts[position] = stage.decides(decision_logit=read.decision_logit, pattern=read.pattern)
        if verdicts[position] is None:
            asked[position] = read
    for position, reader_logit in _reader_logits(question, asked).items():
        verdicts[position] = stage.verdict(_stage_features(asked[position], reader_logit))
    return tuple(verdicts)


def _credited_by_patterns(
    evidence: RubricEvidence, question: Question | FollowUp, first: int, last: int,
    criterion_ids: Sequence[str],
) -> bool:
    """Whether the pattern layer credits one of these criteria in sentences first..last,
    counting the sentence a pronoun leans on ("Decode is the token-by-token phase. It is
    memory-bound.") as part of the credit."""
    analysis = evidence.analysis
    unit_span = set(range(first, last + 1))
    for criterion, sentences in zip(question.rubric, evidence.criterion_sentences, strict=True):
        if criterion.id not in criterion_ids:
            continue
        for index in sentences:
            start, end = evidence_span(analysis=analysis, index=index)
            covered = {
                i for i, s in enumerate(analysis.sentences)
                if s.sentence.start >= start and s.sentence.end <= end
            }
            if unit_span & (covered | {index}):
                return True
    return False


def _read_otherwise_in_words(
    evidence: RubricEvidence, question: Question | FollowUp, misconception: Misconception,
    unit: Unit,
) -> bool:
    """Whether the patterns read a unit that the meaning layers take as stating a belief as
    saying something else; the explicit reading then wins over the bi-encoder's (the caller
    keeps the belief reader's sure reading, which weighed the same words in order: "large
    batches make every request finish faster" names batching's efficiency and states the
    belief).

    Two readings count. The unit earns a point the belief contradicts ("GPUs have far more
    compute than bandwidth" is not "compute is the limit"). Or it is one sentence that names
    the belief's concepts and denies one ('Note that the small model is not "compute-bound"',
    round 35's strong answer): only a single sentence, since a pair may state the belief in the
    one and deny something else in the other, and only one negated as a whole, since negations
    that cancel ("cannot be divided ... cannot be split", round 34) or that the polarity cues do
    not count ("instead of matching on embeddings, ... it returns the completion it generated
    last time", round 26) deny nothing as a whole."""
    if _credited_by_patterns(evidence, question, unit.first, unit.last, misconception.voids):
        return True
    analysis = evidence.analysis
    return (
        unit.first == unit.last
        and negated(analysis.sentences[unit.first].sentence.text)
        and denies(analysis=analysis, index=unit.first, match=misconception.match)
    )


def grade_rubric(
    *, question: Question | FollowUp, answer: str, apply_keyword_cap: bool = True,
) -> tuple[tuple[CriterionResult, ...], tuple[MisconceptionHit, ...], str | None]:
    """Per-criterion results, misconceptions found and the keyword-list reason (if capped)."""
    evidence = rubric_evidence(question=question, answer=answer)
    analysis, meaning, tainted = evidence.analysis, evidence.meaning, evidence.tainted
    hits: list[MisconceptionHit] = []
    # Sentences that state a misconception by meaning earn no criterion by meaning.
    wrong_sentences: set[int] = set()
    voided: dict[str, str] = {}
    for misconception, found, semantic in zip(
        question.misconceptions, evidence.misconception_sentences, meaning.misconceptions,
        strict=True,
    ):
        # `unless` guards the patterns ("compute-bound" near "batching"); the semantic match
        # already weighed the whole sentence against the right statements.
        if (
            semantic is not None and not semantic.read_as_stated and not found
            and _read_otherwise_in_words(evidence, question, misconception, semantic.unit)
        ):
            semantic = None
        if semantic is not None:
            wrong_sentences.update(range(semantic.unit.first, semantic.unit.last + 1))
        if not found and semantic is None:
            continue
        wrong_sentences.update(found)
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
    verdicts = criterion_verdicts(evidence=evidence, question=question)
    for position, (criterion, semantic, sentences, spread) in enumerate(
        zip(
            question.rubric, meaning.criteria, evidence.criterion_sentences,
            evidence.answer_wide, strict=True,
        ),
    ):
        if verdicts[position] is False:
            # The stage read the sentences and says they do not make the point.
            sentences, spread, semantic = [], None, None
        elif verdicts[position] and not sentences and semantic is None:
            # Said in other words that only the criterion reader recognised.
            semantic = meaning.criterion_candidates[position].match
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
        elif spread is not None:
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
            near = meaning.near_misses[position] if meaning.near_misses else None
            closest = None
            if near is not None and not wrong_sentences & set(range(near.first, near.last + 1)):
                # Quoted as read, never a sentence that states a misconception.
                start = analysis.sentences[near.first].sentence.start
                closest = analysis.text[start:analysis.sentences[near.last].sentence.end]
            results.append(
                CriterionResult(
                    id=criterion.id, met=False, points=criterion.points, awarded=0,
                    feedback=criterion.feedback_missed, closest=closest,
                ),
            )
    capped = keyword_list_reason(answer) if apply_keyword_cap else None
    if capped is not None:
        results = [
            _unless_explained(analysis, result, criterion)
            for result, criterion in zip(results, question.rubric, strict=True)
        ]
        # Nor does a list state a belief: "prefill, decode, compute-bound, memory-bound" names
        # both bounds without pairing either with a phase. A sentence of the answer that
        # explains can still state one.
        hits = [h for h in hits if h.evidence is None or not is_term_list(h.evidence)]
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
    beliefs = len({hit.id for hit in misconceptions})
    if capped is None and beliefs >= 2:
        cap = SEVERAL_MISCONCEPTIONS_CAP
        capped = (
            f"The answer rests on {beliefs} misconceptions (see below), so it is held to "
            f"{SEVERAL_MISCONCEPTIONS_CAP:.0%} whatever else it gets right."
        )
    elif capped is None and misconceptions:
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
