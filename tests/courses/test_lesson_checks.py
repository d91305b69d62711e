"""Checks inside lessons: short questions answered in place (htmx, or a plain form post without
JavaScript), the worked answer shown after answering, and the count in the learner's progress."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from courses.models import Lesson
from questions.models import Attempt, ReviewCard

LESSON = "/learn/lessons/moe-and-expert-parallelism/"
NUMERIC = "moe-experts-touched-batch"
CHOICE = "moe-memory-check"


@pytest.fixture
def repository_content(db):
    call_command("sync_content")


def _check_url(question: str, lesson: str = "moe-and-expert-parallelism") -> str:
    return f"/learn/lessons/{lesson}/checks/{question}/"


def test_every_lesson_has_two_or_three_short_checks(repository_content):
    from questions.models import Question

    lesson = Lesson.objects.get(slug="moe-and-expert-parallelism")
    assert lesson.checks == [CHOICE, NUMERIC]
    lessons = list(Lesson.objects.live())
    assert len(lessons) == 18
    for lesson in lessons:
        assert 2 <= len(lesson.checks) <= 3, lesson.slug
        kinds = set(Question.objects.live().filter(slug__in=lesson.checks).values_list("kind", flat=True))
        assert Question.objects.live().filter(slug__in=lesson.checks).count() == len(lesson.checks)
        # Short questions: a number or a choice, answered in a line.
        assert kinds <= {"numeric", "multiple_choice"}, (lesson.slug, kinds)


def test_a_learner_sees_the_checks_with_forms_and_no_answer_yet(client, repository_content, user):
    client.force_login(user)
    html = client.get(LESSON).content.decode()
    assert "Check yourself" in html
    assert 'id="check-moe-experts-touched-batch"' in html
    assert "Check my answer" in html
    assert "Worked answer" not in html
    assert "Checks answered in this lesson: 0 of 2" in html
    # The checks close the lesson's text, before its references.
    assert html.index('id="checks-title"') < html.index('<h2 id="references"')


def test_answering_in_place_with_htmx_shows_score_and_worked_answer(client, repository_content, user):
    client.force_login(user)
    response = client.post(_check_url(NUMERIC), {"answer": "about 222 experts"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="check-moe-experts-touched-batch"' in html
    assert "Your last answer scored 100%" in html
    assert "Worked answer" in html and "0.96875" in html  # the worked solution
    # The progress panel is refreshed out of band with the new count.
    assert 'hx-swap-oob="outerHTML:#progress-panel"' in html
    assert "Checks answered in this lesson: 1 of 2" in html
    attempt = Attempt.objects.get(user=user, question__slug=NUMERIC)
    assert attempt.follow_up == "" and attempt.score == attempt.max_score
    assert ReviewCard.objects.filter(user=user, question__slug=NUMERIC).exists()


def test_without_javascript_the_post_returns_to_the_check(client, repository_content, user):
    client.force_login(user)
    response = client.post(_check_url(CHOICE), {"answer": "1"})
    assert response.status_code == 302
    assert response["Location"] == f"{LESSON}#check-{CHOICE}"
    html = client.get(LESSON).content.decode()
    assert "Your last answer scored 0%" in html  # choice 1 is the 6.7 GB trap
    assert "every expert must be resident" in html  # the worked answer, after answering
    assert "Checks answered in this lesson: 1 of 2" in html


def test_an_empty_answer_is_refused_in_place(client, repository_content, user):
    client.force_login(user)
    response = client.post(_check_url(NUMERIC), {"answer": "  "}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert 'role="alert"' in response.content.decode()
    assert not Attempt.objects.exists()


def test_only_the_lessons_own_checks_can_be_answered_there(client, repository_content, user):
    client.force_login(user)
    assert client.post(_check_url("mla-cache-per-token"), {"answer": "68.6 KiB"}).status_code == 404
    assert client.post(_check_url(NUMERIC, lesson="nope"), {"answer": "222"}).status_code == 404
    assert not Attempt.objects.exists()


def test_anonymous_visitors_read_the_checks_and_are_asked_to_log_in(client, repository_content):
    html = client.get(LESSON).content.decode()
    assert "Check yourself" in html
    assert "to answer here and see the worked answer" in html
    assert "Check my answer" not in html
    response = client.post(_check_url(NUMERIC), {"answer": "222"})
    assert response.status_code == 302 and "/login/" in response["Location"]
    assert not Attempt.objects.exists()


def test_the_choice_buttons_drawn_once_still_tick_each_learners_own_answer(client, repository_content, make_user):
    """A choice question's radio buttons are kept per process once drawn (questions'
    answer_widget tag): the same HTML Django draws, with each learner's own last answer ticked."""
    import re

    from questions.forms import answer_form_for
    from questions.models import Question

    question_page = f"/practice/q/{CHOICE}/"
    fresh = str(answer_form_for(question=Question.objects.get(slug=CHOICE), auto_id=f"check-{CHOICE}-%s")["answer"])
    ticked = re.compile(r'<input type="radio"[^>]*value="(\d)"[^>]*checked')
    client.force_login(make_user("ada"))
    assert fresh in client.get(LESSON).content.decode()
    client.post(question_page, {"answer": "1"})
    assert ticked.findall(client.get(question_page).content.decode()) == ["1"]
    client.force_login(make_user("grace"))
    assert fresh in client.get(LESSON).content.decode()
    assert ticked.findall(client.get(question_page).content.decode()) == []
    client.post(question_page, {"answer": "2"})
    assert ticked.findall(client.get(question_page).content.decode()) == ["2"]
