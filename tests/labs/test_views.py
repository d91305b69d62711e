"""Lab pages as a learner and as staff: the run form, the live page, results, exports, compare,
cohort and the queue dashboard. Runs are measured in-process against the scripted engine."""

import csv
import io
import json
import re

import pytest

from labs.execution import execute_run
from labs.models import LabRun
from labs.targets import upsert_target
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
    # The errors are listed at the top of the form, and the answer scrolls there without JS.
    form_start = html.index('action="/labs/ttft-vs-output-length/#run-it"')
    summary = html.index('data-testid="form-errors"')
    first_field = html.index('name="prediction"')
    assert form_start < summary < first_field
    assert '<a href="#id_param_max_tokens">Output lengths (max_tokens)</a>' in html or "#id_param_max_tokens" in html
    response = submit(logged_in_client, target, param_max_tokens="eight")
    assert "&#x27;eight&#x27; is not a whole number" in response.content.decode()
    assert not LabRun.objects.exists()


def test_values_above_the_targets_cap_are_fitted_with_a_note_not_refused(logged_in_client, lab_and_target, user):
    _, target = lab_and_target
    target.max_output_tokens = 10
    target.save()
    response = submit(logged_in_client, target)  # max_tokens 8, 16: 16 is over the cap
    run = LabRun.objects.get(user=user)
    assert response.status_code == 302
    assert run.params["max_tokens"] == [8]
    page = logged_in_client.get(f"/labs/runs/{run.pk}/").content.decode()
    assert "16 left out; Scripted GPU allows at most 10, so the run uses 8." in page


