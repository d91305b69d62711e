""""Your data" on the Me page: a learner downloads everything Prefill holds about them (JSON with a
schema version, CSV of lab runs) and deletes their account after typing their password again.
Other learners' data is untouched, nothing of the deleted learner is left in any table with a
foreign key to the user, and the cohort view keeps only anonymous figures."""

import csv
import io
import json

import pytest
from django.apps import apps
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client

from accounts.services import EXPORT_SCHEMA_VERSION
from courses.models import LessonProgress
from labs.models import CohortResult, LabRun, RunRequest
from labs.selectors import RUNS_CSV_COLUMNS
from questions.models import Attempt, ReviewCard
from tests.labs.test_runs import load_lab, make_target
from tests.learner_data import give_history
from tests.service_fixtures import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "a-long-test-password-42"


@pytest.fixture
def cohort(content, scripted_engine, make_user):
    """Two learners with full histories on the sample content and the real ttft lab."""
    call_command("sync_content", verbosity=0)
    target = make_target(scripted_engine("--ttft-ms", "5", "--gap-ms", "1"))
    target.api_key = "sk-instructor-secret-key"
    target.save()
    lab = load_lab("ttft-vs-output-length")
    ada = give_history(user=make_user("ada.lovelace"), lab=lab, target=target, tag="ada-own-words")
    bob = give_history(user=make_user("bob.shaw"), lab=lab, target=target, tag="bob-own-words")
    return {"ada": ada, "bob": bob, "target": target, "lab": lab}


def logged_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def user_foreign_keys() -> list[tuple[type, str]]:
    """(model, column) for every model, auto-created link tables included, pointing at the user."""
    return [
        (model, field.attname)
        for model in apps.get_models(include_auto_created=True)
        for field in model._meta.concrete_fields
        if field.is_relation and field.related_model is User
    ]


def rows_of(user_id: int) -> dict[str, int]:
    return {
        f"{model._meta.label}.{column}": model._default_manager.filter(**{column: user_id}).count()
        for model, column in user_foreign_keys()
    }


def test_me_links_to_your_data_which_links_both_downloads_and_the_delete_page(cohort):
    client = logged_in(cohort["ada"].user)
    me = client.get("/accounts/me/").content.decode()
    assert 'href="/accounts/me/data/"' in me
    page = client.get("/accounts/me/data/").content.decode()
    assert 'href="/accounts/me/data/prefill-data.json"' in page
    assert 'href="/accounts/me/data/lab-runs.csv"' in page
    assert 'href="/accounts/me/delete/"' in page
    assert "2 graded answers" in page and "2 lab runs" in page and "2 lessons viewed or marked done" in page


def test_the_pages_and_downloads_need_a_login(cohort):
    for path in ("/accounts/me/data/", "/accounts/me/data/prefill-data.json", "/accounts/me/data/lab-runs.csv",
                 "/accounts/me/delete/"):
        response = Client().get(path)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/?next="), path


def test_the_json_export_holds_everything_about_the_learner_and_nothing_of_anyone_else(cohort):
    ada, bob, target = cohort["ada"], cohort["bob"], cohort["target"]
    response = logged_in(ada.user).get("/accounts/me/data/prefill-data.json")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json; charset=utf-8"
    assert response["Content-Disposition"].startswith('attachment; filename="prefill-data-')
    assert response["Cache-Control"] == "no-store"
    data = json.loads(response.content)

    assert data["schema"] == "prefill-learner-export" and data["schema_version"] == EXPORT_SCHEMA_VERSION == 1
    assert data["profile"]["username"] == "ada.lovelace"
    progress = {row["lesson"]: row for row in data["lesson_progress"]}
    assert set(progress) == {"first-lesson", "second-lesson"}
    assert progress["first-lesson"]["completed_at"] and progress["second-lesson"]["completed_at"] is None

    attempts = data["attempts"]
    assert [a["id"] for a in attempts] == sorted(a.pk for a in ada.attempts)
    strong = attempts[1]
    assert strong["percent"] == 100 and strong["question"] == "sample-question"
    criteria = {c["id"]: c for c in strong["mark_sheet"]["criteria"]}
    assert criteria["reads-weights"]["met"] and criteria["reads-weights"]["evidence"]
    assert criteria["reads-weights"]["evidence"].lower() in strong["answer"].lower()
    assert attempts[0]["mark_sheet"]["misconceptions"], "the mistaken answer's misconception is exported"
    assert data["model_answers_revealed"] == [
        {"question": "sample-question", "revealed_at": data["model_answers_revealed"][0]["revealed_at"]}
    ]
    assert [card["question"] for card in data["review_cards"]] == ["sample-question"]
    assert data["review_cards"][0]["fsrs_card"]

    runs = {run["id"]: run for run in data["lab_runs"]}
    assert set(runs) == {run.pk for run in ada.runs}
    measured = runs[ada.runs[0].pk]
    assert measured["status"] == "succeeded" and measured["target"] == "Scripted GPU"
    assert measured["summary"]["overall"]["requests"]["succeeded"] == 2
    assert len(measured["requests"]) == RunRequest.objects.filter(run=ada.runs[0]).count() == 3  # warm-up + 2
    assert [r["warmup"] for r in measured["requests"]] == [True, False, False]
    assert data["predictions"] == [
        {"run_id": ada.runs[0].pk, "lab": "ttft-vs-output-length", "prediction": "TTFT flat, total x2 (ada-own-words)",
         "created_at": measured["created_at"]}
    ]

    text = response.content.decode()
    assert "bob.shaw" not in text and "bob-own-words" not in text
    for run in bob.runs:
        assert run.pk not in runs
    assert target.base_url not in text and "sk-instructor-secret-key" not in text


