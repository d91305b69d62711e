"""Meaning-level evidence: which learner sentences say what a criterion or misconception says.

The pattern layer (`text.py`) recognises the author's vocabulary; a learner who explains the
same idea in plain words ("each new word needs the whole model pulled out of memory") has none
of it. Here every learner sentence, and every pair of adjacent sentences, is embedded and
compared with reference statements:

- for a criterion: its `earns` text (stripped of "Says that ..."), the `paraphrases` the bank
  gives, and the model-answer sentences where the criterion's own patterns hold;
- for a misconception: the `statements` of the wrong belief the bank gives.

Similarity alone cannot tell "decode is memory-bound" from "decode is not memory-bound", so
only references that agree with the unit on polarity (both negated or both not) count, and a
misconception is only looked for in sentences that make a claim of their own rather than
report someone else's belief.

Whether the closest unit is close enough is not a hand-set cosine threshold: a logistic
regression per kind of item (`SemanticModel`, weights in semantic_model.json) reads a few
features of it (its similarity, how much closer it is to this item than to a misconception or
to another criterion, whether the opposite statement is closer, how much of the rest of the
rubric the answer speaks to) and says how likely the unit is to say the item. It is fitted on
the labelled rounds by `manage.py fit_semantic_model` (see calibration.py), which also reports
leave-one-round-out figures: the honest estimate on answers nobody tuned it for.

For misconceptions a second reader has a say (belief_reader.py): a cross-encoder that reads the
belief and the closest unit together, combined with the decision model by `ReaderStage`; where
they do not flag a belief, the reader takes a second look at each of the learner's own
sentences (`SECOND_LOOK_FROM`).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from questions.bank import Criterion, FollowUp, Misconception, Question
from questions.grading import belief_reader
from questions.grading.embedding import encoder, unit
from questions.grading.matching import (
    _alternatives,
    _matching_sentences,
    states_the_swap,
    swap_subjects,
    used_concepts,
)
from questions.grading.text import AnswerAnalysis, analyse, any_present, split_sentences

# Two sentences read together cover more ground by chance: their similarity counts this much
# less when the closest unit to an item is chosen.
PAIR_BONUS = 0.04

_META_LEAD = re.compile(
    r"^(?:(?:the\s+answer\s+)?(?:says|states|explains|notes|names|gives|mentions|points\s+out|"
    r"identifies|recognises|recognizes|argues|concludes|shows|describes|knows|realises|"
    r"realizes|observes|adds|lists|computes|estimates|compares|picks|recommends|suggests|"
    r"proposes|connects|links|attributes|sets|uses|checks|distinguishes|separates|"
    r"accounts\s+for|includes|quantifies|weighs)\s+(?:that\s+|why\s+|how\s+)?)",
    re.IGNORECASE,
)
_POLARITY = re.compile(
    # ", not the math," contrasts a phrase with the claim; it does not deny the claim.
    r"(?<!\w)(?:(?<!, )(?<!\u2014)not(?!\s+(?:only|just|merely))|\w+n't|cannot|never|no(?!\s+(?:matter|doubt))"
    r"|none|neither|nor|without|independent\s+of|regardless\s+of|unaffected|irrelevant"
    r"|doesnt|dont|isnt|arent|wont|cant)(?!\w)",
    re.IGNORECASE,
)


def statement_of(earns: str) -> str:
    """'Says decode is memory-bound.' -> 'decode is memory-bound.'"""
    return _META_LEAD.sub("", earns.strip(), count=1)


def negated(text: str) -> bool:
    """Whether a statement is, on the whole, a denial (an odd number of negation cues)."""
    return len(_POLARITY.findall(text)) % 2 == 1


# Where a sentence splits into clauses: a negation counts against a reference only in a clause
# that is about what the reference is about ("self-hosting is always cheaper ... since there's
# no network" does not deny that self-hosting is cheaper).
_CLAUSE_BREAK = re.compile(
    r"[,;:()\u2013\u2014]|\s-\s|\b(?:because|since|so|while|but|whereas|although|though|and"
    r"|which|that|who|unless|if|when|whether)\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"[a-z0-9]+(?:[-'][a-z0-9]+)*")
_FUNCTION_WORDS = frozenset(
    """
    the a an and or but of to in on at for with by from as is are was were be been being it
    its this that these those than then there their they them you your we our he she his her has
    have had do does did will would can could should may might must just only also very much more
    most less same each every any all some one into onto over per about what which who when where
    why how so such not no nor never none without can't don't doesn't isn't aren't won't
    """.split(),  # noqa: SIM905 (a word list reads better as text)
)


def _stem(word: str) -> str:
    """A crude stem, enough to match "divides" with "divide" and "cached" with "cache"."""
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            word = word[: -len(suffix)]
            break
    return word[:-1] if len(word) > 4 and word.endswith("e") else word


def content_words(text: str) -> frozenset[str]:
    return frozenset(
        _stem(word) for word in _WORD.findall(text.lower())
        if len(word) > 2 and word not in _FUNCTION_WORDS
    )


@dataclass(frozen=True)
class Polarity:
    """A text's negation cues, whole and per clause (with the clause's content words)."""

    negated: bool
    clauses: tuple[tuple[frozenset[str], int], ...]

    @classmethod
    def of(cls, text: str) -> Polarity:
        clauses = tuple(
            (content_words(part), len(_POLARITY.findall(part)))
            for part in _CLAUSE_BREAK.split(text) if part and part.strip()
        )
        return cls(negated=negated(text), clauses=clauses)

    def opposes(self, *, words: frozenset[str], reference_negated: bool) -> bool:
        """Whether this text and a reference (its content words and polarity) disagree on
        polarity, reading only the clauses that share a content word with the reference."""
        cues = [count for clause_words, count in self.clauses if clause_words & words]
        mine = sum(cues) % 2 == 1 if cues else self.negated
        return mine != reference_negated


@dataclass(frozen=True)
class _Reference:
    text: str
    negated: bool
    words: frozenset[str] = frozenset()


@dataclass(frozen=True)
class _Prepared:
    criteria: tuple[tuple[_Reference, ...], ...]  # per criterion, in rubric order
    criteria_vectors: tuple[np.ndarray, ...]
    misconceptions: tuple[tuple[_Reference, ...], ...]  # per misconception
    misconception_vectors: tuple[np.ndarray, ...]
    # The sentences of each misconception's correction: right statements that a sentence
    # has to be further from than from the wrong belief.
    corrections: tuple[tuple[_Reference, ...], ...]
    correction_vectors: tuple[np.ndarray, ...]


_prepared: dict[tuple[str, str], _Prepared] = {}
_prepared_lock = threading.Lock()


def _model_answer_sentences(
    question: Question | FollowUp, criterion: Criterion, analysis: AnswerAnalysis,
) -> list[str]:
    found = _matching_sentences(analysis, criterion.match, criterion.unless, misconception=False)
    return [analysis.sentences[index].sentence.text for index in sorted(found)]


def _references(texts: Sequence[str]) -> tuple[_Reference, ...]:
    seen: dict[str, _Reference] = {}
    for text in texts:
        cleaned = text.strip()
        if cleaned and cleaned not in seen:
            seen[cleaned] = _Reference(
                text=cleaned, negated=negated(cleaned), words=content_words(cleaned),
            )
    return tuple(seen.values())


def _vectors(references: Sequence[_Reference]) -> np.ndarray:
    if not references:
        return np.zeros((0, 384), dtype=np.float32)
    return encoder().encode([r.text for r in references], remember=True)


def prepare(question: Question | FollowUp) -> _Prepared:
    """Reference statements and their vectors for one question, built once per rubric version."""
    key = (getattr(question, "slug", ""), question.rubric_version)
    cached = _prepared.get(key)
    if cached is not None:
        return cached
    model = analyse(
        text=question.model_answer, concepts=question.concepts,
        concept_ids=used_concepts(question), contrasts=question.contrasts,
    )
    criteria = tuple(
        _references(
            [
                statement_of(criterion.earns),
                *criterion.paraphrases,
                *_model_answer_sentences(question, criterion, model),
            ],
        )
        for criterion in question.rubric
    )
    misconceptions = tuple(_references(m.statements) for m in question.misconceptions)
    corrections = tuple(
        _references([s.text for s in split_sentences(m.correction)])
        for m in question.misconceptions
    )
    prepared = _Prepared(
        criteria=criteria,
        criteria_vectors=tuple(_vectors(refs) for refs in criteria),
        misconceptions=misconceptions,
        misconception_vectors=tuple(_vectors(refs) for refs in misconceptions),
        corrections=corrections,
        correction_vectors=tuple(_vectors(refs) for refs in corrections),
    )
    with _prepared_lock:
        _prepared[key] = prepared
    return prepared


def prepare_bank(*, content_dir: Path) -> int:
    """Encode every free-text rubric's references in the bank, so they are on disk before the
    first answer (`make grader-model`, which `make run` and `make test` call): ~3,500 texts cost
    about 80 s of one core once per machine, then a process reads them in ~3 s. Returns how many
    questions and follow-ups were prepared."""
    from questions.bank import load_bank

    prepared = 0
    for question_set in load_bank(content_dir=content_dir).sets:
        for question in question_set.questions:
            for target in (question, *question.follow_ups):
                if target.rubric:
                    prepare(target)
                    prepared += 1
    return prepared


@dataclass(frozen=True)
class Unit:
    """A learner sentence, or two adjacent ones read together, with its sentence indexes."""

    first: int
    last: int
    text: str
    negated: bool
    polarity: Polarity | None = None

    def opposes(self, reference: _Reference, *, by_clause: bool) -> bool:
        if by_clause and self.polarity is not None:
            return self.polarity.opposes(words=reference.words, reference_negated=reference.negated)
        return self.negated != reference.negated

    @property
    def pair(self) -> bool:
        return self.last > self.first


@dataclass(frozen=True)
class SemanticMatch:
    unit: Unit
    similarity: float
    reference: str
    # The decision model's probability that the unit says the item (see SemanticModel).
    probability: float = 1.0
    # For a misconception, the belief reader's log-odds that the unit states it, where it was
    # asked (None where the decision model's probability decided alone).
    reader_logit: float | None = None

    @property
    def read_as_stated(self) -> bool:
        """Whether the belief reader is sure the unit states the belief (SECOND_LOOK_FROM)."""
        return (
            SECOND_LOOK_FROM is not None
            and self.reader_logit is not None
            and self.reader_logit >= SECOND_LOOK_FROM
        )


# What the decision model reads about the unit closest in meaning to an item. Similarities
# are cosines; a lead is clipped to +-LEAD_CLIP, since beyond that it says nothing more.
CRITERION_FEATURES = (
    "similarity",            # the unit's best cosine with a same-polarity reference (pairs less PAIR_BONUS)
    "pair",                  # 1 when that unit is two sentences read together
    "lead_misconceptions",   # its cosine less its best cosine with a misconception statement
    "lead_other_criteria",   # its cosine less its best cosine with another criterion's references
    "anchored",              # 1 when the unit names a concept of the criterion's `match`
    "opposed",               # best cosine with an opposite-polarity reference, less `similarity`
    "whole_answer",          # the whole answer's best cosine with the criterion's references
    "answer_similarity",     # the mean `similarity` of the other criteria: how much of the
                             # rest of the rubric the answer speaks to
    "pattern",               # 1 when the pattern layer credits the criterion
)
MISCONCEPTION_FEATURES = (
    "similarity",            # best cosine of an own-claim unit with a statement of the belief
    "pair",
    "lead_criteria",         # its cosine less its best cosine with any criterion reference
    "lead_corrections",      # ... or with any criterion reference or correction sentence
    "anchored",              # 1 when the unit names a concept of the misconception's `match`
    "opposed",               # best cosine with an opposite-polarity statement, less `similarity`
    "whole_answer",          # the whole answer's best cosine with the statements
    "answer_similarity",     # as for criteria: an answer that says the rubric's points rarely
                             # rests on a misconception
    "pattern",               # 1 when the pattern layer finds the misconception
)
LEAD_CLIP = 0.3


@dataclass(frozen=True)
class Candidate:
    """The unit closest in meaning to an item, and what the decision model reads about it."""

    match: SemanticMatch | None
    features: Mapping[str, float]


@dataclass(frozen=True)
class Logistic:
    """A logistic regression over named features (standardised), with its decision threshold."""

    features: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    bias: float
    threshold: float

    def log_odds(self, features: Mapping[str, float]) -> float:
        x = np.array([features[name] for name in self.features], dtype=np.float64)
        return float(((x - self.mean) / self.scale) @ self.weights + self.bias)

    def probability(self, features: Mapping[str, float]) -> float:
        # A Python float, so verdicts compared with the threshold are Python bools: numpy's
        # np.False_ is not False, and `verdict is False` once let a refused point keep its credit.
        return sigmoid(self.log_odds(features))

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> Logistic:
        return cls(
            features=tuple(data["features"]),  # type: ignore[arg-type]
            mean=np.asarray(data["mean"], dtype=np.float64),
            scale=np.asarray(data["scale"], dtype=np.float64),
            weights=np.asarray(data["weights"], dtype=np.float64),
            bias=float(data["bias"]),  # type: ignore[arg-type]
            threshold=float(data["threshold"]),  # type: ignore[arg-type]
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "features": list(self.features),
            "mean": [round(float(v), 6) for v in self.mean],
            "scale": [round(float(v), 6) for v in self.scale],
            "weights": [round(float(v), 6) for v in self.weights],
            "bias": round(self.bias, 6),
            "threshold": round(self.threshold, 6),
        }


# What the reader stage reads: the decision model's log-odds and the belief reader's.
READER_FEATURES = ("decision_logit", "reader_logit")
# What the criterion stage reads: both readers' log-odds and whether the patterns credit it.
CRITERION_STAGE_FEATURES = ("decision_logit", "reader_logit", "pattern")
# Below this stage probability, with the reader's log-odds below WITHDRAW_READER_BELOW (a clear
# no, odds under about 1 in 4.5), the stage withdraws credit the patterns or the decision model
# gave (CriterionStage.verdict). A weak no is often a right short clause ("decode memory-bound").
WITHDRAW_BELOW = 0.15
WITHDRAW_READER_BELOW = -1.5
# The reader stage reads one unit per belief, the one the bi-encoder finds closest, and for
# many beliefs stated in other words that is not the sentence that states it: the sentences
# that describe Medusa's and EAGLE's heads are closest to "the heads need no training", not
# "So I would just switch on EAGLE for whatever model I run, since it costs no preparation"
# (tests/questions/test_grading_reader.py). So where the stage does not flag a belief, the
# belief reader reads every single sentence the learner claims as their own against it, and one
# it reads as stating the belief at these log-odds or more (odds of about 55 to 1) flags it.
# Of the 81 such sentences in rounds 7-16, 65 were not the closest. Chosen on rounds 7-15
# (README, session 17). None: no second look.
SECOND_LOOK_FROM: float | None = 4.0


@dataclass(frozen=True)
class ReaderStage:
    """How the belief reader (belief_reader.py) and the decision model decide a misconception
    together: a logistic over both log-odds, fitted on rounds neither was trained on.

    The reader is asked only when the decision model's probability lies in `band`: below it
    no reader logit seen in fitting could flag the belief, above it none could clear it, so
    there the decision is the same without the cost of a cross-encoder pass."""

    logistic: Logistic
    band: tuple[float, float]

    def decides(self, *, decision_probability: float) -> bool | None:
        """The verdict without the reader (outside the band), else None: ask it."""
        low, high = self.band
        if decision_probability < low:
            return False
        if decision_probability >= high:
            return True
        return None

    def probability(self, *, decision_probability: float, reader_logit: float) -> float:
        return self.logistic.probability(
            {"decision_logit": logit(decision_probability), "reader_logit": reader_logit},
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> ReaderStage:
        low, high = data["band"]  # type: ignore[misc]
        return cls(logistic=Logistic.from_dict(data["logistic"]), band=(float(low), float(high)))  # type: ignore[arg-type]

    def to_dict(self) -> dict[str, object]:
        return {
            "logistic": self.logistic.to_dict(),
            "band": [round(self.band[0], 6), round(self.band[1], 6)],
        }


@dataclass(frozen=True)
class CriterionStage:
    """How the criterion reader (belief_reader.criterion_reader), the decision model and the
    patterns decide a criterion together: a logistic over CRITERION_STAGE_FEATURES, fitted on
    rounds neither reader was trained on.

    The reader is asked only where its answer can change the verdict: for log-odds anywhere in
    `reader_range` (those seen in fitting, widened by a margin) the verdict would otherwise be
    the same, so it is given without the cross-encoder pass."""

    logistic: Logistic
    reader_range: tuple[float, float]

    def decides(self, *, decision_logit: float, pattern: bool) -> bool | None:
        """The verdict without the reader, where every reader log-odds in range gives the same
        one; else None: ask it."""
        target = logit(self.logistic.threshold)
        low, high = self.reader_range
        known = {"decision_logit": decision_logit, "pattern": float(pattern)}
        if self.logistic.log_odds({**known, "reader_logit": high}) < target:
            return False
        if self.logistic.log_odds({**known, "reader_logit": low}) >= target:
            return True
        return None

    def met(self, features: Mapping[str, float]) -> bool:
        return bool(self.logistic.probability(features) >= self.logistic.threshold)

    def verdict(self, features: Mapping[str, float]) -> bool | None:
        """With the reader asked: True at the threshold; False (withdrawing the patterns' and
        the decision model's credit) only where the stage is all but sure the point is not made
        and the reader itself clearly says no; else None, no verdict.

        The two conditions on False are there because a point taken from a right answer costs a
        learner more than one wrongly given (session 15, README): the refusal at the threshold
        held down fluent wrong answers but took points from right ones, among them one-point
        lesson checks' own model answers (the decision model's log-odds sit near -4.5 on
        one-criterion rubrics while the reader says yes)."""
        if self.met(features):
            return True
        if self.logistic.probability(features) < WITHDRAW_BELOW and features["reader_logit"] < WITHDRAW_READER_BELOW:
            return False
        return None

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> CriterionStage:
        low, high = data["reader_range"]  # type: ignore[misc]
        return cls(logistic=Logistic.from_dict(data["logistic"]), reader_range=(float(low), float(high)))  # type: ignore[arg-type]

    def to_dict(self) -> dict[str, object]:
        return {
            "logistic": self.logistic.to_dict(),
            "reader_range": [round(self.reader_range[0], 6), round(self.reader_range[1], 6)],
        }


def logit(probability: float) -> float:
    clipped = min(max(probability, 1e-12), 1.0 - 1e-12)
    return float(np.log(clipped / (1.0 - clipped)))


def sigmoid(log_odds: float) -> float:
    """The probability of these log-odds (logit's inverse)."""
    return float(1.0 / (1.0 + np.exp(-log_odds)))


@dataclass(frozen=True)
class SemanticModel:
    """Whether a candidate unit says a criterion / states a misconception."""

    criterion: Logistic
    misconception: Logistic
    # The belief reader's stage for misconceptions; None: the decision model decides alone.
    reader: ReaderStage | None = None
    # The criterion reader's stage: whether a criterion is met, from the decision model, the
    # criterion reader and the patterns together; None: patterns or the decision model credit.
    criterion_stage: CriterionStage | None = None


MODEL_FILE = Path(__file__).with_name("semantic_model.json")
_UNLOADED: object = object()
_model: SemanticModel | object | None = _UNLOADED
_model_lock = threading.Lock()


def load_model(path: Path = MODEL_FILE) -> SemanticModel:
    data = json.loads(path.read_text(encoding="utf-8"))
    return SemanticModel(
        criterion=Logistic.from_dict(data["criterion"]),
        misconception=Logistic.from_dict(data["misconception"]),
        reader=ReaderStage.from_dict(data["reader"]["stage"]) if data.get("reader") else None,
        criterion_stage=(
            CriterionStage.from_dict(data["criterion_reader"]["stage"]) if data.get("criterion_reader") else None
        ),
    )


def model() -> SemanticModel | None:
    """The decision model in use: semantic_model.json, read once per process."""
    global _model
    if _model is _UNLOADED:
        with _model_lock:
            if _model is _UNLOADED:
                _model = load_model()
    return _model  # type: ignore[return-value]


def use_model(replacement: SemanticModel | None) -> SemanticModel | None:
    """Swap the decision model (fitting, leave-one-round-out, tests); returns the one in use.
    None switches the semantic layer off: only the patterns grade."""
    global _model
    with _model_lock:
        previous, _model = _model, replacement
    if previous is _UNLOADED:
        # Returned to be put back: a model never loaded yet is loaded now, or putting "nothing"
        # back would leave the semantic layer off for the rest of the process.
        return load_model() if MODEL_FILE.is_file() else None
    return previous  # type: ignore[return-value]


@dataclass(frozen=True)
class SemanticEvidence:
    criteria: tuple[SemanticMatch | None, ...]
    misconceptions: tuple[SemanticMatch | None, ...]
    # Per criterion, sentence index -> its highest similarity to the criterion's references
    # (sentences the layer read), to choose which of several sentences is quoted as evidence.
    sentence_scores: tuple[Mapping[int, float], ...] = ()
    criterion_candidates: tuple[Candidate, ...] = ()
    misconception_candidates: tuple[Candidate, ...] = ()
    # Per criterion not taken: the learner unit that came near it (see near_miss), else None.
    near_misses: tuple[Unit | None, ...] = ()

    def sentence_similarity(self, *, criterion: int, index: int) -> float:
        """A sentence's highest similarity to a criterion's references (-1 if not read)."""
        if not self.sentence_scores:
            return -1.0
        return self.sentence_scores[criterion].get(index, -1.0)


def _units(analysis: AnswerAnalysis) -> tuple[list[Unit], np.ndarray, np.ndarray | None]:
    """Sentences that make a claim, and adjacent pairs of them, with their unit vectors, and
    the whole answer's vector (the mean over the tokens of every sentence read).

    A sentence without a verb or connective (a bare list of terms) is not read: it states
    nothing, and the keyword-list cap deals with answers made of them.
    """
    read: list[int] = []
    for index, sentence in enumerate(analysis.sentences):
        text = sentence.sentence.text
        if not sentence.claims:
            # Plain words use verbs the claim test does not list ("pages the cache out");
            # a run of terms between commas is still not read.
            words = len(text.split())
            if words < 5 or 3 * text.count(",") >= words:
                continue
        read.append(index)
    sums = encoder().pooled_many([analysis.sentences[i].sentence.text for i in read])
    pooled = dict(zip(read, sums, strict=True))
    units: list[Unit] = []
    rows: list[np.ndarray] = []
    for index in read:
        text = analysis.sentences[index].sentence.text
        units.append(
            Unit(
                first=index, last=index, text=text, negated=negated(text),
                polarity=Polarity.of(text),
            ),
        )
        rows.append(unit(pooled[index][0] / pooled[index][1]))
    for index in range(len(analysis.sentences) - 1):
        if index not in pooled or index + 1 not in pooled:
            continue
        (sum_a, count_a), (sum_b, count_b) = pooled[index], pooled[index + 1]
        text = f"{analysis.sentences[index].sentence.text} {analysis.sentences[index + 1].sentence.text}"
        units.append(
            Unit(
                first=index, last=index + 1, text=text, negated=negated(text),
                polarity=Polarity.of(text),
            ),
        )
        rows.append(unit((sum_a + sum_b) / (count_a + count_b)))
    if not rows:
        return units, np.zeros((0, 384), dtype=np.float32), None
    whole = unit(sum(s for s, _ in sums) / sum(c for _, c in sums))
    return units, np.stack(rows), whole


def _anchored(analysis: AnswerAnalysis, unit_: Unit, anchors: frozenset[str]) -> bool:
    """Whether the unit names at least one concept the criterion or misconception is about."""
    if not anchors:
        return True
    return any(
        analysis.sentences[index].present(concept)
        for index in range(unit_.first, unit_.last + 1)
        for concept in anchors
    )


def _anchors(match: Sequence[str]) -> frozenset[str]:
    return frozenset(
        part.strip() for alternative in match for part in alternative.split("+")
    )


def _clip(value: float) -> float:
    return max(-LEAD_CLIP, min(LEAD_CLIP, value))


def _nothing(names: Sequence[str], *, pattern: bool) -> dict[str, float]:
    features = dict.fromkeys(names, 0.0)
    features.update({"similarity": 0.0, "pair": 0.0, "anchored": 0.0, "opposed": 0.0})
    features["pattern"] = float(pattern)
    return features


def _candidate(
    *, similarities: np.ndarray, agrees: np.ndarray, references: Sequence[_Reference],
    units: Sequence[Unit], allowed: np.ndarray, leads: Mapping[str, np.ndarray],
    whole: float, pattern: bool, analysis: AnswerAnalysis, anchors: frozenset[str],
) -> Candidate:
    """The allowed unit with the highest same-polarity similarity (a pair of sentences less
    PAIR_BONUS: two sentences cover more ground by chance) and its features."""
    base = {"whole_answer": whole, "pattern": float(pattern)}
    if similarities.size == 0 or not allowed.any():
        return Candidate(
            match=None, features={**_nothing((*base, *leads), pattern=pattern), **base},
        )
    penalty = np.array([PAIR_BONUS if u.pair else 0.0 for u in units], dtype=np.float32)
    agreeing = np.where(agrees, similarities, -1.0).max(axis=1)
    opposing = np.where(agrees, -1.0, similarities).max(axis=1)
    adjusted = np.where(allowed, agreeing - penalty, -2.0)
    best = int(adjusted.argmax())
    unit_ = units[best]
    row = np.where(agrees[best], similarities[best], -1.0)
    reference = int(row.argmax())
    value = float(adjusted[best])
    opposed = float(np.where(allowed, opposing - penalty, -2.0).max()) - value
    features = {
        **base,
        "similarity": value,
        "pair": float(unit_.pair),
        "anchored": float(_anchored(analysis, unit_, anchors)),
        "opposed": _clip(opposed),
        **{name: _clip(float(agreeing[best] - lead[best])) for name, lead in leads.items()},
    }
    return Candidate(
        match=SemanticMatch(
            unit=unit_, similarity=float(agreeing[best]), reference=references[reference].text,
        ),
        features=features,
    )


def _with(candidate: Candidate, **features: float) -> Candidate:
    return Candidate(match=candidate.match, features={**candidate.features, **features})


# A missed criterion whose closest learner unit the decision model gives at least this
# probability is a near miss: its sentence is quoted on the mark sheet. Chosen on blind rounds
# 6-8 (README, "Near misses"): at 0.25, 55% of the points the grader missed but the labels say
# were made are quoted, every paraphrase near miss was a point truly made, and 35% of all near
# misses are.
NEAR_MISS_FROM = 0.25


def near_miss(candidate: Candidate, logistic: Logistic | None) -> Unit | None:
    """The learner unit closest to a criterion the decision model did not take, when it came near."""
    if logistic is None or candidate.match is None:
        return None
    probability = logistic.probability(candidate.features)
    return candidate.match.unit if NEAR_MISS_FROM <= probability < logistic.threshold else None


def _decide(candidate: Candidate, logistic: Logistic | None) -> SemanticMatch | None:
    if logistic is None or candidate.match is None:
        return None
    probability = logistic.probability(candidate.features)
    if probability < logistic.threshold:
        return None
    match = candidate.match
    return SemanticMatch(
        unit=match.unit, similarity=match.similarity, reference=match.reference,
        probability=probability,
    )


@dataclass(frozen=True)
class OwnSentence:
    """A single learner sentence the learner claims as their own, as a misconception sees it:
    its closest statement of the belief (any polarity: the reader weighs that) and the cosine."""

    unit: Unit
    similarity: float
    reference: str


def _decide_misconceptions(
    candidates: Sequence[Candidate], *, items: Sequence[Misconception],
    decider: SemanticModel | None, own_sentences: Sequence[Sequence[OwnSentence]],
) -> tuple[SemanticMatch | None, ...]:
    """Per misconception, the unit taken as stating it: by the decision model alone, or, where
    a reader stage is fitted, by both readers for the candidates in its band (one batch), then
    by the reader's second look at every own sentence for a belief still not flagged."""
    if decider is None or decider.reader is None:
        return tuple(_decide(c, decider.misconception if decider else None) for c in candidates)
    stage = decider.reader
    probabilities = [
        decider.misconception.probability(c.features) if c.match else 0.0 for c in candidates
    ]
    verdicts = [
        stage.decides(decision_probability=p) if c.match else False
        for c, p in zip(candidates, probabilities, strict=True)
    ]
    asked = [i for i, verdict in enumerate(verdicts) if verdict is None]
    # What the reader said of a (belief, unit) pair, so the second look does not ask twice.
    read: dict[tuple[int, str], float] = {}
    if asked:
        logits = belief_reader.reader().logits(
            [(belief_reader.belief_text(items[i]), candidates[i].match.unit.text) for i in asked],  # type: ignore[union-attr]
        )
        for i, reader_logit in zip(asked, logits, strict=True):
            read[i, candidates[i].match.unit.text] = reader_logit  # type: ignore[union-attr]
            probabilities[i] = stage.probability(
                decision_probability=probabilities[i], reader_logit=reader_logit,
            )
            verdicts[i] = probabilities[i] >= stage.logistic.threshold
    decided: list[SemanticMatch | None] = []
    for i, (candidate, probability, verdict) in enumerate(
        zip(candidates, probabilities, verdicts, strict=True),
    ):
        match = candidate.match
        decided.append(
            SemanticMatch(
                unit=match.unit, similarity=match.similarity, reference=match.reference,
                probability=probability, reader_logit=read.get((i, match.unit.text)),
            )
            if verdict and match else None,
        )
    return _second_look(decided, items=items, own_sentences=own_sentences, read=read)


def _second_look(
    decided: list[SemanticMatch | None], *, items: Sequence[Misconception],
    own_sentences: Sequence[Sequence[OwnSentence]], read: dict[tuple[int, str], float],
) -> tuple[SemanticMatch | None, ...]:
    """Each belief not flagged, read by the belief reader against each own sentence (one
    batch); the sentence it reads as stating the belief most surely, from SECOND_LOOK_FROM,
    flags it. Its probability is the reader's own."""
    threshold = SECOND_LOOK_FROM
    if threshold is None:
        return tuple(decided)
    pending = [
        (i, sentence)
        for i, match in enumerate(decided) if match is None
        for sentence in own_sentences[i]
        if (i, sentence.unit.text) not in read
    ]
    if pending:
        logits = belief_reader.reader().logits(
            [(belief_reader.belief_text(items[i]), s.unit.text) for i, s in pending],
        )
        read.update(
            ((i, s.unit.text), value) for (i, s), value in zip(pending, logits, strict=True)
        )
    for i, match in enumerate(decided):
        if match is not None or not own_sentences[i]:
            continue
        surest = max(own_sentences[i], key=lambda s: read[i, s.unit.text])
        reader_logit = read[i, surest.unit.text]
        if reader_logit >= threshold:
            decided[i] = SemanticMatch(
                unit=surest.unit, similarity=surest.similarity, reference=surest.reference,
                probability=sigmoid(reader_logit),
                reader_logit=reader_logit,
            )
    return tuple(decided)


def _own_sentences(
    similarities: np.ndarray, references: Sequence[_Reference], *, units: Sequence[Unit],
    own_claims: np.ndarray,
) -> tuple[OwnSentence, ...]:
    """The single sentences (not pairs) the learner claims as their own, each with its closest
    statement of a belief."""
    if not references:
        return ()
    return tuple(
        OwnSentence(
            unit=unit_, similarity=float(similarities[u].max()),
            reference=references[int(similarities[u].argmax())].text,
        )
        for u, unit_ in enumerate(units)
        if own_claims[u] and not unit_.pair
    )


def semantic_evidence(
    *, question: Question | FollowUp, analysis: AnswerAnalysis,
    criterion_patterns: Sequence[bool] | None = None,
    misconception_patterns: Sequence[bool] | None = None,
) -> SemanticEvidence:
    """Per criterion and misconception, the unit closest in meaning and whether the decision
    model takes it. `*_patterns` say where the pattern layer already found the item (a feature
    of the decision)."""
    prepared = prepare(question)
    decider = model()
    units, vectors, whole = _units(analysis)
    n_criteria, n_misconceptions = len(prepared.criteria), len(prepared.misconceptions)
    criterion_patterns = criterion_patterns or [False] * n_criteria
    misconception_patterns = misconception_patterns or [False] * n_misconceptions
    if not units:
        # Nothing read: every feature says so (no match, no similarity).
        return SemanticEvidence(
            criteria=tuple(None for _ in prepared.criteria),
            misconceptions=tuple(None for _ in prepared.misconceptions),
            criterion_candidates=tuple(
                Candidate(match=None, features=_nothing(CRITERION_FEATURES, pattern=p))
                for p in criterion_patterns
            ),
            misconception_candidates=tuple(
                Candidate(match=None, features=_nothing(MISCONCEPTION_FEATURES, pattern=p))
                for p in misconception_patterns
            ),
        )
    criterion_sims = [vectors @ refs.T for refs in prepared.criteria_vectors]
    misconception_sims = [vectors @ refs.T for refs in prepared.misconception_vectors]
    correction_sims = [vectors @ refs.T for refs in prepared.correction_vectors]

    unit_negated = np.array([u.negated for u in units])

    def agreement(refs: Sequence[_Reference], *, by_clause: bool) -> np.ndarray:
        if not refs:
            return np.zeros((len(units), 0), dtype=bool)
        if not by_clause:
            # Whole-sentence polarity: one comparison of two vectors of flags.
            return unit_negated[:, None] == np.array([r.negated for r in refs])[None, :]
        return np.array([[not u.opposes(r, by_clause=True) for r in refs] for u in units])

    # Polarity as each side reads it: a criterion's references with whole-sentence polarity,
    # a misconception's statements (and the right ideas a misconception is weighed against)
    # per clause (see Polarity).
    criterion_agrees = [agreement(refs, by_clause=False) for refs in prepared.criteria]
    criterion_agrees_clause = [agreement(refs, by_clause=True) for refs in prepared.criteria]
    misconception_agrees = [agreement(refs, by_clause=True) for refs in prepared.misconceptions]
    misconception_agrees_whole = [agreement(refs, by_clause=False) for refs in prepared.misconceptions]
    correction_agrees = [agreement(refs, by_clause=True) for refs in prepared.corrections]

    def same_polarity_max(
        blocks: Sequence[np.ndarray], agrees: Sequence[np.ndarray],
    ) -> np.ndarray:
        """Per unit, the highest similarity to any reference that has the unit's polarity."""
        best = np.full(len(units), -1.0, dtype=np.float32)
        for block, agree in zip(blocks, agrees, strict=True):
            if block.size:
                best = np.maximum(best, np.where(agree, block, -1.0).max(axis=1))
        return best

    right = same_polarity_max(criterion_sims, criterion_agrees_clause)
    wrong = same_polarity_max(misconception_sims, misconception_agrees_whole)
    right_or_corrected = np.maximum(right, same_polarity_max(correction_sims, correction_agrees))
    per_criterion = [
        same_polarity_max([sims], [agree])
        for sims, agree in zip(criterion_sims, criterion_agrees, strict=True)
    ]
    own_claims = np.array([
        not any(analysis.sentences[i].distanced for i in range(u.first, u.last + 1))
        for u in units
    ])
    # A point is not made by meaning in a sentence where the learner says they do not know:
    # "GPTQ is also weight-only, but I don't remember how it works" is close in words to GPTQ's
    # mechanism and disclaims it (round 28). The patterns skip such a sentence too
    # (matching._matching_sentences); beliefs are still read in it.
    known = np.array([
        not any(analysis.sentences[i].disclaims for i in range(u.first, u.last + 1))
        for u in units
    ], dtype=bool)

    def naming(concept_ids: Sequence[str]) -> np.ndarray:
        """Per unit, whether one of its sentences names one of these concepts."""
        return np.array([
            any(
                any_present(analysis=analysis, index=i, concept_ids=concept_ids)
                for i in range(u.first, u.last + 1)
            )
            for u in units
        ], dtype=bool)

    def naming_all(concept_ids: Sequence[str]) -> np.ndarray:
        """Per unit, whether one of its sentences names every one of these concepts."""
        return np.array([
            any(
                all(analysis.sentences[i].present(concept_id) for concept_id in concept_ids)
                for i in range(u.first, u.last + 1)
            )
            for u in units
        ], dtype=bool)

    def may_state(item: Misconception) -> np.ndarray:
        """The units that may state a belief: the learner's own claims, and among them, for a
        belief that `requires` concepts, those with a sentence naming every concept of one of
        its alternatives ("borrows the idea of virtual memory" cannot state that paging moves the
        cache to the CPU; "pipeline parallelism puts layers on different GPUs" names the pipeline
        and nothing of the speed the belief claims for it, and a pair that adds a sentence about
        tensor parallelism's speed does not make it do so)."""
        if not item.requires:
            return own_claims
        return own_claims & np.logical_or.reduce(
            [naming_all(alternative) for alternative in _alternatives(item.requires)],
        )

    allowed_for = [may_state(item) for item in question.misconceptions]

    def may_earn(item: Criterion) -> np.ndarray:
        """The units that may make a point by meaning: not a disclaimed one, and none holding a
        concept the criterion's `unless` names. `unless` marks a sentence that says something
        else with the point's words ("Wide EP is chosen to reduce communication: ... the
        all-to-all shrinks" is close in meaning to why wide EP pays, and says the opposite), so
        meaning may not credit it either (round 30); and none at all for prefill's compute-bound
        point in an answer that gives prefill the memory bound (matching.states_the_swap)."""
        allowed = known & ~naming(item.unless) if item.unless else known
        subjects = swap_subjects(item)
        if subjects and any(
            states_the_swap(analysis=analysis, index=i, subjects=subjects)
            for i in range(len(analysis.sentences))
        ):
            # An answer that gives prefill the memory bound (matching.SWAP_SUBJECTS) has said
            # where it stands: "reading the prompt is limited by memory bandwidth" is
            # the swap, close in meaning to prefill's point, and no other sentence of it makes
            # that point in other words ("this is why long prompts are slow" came next closest
            # in round 32's fluent wrong answer). The patterns still credit the point said
            # explicitly elsewhere.
            return np.zeros(len(units), dtype=bool)
        return allowed

    def whole_similarity(refs: np.ndarray) -> float:
        return float((refs @ whole).max()) if whole is not None and refs.size else 0.0

    misconception_candidates = tuple(
        _candidate(
            similarities=sims, agrees=agrees, references=refs, units=units, allowed=allowed,
            leads={"lead_criteria": right, "lead_corrections": right_or_corrected},
            whole=whole_similarity(vectors_), pattern=pattern, analysis=analysis,
            anchors=_anchors(item.match),
        )
        for sims, agrees, refs, vectors_, item, pattern, allowed in zip(
            misconception_sims, misconception_agrees, prepared.misconceptions,
            prepared.misconception_vectors, question.misconceptions, misconception_patterns,
            allowed_for, strict=True,
        )
    )
    criterion_candidates = []
    for position, (sims, agrees, refs, vectors_, item, pattern) in enumerate(
        zip(
            criterion_sims, criterion_agrees, prepared.criteria, prepared.criteria_vectors,
            question.rubric, criterion_patterns, strict=True,
        ),
    ):
        others = [b for j, b in enumerate(per_criterion) if j != position]
        other = np.max(np.stack(others), axis=0) if others else np.full(len(units), -1.0)
        criterion_candidates.append(
            _candidate(
                similarities=sims, agrees=agrees, references=refs, units=units,
                allowed=may_earn(item),
                leads={"lead_misconceptions": wrong, "lead_other_criteria": other},
                whole=whole_similarity(vectors_), pattern=pattern, analysis=analysis,
                anchors=_anchors(item.match),
            ),
        )
    similarities = [c.features["similarity"] for c in criterion_candidates]
    coverage = float(np.mean(similarities))
    # For a criterion, how well the answer speaks to the rest of the rubric (its own
    # similarity is a feature of its own).
    criterion_candidates = [
        _with(
            c,
            answer_similarity=(
                (sum(similarities) - similarities[i]) / (len(similarities) - 1)
                if len(similarities) > 1 else 0.0
            ),
        )
        for i, c in enumerate(criterion_candidates)
    ]
    misconception_candidates = tuple(
        _with(c, answer_similarity=coverage) for c in misconception_candidates
    )
    sentence_scores = tuple(
        {
            unit_.first: float(sims[u].max())
            for u, unit_ in enumerate(units)
            if not unit_.pair and sims.shape[1]
        }
        for sims in criterion_sims
    )
    return SemanticEvidence(
        criteria=tuple(
            _decide(c, decider.criterion if decider else None) for c in criterion_candidates
        ),
        misconceptions=_decide_misconceptions(
            misconception_candidates, items=question.misconceptions, decider=decider,
            own_sentences=[
                _own_sentences(sims, refs, units=units, own_claims=allowed)
                for sims, refs, allowed in zip(
                    misconception_sims, prepared.misconceptions, allowed_for, strict=True,
                )
            ],
        ),
        sentence_scores=sentence_scores,
        criterion_candidates=tuple(criterion_candidates),
        misconception_candidates=misconception_candidates,
        near_misses=tuple(near_miss(c, decider.criterion if decider else None) for c in criterion_candidates),
    )
