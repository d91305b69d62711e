"""The mock interview as a real interview: fresh questions, a clock that never goes negative, an
end page with each question's score and time, and only answered questions sent to review."""

import re
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from questions import interview
from questions.models import Question, QuestionSet, ReviewCard
from tests.grading import mark_pending_answers

SET = "quantization-inference-optimisation"
URL = f"/practice/sets/{SET}/interview/"
ANSWER = (
    "Prefill processes the whole prompt in parallel, so it is compute-bound and TTFT grows with the prompt. "
    "Decode reads all the weights for every token, so it is memory-bound."
)


@pytest.fixture
def repository_content(db):
    call_command("sync_content")


def _questions():
    return list(QuestionSet.objects.get(slug=SET).questions.live().filter(kind=Question.Kind.FREE_TEXT))


def test_a_question_opens_fresh_even_after_earlier_attempts(client, repository_content, user):
    client.force_login(user)
    first = _questions()[0]
    client.post(first.get_absolute_url(), {"answer": ANSWER})  # an earlier attempt outside the interview
    html = client.get(f"{URL}?minutes=3").content.decode()
    assert first.prompt in html
    assert 'data-testid="mark-sheet"' not in html
    assert "An answer that works" not in html and first.spec["model_answer"][:60] not in html
    assert ANSWER not in html  # the box is empty
    assert 'data-seconds="180"' in html and ">3:00<" in html


def test_the_clock_counts_from_when_the_question_was_shown_and_stops_at_zero(client, repository_content, user):
    client.force_login(user)
    client.get(f"{URL}?minutes=1")
    session = client.session
    state = session[interview.SESSION_KEY]
    slug = _questions()[0].slug
    state["shown_at"][slug] = (timezone.now() - timedelta(minutes=5)).isoformat()
    session[interview.SESSION_KEY] = state
    session.save()
    html = client.get(f"{URL}?step=0").content.decode()
    assert 'data-seconds="0"' in html and ">0:00<" in html
    assert "-0:" not in html


def test_the_end_page_scores_each_question_with_its_time_and_reviews_only_answered(client, repository_content, user):
    client.force_login(user)
    questions = _questions()
    assert len(questions) >= 3
    client.get(f"{URL}?minutes=4")
    response = client.post(f"{URL}?step=0", {"answer": ANSWER})
    assert response.status_code == 302 and response["Location"].endswith("?step=1")
    html = client.get(response["Location"]).content.decode()
    assert questions[1].prompt in html and 'data-testid="mark-sheet"' not in html
    html = client.get(f"{URL}?step={len(questions)}").content.decode()  # skip the rest
    # The answer is still with the grading worker: the end page says so and reloads itself.
    assert "1 answer is still being marked" in " ".join(re.sub(r"<[^>]+>", " ", html).split())
    assert '<meta http-equiv="refresh" content="2">' in html
    mark_pending_answers()
    html = client.get(f"{URL}?step={len(questions)}").content.decode()
    assert 'http-equiv="refresh"' not in html
    summary = " ".join(re.sub(r"<[^>]+>", " ", html).split())
    assert f"You answered 1 of {len(questions)} questions in" in summary
    table = re.search(r'data-testid="interview-scores">(.*?)</table>', html, re.S).group(1)
    rows = re.findall(r"<tr>(.*?)</tr>", table, re.S)[1:]
    texts = [" ".join(re.sub(r"<[^>]+>", " ", row).split()) for row in rows]
    assert re.search(r"\d+(\.\d+)? / \d+ \(\d+%\) \d+ s$", texts[0]), texts[0]
    assert all(text.endswith("skipped –") for text in texts[1:]), texts
    assert "The 1 question you answered is scheduled in the review queue" in summary
    assert "Skipped questions are not scheduled." in summary
    assert list(ReviewCard.objects.filter(user=user).values_list("question__slug", flat=True)) == [questions[0].slug]


def test_skipping_everything_sends_nothing_to_review(client, repository_content, user):
    client.force_login(user)
    client.get(f"{URL}?minutes=4")
    html = client.get(f"{URL}?step=99").content.decode()
    assert "You skipped every question, so nothing goes to the review queue." in html
    assert "scheduled in the" not in html
    assert not ReviewCard.objects.filter(user=user).exists()


def test_an_empty_answer_is_refused_with_a_message(client, repository_content, user):
    client.force_login(user)
    client.get(f"{URL}?minutes=4")
    response = client.post(f"{URL}?step=0", {"answer": "  "})
    assert response.status_code == 422
    assert "Write an answer before submitting" in response.content.decode()
