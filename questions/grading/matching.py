"""Where a rubric `match` holds in an answer: shared by the pattern and semantic layers."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence

from questions.bank import Criterion, FollowUp, Question
from questions.grading.text import AnswerAnalysis, any_present, holds


def _alternatives(match: Sequence[str]) -> list[list[str]]:
    return [[part.strip() for part in alternative.split("+")] for alternative in match]


# Prefill (the prompt's tokens) is compute-bound at any practical prompt length; a learner who
# swaps the bounds ("prefill is memory-bound because it writes the whole cache") uses the point's
# own words about its own subject, which puts the sentence close in meaning to the point it
# contradicts. Decode is left out: "batching pushes decode toward compute-bound" is right.
SWAP_SUBJECTS = frozenset({"prefill", "input_tokens"})
# The swap names its subject, then the bound, in one statement. A contrast between them may give
# the bound to the other side in words the concepts do not know ("reading a question is heavy
# arithmetic, while writing replies is mostly waiting on memory"); so may a semicolon or a dash;
# and a bound before the subject belongs to another clause ("it spends its time waiting on
# memory, so it makes fewer output tokens than it reads input tokens").
_CONTRASTING = re.compile(
    r"\b(?:while|whereas|but|unlike|instead|rather than|as opposed to|compared)\b", re.IGNORECASE,
)
_STATEMENT_BREAK = re.compile(r"[;\u2013\u2014]|\s-\s")


def swap_subjects(criterion: Criterion) -> list[str]:
    """The subjects (prefill, the input tokens) a criterion's `match` says are compute-bound
    ("prefill + compute_bound"): the ones an answer can swap to memory-bound."""
    return [
        subject
        for alternative in _alternatives(criterion.match)
        if len(alternative) == 2 and "compute_bound" in alternative
        for subject in alternative if subject in SWAP_SUBJECTS
    ]


def used_concepts(question: Question | FollowUp) -> set[str]:
    used: set[str] = set()
    for item in [*question.rubric, *question.misconceptions]:
        for alternative in _alternatives(item.match):
            used.update(alternative)
        used.update(item.unless)
        for alternative in _alternatives(getattr(item, "requires", ())):
            used.update(alternative)
    if any(swap_subjects(criterion) for criterion in question.rubric):
        used.add("memory_bound")
    for group in question.contrasts:
        if used & set(group):
            used.update(group)
    return used


def states_the_swap(*, analysis: AnswerAnalysis, index: int, subjects: Sequence[str]) -> bool:
    """Whether a sentence says one of these subjects is memory-bound, and not compute-bound
    ("reading the prompt ... is limited by memory bandwidth" for "prefill is compute-bound";
    "prefill is compute-bound while decode is memory-bound" keeps both)."""
    sentence = analysis.sentences[index]
    text = analysis.text

    def subject_then_bound(subject: str) -> bool:
        for said in (o for o in sentence.occurrences.get("memory_bound", ()) if not o.negated):
            for named in (o for o in sentence.occurrences.get(subject, ()) if not o.negated):
                between = text[named.end:said.start]
                if named.start < said.start and not (
                    _STATEMENT_BREAK.search(between) or _CONTRASTING.search(between)
                ):
                    return True
        return False

    return any(
        holds(analysis=analysis, index=index, alternative=[subject, "memory_bound"])
        and not holds(analysis=analysis, index=index, alternative=[subject, "compute_bound"])
        and subject_then_bound(subject)
        for subject in subjects
    )


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


def denies(*, analysis: AnswerAnalysis, index: int, match: Sequence[str]) -> bool:
    """Whether sentence `index` names every concept of one of a belief's alternatives, affirms
    one and denies another ("the small model is not compute-bound" for "small_model +
    compute_bound"): read word by word, it says the opposite of the belief about its subject.
    A one-concept alternative has no subject apart from its claim, and a negation read over it
    may belong to a clause beside it ("pages of sequences that aren't currently being computed
    are paged out to CPU RAM", round 12), so it denies nothing here."""
    sentence = analysis.sentences[index]
    for alternative in _alternatives(match):
        if len(alternative) < 2:
            continue
        named = all(sentence.occurrences.get(c) or c in sentence.inherited for c in alternative)
        affirmed = [c for c in alternative if sentence.present(c)]
        if named and affirmed and len(affirmed) < len(alternative):
            return True
    return False
