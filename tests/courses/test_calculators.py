# Multiplication and minus signs in learner-facing text and worked arithmetic are intended.
"""Calculators: form bounds, compute functions with their steps, the embed context, the views."""

import re

import pytest
from django.urls import reverse

from courses.calculators import (
    CALCULATORS,
    CostForm,
    KvCacheForm,
    SpeedOfLightForm,
    compute_cost,
    compute_kv_cache,
    compute_speed_of_light,
)
from courses.views_calculators import CalculatorError, calculator_context, calculator_urlpatterns

# A URLconf with only the calculator patterns, no namespace (test_partial_without_namespace).
urlpatterns = [*calculator_urlpatterns]

SPEED_DEFAULTS = CALCULATORS["speed-of-light"].defaults


def errors_of(form) -> list[str]:
    return [str(message) for messages in form.errors.values() for message in messages]


def test_speed_of_light_form_accepts_the_defaults():
    form = SpeedOfLightForm(data=SPEED_DEFAULTS)
    assert form.is_valid(), form.errors
    assert form.cleaned_data["batch"] == 1


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("batch", "0", "Batch must be between 1 and 4,096."),
        ("batch", "5000", "Batch must be between 1 and 4,096."),
        ("batch", "many", "Batch must be a number between 1 and 4,096."),
        ("context", "", "Context is required (1 to 163,840)."),
        (
            "gpu",
            "h100",
            "GPU must be one of l4, a10g, rtx-4090, l40s, a100-40gb, a100-80gb, h100-sxm, "
            "h100-pcie, h200, mi300x, b200; got 'h100'.",
        ),
        (
            "precision",
            "fp32",
            "Weights must be one of fp16, bf16, fp8, int8, int4, mxfp4, nvfp4; got 'fp32'.",
        ),
    ],
)
def test_speed_of_light_form_names_the_field_and_the_range(field, value, message):
    form = SpeedOfLightForm(data={**SPEED_DEFAULTS, field: value})
    assert not form.is_valid()
    assert errors_of(form) == [message]


def test_context_is_bounded_by_the_chosen_model():
    form = SpeedOfLightForm(data={**SPEED_DEFAULTS, "model": "mistral-7b", "context": "65536"})
    assert not form.is_valid()
    assert form.errors["context"] == [
        "Context must be between 1 and 32,768 tokens for Mistral 7B v0.3."
    ]


def test_prompt_may_not_exceed_the_context():
    form = SpeedOfLightForm(data={**SPEED_DEFAULTS, "context": "512", "prompt_tokens": "1024"})
    assert not form.is_valid()
    assert form.errors["prompt_tokens"] == [
        "Prompt tokens must be between 1 and the context (512): the prompt is part of the context."
    ]


def test_kv_cache_and_cost_forms():
    assert KvCacheForm(data=CALCULATORS["kv-cache"].defaults).is_valid()
    cost = CostForm(data={"gpu_price": "2.5", "tokens_per_s": "2000", "utilisation": "0.5"})
    assert not cost.is_valid()
    assert errors_of(cost) == ["Utilisation must be between 1 and 100 %."]
    cost = CostForm(data={"gpu_price": "-1", "tokens_per_s": "2000", "utilisation": "50"})
    assert errors_of(cost) == ["GPU price must be between 0.01 and 1,000 $ per GPU-hour."]


def test_compute_speed_of_light_returns_rows_verdict_and_steps():
    result = compute_speed_of_light(
        gpu="h100-sxm",
        model="llama-3.1-8b",
        precision="bf16",
        kv_precision="bf16",
        batch=1,
        context=4096,
        prompt_tokens=1024,
    )
    rows = dict(result.rows)
    # Hand-checked in test_inference_math: 201.84 tokens/s, step 4.95 ms, prefill 16.9 ms.
    assert rows["Decode bound per sequence"] == "202 tokens/s"
    assert rows["Decode step"] == "≥ 4.95 ms (memory-bound)"
    assert rows["Prefill (time to first token)"] == "≥ 16.9 ms (compute-bound)"
    assert rows["Weights"] == "16.06 GB (14.96 GiB)"
    assert result.ok and result.verdict.startswith("Fits: 24.6 GB")
    assert (
        result.steps[0]
        == "Weights: 8,030,261,248 parameters × 2 bytes (bf16) = 16.06 GB (14.96 GiB)"
    )
    assert len(result.steps) >= 12
    assert result.data["kv_bytes_per_token"] == 131_072


