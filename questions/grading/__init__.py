"""Grading answers to bank questions. Django-free; deterministic unless you call the judge.

    from questions.grading import grade
    result = grade(question=bank.question("prefill-decode-ttft"), answer=text)
    result.score, result.max_score, result.criteria, result.misconceptions

`grade` dispatches on the question type: free text is marked against its rubric (concepts,
relations within a sentence, negation, misconceptions, a cap for keyword lists); numeric
answers are parsed with their units and compared within the tolerance; multiple choice takes
option indexes. The optional LLM judge lives in `questions.grading.judge`.
"""

from __future__ import annotations

from questions.bank import FollowUp, Question
from questions.grading.choice import grade_choice
from questions.grading.free_text import grade_free_text
from questions.grading.numeric import grade_numeric
from questions.grading.results import (
    KEYWORD_LIST_CAP,
    CriterionResult,
    GradeResult,
    MisconceptionHit,
)

__all__ = [
    "KEYWORD_LIST_CAP",
    "CriterionResult",
    "GradeResult",
    "MisconceptionHit",
    "grade",
]


def grade(*, question: Question | FollowUp, answer: str) -> GradeResult:
    """Mark one answer. Deterministic: the same answer and rubric give the same result."""
    if question.type == "free_text":
        return grade_free_text(question=question, answer=answer)
    if not isinstance(question, Question):
        raise TypeError(f"follow-ups are free text, not {question.type}")
    if question.type == "numeric":
        return grade_numeric(question=question, answer=answer)
    return grade_choice(question=question, answer=answer)
