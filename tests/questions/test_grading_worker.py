"""Free-text answers are marked by a worker on the grading queue, not in the web request: the
answer is stored at once and the learner sees "Marking your answer…" until the mark sheet comes,
by htmx's poll or, without JavaScript, by the page reloading itself. Nothing is lost when no
worker runs: the settler marks what waited too long."""

import os
import re
from datetime import timedelta
from pathlib import Path

import pytest
import redis
from django.conf import settings
from django.core.management import call_command
from django.utils import timezone

from questions import services
from questions.models import Attempt, Question, ReviewCard
from tests.grading import mark_pending_answers
from tests.service_fixtures import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

URL = "/practice/q/sample-question/"
STRONG = (
    "Decode is memory-bound: every step has to read all the weights from HBM to make one token. "
    "With batching the same weight read is shared by every sequence in the batch."
)
REFRESH = 'http-equiv="refresh"'
# The poll: the session's user, then the attempt (with its question and rubric) in one query.
POLL_QUERIES = 3


@pytest.fixture
def bank(content, transactional_db):
    call_command("sync_content", verbosity=0)


def _feedback(client, attempt: Attempt) -> str:
    return client.get(f"/practice/attempts/{attempt.pk}/feedback/", HTTP_HX_REQUEST="true").content.decode()


def test_the_learner_sees_marking_then_the_sheet_a_worker_started_later_grades(
    bank, celery_worker, logged_in_client, user
):
    # No grading worker yet: the answer is stored and queued all the same.
    html = logged_in_client.post(URL, {"answer": STRONG}, HTTP_HX_REQUEST="true").content.decode()
    attempt = Attempt.objects.get(user=user)
    assert attempt.grading and attempt.answer == STRONG
    assert "Marking your answer" in html and f"/practice/attempts/{attempt.pk}/feedback/" in html
    assert "Marking your answer" in _feedback(logged_in_client, attempt)

    worker = celery_worker("grading")
    sheet = wait_for(
        lambda: (text := _feedback(logged_in_client, attempt)) and "Got it" in text and text,
        timeout_s=120,
        message="the grading worker's mark sheet",
    )
    assert "From your answer" in sheet and "hx-trigger" not in sheet  # graded: the polling stops
    # It grades below the web's CPU priority, its session too (nice alone does not hold against
    # gunicorn in another session: core.cpu_priority).
    niceness = settings.GRADING_WORKER_NICENESS
    assert os.getpriority(os.PRIO_PROCESS, worker.pid) == os.nice(0) + niceness
    autogroup = Path(f"/proc/{worker.pid}/autogroup")
    if autogroup.exists():
        assert autogroup.read_text().split()[1:] == ["nice", str(niceness)]
    attempt.refresh_from_db()
    assert attempt.score == attempt.max_score == 3
    assert ReviewCard.objects.filter(user=user, question=attempt.question).exists()
    page = logged_in_client.get(URL).content.decode()
    assert "Got it" in page and REFRESH not in page


def test_a_lost_grading_message_is_marked_by_the_settler_and_the_page_without_javascript_reloads_until_then(
    bank, broker, logged_in_client, user
):
    response = logged_in_client.post(URL, {"answer": STRONG})  # a plain form post, no JavaScript
    assert response.status_code == 302 and response["Location"].endswith(f"{URL}#feedback")
    attempt = Attempt.objects.get(user=user)
    queued = redis.Redis.from_url(broker["url"])
    assert queued.llen(settings.GRADING_QUEUE) == 1
    queued.delete(settings.GRADING_QUEUE)  # the message is lost (a Redis restart, say)

    page = logged_in_client.get(URL).content.decode()
    assert "Marking your answer" in page and f'<noscript><meta {REFRESH} content="2"></noscript>' in page

    assert services.settle_stale_grades() == []  # a fresh answer is left to its worker
    later = timezone.now() + timedelta(seconds=services.GRADE_STALE_AFTER_S + 1)
    assert services.settle_stale_grades(now=later) == [attempt.pk]
    assert services.settle_stale_grades(now=later) == []

    page = logged_in_client.get(URL).content.decode()
    assert "Got it" in page and "Marking your answer" not in page and REFRESH not in page
    assert Attempt.objects.get(pk=attempt.pk).score == 3