def test_compute_kv_cache_for_the_lesson_example():
    # Llama 3.1 8B, 8,192 tokens: 131,072 × 8,192 = 1 GiB per sequence; on an L4 5 fit.
    result = compute_kv_cache(
        model="llama-3.1-8b", kv_precision="bf16", context=8192, gpu="l4", precision="bf16"
    )
    rows = dict(result.rows)
    assert rows["KV bytes per token"] == "131,072 bytes (128 KiB)"
    assert rows["KV bytes per sequence"] == "1.074 GB (1 GiB)"
    assert rows["Max concurrent sequences"] == "5"
    assert result.verdict == "5 sequences of 8,192 tokens fit beside the weights."
    bad = compute_kv_cache(
        model="llama-3.1-70b", kv_precision="bf16", context=8192, gpu="l4", precision="bf16"
    )
    assert not bad.ok


def test_kv_cache_verdict_does_not_say_the_weights_do_not_fit_when_they_do():
    # Llama 3.1 70B in fp8 on an H100 SXM: 80 GB − 8 GB reserve − 70.55 GB weights leaves
    # 1.45 GB, less than one 16k-token sequence's 2.684 GB of fp8 cache. The weights fit.
    for context, per_sequence in ((16384, "2.684 GB"), (32768, "5.369 GB")):
        result = compute_kv_cache(
            model="llama-3.1-70b", kv_precision="fp8", context=context, gpu="h100-sxm", precision="fp8"
        )
        assert not result.ok
        assert "weights alone do not fit" not in result.verdict
        assert result.verdict.startswith(f"Not one sequence of {context:,} tokens fits: the weights leave 1.446 GB")
        assert f"needs {per_sequence}" in result.verdict
    too_big = compute_kv_cache(
        model="llama-3.1-70b", kv_precision="bf16", context=8192, gpu="l4", precision="bf16"
    )
    assert too_big.verdict == "The weights alone do not fit: no room for any KV cache."


def test_compute_cost_takes_utilisation_in_percent():
    # $2.50 / (2,000 × 0.5 × 3,600) × 10^6 = $0.694.
    result = compute_cost(gpu_price=2.5, tokens_per_s=2000, utilisation=50)
    assert dict(result.rows)["Cost per million tokens"] == "$0.694"
    assert (
        result.steps[0]
        == "Tokens per hour: 2,000 tokens/s × 50.0 % busy × 3,600 s = 3.60 million tokens"
    )


def test_calculator_context_embeds_with_defaults_and_overrides():
    context = calculator_context(kind="speed-of-light", initial={"gpu": "l4", "batch": "8"})
    form = context["form"]
    assert form.is_valid()
    assert form.cleaned_data["gpu"] == "l4" and form.cleaned_data["batch"] == 8
    assert form.cleaned_data["model"] == "llama-3.1-8b"
    assert context["result"].data["gpu"] == "l4"
    assert context["calculator"]["template"] == "courses/calculators/speed-of-light.html"
    assert context["calculator"]["url_name"] == "courses:calculator-speed-of-light"
    # Same arguments, same ids: cached lesson HTML stays stable.
    again = calculator_context(kind="speed-of-light", initial={"batch": "8", "gpu": "l4"})
    assert again["calculator"]["dom_id"] == context["calculator"]["dom_id"]


def test_a_short_context_shortens_the_default_prompt():
    context = calculator_context(kind="speed-of-light", initial={"context": "512"})
    assert context["form"].cleaned_data["prompt_tokens"] == 512


