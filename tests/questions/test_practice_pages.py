
from questions.models import Attempt, ModelAnswerReveal, ReviewCard
from tests.grading import mark_pending_answers

STRONG = (
    "Decode is memory-bound: every step has to read all the weights from HBM to make one token. "
    "With batching the same weight read is shared by every sequence in the batch."
)


def test_answering_shows_a_mark_sheet_with_evidence_and_schedules_review(client, synced, user):
    client.force_login(user)
    response = client.post("/practice/q/sample-question/", {"answer": STRONG}, HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert response.status_code == 200
    assert 'id="answer-panel"' in html and "<html" not in html
    # Stored at once and marked by the grading worker: the panel says so and polls for the sheet.
    attempt = Attempt.objects.get(user=user)
    assert "Marking your answer" in html and f"/practice/attempts/{attempt.pk}/feedback/" in html
    assert "An answer that works" in html and "so bytes moved dominate" in html  # revealed after an attempt
    mark_pending_answers()
    sheet = client.get(f"/practice/attempts/{attempt.pk}/feedback/", HTTP_HX_REQUEST="true").content.decode()
    assert "Got it" in sheet and "From your answer" in sheet
    assert "Marking your answer" not in sheet and "hx-trigger" not in sheet  # the polling stops
    attempt.refresh_from_db()
    assert attempt.score == attempt.max_score == 3
    assert attempt.rubric_version
    assert ReviewCard.objects.get(user=user, question__slug="sample-question").due > attempt.created_at


def test_a_misconception_is_named_with_its_correction(client, synced, user):
    client.force_login(user)
    client.post(
        "/practice/q/sample-question/",
        {"answer": "Decode is compute-bound because it does lots of matrix maths on the weights."},
    )
    mark_pending_answers()
    html = client.get("/practice/q/sample-question/").content.decode()
    assert "Misconception: Decode is compute-bound." in html
    assert "far below the ridge point" in html
    assert "decode-compute" not in html  # the id never reaches the learner


def test_model_answer_is_hidden_until_attempt_or_recorded_reveal(client, synced, user):
    client.force_login(user)
    html = client.get("/practice/q/sample-question/").content.decode()
    assert "so bytes moved dominate" not in html
    assert "Reveal the model answer anyway" in html
    client.post("/practice/q/sample-question/reveal/")
    assert ModelAnswerReveal.objects.filter(user=user).exists()
    assert "so bytes moved dominate" in client.get("/practice/q/sample-question/").content.decode()


def test_follow_up_is_graded_against_its_own_rubric(client, synced, user):
    client.force_login(user)
    client.post("/practice/q/sample-question/", {"answer": STRONG})
    response = client.post(
        "/practice/q/sample-question/",
        {"answer": "Batching shares one read of the weights across all the sequences.", "follow_up": "batching"},
        HTTP_HX_REQUEST="true",
    )
    html = response.content.decode()
    assert 'id="follow-up-batching"' in html and "Marking your answer" in html
    mark_pending_answers()
    follow_up = Attempt.objects.get(user=user, follow_up="batching")
    assert follow_up.score == follow_up.max_score == 1
    assert "Got it" in client.get(f"/practice/attempts/{follow_up.pk}/feedback/").content.decode()


def test_empty_answer_is_refused_and_nothing_is_stored(client, synced, user):
    client.force_login(user)
    response = client.post("/practice/q/sample-question/", {"answer": "   "})
    assert response.status_code == 422
    assert b"the box is empty" in response.content
    assert not Attempt.objects.exists()


def test_overlong_answer_is_refused_with_the_limit_shown(client, synced, user):
    client.force_login(user)
    response = client.post("/practice/q/sample-question/", {"answer": "decode " * 2000})
    assert response.status_code == 422
    assert b"the limit is 10,000" in response.content
    assert not Attempt.objects.exists()


def test_an_answer_to_a_question_whose_rubric_cannot_grade_is_refused_with_the_fix_named(client, synced, user):
    from questions.models import Rubric

    # A version kept from before rubrics were stored in full: nothing could ever mark the answer.
    Rubric.objects.filter(follow_up="").update(spec={"type": "free_text", "rubric": [], "misconceptions": []})
    client.force_login(user)
    response = client.post("/practice/q/sample-question/", {"answer": STRONG})
    assert response.status_code == 422
    assert b"This question cannot be graded yet" in response.content and b"sync_content" in response.content
    assert not Attempt.objects.exists()
    # A follow-up whose rubric is whole still takes answers.
    client.post("/practice/q/sample-question/", {"answer": STRONG, "follow_up": "batching"})
    assert Attempt.objects.filter(follow_up="batching").count() == 1


def test_html_in_an_answer_is_shown_inert(client, synced, user):
    client.force_login(user)
    client.post("/practice/q/sample-question/", {"answer": "<script>alert(1)</script> decode reads the weights"})
    attempt = Attempt.objects.get(user=user)
    html = client.get(attempt.get_absolute_url()).content.decode()
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_a_learner_never_sees_another_learners_attempt(client, synced, make_user):
    owner, other = make_user("owner"), make_user("other")
    client.force_login(owner)
    client.post("/practice/q/sample-question/", {"answer": STRONG})
    attempt = Attempt.objects.get(user=owner)
    client.force_login(other)
    assert client.get(attempt.get_absolute_url()).status_code == 404
    assert STRONG not in client.get("/practice/q/sample-question/").content.decode()


def test_grading_is_rate_limited_with_a_clear_message(client, synced, user, settings):
    settings.GRADING_RATE_LIMIT_PER_MINUTE = 2
    client.force_login(user)
    for _ in range(2):
        assert client.post("/practice/q/sample-question/", {"answer": STRONG}).status_code == 302
    response = client.post("/practice/q/sample-question/", {"answer": STRONG})
    assert response.status_code == 429
    assert b"Try again in" in response.content
    assert Attempt.objects.count() == 2


def test_review_queue_lists_a_weak_answer_as_due_today(client, synced, user):
    client.force_login(user)
    client.post("/practice/q/sample-question/", {"answer": "I am not sure, something about GPUs."})
    mark_pending_answers()
    html = client.get("/practice/review/").content.decode()
    assert "Why is decode memory-bound?" in html.split("Due today")[1]


def test_anonymous_visitors_can_read_but_must_log_in_to_answer(client, synced):
    html = client.get("/practice/q/sample-question/").content.decode()
    assert "to answer and get feedback" in html
    response = client.post("/practice/q/sample-question/", {"answer": STRONG})
    assert response.status_code == 302
    assert not Attempt.objects.exists()
