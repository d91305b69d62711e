"""Read-side queries for practice, and access to the parsed question bank."""

import copy
from collections.abc import Sequence

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Count, Max, Q, QuerySet

from core.shared import shared_part
from questions.models import Attempt, ModelAnswerReveal, Question, QuestionSet, ReviewCard, Rubric
from questions.review import due_reviews


def current_rubric_version(*, question: Question, follow_up: str = "") -> str:
    """The content hash of the rubric that grades new answers, as the question row names it."""
    if follow_up:
        item = follow_up_spec(question=question, follow_up=follow_up)
        return item.get("rubric_version", "") if item else ""
    return question.rubric_version


def current_rubric(*, question: Question, follow_up: str = "") -> Rubric | None:
    """The rubric version that grades new answers (as last synced)."""
    version = current_rubric_version(question=question, follow_up=follow_up)
    return Rubric.objects.filter(question=question, content_hash=version).first()


# What a version kept from before rubrics were stored in full (migration 0002) has in common
# with a full one: enough to tell whether the learner-facing rubric changed since.
_LEGACY_FIELDS = ("type", "rubric", "misconceptions", "choices", "numeric")


def graded_with_an_earlier_rubric(*, attempt: Attempt) -> bool:
    current = current_rubric(question=attempt.question, follow_up=attempt.follow_up)
    if attempt.rubric is None or current is None:
        return attempt.rubric_version != current_rubric_version(question=attempt.question, follow_up=attempt.follow_up)
    if attempt.rubric_id == current.pk:
        return False
    if "concepts" not in attempt.rubric.spec:
        return any(attempt.rubric.spec.get(key) != current.spec.get(key) for key in _LEGACY_FIELDS)
    return True


def attempt_criteria(*, attempt: Attempt) -> list[dict]:
    """The criteria the attempt was graded against: its own rubric version, not today's."""
    if attempt.rubric_id is not None:
        return attempt.rubric.criteria
    # Older than stored rubric versions and not linkable: the question's rubric is all we have.
    if attempt.follow_up:
        return (follow_up_spec(question=attempt.question, follow_up=attempt.follow_up) or {}).get("rubric", [])
    return attempt.question.spec.get("rubric", [])


def _live_sets() -> list[QuestionSet]:
    return list(QuestionSet.objects.live().annotate(total=Count("questions", filter=Q(questions__retired=False))))


def set_list(*, user: AbstractBaseUser | AnonymousUser) -> list[QuestionSet]:
    # The sets and their sizes are the same for everyone (once per content version, core.shared);
    # copies, because each request marks its own learner's counts on them.
    sets = [copy.copy(question_set) for question_set in shared_part(name="question-sets", build=_live_sets)]
    if user.is_authenticated:
        answered = dict(
            Attempt.objects.filter(user=user, follow_up="", question__retired=False)
            .values("question__question_set")
            .annotate(n=Count("question", distinct=True))
            .values_list("question__question_set", "n")
        )
        for question_set in sets:
            question_set.answered = answered.get(question_set.pk, 0)
            question_set.percent = round(100 * question_set.answered / question_set.total) if question_set.total else 0
    return sets


def questions_in_set(*, question_set: QuestionSet, user: AbstractBaseUser | AnonymousUser) -> list[Question]:
    questions = list(question_set.questions.live())
    if user.is_authenticated:
        best = dict(
            Attempt.objects.filter(user=user, follow_up="", question__in=questions)
            .values("question")
            .annotate(best=Max("score"))
            .values_list("question", "best")
        )
        for question in questions:
            question.best_score = best.get(question.pk)
    return questions


def check_questions(*, slugs: list[str]) -> list[Question]:
    """A lesson's check questions, live ones only, in the order given (shared by every learner)."""
    found = {q.slug: q for q in Question.objects.live().filter(slug__in=slugs)}
    return [found[slug] for slug in slugs if slug in found]


def latest_main_attempts(*, user: AbstractBaseUser, question_ids: list[int]) -> dict[int, Attempt]:
    """The learner's newest main-answer attempt at each of the questions (a lesson's checks): one
    query reading at most _RECENT_WINDOW rows however often the learner answered, and one more for
    each question last answered before them."""
    if not question_ids:
        return {}
    own = (
        Attempt.objects.filter(user=user, follow_up="", question_id__in=question_ids)
        .only("id", "question_id", "answer", "score", "max_score", "grade_status", "created_at")
        .order_by(*_NEWEST_FIRST)
    )
    recent = list(own[:_RECENT_WINDOW])
    latest: dict[int, Attempt] = {}
    for attempt in recent:
        latest.setdefault(attempt.question_id, attempt)
    if len(recent) == _RECENT_WINDOW:
        for question_id in (pk for pk in question_ids if pk not in latest):
            found = own.filter(question_id=question_id).first()
            if found is not None:
                latest[question_id] = found
    return latest