def test_the_csv_lists_the_learners_own_runs_with_their_figures(cohort):
    ada = cohort["ada"]
    response = logged_in(ada.user).get("/accounts/me/data/lab-runs.csv")
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert list(rows[0]) == RUNS_CSV_COLUMNS
    assert [int(row["run_id"]) for row in rows] == [run.pk for run in ada.runs]
    measured, queued = rows
    assert measured["status"] == "succeeded" and measured["measured_requests"] == "2"
    assert measured["succeeded_requests"] == "2"
    assert float(measured["ttft_p50_ms"]) >= 5.0  # the scripted engine's TTFT is 5 ms
    assert float(measured["output_tokens_per_s"]) > 0
    assert measured["prediction"] == "TTFT flat, total x2 (ada-own-words)"
    assert json.loads(measured["params"]) == {"max_tokens": [8], "prompt_tokens": 16, "repeats": 2}
    assert queued["status"] == "queued" and queued["ttft_p50_ms"] == ""
    assert "bob.shaw" not in response.content.decode()


def test_a_wrong_password_deletes_nothing_and_says_so(cohort):
    ada = cohort["ada"]
    client = logged_in(ada.user)
    before = rows_of(ada.user.pk)
    page = client.get("/accounts/me/delete/").content.decode()
    assert "2 graded answers" in page and "2 lab runs" in page
    assert "1 of your runs is queued or running: it is cancelled first." in page

    response = client.post("/accounts/me/delete/", {"password": "not-my-password-at-all"})
    assert response.status_code == 200
    assert "That is not your password. Nothing was deleted" in response.content.decode()
    response = client.post("/accounts/me/delete/", {"password": ""})
    assert "This field is required." in response.content.decode()

    assert User.objects.filter(pk=ada.user.pk).exists()
    assert rows_of(ada.user.pk) == before
    assert LabRun.objects.get(pk=ada.runs[1].pk).status == LabRun.Status.QUEUED  # not even cancelled
    assert client.get("/accounts/me/").status_code == 200  # still logged in


def test_deleting_needs_a_csrf_token(cohort):
    ada = cohort["ada"]
    client = Client(enforce_csrf_checks=True)
    client.force_login(ada.user)
    assert client.post("/accounts/me/delete/", {"password": PASSWORD}).status_code == 403
    assert client.get("/accounts/me/delete/").status_code == 200  # a GET only shows the form
    assert User.objects.filter(pk=ada.user.pk).exists()
    assert Attempt.objects.filter(user=ada.user).count() == 2


