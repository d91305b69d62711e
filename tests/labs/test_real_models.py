"""A target that serves generated models and a real one: results say which kind was measured, the
output-length lab prefers the real model, talks to it in chat turns, and lets the learner choose
between a forced length and the model's own stopping."""

import json

import pytest

from labs.execution import target_spec
from labs.models import LabRun
from labs.plans import build_steps
from labs.selectors import run_json
from labs.targets import upsert_target
from tests.labs.test_runs import load_lab

pytestmark = pytest.mark.django_db

REAL = "smollm2-135m-instruct-q4_1"
GENERATED = "prefill-60m-f16"
LIMITS = {"max_requests_per_run": 200, "max_run_seconds": 600, "max_concurrency": 16}


@pytest.fixture
def local_target():
    return upsert_target(
        name="Local CPU", kind="llamacpp", base_url="http://127.0.0.1:8011", models=[GENERATED, REAL],
        synthetic_text=True, real_models=[REAL],
    )


def test_the_output_length_lab_prefers_the_real_model_and_forces_the_length_by_default(local_target):
    lab = load_lab("ttft-vs-output-length")
    plan = lab.spec["plan"]
    params = {"max_tokens": [64, 256], "prompt_tokens": 64, "repeats": 2, "output_length": "forced"}
    steps = build_steps(plan=plan, params=params, models=local_target.model_names, limits=LIMITS)
    assert {step.model for step in steps} == {REAL}
    assert all(step.spec.ignore_eos for step in steps)
    unforced = build_steps(plan=plan, params={**params, "output_length": "model stops"},
                           models=local_target.model_names, limits=LIMITS)
    assert not any(step.spec.ignore_eos for step in unforced)
    # A target without the real model falls back to its default model.
    fallback = build_steps(plan=plan, params=params, models=[GENERATED], limits=LIMITS)
    assert {step.model for step in fallback} == {GENERATED}


def test_chat_turns_go_to_the_real_model_and_completions_to_generated_ones(local_target):
    assert target_spec(target=local_target, model=REAL, chat=True).api == "openai-chat"
    assert target_spec(target=local_target, model=REAL).api == "openai-completions"
    assert local_target.serves_synthetic_text(GENERATED)
    assert not local_target.serves_synthetic_text(REAL)


def test_results_say_real_model_or_synthetic_text(local_target, user, client):
    client.force_login(user)
    lab = load_lab("ttft-vs-output-length")
    pages = {}
    for model in (REAL, GENERATED):
        run = LabRun.objects.create(user=user, lab=lab, target=local_target, model_name=model,
                                    params={"max_tokens": [64], "output_length": "model stops"})
        pages[model] = client.get(run.get_absolute_url()).content.decode()
        exported = json.loads(run_json(run=run))
        assert exported["model_kind"] == ("real model" if model == REAL else "synthetic text")
        assert exported["target"]["synthetic_text"] is (model == GENERATED)
    assert "Real model:" in pages[REAL] and "stops on its own end-of-sequence token" in pages[REAL]
    assert "Synthetic text:" not in pages[REAL]
    assert "Synthetic text:" in pages[GENERATED] and "the words are not" in pages[GENERATED]
