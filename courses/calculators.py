"""Lesson calculators: forms that bound every input, and compute functions that return the result
together with the arithmetic, step by step, so the page can show its working.

The arithmetic lives in `courses.inference`; this module only adapts it to forms. Kinds:
`speed-of-light`, `kv-cache`, `cost` (see docs/content-format.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django import forms

from courses.inference import math as im
from courses.inference.report import (
    MAX_BATCH,
    MAX_GPU_PRICE_PER_HOUR,
    MAX_TOKENS_PER_S,
    cost_report,
    kv_cache_report,
    speed_of_light,
)
from courses.inference.specs import get_model, gpus, models
from courses.inference.units import format_bytes, format_rate, format_seconds, significant

MAX_CONTEXT = max(model.max_context for model in models().values())


def _range_messages(*, label: str, low: float, high: float, unit: str = "") -> dict[str, str]:
    # Django's defaults ("Ensure this value is greater than or equal to 1.") do not say which
    # field; on a page with a dozen inputs the message must.
    # Django %-formats these messages with the limit, so a literal "%" must be doubled.
    suffix = f" {unit}".replace("%", "%%") if unit else ""
    message = f"{label} must be between {low:,g} and {high:,g}{suffix}."
    return {
        "min_value": message,
        "max_value": message,
        "invalid": f"{label} must be a number between {low:,g} and {high:,g}{suffix}.",
        "required": f"{label} is required ({low:,g} to {high:,g}{suffix}).",
    }


def bounded_integer(*, label: str, low: int, high: int, help_text: str = "") -> forms.IntegerField:
    return forms.IntegerField(
        label=label,
        min_value=low,
        max_value=high,
        help_text=help_text,
        error_messages=_range_messages(label=label, low=low, high=high),
    )


def bounded_float(
    *, label: str, low: float, high: float, help_text: str = "", unit: str = ""
) -> forms.FloatField:
    return forms.FloatField(
        label=label,
        min_value=low,
        max_value=high,
        help_text=help_text,
        error_messages=_range_messages(label=label, low=low, high=high, unit=unit),
        widget=forms.NumberInput(attrs={"step": "any"}),
    )


def _choice(
    *, label: str, choices: list[tuple[str, str]], help_text: str = ""
) -> forms.ChoiceField:
    allowed = ", ".join(value for value, _ in choices)
    return forms.ChoiceField(
        label=label,
        choices=choices,
        help_text=help_text,
        error_messages={
            "invalid_choice": f"{label} must be one of {allowed}; got '%(value)s'.",
            "required": f"{label} is required (one of {allowed}).",
        },
    )


def gpu_choices() -> list[tuple[str, str]]:
    return [(slug, gpu.name) for slug, gpu in gpus().items()]


def model_choices() -> list[tuple[str, str]]:
    return [(slug, model.name) for slug, model in models().items()]


WEIGHT_CHOICES = [(precision, precision) for precision in im.WEIGHT_PRECISIONS]
KV_CHOICES = [(precision, precision) for precision in im.KV_PRECISIONS]


class _ContextMixin:
    """Context may not exceed the chosen model's maximum (checked once both are known)."""

    def _check_context(self, cleaned: dict[str, Any]) -> None:
        slug, context = cleaned.get("model"), cleaned.get("context")
        if slug is None or context is None:
            return
        model = get_model(slug=slug)
        if context > model.max_context:
            self.add_error(  # type: ignore[attr-defined]
                "context",
                f"Context must be between 1 and {model.max_context:,} tokens for {model.name}.",
            )


class SpeedOfLightForm(_ContextMixin, forms.Form):
    gpu = _choice(label="GPU", choices=gpu_choices())
    model = _choice(label="Model", choices=model_choices())
    precision = _choice(
        label="Weights", choices=WEIGHT_CHOICES, help_text="int4 = GPTQ/AWQ-style, weight-only"
    )
    kv_precision = _choice(label="KV cache", choices=KV_CHOICES)
    batch = bounded_integer(
        label="Batch", low=1, high=MAX_BATCH, help_text="sequences decoding together"
    )
    context = bounded_integer(
        label="Context", low=1, high=MAX_CONTEXT, help_text="tokens in each sequence's KV cache"
    )
    prompt_tokens = bounded_integer(
        label="Prompt tokens",
        low=1,
        high=MAX_CONTEXT,
        help_text="prompt length for the prefill bound",
    )

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        self._check_context(cleaned)
        context, prompt = cleaned.get("context"), cleaned.get("prompt_tokens")
        if (
            context is not None
            and prompt is not None
            and prompt > context
            and "context" not in self.errors
        ):
            self.add_error(
                "prompt_tokens",
                f"Prompt tokens must be between 1 and the context ({context:,}): the prompt is "
                "part of the context.",
            )
        return cleaned


