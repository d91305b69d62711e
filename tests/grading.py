"""What the grading worker does, for tests that need an answer's mark without starting one.

A free-text answer is stored `pending` and marked on the grading queue (questions.tasks
.grade_attempt); these helpers run that same service in the test's process. Tests of the worker
itself (tests/questions/test_grading_worker.py) start a real one.
"""

from questions.models import Attempt
from questions.services import grade_pending_attempt, submit_answer


def mark_pending_answers() -> list[Attempt]:
    """Grade every answer still waiting, as the worker would; the graded attempts, oldest first."""
    pending = Attempt.objects.filter(grade_status=Attempt.GradeStatus.PENDING).order_by("created_at")
    return [grade_pending_attempt(attempt_id=attempt_id) for attempt_id in pending.values_list("pk", flat=True)]


def submit_and_mark(**kwargs) -> Attempt:
    """submit_answer, then the worker's grading: the attempt as the learner sees it once marked."""
    attempt = submit_answer(**kwargs)
    return grade_pending_attempt(attempt_id=attempt.pk) if attempt.grading else attempt