def test_an_answer_whose_rubric_cannot_be_loaded_ends_as_could_not_be_marked_and_blocks_no_other(
    bank, broker, logged_in_client, user, monkeypatch
):
    """Nothing can mark an answer whose stored rubric no longer loads: the settler gives up on it
    (a terminal status the learner sees, their answer kept) instead of leaving it pending, where
    it would show "being marked" forever and a batch of them would hold up every later answer."""
    from questions.rubrics import RubricUnavailable

    logged_in_client.post(URL, {"answer": STRONG})
    stuck = Attempt.objects.get(user=user)
    redis.Redis.from_url(broker["url"]).delete(settings.GRADING_QUEUE)  # nothing will grade it

    def unloadable(**kwargs):
        raise RubricUnavailable("the criteria of version 1 are gone")

    monkeypatch.setattr(services, "gradable_from", unloadable)
    monkeypatch.setattr(services, "GRADE_SETTLE_BATCH", 1)  # so it would block the next one's batch
    later = timezone.now() + timedelta(seconds=services.GRADE_STALE_AFTER_S + 1)
    assert services.settle_stale_grades(now=later) == [stuck.pk]
    stuck.refresh_from_db()
    assert stuck.grade_status == Attempt.GradeStatus.UNMARKABLE and stuck.answer == STRONG
    assert not ReviewCard.objects.filter(user=user).exists()  # no score, no review schedule

    page = logged_in_client.get(URL).content.decode()
    assert "Could not be marked" in page and "Marking your answer" not in page and REFRESH not in page
    assert STRONG in page  # kept in the answer box, to send again
    assert "could not be marked" in logged_in_client.get("/accounts/me/").content.decode()
    sheet = _feedback(logged_in_client, stuck)
    assert 'data-testid="mark-sheet-unmarkable"' in sheet and "hx-get" not in sheet  # no more polling
    attempt_page = logged_in_client.get(stuck.get_absolute_url()).content.decode()
    assert STRONG in attempt_page and "Could not be marked" in attempt_page

    # The next stale answer, whose rubric loads, is marked on the next run, not held up.
    monkeypatch.undo()
    logged_in_client.post(URL, {"answer": STRONG + " Again."})
    redis.Redis.from_url(broker["url"]).delete(settings.GRADING_QUEUE)
    second = Attempt.objects.get(user=user, grade_status=Attempt.GradeStatus.PENDING)
    later = timezone.now() + timedelta(seconds=services.GRADE_STALE_AFTER_S + 1)
    assert services.settle_stale_grades(now=later) == [second.pk]
    assert Attempt.objects.get(pk=second.pk).score == 3


def test_the_settler_runs_on_beats_schedule():
    scheduled = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert "questions.tasks.settle_stale_grades" in scheduled


def test_with_the_broker_unreachable_the_answer_is_graded_in_the_request(bank, logged_in_client, user, monkeypatch):
    def unreachable(**kwargs):
        raise ConnectionError("Error 111 connecting to redis")

    monkeypatch.setattr(services, "send", unreachable)
    html = logged_in_client.post(URL, {"answer": STRONG}, HTTP_HX_REQUEST="true").content.decode()
    assert "Got it" in html and "Marking your answer" not in html
    assert Attempt.objects.get(user=user).score == 3


def test_grading_twice_marks_once(bank, broker, user):
    question = Question.objects.get(slug="sample-question")
    attempt = services.submit_answer(user=user, question=question, answer=STRONG)
    first = services.grade_pending_attempt(attempt_id=attempt.pk)
    card = ReviewCard.objects.get(user=user)
    second = services.grade_pending_attempt(attempt_id=attempt.pk)  # a re-delivered message
    assert first.score == second.score == 3
    assert ReviewCard.objects.get(user=user).card == card.card  # not reviewed twice


