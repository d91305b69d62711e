"""Redis restarts empty (no persistence) while one run measures and others wait in its queue:
every run still completes exactly once, and while Redis is down the site keeps serving pages,
grading and storing answers and taking runs."""

import pytest
from django.conf import settings

from labs.content_sync import sync_labs
from labs.models import LabRun, RunRequest
from labs.targets import upsert_target
from questions.models import Attempt, Question
from questions.services import JUDGE_LOST_MESSAGE, settle_stale_judgements
from tests.faults.conftest import final, measured, restart_redis
from tests.grading import submit_and_mark
from tests.service_fixtures import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

FAST_REAPER = {"LAB_HEARTBEAT_STALE_S": "5", "LAB_REDISPATCH_AFTER_S": "5"}
RUN = {"max_tokens": "16, 32", "prompt_tokens": "16", "repeats": "3"}  # 1 warm-up + 6 measured
ANSWER = (
    "Prefill processes the whole prompt in parallel and is compute-bound, so TTFT grows with prompt length; "
    "decode reads all the weights for every token, so it is memory-bandwidth-bound."
)


def test_a_redis_restart_with_the_queue_full_loses_no_run_and_no_answer(
    live_site, learner_browser, engine_process, celery_worker, celery_beat, broker, course, tmp_path
):
    engine = engine_process("--ttft-ms", "20", "--gap-ms", "10")
    sync_labs(content_dir=settings.BASE_DIR / "labs" / "content")
    target = upsert_target(name="Scripted GPU", kind="vllm", base_url=engine.url, models=["scripted"])
    celery_worker(target.queue_name, extra_env=FAST_REAPER)
    celery_worker("default", extra_env=FAST_REAPER)
    celery_worker("grading")
    celery_beat(every_s=1, schedule_dir=tmp_path)

    learners = [learner_browser(name) for name in ("ada", "grace", "edsger", "barbara")]
    run_ids = [learner.queue_run(lab="ttft-vs-output-length", target_id=target.pk, **RUN) for learner in learners]
    wait_for(lambda: measured(run_ids[0]) >= 1, message="the first run measuring")
    assert LabRun.objects.filter(pk__in=run_ids[1:], status=LabRun.Status.QUEUED).count() == 3

    seen_while_down: dict[str, int] = {}
    late = learner_browser("alan")

    def while_redis_is_down() -> None:
        ada = learners[0]
        seen_while_down["lesson"] = ada.get("/learn/lessons/prefill-vs-decode/").status_code
        seen_while_down["run page"] = ada.get(f"/labs/runs/{run_ids[0]}/").status_code
        answer = ada.submit("/practice/q/prefill-decode-ttft/", {"answer": ANSWER})
        seen_while_down["answer"] = answer.status_code
        seen_while_down["mark sheet shown"] = int("Your mark sheet" in answer.text)
        run_ids.append(late.queue_run(lab="ttft-vs-output-length", target_id=target.pk, **RUN))

    restart_redis(broker, during=while_redis_is_down, down_s=1.0)
    assert seen_while_down == {"lesson": 200, "run page": 200, "answer": 200, "mark sheet shown": 1}
    assert Attempt.objects.filter(user__username="ada", question__slug="prefill-decode-ttft").count() == 1
    # Marked: in the request when the grading queue could not be reached, else by its worker.
    wait_for(
        lambda: Attempt.objects.filter(user__username="ada", grade_status=Attempt.GradeStatus.GRADED).exists(),
        message="the answer's mark",
    )

    # The lost messages are sent again by the reaper; each run is measured exactly once.
    for run_id in run_ids:
        run = final(run_id, timeout_s=120)
        assert run.status == LabRun.Status.SUCCEEDED, (run_id, run.error)
        assert RunRequest.objects.filter(run_id=run_id).count() == 7
    assert learners[0].get(f"/labs/runs/{run_ids[0]}/").status_code == 200


def test_an_answer_whose_judge_message_was_lost_settles_to_its_rubric_result(
    broker, course, make_user, settings, client
):
    settings.GRADING_JUDGE_BASE_URL = "http://127.0.0.1:9"  # configured; its message never arrives
    settings.GRADING_JUDGE_MODEL = "judge"
    ada = make_user("ada")
    question = Question.objects.get(slug="prefill-decode-ttft")
    attempt = submit_and_mark(user=ada, question=question, answer=ANSWER)  # the judge is asked once marked
    assert attempt.judge_status == Attempt.JudgeStatus.PENDING
    import redis

    assert redis.Redis.from_url(broker["url"]).llen("default") == 1
    restart_redis(broker)  # the judge's message is gone with it

    assert settle_stale_judgements() == []  # not yet: the judge may still be working
    Attempt.objects.filter(pk=attempt.pk).update(created_at=attempt.created_at.replace(year=2000))
    assert settle_stale_judgements() == [attempt.pk]
    attempt.refresh_from_db()
    assert attempt.judge_status == Attempt.JudgeStatus.FAILED
    assert attempt.judge_result["error"] == JUDGE_LOST_MESSAGE
    assert attempt.score > 0  # the rubric's mark stands

    client.force_login(ada)
    page = client.get(question.get_absolute_url()).content.decode()
    assert "Your mark sheet" in page
    assert "on its way" not in page  # the page stops polling for an opinion that is not coming
