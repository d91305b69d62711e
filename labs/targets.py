"""Inference targets: registering, probing, their limits, and the hardware spec behind speed-of-light bounds."""

import asyncio
import re
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.utils import timezone
from django.utils.text import slugify

from courses.inference.math import model_weight_bytes
from courses.inference.specs import UnknownSlugError, get_gpu, get_model, gpu_slugs, model_slugs
from labs.models import InferenceTarget
from workers.measure import probe

API_FOR_KIND = {
    InferenceTarget.Kind.VLLM: InferenceTarget.Api.OPENAI_COMPLETIONS,
    InferenceTarget.Kind.LLAMACPP: InferenceTarget.Api.OPENAI_COMPLETIONS,
    InferenceTarget.Kind.OPENAI_COMPATIBLE: InferenceTarget.Api.OPENAI_CHAT,
    InferenceTarget.Kind.OLLAMA: InferenceTarget.Api.OLLAMA_GENERATE,
}


def target_limits(target: InferenceTarget) -> dict[str, int]:
    """What one run on this target may ask for; the plan of a run is built within these."""
    return {
        "max_requests_per_run": target.max_requests_per_run,
        "max_run_seconds": target.max_run_seconds,
        "max_concurrency": target.max_concurrency,
    }


@dataclass(frozen=True)
class Hardware:
    name: str
    slug: str
    memory_bandwidth_bytes_s: float | None
    peak_flops: float | None
    memory_bytes: float | None


class EngineURLValidator(URLValidator):
    """Django's URL check, also accepting host names without a dot: engines are reached by compose
    service name (`http://vllm:8000`) or a LAN host name (`http://gpu-box:8000`), which Django's
    own validator refuses for want of a top-level domain."""

    host_re = "(" + URLValidator.hostname_re + URLValidator.domain_re + "(?:" + URLValidator.tld_re + ")?|localhost)"
    regex = re.compile(
        r"^(?:[a-z0-9.+-]*)://"
        r"(?:[^\s:@/]+(?::[^\s:@/]*)?@)?"
        r"(?:" + URLValidator.ipv4_re + "|" + URLValidator.ipv6_re + "|" + host_re + ")"
        r"(?::[0-9]{1,5})?"
        r"(?:[/?#][^\s]*)?"
        r"\Z",
        re.IGNORECASE,
    )
    schemes = ["http", "https"]


validate_engine_url = EngineURLValidator()


def hardware_from_catalogue(*, slug: str) -> Hardware:
    try:
        gpu = get_gpu(slug=slug)
    except UnknownSlugError:
        raise ValidationError(f"Unknown hardware '{slug}'. Known: {', '.join(gpu_slugs())}.") from None
    return Hardware(
        name=gpu.name,
        slug=gpu.slug,
        memory_bandwidth_bytes_s=gpu.memory_bandwidth_bytes_per_s,
        peak_flops=gpu.peak_16bit_flops,
        memory_bytes=float(gpu.memory_bytes),
    )


def weight_bytes_from_catalogue(*, spec: str) -> float:
    """'llama-3.2-1b:bf16' -> the bytes a decode step reads for that model at that precision."""
    slug, _, precision = spec.partition(":")
    try:
        model = get_model(slug=slug)
    except UnknownSlugError:
        raise ValidationError(f"Unknown catalogue model '{slug}'. Known: {', '.join(model_slugs())}.") from None
    try:
        return float(model_weight_bytes(model=model, precision=precision or "bf16"))
    except ValueError as error:
        raise ValidationError(f"--weights-from {spec}: {error}") from None


def upsert_target(
    *,
    name: str,
    kind: str,
    base_url: str,
    models: list[str],
    hardware: Hardware | None = None,
    api: str | None = None,
    api_key: str = "",
    synthetic_text: bool = False,
    real_models: list[str] | None = None,
    description: str = "",
    model_bytes: dict[str, float] | None = None,
    limits: dict[str, int] | None = None,
    hardware_group: str | None = None,
) -> InferenceTarget:
    if kind not in InferenceTarget.Kind.values:
        raise ValidationError(f"Unknown kind '{kind}'. Use one of: {', '.join(InferenceTarget.Kind.values)}.")
    if not models:
        raise ValidationError("Give at least one model name (--model).")
    fields = {
        "kind": kind,
        "api": api or API_FOR_KIND[kind],
        "base_url": base_url,
        "model_names": models,
        "api_key": api_key,
        "synthetic_text": synthetic_text,
        "description": description,
        "enabled": True,
    }
    if real_models is not None:
        fields["real_model_names"] = real_models
    if hardware_group is not None:  # None keeps what staff set in the admin
        fields["hardware_group"] = hardware_group
    if model_bytes is not None:
        fields["model_bytes"] = model_bytes
    if hardware is not None:
        fields.update(
            hardware_name=hardware.name,
            hardware_slug=hardware.slug,
            memory_bandwidth_bytes_s=hardware.memory_bandwidth_bytes_s,
            peak_flops=hardware.peak_flops,
            memory_bytes=hardware.memory_bytes,
        )
    fields.update(limits or {})
    target = InferenceTarget.objects.filter(name=name).first()
    if target is None:
        target = InferenceTarget(name=name, slug=_unique_slug(name))
    for key, value in fields.items():
        setattr(target, key, value)
    try:
        validate_engine_url(base_url)
    except ValidationError:
        raise ValidationError(f"Base URL '{base_url}' is not an http:// or https:// address.") from None
    target.full_clean(exclude=["base_url"])
    target.save()
    return target


def _unique_slug(name: str) -> str:
    base = slugify(name)[:50] or "target"
    slug, n = base, 2
    while InferenceTarget.objects.filter(slug=slug).exists():
        slug, n = f"{base}-{n}", n + 1
    return slug


def probe_and_record(*, target_id: int) -> InferenceTarget:
    """Ask the engine what it supports and remember it; a failure is recorded, not raised."""
    target = InferenceTarget.objects.get(pk=target_id)
    result = asyncio.run(
        probe(
            base_url=target.base_url, api_key=target.api_key or None, model=target.default_model or None, api=target.api
        )
    )
    target.probed_at = timezone.now()
    known_slots = (target.capabilities or {}).get("server_slots")
    if result.reachable:
        target.capabilities = {
            "include_usage": bool(result.include_usage),
            "ignore_eos": bool(result.ignore_eos),
            "tokenize": result.tokenize,
            "fresh_connection_per_stream": result.engine == "llamacpp",
            "metrics": result.metrics,
            "cache_prompt": result.engine == "llamacpp",
        }
        # Staff may have set the slot count for an engine that does not report it (Ollama).
        slots = result.server_slots or known_slots
        if slots:
            target.capabilities["server_slots"] = slots
        target.engine_version = (result.engine_version or result.engine or "")[:100]
        if result.models and not target.model_names:
            target.model_names = result.models
        target.probe_error = ""
    else:
        target.probe_error = "; ".join(result.errors) or "unreachable"
    target.save(update_fields=["capabilities", "engine_version", "model_names", "probe_error", "probed_at"])
    target.probe_result = result
    return target
