"""`manage.py register_env_targets`: the GPU box's engines become targets from the environment,
against the scripted engine posing as vLLM and as Ollama (real HTTP, real probe)."""

from __future__ import annotations

from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from labs.models import InferenceTarget

ENGINE_VARIABLES = (
    "VLLM_URL",
    "VLLM_MODEL",
    "VLLM_TARGET_NAME",
    "VLLM_WEIGHTS_FROM",
    "VLLM_MAX_MODEL_LEN",
    "VLLM_GPU_IDS",
    "OLLAMA_URL",
    "OLLAMA_MODELS",
    "OLLAMA_TARGET_NAME",
    "OLLAMA_WEIGHTS_FROM",
    "OLLAMA_CONTEXT_LENGTH",
    "OLLAMA_GPU_IDS",
    "GPU_HARDWARE",
    "GPU_PRICE_PER_HOUR",
)


@pytest.fixture
def env(monkeypatch):
    """A clean slate of the engine variables; returns a setter."""
    for name in ENGINE_VARIABLES:
        monkeypatch.delenv(name, raising=False)

    def set_env(**values: str) -> None:
        for name, value in values.items():
            monkeypatch.setenv(name, value)

    return set_env


@pytest.fixture
def engines(scripted_engine):
    """The scripted engine as vLLM (serving one model) and as Ollama (two pulled tags)."""
    vllm = scripted_engine("--flavor", "vllm", "--model", "meta-llama/Llama-3.2-1B-Instruct")
    ollama = scripted_engine("--flavor", "ollama", "--model", "llama3.2:1b")
    return {"vllm": vllm, "ollama": ollama}