def test_batching_defaults_are_filled_in_within_a_16_slot_targets_limits(logged_in_client, broker, user):
    load_lab("batching-almost-free")
    big = make_target("http://127.0.0.1:9", max_concurrency=64)
    small = upsert_target(
        name="Local CPU - llama.cpp, batched",
        kind="llamacpp",
        base_url="http://127.0.0.1:9",
        models=["scripted"],
        limits={"max_concurrency": 16, "max_requests_per_run": 200},
    )
    small.capabilities = {"server_slots": 4}
    small.save()
    html = logged_in_client.get(f"/labs/batching-almost-free/?target={small.pk}").content.decode()
    assert 'value="1, 2, 4, 8, 16"' in html
    assert "Concurrency levels: 32, 64 left out; Local CPU - llama.cpp, batched allows at most 16" in html
    prompt = re.search(r'data-testid="prediction-prompt">([^<]*)<', html).group(1)
    assert prompt.startswith("Concurrency goes from 1 to 16 on this engine.")
    assert "at most <strong>4 requests at once</strong> (4 server slots)" in html
    # The form starts on the first engine by name (the local one here), and refills for another.
    assert 'value="1, 2, 4, 8, 16"' in logged_in_client.get("/labs/batching-almost-free/").content.decode()
    html = logged_in_client.get(f"/labs/batching-almost-free/?target={big.pk}").content.decode()
    assert 'value="1, 2, 4, 8, 16, 32, 64"' in html and "32, 64 left out" not in html
    assert f'<a href="/labs/batching-almost-free/?target={small.pk}#run-it">{small.name}</a>' in html
    # Submitting the form exactly as pre-filled is accepted on the small target.
    response = logged_in_client.post(
        "/labs/batching-almost-free/",
        {
            "target": str(small.pk),
            "param_concurrency": "1, 2, 4, 8, 16",
            "param_prompt_tokens": "128",
            "param_max_tokens": "128",
            "prediction": "x4 at 4",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    assert LabRun.objects.get(user=user).params["concurrency"] == [1, 2, 4, 8, 16]


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


def test_units_counts_and_caveats_agree_on_the_run_page(logged_in_client, scripted_engine, broker, user):
    # A llama.cpp-flavoured engine reports its own timings, so the server-side split shows.
    target = make_target(scripted_engine("--flavor", "llamacpp", "--ttft-ms", "20", "--gap-ms", "3"))
    load_lab("ttft-vs-output-length")
    submit(logged_in_client, target)
    run = LabRun.objects.get(user=user)
    assert execute_run(run_id=run.pk) == "succeeded"
    page = logged_in_client.get(f"/labs/runs/{run.pk}/").content.decode()
    # 2 steps × 2 repeats measured; the warm-up is sent apart and said so, never mixed in.
    assert "4 measured requests · plus 1 warm-up request, not counted" in page
    assert " of 5 " not in page
    split = re.search(r'data-testid="server-split">([^<]*)<', page).group(1)
    assert re.search(r"prefill [\d,]+(\.\d+)? ms, decode [\d,]+(\.\d+)? ms per output token", split), split
    # Too few samples for a P99 is a caveat shown neutrally, not a failed check.
    caveat = re.search(r'<div class="criterion ([a-z]+)" data-testid="finding-small-sample"><p><strong>(.)', page)
    assert caveat.groups() == ("note", "ℹ")
    assert "P99 not meaningful (n &lt; 100)" in page

    # The live table while a run is in flight: TPOT in milliseconds under "TPOT ms".
    LabRun.objects.filter(pk=run.pk).update(status=LabRun.Status.RUNNING, finished_at=None)
    live = logged_in_client.get(f"/labs/runs/{run.pk}/").content.decode()
    header = re.search(r"<thead><tr>(.*?)</tr></thead>", live).group(1)
    assert "TPOT ms" in header
    tpot_cells = re.findall(r'<td class="num">([^<]*)</td><td class="num">([^<]*)</td><td class="num">\d+</td>', live)
    assert tpot_cells and all(1.0 <= float(tpot.replace(",", "")) <= 1000.0 for _, tpot in tpot_cells), tpot_cells
    assert "of 4 measured requests (plus 1 warm-up, not counted)" in live


def test_results_put_the_predicted_numbers_next_to_the_measured_ones_and_show_efficiency(
    logged_in_client, lab_and_target, user
):
    _, target = lab_and_target
    # 20 MB of weights at 10 GB/s: the decode bound is 2 ms per token; the engine gives 2 ms gaps.
    target.memory_bandwidth_bytes_s = 10e9
    target.model_bytes = {"scripted": 20e6}
    target.save()
    form = logged_in_client.get("/labs/ttft-vs-output-length/").content.decode()
    assert 'name="predict_total_ratio"' in form and 'name="predict_ttft_ratio"' in form
    submit(logged_in_client, target, predict_total_ratio="1.5", predict_ttft_ratio="")
    run = LabRun.objects.get(user=user)
    assert run.result_meta["predicted"] == {"total_ratio": 1.5}
    assert execute_run(run_id=run.pk) == "succeeded"
    page = logged_in_client.get(f"/labs/runs/{run.pk}/").content.decode()
    table = re.search(r'data-testid="prediction-table">(.*?)</table>', page, re.DOTALL).group(1)
    rows = re.findall(
        r'<th scope="row">([^<]*)<.*?</th>'
        r'\s*<td class="num">(.*?)</td>\s*<td class="num">(.*?)</td>\s*<td class="num">(.*?)</td>',
        table,
        re.DOTALL,
    )
    by_label = {label.strip(): (predicted, measured, ratio) for label, predicted, measured, ratio in rows}
    predicted, measured, ratio = by_label["P50 total time at the longest output ÷ at the shortest"]
    assert predicted == "1.5" and float(measured) > 1 and ratio.startswith("×")
    assert float(ratio[1:]) == pytest.approx(float(measured) / 1.5, rel=0.02)
    assert "not given" in by_label["P50 TTFT at the longest output ÷ at the shortest"][0]
    efficiency = re.search(r'data-testid="efficiency-table">(.*?)</table>', page, re.DOTALL).group(1)
    assert "max_tokens=8" in efficiency and "max_tokens=16" in efficiency
    percents = [int(p) for p in re.findall(r'<td class="num">(\d+)%</td>', efficiency)]
    assert len(percents) == 2 and all(1 <= p <= 150 for p in percents), percents


def test_a_lab_that_needs_forced_lengths_is_marked_uncontrolled_on_ollama_before_submitting(logged_in_client, broker):
    load_lab("ttft-vs-output-length")
    load_lab("prompt-length-ttft")
    ollama = upsert_target(name="GPU Ollama", kind="ollama", base_url="http://127.0.0.1:9", models=["llama3.2:1b"])
    vllm = make_target("http://127.0.0.1:9")
    html = logged_in_client.get(f"/labs/ttft-vs-output-length/?target={ollama.pk}").content.decode()
    assert (
        f'<option value="{ollama.pk}" selected>GPU Ollama (uncontrolled: cannot force output length)</option>' in html
    )
    assert f'<option value="{vllm.pk}">Scripted GPU</option>' in html
    assert 'data-testid="uncontrolled-note"' in html and "Ollama's API has no ignore_eos" in html
    on_vllm = logged_in_client.get(f"/labs/ttft-vs-output-length/?target={vllm.pk}").content.decode()
    assert 'data-testid="uncontrolled-note"' not in on_vllm
    # A lab whose conclusion does not rest on forced lengths is not marked.
    other = logged_in_client.get(f"/labs/prompt-length-ttft/?target={ollama.pk}").content.decode()
    assert "uncontrolled" not in other
