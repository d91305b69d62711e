"""What grading returns: a mark sheet per criterion, misconceptions found, and the score."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

DecidedBy = Literal["rubric", "judge", "rubric+judge"]

# Answers that list terms without explaining are held to this share of the marks.
KEYWORD_LIST_CAP = 0.35
# An answer that states a misconception the question lists is held to this share: getting
# the vocabulary right around a wrong model must not read as a pass.
MISCONCEPTION_CAP = 0.50
# An answer that states two or more of the question's misconceptions is held to the keyword-list
# share: it is built on wrong models, and what it gets right is vocabulary around them. Measured
# on every graded round (session 25): a 35% cap for one belief would have marked 37 plain-words
# answers that carry one false flag as failures; with two beliefs it changes only fluent wrong
# answers.
SEVERAL_MISCONCEPTIONS_CAP = 0.35


@dataclass(frozen=True)
class CriterionResult:
    id: str
    met: bool
    points: int
    awarded: float
    feedback: str
    evidence: str | None = None
    evidence_span: tuple[int, int] | None = None
    decided_by: DecidedBy = "rubric"
    # A missed point's near miss: the learner's own sentence that came closest to it in meaning,
    # where the decision model put it near its threshold (semantic.NEAR_MISS_FROM). The mark
    # sheet quotes it so a learner who made the point in other words can see what was read,
    # and challenge the mark.
    closest: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "met": self.met,
            "points": self.points,
            "awarded": self.awarded,
            "feedback": self.feedback,
            "evidence": self.evidence,
            "evidence_span": list(self.evidence_span) if self.evidence_span else None,
            "decided_by": self.decided_by,
            **({"closest": self.closest} if self.closest else {}),
        }


@dataclass(frozen=True)
class MisconceptionHit:
    id: str
    correction: str
    evidence: str | None = None
    evidence_span: tuple[int, int] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "correction": self.correction,
            "evidence": self.evidence,
            "evidence_span": list(self.evidence_span) if self.evidence_span else None,
        }


@dataclass(frozen=True)
class GradeResult:
    score: float
    max_score: int
    criteria: tuple[CriterionResult, ...] = field(default_factory=tuple)
    misconceptions: tuple[MisconceptionHit, ...] = field(default_factory=tuple)
    capped_reason: str | None = None
    rubric_version: str = ""
    # The share of max_score the answer is held to when capped_reason is set.
    cap: float = KEYWORD_LIST_CAP

    @property
    def fraction(self) -> float:
        return self.score / self.max_score if self.max_score else 0.0

    def criterion(self, criterion_id: str) -> CriterionResult:
        for result in self.criteria:
            if result.id == criterion_id:
                return result
        raise KeyError(criterion_id)

    def to_dict(self) -> dict[str, Any]:
        return {
            "score": self.score,
            "max_score": self.max_score,
            "criteria": [c.to_dict() for c in self.criteria],
            "misconceptions": [m.to_dict() for m in self.misconceptions],
            "capped_reason": self.capped_reason,
            "rubric_version": self.rubric_version,
        }


def total(
    *, criteria: tuple[CriterionResult, ...], capped_reason: str | None,
    cap: float = KEYWORD_LIST_CAP,
) -> tuple[float, int]:
    """(score, max_score) for a mark sheet, applying the cap when a reason for it is set."""
    max_score = sum(c.points for c in criteria)
    score = sum(c.awarded for c in criteria)
    if capped_reason is not None:
        score = min(score, cap * max_score)
    return round(score, 2), max_score


def with_criteria(
    result: GradeResult, *, criteria: tuple[CriterionResult, ...],
) -> GradeResult:
    score, max_score = total(
        criteria=criteria, capped_reason=result.capped_reason, cap=result.cap,
    )
    return replace(result, criteria=criteria, score=score, max_score=max_score)
