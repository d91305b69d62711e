"""Shared by the question tests: the rubric grader, remembered per answer for the whole session.

The evaluation tests and the `grading_report` tests grade the same ~2,000 labelled answers of
the development set and the blind rounds, several times over; the grader is deterministic, so
each distinct (question, answer) is graded once per test process and the result reused. Tests
that change the grader's behaviour (thresholds, models) call `grade` directly, not through
`evaluate`, so they never meet a remembered result.
"""

from __future__ import annotations

import pytest

from questions.grading import evaluation


@pytest.fixture(scope="session", autouse=True)
def graded_once_per_session():
    grade = evaluation.rubric_grader
    remembered: dict[tuple[object, str], object] = {}

    def remembering_grader(target, text):
        key = (target, text)
        if key not in remembered:
            remembered[key] = grade(target, text)
        return remembered[key]

    evaluation.rubric_grader = remembering_grader
    yield
    evaluation.rubric_grader = grade