def set_siblings(*, question: Question) -> list[Question]:
    """The other live questions of the question's set, in the set's order ("Also asked about")."""
    return list(
        question.question_set.questions.live().exclude(pk=question.pk).only("slug", "prompt", "order", "question_set")
    )


# What a score line needs (the question page's "Your attempts"): no answer text, no mark sheet.
_SCORE_LINE_FIELDS = ("id", "user_id", "question_id", "follow_up", "score", "max_score", "grade_status", "created_at")
# The question page lists this many of the learner's newest answers (each links to its page).
HISTORY_LINES = 10
_NEWEST_FIRST = ("-created_at", "-id")


def question_parts(*, question: Question) -> list[str]:
    """What a learner can answer on a question's page: the main question ("") and each follow-up."""
    return ["", *(item["slug"] for item in question.spec.get("follow_ups", []))]


def attempts_for(*, user: AbstractBaseUser, question: Question) -> tuple[list[Attempt], dict[str, Attempt]]:
    """The learner's attempts at a question as its page shows them: the newest main answers as
    score lines (at most HISTORY_LINES), and the newest of the main answer ("") and of each of the
    question's follow-ups in full, with its rubric version for the mark sheet. Two queries,
    each reading a bounded number of rows however often the learner has answered."""
    parts = question_parts(question=question)
    own = Attempt.objects.filter(user=user, question=question)
    recent = _recent_lines(own=own)
    history = [attempt for attempt in recent if not attempt.follow_up][:HISTORY_LINES]
    if len(history) < HISTORY_LINES and len(recent) == _RECENT_WINDOW:  # many follow-up answers
        history = list(own.filter(follow_up="").only(*_SCORE_LINE_FIELDS).order_by(*_NEWEST_FIRST)[:HISTORY_LINES])
    return history, _in_full(ids=_newest_ids(own=own, recent=recent, parts=parts), question=question)


def newest_attempts(*, user: AbstractBaseUser, question: Question, parts: Sequence[str]) -> dict[str, Attempt]:
    """The learner's newest attempt at each of `parts` (the main answer is "", a follow-up its
    slug) in full, with its rubric version; two queries at most, none when `parts` is empty."""
    if not parts:
        return {}
    own = Attempt.objects.filter(user=user, question=question)
    return _in_full(ids=_newest_ids(own=own, recent=_recent_lines(own=own), parts=parts), question=question)


# The newest attempt of each part is looked for among this many of the learner's newest answers
# to the question (score lines only: a few columns, no answer text or mark sheet).
_RECENT_WINDOW = 30


def _recent_lines(*, own: QuerySet[Attempt]) -> list[Attempt]:
    return list(own.only(*_SCORE_LINE_FIELDS).order_by(*_NEWEST_FIRST)[:_RECENT_WINDOW])


def _newest_ids(*, own: QuerySet[Attempt], recent: list[Attempt], parts: Sequence[str]) -> dict[str, int]:
    newest: dict[str, int] = {}
    for attempt in recent:
        newest.setdefault(attempt.follow_up, attempt.pk)
    if len(recent) == _RECENT_WINDOW:
        # A part last answered before the window (a follow-up, then thirty main answers): a query each.
        for part in (part for part in parts if part not in newest):
            found = own.filter(follow_up=part).order_by(*_NEWEST_FIRST).values_list("pk", flat=True).first()
            if found is not None:
                newest[part] = found
    return {part: newest[part] for part in parts if part in newest}


def _in_full(*, ids: dict[str, int], question: Question) -> dict[str, Attempt]:
    if not ids:
        return {}
    rows = Attempt.objects.filter(pk__in=ids.values()).select_related("rubric")
    full = {attempt.follow_up: attempt for attempt in rows}
    for attempt in full.values():
        attempt.question = question  # the mark sheet reads its spec: the caller's, not a query each
    return full


def recent_attempts(*, user: AbstractBaseUser, limit: int) -> list[Attempt]:
    """The learner's newest answers as the Me page lists them: a score line and the question's
    prompt each; no answer text, mark sheet or question spec is read."""
    return list(
        Attempt.objects.filter(user=user)
        .select_related("question")
        .only(*_SCORE_LINE_FIELDS, "question", "question__prompt")
        .order_by(*_NEWEST_FIRST)[:limit]
    )


def attempt_count(*, user: AbstractBaseUser) -> int:
    return Attempt.objects.filter(user=user).count()