def register() -> str:
    out = StringIO()
    call_command("register_env_targets", stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_both_engines_become_probed_targets_and_a_second_run_changes_nothing(env, engines):
    env(
        VLLM_URL=engines["vllm"],
        VLLM_MODEL="meta-llama/Llama-3.2-1B-Instruct",
        VLLM_WEIGHTS_FROM="llama-3.2-1b:bf16",
        VLLM_GPU_IDS="0",
        OLLAMA_URL=engines["ollama"],
        OLLAMA_MODELS="llama3.2:1b",
        OLLAMA_GPU_IDS="0",
        GPU_HARDWARE="h100-sxm",
        GPU_PRICE_PER_HOUR="2.49",
    )
    first = register()

    vllm = InferenceTarget.objects.get(kind="vllm")
    ollama = InferenceTarget.objects.get(kind="ollama")
    assert vllm.name == "NVIDIA H100 SXM - vLLM" and ollama.name == "NVIDIA H100 SXM - Ollama"
    assert vllm.base_url == engines["vllm"] and vllm.model_names == ["meta-llama/Llama-3.2-1B-Instruct"]
    assert ollama.model_names == ["llama3.2:1b"] and ollama.api == InferenceTarget.Api.OLLAMA_GENERATE
    assert vllm.enabled and ollama.enabled
    # The hardware spec behind the speed-of-light bound, and the weight bytes of the served model.
    assert vllm.memory_bandwidth_bytes_s == pytest.approx(3.35e12) and vllm.hardware_slug == "h100-sxm"
    assert vllm.model_bytes["meta-llama/Llama-3.2-1B-Instruct"] > 2e9
    assert vllm.price_per_gpu_hour == Decimal("2.490")
    # Both on GPU 0: one hardware group, so a run on one never overlaps a run on the other.
    assert vllm.hardware_group == ollama.hardware_group == "gpu-0"
    # Probed: vLLM forces output lengths; Ollama accepts ignore_eos on /v1 and ignores it.
    assert vllm.probed_at and not vllm.probe_error and ollama.probed_at and not ollama.probe_error
    assert vllm.capabilities["ignore_eos"] is True and vllm.capabilities["tokenize"] == "vllm"
    assert ollama.capabilities["ignore_eos"] is False
    assert vllm.engine_version == ollama.engine_version == "0.0.0-scripted"
    assert "vLLM target 'NVIDIA H100 SXM - vLLM' created" in first
    assert "Ollama target 'NVIDIA H100 SXM - Ollama' created" in first
    assert "forced output length (ignore_eos) yes" in first and "forced output length (ignore_eos) no" in first
    assert f"New queue(s) {vllm.queue_name}, {ollama.queue_name}" in first

    second = register()
    assert InferenceTarget.objects.count() == 2
    assert set(InferenceTarget.objects.values_list("pk", flat=True)) == {vllm.pk, ollama.pk}
    assert "updated" in second and "created" not in second and "New queue" not in second


@pytest.mark.django_db
def test_changed_environment_updates_the_same_targets_keeping_their_queues(env, engines):
    env(
        VLLM_URL=engines["vllm"],
        VLLM_MODEL="meta-llama/Llama-3.2-1B-Instruct",
        OLLAMA_URL=engines["ollama"],
        OLLAMA_MODELS="llama3.2:1b",
        GPU_HARDWARE="h100-sxm",
    )
    register()
    before = {t.kind: (t.pk, t.queue_name) for t in InferenceTarget.objects.all()}

    # The instructor moves to an L40S, adds a tag and a price: same rows, same queues.
    env(GPU_HARDWARE="l40s", OLLAMA_MODELS="llama3.2:1b,llama3.2:3b", GPU_PRICE_PER_HOUR="1.10")
    out = register()

    after = {t.kind: (t.pk, t.queue_name) for t in InferenceTarget.objects.all()}
    assert after == before
    ollama = InferenceTarget.objects.get(kind="ollama")
    assert ollama.name == "NVIDIA L40S - Ollama" and ollama.hardware_slug == "l40s"
    assert ollama.model_names == ["llama3.2:1b", "llama3.2:3b"]
    assert ollama.price_per_gpu_hour == Decimal("1.100")
    assert "renamed from 'NVIDIA H100 SXM - Ollama'" in out
    # The probe saw that the engine has only one of the two tags.
    assert "not pulled yet: llama3.2:3b" in out


@pytest.mark.django_db
def test_engines_on_separate_gpus_share_no_lock_and_tensor_parallel_counts_in_price_and_bound(env, engines):
    env(
        VLLM_URL=engines["vllm"],
        VLLM_MODEL="meta-llama/Llama-3.2-1B-Instruct",
        VLLM_GPU_IDS="0,1",
        OLLAMA_URL=engines["ollama"],
        OLLAMA_MODELS="llama3.2:1b",
        OLLAMA_GPU_IDS="2",
        GPU_HARDWARE="h100-sxm",
        GPU_PRICE_PER_HOUR="2",
    )
    register()
    vllm = InferenceTarget.objects.get(kind="vllm")
    ollama = InferenceTarget.objects.get(kind="ollama")
    assert vllm.hardware_group == ollama.hardware_group == ""
    assert vllm.name == "2 × NVIDIA H100 SXM - vLLM"
    assert vllm.memory_bandwidth_bytes_s == pytest.approx(2 * 3.35e12)
    assert vllm.price_per_gpu_hour == Decimal("4.000") and ollama.price_per_gpu_hour == Decimal("2.000")


@pytest.mark.django_db
def test_a_wrong_model_name_is_flagged_and_an_engine_not_up_yet_is_recorded_not_fatal(env, engines):
    env(VLLM_URL=engines["vllm"], VLLM_MODEL="meta-llama/Llama-3.1-8B-Instruct")
    out = register()
    assert "serves meta-llama/Llama-3.2-1B-Instruct, not meta-llama/Llama-3.1-8B-Instruct" in out

    env(VLLM_URL="http://127.0.0.1:9", VLLM_TARGET_NAME="vLLM still loading")
    out = register()
    target = InferenceTarget.objects.get(name="vLLM still loading")
    assert target.probe_error.startswith("unreachable")
    assert "not answering yet" in out and "manage.py target probe 'vLLM still loading'" in out


@pytest.mark.django_db
def test_compose_service_names_are_accepted_as_engine_addresses(env):
    env(VLLM_URL="http://vllm:8000", VLLM_MODEL="m", OLLAMA_URL="http://ollama:11434", OLLAMA_MODELS="a,b")
    out = StringIO()
    call_command("register_env_targets", "--no-probe", stdout=out)
    assert set(InferenceTarget.objects.values_list("base_url", flat=True)) == {
        "http://vllm:8000",
        "http://ollama:11434",
    }
    assert out.getvalue().count("probe: skipped") == 2


@pytest.mark.django_db
def test_nothing_is_registered_when_no_engine_is_configured(env):
    env(VLLM_URL="", OLLAMA_URL="", VLLM_MODEL="ignored", GPU_HARDWARE="h100-sxm")
    assert "no target registered" in register()
    assert not InferenceTarget.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("values", "message"),
    [
        (
            {"VLLM_URL": "http://vllm:8000", "VLLM_MODEL": "m", "GPU_HARDWARE": "h100"},
            "GPU_HARDWARE='h100' is not in the hardware catalogue; use one of: l4, a10g,",
        ),
        ({"VLLM_URL": "http://vllm:8000"}, "VLLM_URL is set but VLLM_MODEL is empty"),
        (
            {"OLLAMA_URL": "vllm:8000", "OLLAMA_MODELS": "a"},
            "OLLAMA_URL='vllm:8000' is not an http:// or https:// address",
        ),
        (
            {"VLLM_URL": "http://vllm:8000", "VLLM_MODEL": "m", "GPU_PRICE_PER_HOUR": "two"},
            "GPU_PRICE_PER_HOUR='two' is not a price",
        ),
        (
            {"VLLM_URL": "http://vllm:8000", "VLLM_MODEL": "m", "VLLM_GPU_IDS": "first"},
            "VLLM_GPU_IDS='first' must list GPUs",
        ),
        (
            {"VLLM_URL": "http://vllm:8000", "VLLM_MODEL": "m", "VLLM_WEIGHTS_FROM": "llama-9b:bf16"},
            "VLLM_WEIGHTS_FROM='llama-9b:bf16': Unknown catalogue model 'llama-9b'",
        ),
    ],
)
def test_a_bad_value_stops_with_one_line_naming_it_and_what_is_allowed(env, values, message):
    env(**values)
    with pytest.raises(CommandError) as error:
        register()
    text = str(error.value)
    assert text.startswith("Configuration error: ") and message in text
    assert "\n" not in text
    assert not InferenceTarget.objects.exists()


@pytest.mark.django_db
def test_a_context_shorter_than_the_targets_limits_is_called_out(env):
    env(OLLAMA_URL="http://ollama:11434", OLLAMA_MODELS="llama3.2:1b", OLLAMA_CONTEXT_LENGTH="4096")
    out = StringIO()
    call_command("register_env_targets", "--no-probe", stdout=out)
    assert "4,096 prompt + 2,048 output tokens = 6,144, more than OLLAMA_CONTEXT_LENGTH=4,096" in out.getvalue()
