"""A mock interview's progress, kept in the learner's session: which question was shown when,
which were answered (the attempt and the seconds it took) and when it started and finished.

Plain functions over a JSON-serialisable dict, so the view stays thin and the rules are testable.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

SESSION_KEY = "mock_interview"


def start(*, session: Any, set_slug: str, minutes: int, now: datetime) -> dict:
    """A fresh interview: nothing shown, nothing answered."""
    state = {
        "set": set_slug,
        "minutes": minutes,
        "started_at": now.isoformat(),
        "finished_at": None,
        "shown_at": {},
        "answers": {},
    }
    session[SESSION_KEY] = state
    return state


def current(*, session: Any, set_slug: str) -> dict | None:
    state = session.get(SESSION_KEY)
    return state if state and state.get("set") == set_slug else None


def _save(session: Any, state: dict) -> None:
    session[SESSION_KEY] = state
    session.modified = True


def seconds_left(*, session: Any, state: dict, question_slug: str, now: datetime) -> int:
    """Seconds left on this question's clock (never below zero); the clock starts when the
    question is first shown, so reloading the page does not reset it."""
    shown = state["shown_at"].setdefault(question_slug, now.isoformat())
    _save(session, state)
    elapsed = (now - datetime.fromisoformat(shown)).total_seconds()
    return max(0, int(state["minutes"] * 60 - elapsed))


def record_answer(*, session: Any, state: dict, question_slug: str, attempt_id: int, now: datetime) -> None:
    shown = datetime.fromisoformat(state["shown_at"].get(question_slug, now.isoformat()))
    state["answers"][question_slug] = {"attempt": attempt_id, "seconds": max(0, int((now - shown).total_seconds()))}
    _save(session, state)


def finish(*, session: Any, state: dict, now: datetime) -> dict:
    if not state.get("finished_at"):
        state["finished_at"] = now.isoformat()
        _save(session, state)
    return state


def spoken_duration(seconds: int) -> str:
    """"45 s", "3 min 05 s": how long an answer or the whole interview took."""
    minutes, rest = divmod(max(0, seconds), 60)
    return f"{minutes} min {rest:02d} s" if minutes else f"{rest} s"


@dataclass(frozen=True)
class InterviewRow:
    question: Any
    attempt: Any | None  # None: skipped
    seconds: int | None

    @property
    def time_taken(self) -> str:
        return spoken_duration(self.seconds) if self.seconds is not None else ""


@dataclass(frozen=True)
class InterviewSummary:
    rows: list[InterviewRow]
    answered: list[InterviewRow]
    total_seconds: int
    score: float
    max_score: float
    grading: int = 0  # answered, not yet marked

    @property
    def time_taken(self) -> str:
        return spoken_duration(self.total_seconds)

    @property
    def percent(self) -> int:
        return round(100 * self.score / self.max_score) if self.max_score else 0


def summary(*, state: dict, questions: list, attempts_by_id: dict[int, Any]) -> InterviewSummary:
    """Per question: the attempt made in this interview (or skipped) and the time it took."""
    rows = []
    for question in questions:
        answer = state["answers"].get(question.slug)
        attempt = attempts_by_id.get(answer["attempt"]) if answer else None
        rows.append(InterviewRow(question=question, attempt=attempt, seconds=answer["seconds"] if attempt else None))
    answered = [row for row in rows if row.attempt is not None]
    # Scores add up over marked answers only; those still being marked are counted apart (and
    # one that could not be marked counts in neither).
    marked = [row for row in answered if row.attempt.marked]
    started = datetime.fromisoformat(state["started_at"])
    finished = datetime.fromisoformat(state["finished_at"]) if state.get("finished_at") else started
    return InterviewSummary(
        rows=rows,
        answered=answered,
        total_seconds=max(0, int((finished - started).total_seconds())),
        score=sum(row.attempt.score for row in marked),
        max_score=sum(row.attempt.max_score for row in marked),
        grading=sum(1 for row in answered if row.attempt.grading),
    )