def reviews_due_count(*, user: AbstractBaseUser) -> int:
    """As many as the review queue lists under "Due today" (the same query)."""
    return due_reviews(user=user).count()


def may_see_model_answer(*, user: AbstractBaseUser | AnonymousUser, question: Question) -> bool:
    """The model answer stays hidden until the learner has attempted or chose to reveal it."""
    if not user.is_authenticated:
        return False
    return (
        Attempt.objects.filter(user=user, question=question, follow_up="").exists()
        or ModelAnswerReveal.objects.filter(user=user, question=question).exists()
    )


def revealed_model_answer(*, user: AbstractBaseUser | AnonymousUser, question: Question) -> bool:
    """Whether the learner chose to see the model answer before attempting (one query)."""
    return user.is_authenticated and ModelAnswerReveal.objects.filter(user=user, question=question).exists()


def questions_by_slug(*, slugs: list[str]) -> list[Question]:
    """Live questions in the order given (a lesson's practice list, a lab's questions); unknown slugs are skipped."""
    found = {q.slug: q for q in Question.objects.live().filter(slug__in=slugs).only("slug", "prompt", "difficulty")}
    return [found[slug] for slug in slugs if slug in found]


def follow_up_spec(*, question: Question, follow_up: str) -> dict | None:
    for item in question.spec.get("follow_ups", []):
        if item.get("slug") == follow_up:
            return item
    return None


def _iso(value) -> str | None:
    return value.isoformat() if value else None


def _challenge_export(attempt: Attempt) -> dict | None:
    challenge = getattr(attempt, "challenge", None)
    if challenge is None:
        return None
    return {
        "criteria": challenge.criteria, "misconceptions": challenge.misconceptions, "note": challenge.note,
        "status": challenge.status, "staff_note": challenge.staff_note,
        "created_at": _iso(challenge.created_at), "resolved_at": _iso(challenge.resolved_at),
    }


def practice_export(*, user: AbstractBaseUser) -> dict[str, list[dict]]:
    """The learner's answers with their mark sheets, revealed model answers and review cards, for
    their data export (docs/data-export.md)."""
    return {
        "attempts": [
            {
                "id": attempt.pk,
                "question": attempt.question.slug,
                "question_prompt": attempt.question.prompt,
                "follow_up": attempt.follow_up,
                "answer": attempt.answer,
                "score": attempt.score,
                "max_score": attempt.max_score,
                "percent": attempt.percent,
                "rubric_version": attempt.rubric_version,
                # "pending" while the grading worker has not marked it (score 0, mark sheet empty).
                "grade_status": attempt.grade_status,
                # The mark sheet as graded: per-criterion results with their evidence, misconceptions.
                "mark_sheet": attempt.result,
                "judge_status": attempt.judge_status,
                "judge_result": attempt.judge_result,
                "flagged_for_review": attempt.flagged_for_review,
                "challenge": _challenge_export(attempt),
                "created_at": _iso(attempt.created_at),
            }
            for attempt in (
                Attempt.objects.filter(user=user).select_related("question", "challenge").order_by("created_at")
            )
        ],
        "model_answers_revealed": [
            {"question": reveal.question.slug, "revealed_at": _iso(reveal.revealed_at)}
            for reveal in ModelAnswerReveal.objects.filter(user=user).select_related("question").order_by("revealed_at")
        ],
        "review_cards": [
            {"question": card.question.slug, "due": _iso(card.due), "last_rating": card.last_rating,
             "fsrs_card": card.card}
            for card in ReviewCard.objects.filter(user=user).select_related("question").order_by("due")
        ],
    }


def review_card_count(*, user: AbstractBaseUser) -> int:
    return ReviewCard.objects.filter(user=user).count()


# Criteria the grader adds that are not rubric rows: what each one earns, in the learner's words.
_GRADER_CRITERIA = {
    "value": "The number, with its unit{unit}.",
    "choice": "Picks the right option.",
}


def _misconception_names(*, attempt: Attempt) -> dict[str, str]:
    """Learner-facing names of the misconceptions this attempt could have shown, by id."""
    spec = attempt.question.spec
    if attempt.follow_up:
        spec = follow_up_spec(question=attempt.question, follow_up=attempt.follow_up) or {}
    return {item["id"]: item.get("name") or "" for item in spec.get("misconceptions", []) if item.get("id")}


def _status(*, awarded: float, points: float) -> str:
    if points and awarded >= points:
        return "met"
    return "partly" if awarded > 0 else "missed"


