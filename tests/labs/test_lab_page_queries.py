"""The signed-in lab page and the run status poll cost a bounded number of queries: the lab's
guide, questions and lesson link are built once per content version and shared by every learner."""

import pytest

from labs.models import Lab, LabRun
from labs.targets import upsert_target

LAB_URL = "/labs/sample-lab/"
# user, the run form's targets, the learner's own runs of this lab.
SIGNED_IN_LAB_QUERIES = 3
# user, the learner's run, its queue position, the latest requests; the ETA's mean duration of
# the target's recent runs is shared by every poller for a few seconds.
STATUS_POLL_QUERIES = 4


@pytest.fixture
def target(db):
    # Never contacted: these pages only read the target's row.
    return upsert_target(
        name="Idle GPU", kind="vllm", base_url="http://127.0.0.1:9", models=["scripted"], limits=None
    )


def test_a_signed_in_lab_page_is_a_few_queries_and_lists_only_the_learners_runs(
    client, synced, target, make_user, django_assert_max_num_queries
):
    ada, grace = make_user("ada"), make_user("grace")
    lab = Lab.objects.get(slug="sample-lab")
    LabRun.objects.create(user=ada, lab=lab, target=target, model_name="scripted", params={"max_tokens": 7})
    client.force_login(grace)
    client.get(LAB_URL)
    with django_assert_max_num_queries(SIGNED_IN_LAB_QUERIES) as queries:
        html = client.get(LAB_URL).content.decode()
    assert 'FROM "labs_lab"' not in " ".join(query["sql"] for query in queries.captured_queries)
    assert "Sample lab" in html and "Why is decode memory-bound?" in html and "Idle GPU" in html
    assert f"/labs/runs/{LabRun.objects.get().pk}/" not in html  # Ada's run is not Grace's
    client.force_login(ada)
    with django_assert_max_num_queries(SIGNED_IN_LAB_QUERIES):
        html = client.get(LAB_URL).content.decode()
    assert f"/labs/runs/{LabRun.objects.get().pk}/" in html


def test_the_status_poll_of_a_queued_run_is_a_few_queries(
    client, synced, target, user, django_assert_max_num_queries
):
    lab = Lab.objects.get(slug="sample-lab")
    ahead = LabRun.objects.create(user=user, lab=lab, target=target, model_name="scripted", params={})
    run = LabRun.objects.create(user=user, lab=lab, target=target, model_name="scripted", params={})
    client.force_login(user)
    client.get(f"/labs/runs/{run.pk}/status/", HTTP_HX_REQUEST="true")
    with django_assert_max_num_queries(STATUS_POLL_QUERIES):
        response = client.get(f"/labs/runs/{run.pk}/status/", HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert "position 2 in the queue for Idle GPU" in response.content.decode()
    ahead.status = LabRun.Status.CANCELLED
    ahead.save()
    response = client.get(f"/labs/runs/{run.pk}/status/", HTTP_HX_REQUEST="true")
    assert "position 1 in the queue" in response.content.decode()


def test_the_lab_guide_and_parameters_are_rendered_once_for_every_learner(
    client, synced, target, make_user, rendered_templates
):
    from labs import views

    rendered = rendered_templates(views)
    for name in ("ada", "grace"):
        client.force_login(make_user(name))
        html = client.get(LAB_URL).content.decode()
        assert f"Log out {name}" in html and 'id="parameters"' in html and 'id="run-it"' in html
    assert rendered == ["labs/lab.html#lab-head"]
