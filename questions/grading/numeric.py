"""Numeric answers: find the learner's number, convert it, compare within a relative tolerance."""

from __future__ import annotations

from questions.bank import Question
from questions.grading.free_text import grade_rubric
from questions.grading.results import CriterionResult, GradeResult, MisconceptionHit, total
from questions.grading.units import Quantity, Unit, convert, find_quantities, swapped_family, unit

VALUE_CRITERION = "value"


def _format(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 1e6 or abs(value) < 1e-3:
        return f"{value:.3g}"
    return f"{value:,.4g}" if abs(value) >= 1000 else f"{value:.4g}"


def _candidates(answer: str, target: Unit) -> list[tuple[Quantity, float]]:
    """Quantities in the answer expressed in the question's unit.

    A number without a unit is read in the question's unit, but only when the answer has no
    number with a compatible unit at all (so "2 x 32 x 8" in the working is not the answer).
    """
    quantities = find_quantities(answer, dimension=target.dimension)
    with_unit = [
        (q, convert(value=q.value, from_unit=q.unit, to_unit=target))
        for q in quantities if q.unit is not None and q.unit.dimension == target.dimension
    ]
    if with_unit:
        return with_unit
    return [(q, q.value) for q in quantities if q.unit is None]


def _family_note(*, written: Unit | None, exact: Unit) -> str:
    name = written.name if written else "a decimal unit"
    return (
        f" You wrote {name} where the exact unit is {exact.name}; close enough here, but "
        "1 GiB is 1.074 GB, so say which one you mean."
    )


def _within(value: float, expected: float, tolerance: float) -> bool:
    if expected == 0:
        return abs(value) <= tolerance
    return abs(value - expected) <= tolerance * abs(expected)


def grade_numeric(*, question: Question, answer: str) -> GradeResult:
    spec = question.numeric
    if spec is None:
        raise ValueError(f"{question.slug} is not a numeric question")
    target = unit(spec.unit)
    expected = f"{_format(spec.value)} {spec.unit} (within {spec.tolerance:.0%})"
    candidates = _candidates(answer, target)
    # The final answer is usually stated first or last; the working sits in between.
    picks = [candidates[0], candidates[-1]] if candidates else []

    met = False
    chosen: tuple[Quantity, float] | None = picks[-1] if picks else None
    note = ""
    for quantity, value in picks:
        if _within(value, spec.value, spec.tolerance):
            met, chosen = True, (quantity, value)
            if quantity.unit and quantity.unit.family and target.family not in (
                None, quantity.unit.family,
            ):
                note = _family_note(written=quantity.unit, exact=target)
            break
    if not met:
        for quantity, _ in picks:
            other = swapped_family(quantity.unit) if quantity.unit else None
            if other is None:
                continue
            value = convert(value=quantity.value, from_unit=other, to_unit=target)
            if _within(value, spec.value, spec.tolerance):
                met, chosen = True, (quantity, value)
                note = _family_note(written=quantity.unit, exact=other)
                break

    if chosen is None:
        feedback = (
            f"No number with a unit found. Expected about {expected}.\n\nWorked solution:\n"
            f"{spec.solution}"
        )
        evidence, span = None, None
    else:
        quantity, value = chosen
        evidence, span = quantity.text, (quantity.start, quantity.end)
        read = f"{quantity.text} = {_format(value)} {spec.unit}"
        if met:
            feedback = (
                f"Right: {read}, expected {expected}.{note}\n\nWorked solution:\n{spec.solution}"
            )
        else:
            feedback = (
                f"Not quite: {read}, expected {expected}.\n\nWorked solution:\n{spec.solution}"
            )

    value_result = CriterionResult(
        id=VALUE_CRITERION, met=met, points=spec.points, awarded=spec.points if met else 0,
        feedback=feedback, evidence=evidence, evidence_span=span,
    )
    working, misconceptions, _ = grade_rubric(
        question=question, answer=answer, apply_keyword_cap=False,
    )
    hits = list(misconceptions)
    if chosen is not None and not met:
        for misconception in question.misconceptions:
            if misconception.value is not None and _within(
                chosen[1], misconception.value, spec.tolerance,
            ):
                hits.append(
                    MisconceptionHit(
                        id=misconception.id, correction=misconception.correction,
                        evidence=evidence, evidence_span=span,
                    ),
                )
    criteria = (value_result, *working)
    score, max_score = total(criteria=criteria, capped_reason=None)
    return GradeResult(
        score=score, max_score=max_score, criteria=criteria, misconceptions=tuple(hits),
        capped_reason=None, rubric_version=question.rubric_version,
    )
