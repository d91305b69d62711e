"""Numeric answers: find the learner's number, convert it, compare within a relative tolerance."""

from __future__ import annotations

from questions.bank import Question
from questions.grading.free_text import grade_rubric
from questions.grading.results import CriterionResult, GradeResult, MisconceptionHit, total
from questions.grading.units import UNITS, Quantity, Unit, convert, find_quantities, swapped_family, unit

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


# How a bare number's assumed unit is said in feedback ("read as bytes").
_SPOKEN = {"B": "bytes", "s": "seconds", "B/s": "bytes/s", "FLOP": "FLOPs"}


def _spoken(unit_name: str) -> str:
    return _SPOKEN.get(unit_name, unit_name)


def _needs_unit(target: Unit) -> bool:
    """Whether a bare number is ambiguous: its dimension has units of other sizes (KiB vs
    bytes, ms vs s); a count of experts or tokens has none."""
    return any(u.dimension == target.dimension and u.factor != target.factor for u in UNITS.values())


def _base_unit(target: Unit) -> Unit | None:
    """The unit a bare number is most often written in for the target's dimension (bytes, s)."""
    for candidate in UNITS.values():
        if candidate.dimension == target.dimension and candidate.factor == 1:
            return candidate
    return None


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
    # A bare number that is right (read in the question's unit or in the dimension's base unit,
    # "131072" for 128 KiB) earns half the value's points: in an interview the unit is part of
    # the answer, and "131072" could be bytes or KiB.
    unit_missing: str | None = None
    for quantity, value in picks:
        if _within(value, spec.value, spec.tolerance):
            met, chosen = True, (quantity, value)
            if quantity.unit is None and _needs_unit(target):
                unit_missing = target.name
            if quantity.unit and quantity.unit.family and target.family not in (
                None, quantity.unit.family,
            ):
                note = _family_note(written=quantity.unit, exact=target)
            break
    base = _base_unit(target)
    if not met and base is not None and base != target:
        for quantity, _ in picks:
            if quantity.unit is not None:
                continue
            value = convert(value=quantity.value, from_unit=base, to_unit=target)
            if _within(value, spec.value, spec.tolerance):
                met, chosen, unit_missing = True, (quantity, value), _spoken(base.name)
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
        if unit_missing:
            ambiguity = (
                f"Without a unit the number could mean {_spoken(base.name)} or {spec.unit}"
                if base is not None and base != target
                else "A number without its unit is half an answer"
            )
            feedback = (
                f"Right number, say the unit: {quantity.text} read as {unit_missing} is "
                f"{_format(value)} {spec.unit}, expected {expected}. {ambiguity}, so it earns "
                f"half the points; write "
                f"\"{_format(spec.value)} {spec.unit}\".\n\nWorked solution:\n{spec.solution}"
            )
        elif met:
            feedback = (
                f"Right: {read}, expected {expected}.{note}\n\nWorked solution:\n{spec.solution}"
            )
        else:
            feedback = (
                f"Not quite: {read}, expected {expected}.\n\nWorked solution:\n{spec.solution}"
            )

    awarded = (spec.points / 2 if unit_missing else spec.points) if met else 0
    value_result = CriterionResult(
        id=VALUE_CRITERION, met=met and not unit_missing, points=spec.points, awarded=awarded,
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
