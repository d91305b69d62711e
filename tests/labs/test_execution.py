"""Pieces of the run executor that need no engine: what a learner may read of an engine's error."""

from labs.execution import without_address
from labs.models import InferenceTarget


def test_engine_errors_name_the_target_never_its_address():
    gpu = InferenceTarget(name="H100 vLLM", base_url="http://10.0.0.7:8000/")
    assert without_address(text="cannot connect to 10.0.0.7:8000: refused", target=gpu) == (
        "cannot connect to H100 vLLM: refused"
    )
    assert without_address(text="POST http://10.0.0.7:8000/v1/completions: 500", target=gpu) == (
        "POST H100 vLLM/v1/completions: 500"
    )
    assert "10.0.0.7" not in without_address(text="no route to host 10.0.0.7", target=gpu)


def test_a_service_name_is_replaced_with_its_port_but_not_as_a_word():
    compose = InferenceTarget(name="Cohort GPU", base_url="http://vllm:8000")
    assert without_address(text="vllm rejected the model (vllm:8000)", target=compose) == (
        "vllm rejected the model (Cohort GPU)"
    )