def test_only_the_learner_who_answered_can_poll_for_the_mark(bank, broker, client, make_user):
    ada, grace = make_user("ada"), make_user("grace")
    client.force_login(ada)
    client.post(URL, {"answer": STRONG})
    attempt = Attempt.objects.get(user=ada)
    client.force_login(grace)
    for path in (f"/practice/attempts/{attempt.pk}/feedback/", f"/practice/attempts/{attempt.pk}/check-result/"):
        assert client.get(path).status_code == 404
    client.logout()
    response = client.get(f"/practice/attempts/{attempt.pk}/feedback/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_the_poll_is_a_few_queries_and_never_grades(
    bank, broker, logged_in_client, user, monkeypatch, django_assert_max_num_queries
):
    logged_in_client.post(URL, {"answer": STRONG}, HTTP_HX_REQUEST="true")
    attempt = Attempt.objects.get(user=user)

    def no_grading(**kwargs):
        raise AssertionError("the poll graded")

    monkeypatch.setattr(services, "grade", no_grading)
    for path in (f"/practice/attempts/{attempt.pk}/feedback/", f"/practice/attempts/{attempt.pk}/check-result/"):
        with django_assert_max_num_queries(POLL_QUERIES):
            assert "Marking your answer" in logged_in_client.get(path, HTTP_HX_REQUEST="true").content.decode()
    monkeypatch.undo()
    mark_pending_answers()
    with django_assert_max_num_queries(POLL_QUERIES):
        assert "Got it" in _feedback(logged_in_client, attempt)
    with django_assert_max_num_queries(POLL_QUERIES):
        line = logged_in_client.get(f"/practice/attempts/{attempt.pk}/check-result/").content.decode()
    assert "Your last answer scored 100%" in line and "hx-get" not in line


def test_the_me_page_and_history_say_being_marked_until_the_mark_is_in(bank, broker, logged_in_client, user):
    logged_in_client.post(URL, {"answer": STRONG})
    logged_in_client.post(URL, {"answer": STRONG + " Again."})
    me = logged_in_client.get("/accounts/me/").content.decode()
    assert '<span class="badge">being marked</span>' in me and ">0%</span>" not in me
    assert "being marked" in logged_in_client.get(URL).content.decode()  # the attempts list
    mark_pending_answers()
    me = logged_in_client.get("/accounts/me/").content.decode()
    assert "being marked" not in me and ">100%</span>" in me


def test_make_run_and_compose_start_a_worker_on_the_grading_queue():
    import sys
    from pathlib import Path

    from scripts.services import worker_commands

    argv = dict(worker_commands(python=sys.executable))["worker:grading"]
    assert argv[argv.index("-Q") + 1] == settings.GRADING_QUEUE
    # docker compose's worker service runs the same list of workers.
    compose = (Path(__file__).resolve().parents[2] / "docker-compose.yml").read_text()
    assert 'command: ["python", "-m", "scripts.services", "worker"]' in compose


def test_the_pending_sheet_asks_less_often_the_longer_the_queue_keeps_it_waiting(
    bank, broker, logged_in_client, user, monkeypatch
):
    import time
    from types import SimpleNamespace

    from core import page_cache

    def delay_ms() -> int:
        return int(re.search(r'hx-trigger="load delay:(\d+)ms"', _feedback(logged_in_client, attempt)).group(1))

    def wait(seconds: float) -> None:
        """Time passes: the answer was stored longer ago, and a poll answer kept for a second
        (core.page_cache) has aged as much."""
        Attempt.objects.filter(pk=attempt.pk).update(created_at=timezone.now() - timedelta(seconds=seconds))
        later = time.monotonic() + seconds
        monkeypatch.setattr(page_cache, "time", SimpleNamespace(monotonic=lambda: later))

    logged_in_client.post(URL, {"answer": STRONG})
    attempt = Attempt.objects.get(user=user)
    assert delay_ms() == 300  # a mark usually comes within half a second
    wait(4)
    assert 1000 <= delay_ms() < 1200  # a quarter of the time waited
    wait(5 * 60)
    assert delay_ms() == 2000


def test_with_eager_tasks_an_answer_is_marked_in_the_request(bank, logged_in_client, user, monkeypatch):
    """CELERY_TASK_ALWAYS_EAGER (no broker, no worker: a quick local try-out) grades at once."""
    from config.celery import app

    monkeypatch.setitem(app.conf, "task_always_eager", True)
    html = logged_in_client.post(URL, {"answer": STRONG}, HTTP_HX_REQUEST="true").content.decode()
    assert "Got it" in html and "Marking your answer" not in html
