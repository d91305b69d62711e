"""A learner challenging their mark, and staff settling the challenge.

On blind answers the rubric grader marks about five answers in six right (README, "How free-text
answers are graded, and how well"); the misses are mostly points said in plain words and not
credited, and misconceptions flagged or missed. A learner who knows they made the point can say
so: which missed points their answer made, which flagged misconceptions it did not state, and
why. The mark stays the grader's; staff uphold or reject the challenge and the learner sees the
outcome on the mark sheet.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from core.learner_state import renew_learner_state
from questions.models import Attempt, MarkChallenge
from questions.selectors import current_rubric_version

MAX_NOTE_CHARS = 1000


def challengeable(*, attempt: Attempt) -> tuple[list[dict], list[dict]]:
    """What the learner can dispute: the criteria not fully awarded and the misconceptions
    flagged, each as {"id", "position"} in mark-sheet order (the page sends positions, never
    ids)."""
    criteria = [
        {"id": item["id"], "position": position}
        for position, item in enumerate(attempt.result.get("criteria", []))
        if (item.get("awarded") or 0) < (item.get("points") or 0)
    ]
    misconceptions = [
        {"id": item.get("id", ""), "position": position}
        for position, item in enumerate(attempt.result.get("misconceptions", []))
    ]
    return criteria, misconceptions


def challenge_mark(
    *, user: AbstractBaseUser, attempt: Attempt, criteria: Sequence[int], misconceptions: Sequence[int],
    note: str,
) -> MarkChallenge:
    """Record (or, while staff have not settled it, replace) the learner's challenge of a mark.

    `criteria` and `misconceptions` are mark-sheet positions from `challengeable`. Raises
    ValidationError naming what was wrong."""
    if attempt.user_id != user.pk:
        raise ValidationError("You can only challenge the mark of your own answer.", code="not_owner")
    if attempt.grading:
        raise ValidationError("This answer is still being marked: challenge the mark once it is in.", code="pending")
    note = (note or "").strip()
    if len(note) > MAX_NOTE_CHARS:
        raise ValidationError(
            f"Your note is {len(note):,} characters; the limit is {MAX_NOTE_CHARS:,}.", code="note_too_long"
        )
    open_criteria, flagged = challengeable(attempt=attempt)
    by_position = {item["position"]: item["id"] for item in open_criteria}
    flagged_by_position = {item["position"]: item["id"] for item in flagged}
    unknown = [p for p in criteria if p not in by_position]
    unknown += [p for p in misconceptions if p not in flagged_by_position]
    if unknown:
        raise ValidationError(
            "Only points the mark sheet shows as missed or partly met, and misconceptions it flagged, "
            "can be challenged.",
            code="unknown_item",
        )
    if not criteria and not misconceptions:
        raise ValidationError(
            "Tick at least one point you made or one misconception you did not state.", code="empty"
        )
    with transaction.atomic():
        existing = MarkChallenge.objects.select_for_update().filter(attempt=attempt).first()
        if existing is not None and existing.status != MarkChallenge.Status.OPEN:
            raise ValidationError("Staff have already settled your challenge of this mark.", code="settled")
        challenge, _ = MarkChallenge.objects.update_or_create(
            attempt=attempt,
            defaults={
                "criteria": [by_position[p] for p in sorted(set(criteria))],
                "misconceptions": [flagged_by_position[p] for p in sorted(set(misconceptions))],
                "note": note,
            },
        )
    return challenge


def settle_challenges(*, challenges: Sequence[MarkChallenge], upheld: bool, staff_note: str = "") -> int:
    """Staff's decision on open challenges; settled ones are left as they are. Returns how many
    were settled."""
    status = MarkChallenge.Status.UPHELD if upheld else MarkChallenge.Status.REJECTED
    ids = [c.pk for c in challenges if c.status == MarkChallenge.Status.OPEN]
    with transaction.atomic():
        fields = {"status": status, "resolved_at": timezone.now()}
        if staff_note:
            fields["staff_note"] = staff_note
        settled = MarkChallenge.objects.filter(pk__in=ids, status=MarkChallenge.Status.OPEN).update(**fields)
        # A queryset update sends no signal: the learners' kept pages must still see the outcome.
        renew_learner_state(
            user_ids=list(Attempt.objects.filter(challenge__pk__in=ids).values_list("user_id", flat=True).distinct())
        )
    return settled


def upheld_as_labelled_answers() -> tuple[dict[str, list[dict]], int]:
    """Every upheld challenge as a labelled answer for the evaluation set, by question slug:
    {"id", "follow_up", "text", "expected", "misconceptions"}. A point is labelled made when the
    grader credited it or staff upheld the learner's claim to it; a flagged misconception stays
    labelled unless the learner disputed it. Only answers marked with the rubric version their
    question grades with today are exported (an older version's labels may not fit today's
    criteria); the second value counts those left out. No name or account goes with the text."""
    by_question: dict[str, list[dict]] = {}
    skipped = 0
    upheld = (
        MarkChallenge.objects.filter(status=MarkChallenge.Status.UPHELD)
        .select_related("attempt", "attempt__question")
        .order_by("attempt_id")
    )
    for challenge in upheld:
        attempt = challenge.attempt
        if attempt.rubric_version != current_rubric_version(question=attempt.question, follow_up=attempt.follow_up):
            skipped += 1
            continue
        claimed = set(challenge.criteria)
        disputed = set(challenge.misconceptions)
        by_question.setdefault(attempt.question.slug, []).append(
            {
                "id": f"challenge-{attempt.pk}",
                "follow_up": attempt.follow_up,
                "text": attempt.answer,
                "expected": {
                    item["id"]: bool(item.get("met")) or item["id"] in claimed
                    for item in attempt.result.get("criteria", [])
                },
                "misconceptions": [
                    item["id"] for item in attempt.result.get("misconceptions", []) if item.get("id") not in disputed
                ],
            }
        )
    return by_question, skipped