def test_deleting_removes_every_row_of_the_learner_keeps_others_and_only_anonymous_cohort_figures(cohort):
    ada, bob = cohort["ada"], cohort["bob"]
    ada_id, ada_runs = ada.user.pk, [run.pk for run in ada.runs]
    bob_before = rows_of(bob.user.pk)
    bob_requests = RunRequest.objects.filter(run__user=bob.user).count()
    assert all(rows_of(ada_id)[key] for key in ("questions.Attempt.user_id", "labs.LabRun.user_id",
                                                  "courses.LessonProgress.user_id", "questions.ReviewCard.user_id"))
    client = Client()
    client.post("/accounts/login/", {"username": "ada.lovelace", "password": PASSWORD})  # a real session and axes log
    other_device = Client()
    other_device.post("/accounts/login/", {"username": "ada.lovelace", "password": PASSWORD})
    from axes.models import AccessLog

    assert AccessLog.objects.filter(username="ada.lovelace").exists()

    response = client.post("/accounts/me/delete/", {"password": PASSWORD}, follow=True)
    assert response.redirect_chain[-1][0] == "/"
    assert "The account ada.lovelace and everything Prefill held about it are deleted." in response.content.decode()
    assert not response.context["user"].is_authenticated

    assert not User.objects.filter(pk=ada_id).exists()
    leftovers = {key: count for key, count in rows_of(ada_id).items() if count}
    assert leftovers == {}, f"rows still pointing at the deleted learner: {leftovers}"
    assert not LabRun.objects.filter(pk__in=ada_runs).exists()
    assert not RunRequest.objects.filter(run_id__in=ada_runs).exists()
    assert not AccessLog.objects.filter(username="ada.lovelace").exists()
    assert other_device.get("/accounts/me/").status_code == 302  # logged out on every device

    assert rows_of(bob.user.pk) == bob_before
    assert RunRequest.objects.filter(run__user=bob.user).count() == bob_requests
    assert LabRun.objects.get(pk=bob.runs[1].pk).status == LabRun.Status.QUEUED
    assert LessonProgress.objects.filter(user=bob.user).count() == 2
    assert ReviewCard.objects.filter(user=bob.user).count() == 1

    # The cohort keeps the figures of ada's succeeded run, with nothing that names her.
    kept = CohortResult.objects.get()
    assert kept.summary == ada.runs[0].summary
    assert kept.finished_on == ada.runs[0].finished_at.date()
    assert {f.name for f in CohortResult._meta.concrete_fields} == {
        "id", "lab", "target", "model_name", "params", "summary", "finished_on"
    }
    viewer = logged_in(bob.user)
    page = viewer.get("/labs/ttft-vs-output-length/cohort/").content.decode()
    assert "former learner" in page and "you · run" in page
    assert "ada.lovelace" not in page
    staff_page = logged_in(User.objects.create_user("teacher", is_staff=True)).get(
        "/labs/ttft-vs-output-length/cohort/").content.decode()
    assert "bob.shaw · run" in staff_page and "former learner" in staff_page and "ada.lovelace" not in staff_page


def test_deleting_cancels_a_running_run_first_and_the_engine_is_free_for_the_next_learner(
    content, scripted_engine, celery_worker, broker, make_user, tmp_path
):
    from labs.services import submit_run

    call_command("sync_content", verbosity=0)
    target = make_target(scripted_engine("--ttft-ms", "10", "--gap-ms", "20"))
    lab = load_lab("ttft-vs-output-length")
    worker_log = tmp_path / "worker.log"
    celery_worker(target.queue_name, log_path=worker_log)
    ada, bob = make_user("ada.lovelace"), make_user("bob.shaw")
    long_run = submit_run(user=ada, lab=lab, target=target, prediction="p",
                          params={"max_tokens": [200], "prompt_tokens": 16, "repeats": 10})  # about 40 s
    wait_for(lambda: RunRequest.objects.filter(run=long_run, warmup=False).exists(), message="ada's run measuring")

    client = Client()
    client.force_login(ada)
    response = client.post("/accounts/me/delete/", {"password": PASSWORD})
    assert response.status_code == 302
    assert not LabRun.objects.filter(pk=long_run.pk).exists()
    assert not User.objects.filter(username="ada.lovelace").exists()
    # The worker stopped ada's run (cancelled, not crashed on writes to a deleted run), so bob's
    # run starts at once rather than after the 40 s of ada's.
    next_run = submit_run(user=bob, lab=lab, target=target, prediction="p",
                          params={"max_tokens": [8], "prompt_tokens": 16, "repeats": 1})
    finished = wait_for(
        lambda: LabRun.objects.filter(pk=next_run.pk).exclude(status__in=LabRun.ACTIVE).first(),
        timeout_s=15,
        message="bob's run to finish",
    )
    assert finished.status == LabRun.Status.SUCCEEDED, finished.error
    assert not CohortResult.objects.exists()  # a cancelled run is not a result
    log = worker_log.read_text()
    assert "Traceback" not in log and "IntegrityError" not in log, log[-2000:]


def test_the_me_page_is_a_few_queries_however_much_the_learner_did(
    client, content, user, django_assert_max_num_queries
):
    from django.core.management import call_command

    call_command("sync_content")
    client.force_login(user)
    for lesson in ("first-lesson", "second-lesson"):
        client.post(f"/learn/lessons/{lesson}/done/", {"done": "1"})
    for _ in range(3):
        client.post("/practice/q/sample-question/", {"answer": "Decode reads all the weights; memory-bound."})
    client.get("/accounts/me/")
    # user, finished lessons, recent attempts, attempt count, reviews due, lab runs, one for
    # progress per module (lessons done) and two per question set (which answers are the newest,
    # then those in full: the mark sheets of older answers are never read)
    with django_assert_max_num_queries(9):
        html = client.get("/accounts/me/").content.decode()
    assert "First lesson" in html and "Second lesson" in html