def mark_sheet(*, attempt: Attempt) -> dict:
    """What the mark sheet shows: every criterion with its points and status (met, partly,
    missed), including the value row of a numeric question, and the misconceptions by name.

    Built from the attempt's own rubric version, so an old mark sheet shows its own criteria.
    Ids (criterion and misconception slugs) never reach the page.
    """
    names = _misconception_names(attempt=attempt)
    earns = {criterion["id"]: criterion.get("earns", "") for criterion in attempt_criteria(attempt=attempt)}
    unit = (attempt.question.spec.get("numeric") or {}).get("unit", "") if not attempt.follow_up else ""

    def readable(text: str) -> str:
        # Stored feedback may quote a misconception by its id ("misconception 'swapped-bounds'").
        for misconception_id, name in names.items():
            if name:
                text = text.replace(f"misconception '{misconception_id}'", f"misconception “{name}”")
        return text

    results = {item["id"]: item for item in attempt.result.get("criteria", [])}
    # The grader's own rows (the value, the choice) first, then the rubric's in its order.
    order = [cid for cid in results if cid not in earns] + [cid for cid in earns]
    rows = []
    for criterion_id in order:
        outcome = results.get(criterion_id, {})
        points = outcome.get("points", 0)
        awarded = outcome.get("awarded") or 0
        template = _GRADER_CRITERIA.get(criterion_id, "")
        rows.append(
            {
                **outcome,
                "earns": earns.get(criterion_id) or template.format(unit=f" ({unit})" if unit else ""),
                "awarded": awarded,
                "points": points,
                "status": _status(awarded=awarded, points=points),
                "feedback": readable(outcome.get("feedback", "")),
                "kind": "value" if criterion_id == "value" else "working" if unit else "point",
            }
        )
    misconceptions = [
        {**hit, "name": names.get(hit.get("id", "")) or "A common misconception"}
        for hit in attempt.result.get("misconceptions", [])
    ]
    # A cap (misconception, keyword list) is a ceiling: "Score capped" only where it lowered the
    # score, or a sheet scoring 1 / 6 would say it was held down to 50%.
    earned = sum(row["awarded"] for row in rows)
    cap_lowered_score = attempt.score is not None and earned > float(attempt.score) + 1e-9
    return {"rows": rows, "misconceptions": misconceptions, "cap_lowered_score": cap_lowered_score}


def set_progress(*, user: AbstractBaseUser) -> list[dict]:
    """Per live question set: questions answered of the total, the average score of the latest
    main answer to each, and the weakest criteria (met least often in those answers, by what
    they earn), so the Me page says where to practise next."""
    # Attempts still being marked have no score yet: the average is of marked answers. Which
    # attempt is the newest per question comes from a narrow scan; only those are read in full
    # (mark sheet, rubric), so the page costs the same however often the learner re-answered.
    graded = Attempt.objects.filter(
        user=user, follow_up="", question__retired=False, grade_status=Attempt.GradeStatus.GRADED
    )
    newest: dict[int, int] = {}
    for attempt_id, question_id in graded.order_by("-created_at", "-id").values_list("id", "question_id"):
        newest.setdefault(question_id, attempt_id)
    # The question's spec is read only for an answer older than stored rubric versions.
    full = (
        Attempt.objects.filter(pk__in=newest.values())
        .select_related("question", "rubric")
        .defer("answer", "question__spec")
        if newest
        else []
    )
    latest = {attempt.question_id: attempt for attempt in full}
    by_set: dict[int, list[Attempt]] = {}
    for attempt in latest.values():
        by_set.setdefault(attempt.question.question_set_id, []).append(attempt)
    rows = []
    # The sets and their sizes are shared by everyone (core.shared); the learner's part is above.
    for question_set in shared_part(name="question-sets", build=_live_sets):
        answered = by_set.get(question_set.pk, [])
        tally: dict[str, list[float]] = {}  # earns -> [share of points earned, ...]
        for attempt in answered:
            earns = {criterion["id"]: criterion.get("earns", "") for criterion in attempt_criteria(attempt=attempt)}
            for item in attempt.result.get("criteria", []):
                label = earns.get(item.get("id", ""))
                if label and item.get("points"):
                    tally.setdefault(label, []).append((item.get("awarded") or 0) / item["points"])
        weakest = sorted(
            ((sum(shares) / len(shares), label) for label, shares in tally.items() if sum(shares) < len(shares)),
        )[:2]
        rows.append(
            {
                "set": question_set,
                "answered": len(answered),
                "total": question_set.total,
                "average": round(sum(a.percent for a in answered) / len(answered)) if answered else None,
                "weakest": [label for _, label in weakest],
            }
        )
    return rows
