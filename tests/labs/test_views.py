"""Lab pages as a learner and as staff: the run form, the live page, results, exports, compare,
cohort and the queue dashboard. Runs are measured in-process against the scripted engine."""

import csv
import io
import json

import pytest

from labs.execution import execute_run
from labs.models import LabRun
from tests.labs.test_runs import load_lab, make_target

pytestmark = pytest.mark.django_db(transaction=True)

FORM = {
    "param_max_tokens": "8, 16",
    "param_prompt_tokens": "32",
    "param_repeats": "2",
    "param_output_length": "forced",
    "prediction": "TTFT flat, E2E x2",
}


@pytest.fixture
def lab_and_target(scripted_engine, broker):
    target = make_target(scripted_engine("--ttft-ms", "20", "--gap-ms", "2"))
    target.api_key = "sk-secret-never-shown"
    target.price_per_gpu_hour = "2.50"
    target.save()
    return load_lab("ttft-vs-output-length"), target


def submit(client, target, **overrides):
    return client.post("/labs/ttft-vs-output-length/", {**FORM, "target": str(target.pk), **overrides})


def test_form_errors_name_the_field_and_the_allowed_range(logged_in_client, lab_and_target):
    _, target = lab_and_target
    response = submit(logged_in_client, target, param_max_tokens="8, 99999", param_repeats="0")
    html = response.content.decode()
    assert response.status_code == 422
    assert "99999 is outside the allowed range 1 to 4096" in html
    assert "Ensure this value is greater than or equal to 1" in html
    response = submit(logged_in_client, target, param_max_tokens="eight")
    assert "&#x27;eight&#x27; is not a whole number" in response.content.decode()
    target.max_output_tokens = 10
    target.save()
    response = submit(logged_in_client, target)
    assert "16 is above what Scripted GPU allows (10)" in response.content.decode()
    assert not LabRun.objects.exists()


def test_no_learner_facing_field_takes_a_url_and_keys_never_render(logged_in_client, lab_and_target):
    _, target = lab_and_target
    html = logged_in_client.get("/labs/ttft-vs-output-length/").content.decode()
    assert "Scripted GPU" in html
    assert target.base_url not in html
    assert "sk-secret" not in html
    assert 'type="url"' not in html


def test_submit_queue_run_and_read_results_exports_and_compare(logged_in_client, lab_and_target, user):
    _, target = lab_and_target
    response = submit(logged_in_client, target)
    run = LabRun.objects.get(user=user)
    assert response.status_code == 302 and response["Location"] == f"/labs/runs/{run.pk}/"
    live = logged_in_client.get(f"/labs/runs/{run.pk}/").content.decode()
    assert "position 1 in the queue" in live
    assert f'hx-get="/labs/runs/{run.pk}/status/"' in live

    assert execute_run(run_id=run.pk) == "succeeded"
    page = logged_in_client.get(f"/labs/runs/{run.pk}/").content.decode()
    assert "TTFT flat, E2E x2" in page  # the prediction next to the measurement
    assert "max_tokens=16" in page and 'data-testid="summary-table"' in page
    assert page.count("<svg") >= 3
    assert "a million output tokens cost" in page
    assert "sk-secret" not in page and target.base_url not in page
    status = logged_in_client.get(f"/labs/runs/{run.pk}/status/", HTTP_HX_REQUEST="true")
    assert status.status_code == 204 and status["HX-Refresh"] == "true"

    rows = list(csv.DictReader(io.StringIO(logged_in_client.get(f"/labs/runs/{run.pk}/export.csv").content.decode())))
    assert len(rows) == 5 and rows[0]["warmup"] == "True"
    exported = json.loads(logged_in_client.get(f"/labs/runs/{run.pk}/export.json").content)
    assert exported["summary"]["ttft_s"]["n"] == 4
    assert len(exported["requests"]) == 5
    assert "sk-secret" not in json.dumps(exported) and target.base_url not in json.dumps(exported)

    rerun_form = logged_in_client.get(f"/labs/ttft-vs-output-length/?rerun={run.pk}").content.decode()
    assert 'value="8, 16"' in rerun_form
    submit(logged_in_client, target)
    second = LabRun.objects.filter(user=user).exclude(pk=run.pk).get()
    assert execute_run(run_id=second.pk) == "succeeded"
    compare = logged_in_client.get(f"/labs/compare/?runs={run.pk},{second.pk}")
    assert compare.status_code == 200
    assert f"Run {run.pk}" in compare.content.decode() and f"Run {second.pk}" in compare.content.decode()


def test_learners_get_404_for_other_learners_runs(client, lab_and_target, make_user):
    lab, target = lab_and_target
    owner, other = make_user("owner"), make_user("other")
    run = LabRun.objects.create(user=owner, lab=lab, target=target, model_name="scripted", params={}, prediction="x")
    client.force_login(other)
    for url in (
        f"/labs/runs/{run.pk}/",
        f"/labs/runs/{run.pk}/export.csv",
        f"/labs/runs/{run.pk}/export.json",
        f"/labs/runs/{run.pk}/status/",
    ):
        assert client.get(url).status_code == 404, url
    assert client.post(f"/labs/runs/{run.pk}/cancel/").status_code == 404
    run.refresh_from_db()
    assert run.status == LabRun.Status.QUEUED


def test_staff_queue_dashboard_cancels_any_run_and_learners_are_refused(client, lab_and_target, make_user):
    lab, target = lab_and_target
    learner = make_user("learner")
    run = LabRun.objects.create(user=learner, lab=lab, target=target, model_name="scripted", params={}, prediction="x")
    client.force_login(learner)
    assert client.get("/labs/queue/").status_code == 302
    staff = make_user("staff", is_staff=True)
    client.force_login(staff)
    html = client.get("/labs/queue/").content.decode()
    assert "learner" in html and f"Cancel run {run.pk}" in html
    client.post(f"/labs/runs/{run.pk}/cancel/", {"next": "/labs/queue/"})
    run.refresh_from_db()
    assert run.status == LabRun.Status.CANCELLED


def test_cohort_hides_other_learners_names(client, lab_and_target, make_user):
    lab, target = lab_and_target
    for name in ("alice", "bob"):
        user = make_user(name)
        run = LabRun.objects.create(
            user=user,
            lab=lab,
            target=target,
            model_name="scripted",
            params={"max_tokens": [8], "prompt_tokens": 16, "repeats": 1},
            prediction="x",
        )
        execute_run(run_id=run.pk)
    client.force_login(make_user("carol"))
    html = client.get("/labs/ttft-vs-output-length/cohort/").content.decode()
    assert "learner 1" in html and "alice" not in html and "bob" not in html
    client.force_login(make_user("teacher", is_staff=True))
    html = client.get("/labs/ttft-vs-output-length/cohort/").content.decode()
    assert "alice" in html and "bob" in html
