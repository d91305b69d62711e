"""The optional LLM judge wired into practice: pending after submit, a second opinion applied by
the task, disagreements flagged for staff, and failure leaving the rubric result in place."""

import json

import pytest
from django.core.management import call_command

from questions.models import Attempt
from questions.services import apply_judge
from tests.grading import mark_pending_answers
from tests.questions.test_grading_judge import completion, server  # noqa: F401 - fixture

pytestmark = pytest.mark.django_db(transaction=True)

ANSWER = "Decode is memory-bound: each step reads all the weights from memory to produce one token."


@pytest.fixture
def judged(content, settings, server, broker, logged_in_client):  # noqa: F811 - fixture
    call_command("sync_content")
    settings.GRADING_JUDGE_BASE_URL = server.url
    settings.GRADING_JUDGE_MODEL = "judge"
    return server


def reply(met: dict[str, str | None]) -> str:
    return completion(
        json.dumps(
            {"criteria": [{"id": cid, "met": quote is not None, "quote": quote or ""} for cid, quote in met.items()]}
        )
    )


def test_an_agreeing_judge_confirms_and_the_page_stops_polling(judged, logged_in_client, user):
    judged.script = lambda request: (
        200,
        reply({"reads-weights": "each step reads all the weights", "memory-bound": "Decode is memory-bound"}),
        0.0,
    )
    logged_in_client.post("/practice/q/sample-question/", {"answer": ANSWER})
    (attempt,) = mark_pending_answers()  # the judge is asked once the rubric's mark is in
    assert attempt.judge_status == Attempt.JudgeStatus.PENDING
    pending = logged_in_client.get(f"/practice/attempts/{attempt.pk}/feedback/").content.decode()
    assert "second opinion from the LLM judge on its way" in pending and 'hx-trigger="every 2s"' in pending

    attempt = apply_judge(attempt_id=attempt.pk)
    assert attempt.judge_status == Attempt.JudgeStatus.DONE
    assert not attempt.flagged_for_review
    done = logged_in_client.get(f"/practice/attempts/{attempt.pk}/feedback/").content.decode()
    assert "hx-trigger" not in done
    # The answer went to the model as delimited data, never as the instructions.
    sent = judged.requests[0]["messages"]
    assert ANSWER in sent[-1]["content"] and ANSWER not in sent[0]["content"]


def test_disagreement_flags_the_attempt_for_staff_review(judged, logged_in_client, user):
    judged.script = lambda request: (
        200,
        reply({"reads-weights": "each step reads all the weights", "memory-bound": None}),
        0.0,
    )
    logged_in_client.post("/practice/q/sample-question/", {"answer": ANSWER})
    mark_pending_answers()
    attempt = apply_judge(attempt_id=Attempt.objects.get(user=user).pk)
    assert attempt.flagged_for_review
    assert attempt.result["disagreements"]
    assert "flagged for staff review" in logged_in_client.get(attempt.get_absolute_url()).content.decode()


def test_a_broken_judge_leaves_the_rubric_result(judged, logged_in_client, user):
    judged.script = lambda request: (200, completion("not json at all"), 0.0)
    logged_in_client.post("/practice/q/sample-question/", {"answer": ANSWER})
    (before,) = mark_pending_answers()
    attempt = apply_judge(attempt_id=before.pk)
    assert attempt.judge_status == Attempt.JudgeStatus.FAILED
    assert attempt.score == before.score and attempt.result == before.result
