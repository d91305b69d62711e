"""Where a rubric `match` holds in an answer: shared by the pattern and semantic layers."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from questions.bank import FollowUp, Question
from questions.grading.text import AnswerAnalysis, any_present, holds


def _alternatives(match: Sequence[str]) -> list[list[str]]:
    return [[part.strip() for part in alternative.split("+")] for alternative in match]


def used_concepts(question: Question | FollowUp) -> set[str]:
    used: set[str] = set()
    for item in [*question.rubric, *question.misconceptions]:
        for alternative in _alternatives(item.match):
            used.update(alternative)
        used.update(item.unless)
        used.update(getattr(item, "requires", ()))
    for group in question.contrasts:
        if used & set(group):
            used.update(group)
    return used


def _matching_sentences(
    analysis: AnswerAnalysis, match: Sequence[str], unless: Sequence[str], *,
    misconception: bool, tainted: Mapping[int, set[str]] | None = None,
) -> dict[int, list[str]]:
    """Sentence index -> the first alternative that holds there.

    Misconceptions are only looked for in sentences that make a claim and do not report or
    suppose someone else's belief; criteria are not earned where the learner says they do not
    know. An alternative cannot earn a criterion in a sentence where
    a misconception was found about one of the same concepts.
    """
    hits: dict[int, list[str]] = {}
    for index, sentence in enumerate(analysis.sentences):
        if misconception and (sentence.distanced or not sentence.claims):
            continue
        # A point is not made in a sentence where the learner says they do not know it
        # ("SmoothQuant is the one that also quantizes activations, but I don't remember the
        # details"): blind writers label such a point missed (rounds 4, 22, 28).
        if not misconception and sentence.disclaims:
            continue
        if unless and any_present(analysis=analysis, index=index, concept_ids=unless):
            continue
        first = next(_held(analysis=analysis, index=index, match=match, tainted=tainted), None)
        if first is not None:
            hits[index] = first
    return hits


def _held(
    *, analysis: AnswerAnalysis, index: int, match: Sequence[str], tainted: Mapping[int, set[str]] | None,
) -> Iterator[list[str]]:
    """The alternatives of a `match` that hold in one sentence, in the order they are listed."""
    sentence = analysis.sentences[index]
    for alternative in _alternatives(match):
        if tainted and tainted.get(index, set()) & set(alternative):
            continue
        # A relation has to be stated; terms side by side in a list state nothing.
        if len(alternative) > 1 and not sentence.claims:
            continue
        if holds(analysis=analysis, index=index, alternative=alternative):
            yield alternative


def alternatives_held(
    analysis: AnswerAnalysis, index: int, match: Sequence[str], *,
    tainted: Mapping[int, set[str]] | None = None,
) -> int:
    """How many of a criterion's alternatives hold in one sentence: of several sentences that
    earn a criterion, the one where more of them hold states more of the point."""
    return sum(1 for _ in _held(analysis=analysis, index=index, match=match, tainted=tainted))
