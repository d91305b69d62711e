"""The Me page: progress per lesson module and per question set, recent lab runs with their
headline figure, and a review count that matches what the review queue lists."""

import re
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from courses.models import Lesson
from questions.models import ReviewCard
from questions.review import due_reviews
from tests.labs.test_runs import load_lab, make_target
from tests.learner_data import give_history

pytestmark = pytest.mark.django_db(transaction=True)


def _text(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split()).replace(" :", ":")


@pytest.fixture
def history(content, scripted_engine, make_user):
    call_command("sync_content", verbosity=0)
    target = make_target(scripted_engine("--ttft-ms", "5", "--gap-ms", "1"))
    return give_history(user=make_user("ada"), lab=load_lab("ttft-vs-output-length"), target=target, tag="ada")


def test_me_shows_progress_per_module_and_per_question_set(client, history):
    client.force_login(history.user)
    html = client.get("/accounts/me/").content.decode()
    modules = _text(re.search(r'data-testid="module-progress">(.*?)</section>', html, re.S).group(1))
    first = Lesson.objects.order_by("order").select_related("module").first()
    total = Lesson.objects.filter(module=first.module).count()
    assert f"{first.module.title} 1 of {total} done" in modules
    sets = _text(re.search(r'data-testid="set-progress">(.*?)</ul>', html, re.S).group(1))
    # The latest answer (the strong one) counts, not the earlier mistaken one.
    assert re.search(r"\S.* 1 of 1 answered · average 100% Every point earned", sets), sets
    assert "Your data: download or delete" in html


def test_me_names_the_weakest_criteria_of_the_latest_answers(client, history):
    from questions.models import Question
    from tests.grading import submit_and_mark

    submit_and_mark(user=history.user, question=Question.objects.get(slug="sample-question"), answer="Decode is slow.")
    client.force_login(history.user)
    html = client.get("/accounts/me/").content.decode()
    sets = _text(re.search(r'data-testid="set-progress">(.*?)</ul>', html, re.S).group(1))
    assert "1 of 1 answered · average 0%" in sets
    earns = Question.objects.get(slug="sample-question").spec["rubric"][0]["earns"]
    assert "Weakest: " in sets and earns in sets


def test_recent_lab_runs_show_their_headline_figure(client, history):
    client.force_login(history.user)
    html = client.get("/accounts/me/").content.decode()
    runs = _text(re.search(r'data-testid="lab-runs">(.*?)</ul>', html, re.S).group(1))
    measured = history.runs[0]
    assert re.search(rf"Run {measured.pk}: .* Succeeded TTFT P50 [\d.,]+ ms · [\d.,]+ output tokens/s", runs), runs


def test_the_review_count_matches_the_queue_at_the_boundary(client, history):
    now = timezone.now()
    end_of_day = now.replace(hour=23, minute=59, second=59, microsecond=0)
    card = ReviewCard.objects.filter(user=history.user).first()
    card.due = min(now + timedelta(minutes=30), end_of_day)  # later today: listed under "Due today"
    card.save()
    client.force_login(history.user)
    queue = client.get("/practice/review/").content.decode()
    listed = due_reviews(user=history.user).count()
    assert listed == 1 and card.question.prompt in queue
    assert "minutes ago" not in queue and ("later today, in" in queue or "due now" in queue)
    me = _text(client.get("/accounts/me/").content.decode())
    assert f"{listed} due for review today" in me


def test_recent_answers_list_the_eight_newest_without_reading_answers_or_question_specs(client, content, make_user):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from questions.models import Question
    from tests.grading import submit_and_mark

    call_command("sync_content", verbosity=0)
    ada = make_user("ada")
    question = Question.objects.get(slug="sample-question")
    older = [submit_and_mark(user=ada, question=question, answer=f"Decode is slow, take {n}.") for n in range(9)]
    newest = submit_and_mark(user=ada, question=question, answer="Decode reads all the weights every step.")
    client.force_login(ada)
    with CaptureQueriesContext(connection) as queries:
        html = client.get("/accounts/me/").content.decode()
    recent = re.search(r"Recent answers</h3>\s*<ul>(.*?)</ul>", html, re.S).group(1)
    assert recent.count('href="/practice/attempts/') == 8
    assert f'href="{newest.get_absolute_url()}"' in recent and f"{newest.percent}%" in recent
    assert all(f'href="{attempt.get_absolute_url()}"' not in recent for attempt in older[:2])
    assert _text(recent).count(_text(question.prompt)[:40]) == 8
    assert "10 answers graded" in _text(html)
    # However long the learner's answers and the questions' rubrics, the page reads neither.
    sql = " ".join(query["sql"] for query in queries.captured_queries)
    assert '"questions_attempt"."answer"' not in sql and '"questions_question"."spec"' not in sql


def test_an_answer_older_than_stored_rubric_versions_still_names_its_weakest_point(client, history):
    from questions.models import Attempt, Question
    from tests.grading import submit_and_mark

    question = Question.objects.get(slug="sample-question")
    attempt = submit_and_mark(user=history.user, question=question, answer="Decode is slow.")
    Attempt.objects.filter(pk=attempt.pk).update(rubric=None)  # as answers stored before rubric versions were
    client.force_login(history.user)
    html = client.get("/accounts/me/").content.decode()
    sets = _text(re.search(r'data-testid="set-progress">(.*?)</ul>', html, re.S).group(1))
    assert "1 of 1 answered · average 0%" in sets and question.spec["rubric"][0]["earns"] in sets