class KvCacheForm(_ContextMixin, forms.Form):
    model = _choice(label="Model", choices=model_choices())
    kv_precision = _choice(label="KV cache", choices=KV_CHOICES)
    context = bounded_integer(
        label="Context", low=1, high=MAX_CONTEXT, help_text="tokens per sequence"
    )
    gpu = _choice(label="GPU", choices=gpu_choices())
    precision = _choice(
        label="Weights", choices=WEIGHT_CHOICES, help_text="to see what is left for the cache"
    )

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        self._check_context(cleaned)
        return cleaned


class CostForm(forms.Form):
    gpu_price = bounded_float(
        label="GPU price",
        low=0.01,
        high=MAX_GPU_PRICE_PER_HOUR,
        unit="$ per GPU-hour",
        help_text="$ per GPU-hour",
    )
    tokens_per_s = bounded_float(
        label="Throughput",
        low=0.1,
        high=MAX_TOKENS_PER_S,
        unit="tokens/s",
        help_text="output tokens/s while busy",
    )
    utilisation = bounded_float(
        label="Utilisation",
        low=1,
        high=100,
        unit="%",
        help_text="% of the hour the GPU serves at that rate",
    )


@dataclass(frozen=True)
class CalculatorResult:
    """What the result panel shows: headline rows, a verdict, and the working as steps."""

    rows: list[tuple[str, str]]
    steps: list[str]
    verdict: str = ""
    ok: bool = True
    data: dict[str, Any] = field(default_factory=dict)


def compute_speed_of_light(
    *,
    gpu: str,
    model: str,
    precision: str,
    kv_precision: str,
    batch: int,
    context: int,
    prompt_tokens: int,
) -> CalculatorResult:
    result = speed_of_light(
        gpu_slug=gpu,
        model_slug=model,
        precision=precision,
        kv_precision=kv_precision,
        batch=batch,
        context=context,
        prompt_tokens=prompt_tokens,
    )
    decode = result.decode
    verdict = (
        f"Fits: {format_bytes(value=result.memory_needed_bytes)} of {result.gpu.memory_label}."
        if result.fits
        else f"Does not fit: needs {format_bytes(value=result.memory_needed_bytes)}, the GPU has "
        f"{result.gpu.memory_label}."
    )
    return CalculatorResult(
        rows=[
            ("Weights", format_bytes(value=result.weight_bytes)),
            ("KV cache for the batch", format_bytes(value=result.kv_bytes_total)),
            ("Memory needed (with reserve)", format_bytes(value=result.memory_needed_bytes)),
            ("Max concurrent sequences", f"{result.max_concurrent_sequences:,}"),
            ("Decode bound per sequence", format_rate(value=decode.per_sequence_tokens_per_s)),
            ("Decode bound, aggregate", format_rate(value=decode.aggregate_tokens_per_s)),
            (
                "Decode step",
                f"≥ {format_seconds(value=decode.step_seconds)} ({decode.bound_by}-bound)",
            ),
            (
                "Prefill (time to first token)",
                f"≥ {format_seconds(value=result.prefill.seconds)} "
                f"({result.prefill.bound_by}-bound)",
            ),
        ],
        steps=list(result.steps),
        verdict=verdict,
        ok=result.fits,
        data=result.as_dict(),
    )


