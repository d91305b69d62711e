"""Multiple-choice answers: the indexes of the chosen options."""

from __future__ import annotations

import re

from questions.bank import Question
from questions.grading.results import CriterionResult, GradeResult, total

CHOICE_CRITERION = "choice"
CHOICE_POINTS = 1


class ChoiceError(ValueError):
    """The answer does not name options of this question."""


def parse_choices(answer: str, *, count: int) -> frozenset[int]:
    """Zero-based option indexes from "2", "0,2", "[0, 2]" or letters "B", "a, c".

    Digits are zero-based because that is what the answer form submits; letters are for
    people typing at the command line.
    """
    tokens = [t for t in re.split(r"[\s,;\[\]]+", answer.strip()) if t]
    if not tokens:
        raise ChoiceError("no option chosen")
    chosen: set[int] = set()
    for token in tokens:
        if token.isdigit():
            index = int(token)
        elif len(token) == 1 and token.isalpha():
            index = ord(token.lower()) - ord("a")
        else:
            raise ChoiceError(f"{token!r} is not an option number or letter")
        if not 0 <= index < count:
            raise ChoiceError(f"option {token!r} does not exist (there are {count})")
        chosen.add(index)
    return frozenset(chosen)


def grade_choice(*, question: Question, answer: str) -> GradeResult:
    choices = question.choices
    correct = frozenset(i for i, c in enumerate(choices) if c.correct)
    try:
        chosen = parse_choices(answer, count=len(choices))
    except ChoiceError as error:
        feedback = f"Could not read the choice: {error}."
        chosen = frozenset()
    else:
        lines = [f"You chose: {choices[i].text} — {choices[i].why}" for i in sorted(chosen)]
        lines += [
            f"Correct: {choices[i].text} — {choices[i].why}"
            for i in sorted(correct - chosen)
        ]
        feedback = "\n".join(lines)
    right = len(chosen & correct)
    wrong = len(chosen - correct)
    fraction = max(0.0, (right - wrong) / len(correct))
    result = CriterionResult(
        id=CHOICE_CRITERION, met=chosen == correct, points=CHOICE_POINTS,
        awarded=round(CHOICE_POINTS * fraction, 2), feedback=feedback,
        evidence=", ".join(choices[i].text for i in sorted(chosen)) or None,
    )
    score, max_score = total(criteria=(result,), capped_reason=None)
    return GradeResult(
        score=score, max_score=max_score, criteria=(result,), misconceptions=(),
        capped_reason=None, rubric_version=question.rubric_version,
    )
