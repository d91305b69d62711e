"""Question pages in the public interview-prep format for visitors who are not signed in.

An anonymous visitor sees the question, "An answer that works", the follow-ups with their answers,
"What gets marked up", the lesson section that teaches it with its reading time, the set's other
questions and a link to all of them. A signed-in learner still answers before the answer shows.
"""

from __future__ import annotations

import html as html_lib
import re

import pytest
from django.core.management import call_command

from questions.models import Question


@pytest.fixture
def repository_content(db):
    call_command("sync_content")


def _page(client, slug: str) -> str:
    response = client.get(f"/practice/q/{slug}/")
    assert response.status_code == 200
    return html_lib.unescape(response.content.decode())


def test_anonymous_visitor_sees_the_seed_format(client, repository_content):
    question = Question.objects.get(slug="mla-cache-per-token")
    page = _page(client, "mla-cache-per-token")
    assert question.prompt in page
    assert "An answer that works" in page
    assert question.spec["model_answer"] in page
    follow_up = question.spec["follow_ups"][0]
    assert "Then they push further" in page
    assert follow_up["prompt"] in page and follow_up["model_answer"] in page
    assert "What gets marked up" in page and question.spec["marked_up"] in page
    text = " ".join(re.sub(r"<[^>]+>", "", page).split())
    assert "The section that teaches this is Attention kernels and long context, 30 minutes." in text
    assert "Also asked about Attention kernels & long context" in page
    siblings = Question.objects.live().filter(question_set=question.question_set).exclude(pk=question.pk)
    assert siblings.count() == 5
    for other in siblings:
        assert other.prompt in page
    assert "All 6 questions on Attention kernels & long context" in page
    assert "to answer and get feedback" in page


def test_every_question_page_shows_its_model_answer_and_siblings_to_anyone(client, repository_content):
    questions = list(Question.objects.live().select_related("question_set"))
    assert len(questions) >= 80
    for question in questions:
        page = _page(client, question.slug)
        assert question.spec["model_answer"] in page, question.slug
        total = Question.objects.live().filter(question_set=question.question_set).count()
        assert f"All {total} questions on {question.question_set.title}" in page, question.slug


def test_a_signed_in_learner_still_answers_before_the_reveal(client, repository_content, user):
    client.force_login(user)
    question = Question.objects.get(slug="moe-load-imbalance")
    page = _page(client, question.slug)
    assert question.spec["model_answer"] not in page
    assert "Reveal the model answer anyway" in page
    assert question.spec["follow_ups"][0]["model_answer"] not in page
    # The set's other questions are listed for learners too.
    assert "Also asked about Mixture of experts & expert parallelism" in page