def compute_kv_cache(
    *, model: str, kv_precision: str, context: int, gpu: str, precision: str
) -> CalculatorResult:
    report = kv_cache_report(
        gpu_slug=gpu,
        model_slug=model,
        precision=precision,
        kv_precision=kv_precision,
        context=context,
    )
    sequences = report.max_concurrent_sequences
    free = report.gpu.memory_bytes - report.runtime_reserve_bytes - report.weight_bytes
    if sequences:
        verdict = f"{sequences:,} sequences of {context:,} tokens fit beside the weights."
    elif free > 0:
        # The weights fit; what is left is smaller than one sequence's cache. Saying the weights
        # do not fit here would contradict the working below, which shows the room left.
        verdict = (
            f"Not one sequence of {context:,} tokens fits: the weights leave "
            f"{format_bytes(value=free)} after the reserve, and one sequence's KV cache needs "
            f"{format_bytes(value=report.kv_bytes_per_sequence)}."
        )
    else:
        verdict = "The weights alone do not fit: no room for any KV cache."
    return CalculatorResult(
        rows=[
            ("KV bytes per token", format_bytes(value=report.kv_bytes_per_token)),
            ("KV bytes per sequence", format_bytes(value=report.kv_bytes_per_sequence)),
            ("Max concurrent sequences", f"{sequences:,}"),
        ],
        steps=list(report.steps),
        verdict=verdict,
        ok=sequences > 0,
        data=report.as_dict(),
    )


def compute_cost(*, gpu_price: float, tokens_per_s: float, utilisation: float) -> CalculatorResult:
    """`utilisation` is a percentage, as the form takes it."""
    report = cost_report(
        gpu_price_per_hour=gpu_price, tokens_per_s=tokens_per_s, utilisation=utilisation / 100
    )
    cost = f"${significant(value=report.cost_per_million_tokens, digits=3)}"
    return CalculatorResult(
        rows=[
            ("Tokens per hour", f"{significant(value=report.tokens_per_hour, digits=3)}"),
            ("Cost per million tokens", cost),
        ],
        steps=list(report.steps),
        verdict=f"{cost} per million output tokens.",
        data=report.as_dict(),
    )


def _no_derived_defaults(data: dict[str, str]) -> dict[str, str]:
    return data


def _prompt_within_context(data: dict[str, str]) -> dict[str, str]:
    # A lesson that sets only a short context should not trip over the 1,024-token default prompt.
    if "prompt_tokens" not in data and str(data.get("context", "")).isdigit():
        data = {**data, "prompt_tokens": str(min(1024, int(data["context"])))}
    return data


@dataclass(frozen=True)
class CalculatorKind:
    kind: str
    title: str
    summary: str
    form: type[forms.Form]
    compute: Callable[..., CalculatorResult]
    defaults: dict[str, str]
    # Fills defaults that depend on other given values; runs before the generic defaults.
    derive: Callable[[dict[str, str]], dict[str, str]] = _no_derived_defaults

    def data(self, *, given: dict[str, str]) -> dict[str, str]:
        return {**self.defaults, **self.derive(dict(given))}


CALCULATORS: dict[str, CalculatorKind] = {
    "speed-of-light": CalculatorKind(
        kind="speed-of-light",
        title="Speed-of-light calculator",
        summary="The memory budget and the fastest a model can possibly decode and prefill on a "
        "GPU: bytes read ÷ bandwidth against FLOPs ÷ peak.",
        form=SpeedOfLightForm,
        compute=compute_speed_of_light,
        defaults={
            "gpu": "h100-sxm",
            "model": "llama-3.1-8b",
            "precision": "bf16",
            "kv_precision": "bf16",
            "batch": "1",
            "context": "4096",
            "prompt_tokens": "1024",
        },
        derive=_prompt_within_context,
    ),
    "kv-cache": CalculatorKind(
        kind="kv-cache",
        title="KV cache calculator",
        summary="KV cache bytes per token and per sequence, and how many full-length sequences "
        "fit beside the weights.",
        form=KvCacheForm,
        compute=compute_kv_cache,
        defaults={
            "model": "llama-3.1-8b",
            "kv_precision": "bf16",
            "context": "8192",
            "gpu": "l4",
            "precision": "bf16",
        },
    ),
    "cost": CalculatorKind(
        kind="cost",
        title="Cost per million tokens",
        summary="What a million output tokens cost on a GPU rented by the hour, given its "
        "throughput and how busy it is.",
        form=CostForm,
        compute=compute_cost,
        defaults={"gpu_price": "2.50", "tokens_per_s": "2000", "utilisation": "50"},
    ),
}