@pytest.mark.parametrize(
    ("kind", "initial", "message"),
    [
        ("speed", {}, "unknown calculator 'speed'; calculators: speed-of-light, kv-cache, cost"),
        (
            "speed-of-light",
            {"batch_size": "8"},
            "unknown argument 'batch_size'; arguments: gpu, model,",
        ),
        ("speed-of-light", {"batch": "0"}, "Batch must be between 1 and 4,096."),
        (
            "kv-cache",
            {"model": "qwen2.5-7b", "context": "131072"},
            "Context must be between 1 and 32,768 tokens",
        ),
        ("cost", {"utilisation": "0.5"}, "Utilisation must be between 1 and 100 %."),
    ],
)
def test_calculator_context_rejects_bad_lesson_arguments(kind, initial, message):
    with pytest.raises(CalculatorError, match=re.escape(message)):
        calculator_context(kind=kind, initial=initial)


@pytest.mark.parametrize("kind", sorted(CALCULATORS))
def test_htmx_request_gets_the_partial(client, kind):
    url = reverse(f"courses:calculator-{kind}")
    assert url == f"/learn/calculators/{kind}/"
    response = client.get(url, headers={"HX-Request": "true"})
    assert response.status_code == 200
    html = response.content.decode()
    assert "<html" not in html
    assert html.lstrip().startswith('<section class="calculator')
    assert f'<form method="get" action="{url}"' in html
    assert f'hx-get="{url}"' in html
    assert 'hx-target="closest .calculator"' in html
    assert 'hx-push-url="false"' in html
    # Every input has a label pointing at it.
    for input_id in re.findall(r'<(?:input|select)[^>]*\bid="([^"]+)"', html):
        assert f'<label for="{input_id}">' in html
    assert '<ol class="calculator-steps">' in html


@pytest.mark.parametrize("kind", sorted(CALCULATORS))
def test_plain_request_gets_the_full_page(client, kind):
    response = client.get(reverse(f"courses:calculator-{kind}"))
    assert response.status_code == 200
    html = response.content.decode()
    assert html.startswith("<!doctype html>")
    assert f"<h1>{CALCULATORS[kind].title}</h1>" in html
    assert '<ol class="calculator-steps">' in html


def test_get_parameters_drive_the_result(client):
    response = client.get(
        reverse("courses:calculator-kv-cache"),
        {
            "model": "llama-3.1-70b",
            "kv_precision": "fp8",
            "context": "4096",
            "gpu": "h200",
            "precision": "fp8",
        },
        headers={"HX-Request": "true"},
    )
    html = response.content.decode()
    # 2 × 80 × 8 × 128 × 1 byte = 163,840 bytes per token (160 KiB).
    assert "163,840 bytes (160 KiB)" in html
    assert 'value="fp8" selected' in html


def test_invalid_input_shows_the_error_in_place(client):
    response = client.get(
        reverse("courses:calculator-speed-of-light"), {"batch": "0"}, headers={"HX-Request": "true"}
    )
    # 200, because htmx swaps only successful responses and the error is what must be shown.
    assert response.status_code == 200
    html = response.content.decode()
    assert '<p class="field-error" role="alert">Batch must be between 1 and 4,096.</p>' in html
    assert "calculator-steps" not in html


def test_the_embed_id_survives_an_htmx_round_trip(client):
    response = client.get(
        reverse("courses:calculator-cost"),
        {"cid": "calc-cost-abc123", "utilisation": "80"},
        headers={"HX-Request": "true"},
    )
    html = response.content.decode()
    assert 'id="calc-cost-abc123"' in html
    assert 'for="calc-cost-abc123-utilisation"' in html
    hostile = client.get(
        reverse("courses:calculator-cost"), {"cid": '"><script>'}, headers={"HX-Request": "true"}
    )
    assert "<script>" not in hostile.content.decode()


def test_boosted_navigation_gets_the_page_and_caches_vary_on_htmx(client):
    url = reverse("courses:calculator-cost")
    boosted = client.get(url, headers={"HX-Request": "true", "HX-Boosted": "true"})
    assert boosted.content.decode().startswith("<!doctype html>")
    assert "HX-Request" in boosted["Vary"]


def test_calculators_only_answer_get(client):
    assert client.post(reverse("courses:calculator-cost")).status_code == 405


@pytest.mark.urls(__name__)
def test_partial_without_namespace(client):
    # Outside courses/urls.py the patterns resolve without the "courses:" namespace.
    response = client.get("/calculators/cost/", headers={"HX-Request": "true"})
    assert response.status_code == 200
    assert 'action="/calculators/cost/"' in response.content.decode()
