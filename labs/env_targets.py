"""The GPU box's engines as inference targets, from the environment.

docker-compose.yml gives `web` the engines' addresses (`VLLM_URL`, `OLLAMA_URL`), what they serve
(`VLLM_MODEL`, `OLLAMA_MODELS`) and the card (`GPU_HARDWARE`); `manage.py register_env_targets`
runs on every start of `web` and turns them into one target per engine, so a fresh deployment
has targets learners can use without anyone typing `target add`. Running it again updates the
same targets (found by name, or by engine kind and address after a rename), never duplicates them.
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from django.core.exceptions import ValidationError
from django.utils.text import slugify

from courses.inference.specs import UnknownSlugError, get_gpu, gpu_slugs
from labs.models import InferenceTarget
from labs.targets import Hardware, probe_and_record, upsert_target, validate_engine_url, weight_bytes_from_catalogue

# A GPU as NVIDIA_VISIBLE_DEVICES and compose's device_ids take it: an index or a UUID.
_GPU_ID = re.compile(r"^(?:\d+|GPU-[0-9a-fA-F-]+|MIG-[0-9a-zA-Z/-]+)$")


class EnvTargetsError(ValueError):
    """One or more variables are wrong; the message names each and what is allowed."""


@dataclass(frozen=True)
class EngineFromEnv:
    """One engine described by the environment, validated."""

    kind: str  # InferenceTarget.Kind value
    label: str  # "vLLM" or "Ollama", as messages name it
    name: str
    base_url: str
    models: list[str]
    model_bytes: dict[str, float] | None
    context_tokens: int | None  # --max-model-len / OLLAMA_CONTEXT_LENGTH, when known
    gpu_ids: list[str] | None
    hardware: Hardware | None
    price_per_gpu_hour: Decimal | None


@dataclass
class Registration:
    """What register_env_targets did for one engine, for the command to print."""

    engine: EngineFromEnv
    target: InferenceTarget
    created: bool
    renamed_from: str | None = None
    warnings: list[str] = field(default_factory=list)


# Per engine: (kind, label, URL variable, models variable, name variable, weights variable,
# context variable, GPU ids variable, example model).
_ENGINES = (
    (
        InferenceTarget.Kind.VLLM,
        "vLLM",
        "VLLM_URL",
        "VLLM_MODEL",
        "VLLM_TARGET_NAME",
        "VLLM_WEIGHTS_FROM",
        "VLLM_MAX_MODEL_LEN",
        "VLLM_GPU_IDS",
        "meta-llama/Llama-3.2-1B-Instruct",
    ),
    (
        InferenceTarget.Kind.OLLAMA,
        "Ollama",
        "OLLAMA_URL",
        "OLLAMA_MODELS",
        "OLLAMA_TARGET_NAME",
        "OLLAMA_WEIGHTS_FROM",
        "OLLAMA_CONTEXT_LENGTH",
        "OLLAMA_GPU_IDS",
        "llama3.2:1b,llama3.2:3b",
    ),
)


def engines_from_env(*, environ: Mapping[str, str]) -> list[EngineFromEnv]:
    """The engines the environment names, validated; [] when no engine URL is set.

    Raises EnvTargetsError naming every wrong variable at once, so one fix-and-restart suffices.
    """
    errors: list[str] = []

    def get(name: str) -> str:
        return (environ.get(name) or "").strip()

    gpu = None
    if slug := get("GPU_HARDWARE"):
        try:
            gpu = get_gpu(slug=slug)
        except UnknownSlugError:
            known = ", ".join(gpu_slugs())
            errors.append(f"GPU_HARDWARE={slug!r} is not in the hardware catalogue; use one of: {known}")
    price = None
    if raw_price := get("GPU_PRICE_PER_HOUR"):
        try:
            price = Decimal(raw_price)
        except InvalidOperation:
            price = None
        if price is None or not price.is_finite() or price < 0 or price >= Decimal("100000"):
            errors.append(
                f"GPU_PRICE_PER_HOUR={raw_price!r} is not a price; give US dollars per GPU hour as a number "
                "from 0 to 99999.999 (e.g. 2.49), or leave it empty"
            )
            price = None

    engines: list[EngineFromEnv] = []
    for kind, label, url_var, models_var, name_var, weights_var, context_var, ids_var, example in _ENGINES:
        url = get(url_var)
        if not url:
            continue  # this engine is not deployed
        try:
            validate_engine_url(url)
        except ValidationError:
            errors.append(
                f"{url_var}={url!r} is not an http:// or https:// address of the engine, e.g. http://vllm:8000"
            )
        models = [m.strip() for m in get(models_var).split(",") if m.strip()]
        if not models:
            errors.append(
                f"{url_var} is set but {models_var} is empty: name the model(s) {label} serves"
                f" ({'comma-separated, ' if ',' in example else ''}e.g. {example})"
            )
        model_bytes = None
        if (weights := get(weights_var)) and models:
            try:
                model_bytes = {models[0]: weight_bytes_from_catalogue(spec=weights)}
            except ValidationError as error:
                errors.append(f"{weights_var}={weights!r}: {'; '.join(error.messages)}")
        context = None
        if raw_context := get(context_var):
            if raw_context.isdigit() and int(raw_context) > 0:
                context = int(raw_context)
            else:
                errors.append(f"{context_var}={raw_context!r} must be a whole number of tokens, e.g. 8192")
        gpu_ids = None
        if raw_ids := get(ids_var):
            gpu_ids = [part.strip() for part in raw_ids.split(",") if part.strip()]
            if not gpu_ids or not all(_GPU_ID.match(part) for part in gpu_ids):
                errors.append(
                    f"{ids_var}={raw_ids!r} must list GPUs as `nvidia-smi -L` numbers them, comma-separated "
                    "(e.g. 0 or 0,1), or by UUID (GPU-...)"
                )
                gpu_ids = None
        gpu_count = len(gpu_ids) if gpu_ids else 1
        engines.append(
            EngineFromEnv(
                kind=kind,
                label=label,
                name=get(name_var) or f"{_gpu_label(gpu_name=gpu.name if gpu else None, count=gpu_count)} - {label}",
                base_url=url,
                models=models,
                model_bytes=model_bytes,
                context_tokens=context,
                gpu_ids=gpu_ids,
                hardware=_hardware(gpu=gpu, count=gpu_count) if gpu else None,
                # A target on N GPUs costs N GPU hours per hour.
                price_per_gpu_hour=price * gpu_count if price is not None else None,
            )
        )
    if errors:
        raise EnvTargetsError("; ".join(errors))
    return engines


def _gpu_label(*, gpu_name: str | None, count: int) -> str:
    name = gpu_name or "GPU"
    return f"{count} × {name}" if count > 1 else name


def _hardware(*, gpu, count: int) -> Hardware:
    """The card from the catalogue; with tensor parallelism over N cards each reads 1/N of the
    weights, so the bound scales with N (communication is what keeps real runs under it)."""
    return Hardware(
        name=_gpu_label(gpu_name=gpu.name, count=count),
        slug=gpu.slug,
        memory_bandwidth_bytes_s=gpu.memory_bandwidth_bytes_per_s * count,
        peak_flops=gpu.peak_16bit_flops * count,
        memory_bytes=float(gpu.memory_bytes) * count,
    )


def shared_hardware_group(*, engines: list[EngineFromEnv]) -> str | None:
    """The hardware group for engines that share a GPU, '' for engines on separate GPUs, None
    when it is not known (one engine, or GPU ids not given): runs on targets in one group never
    overlap, so two engines on one card never measure each other's load."""
    if len(engines) < 2 or any(engine.gpu_ids is None for engine in engines):
        return None
    shared = set(engines[0].gpu_ids or [])
    for engine in engines[1:]:
        shared &= set(engine.gpu_ids or [])
    if not shared:
        return ""
    return slugify("gpu-" + "-".join(sorted(shared)))[:60]


def register_env_targets(*, environ: Mapping[str, str], probe: bool = True) -> list[Registration]:
    """Create or update one target per engine the environment names, then probe each."""
    engines = engines_from_env(environ=environ)
    group = shared_hardware_group(engines=engines)
    registrations: list[Registration] = []
    for engine in engines:
        existing = _existing_target(engine=engine)
        renamed_from = None
        if existing is not None and existing.name != engine.name:
            # Same engine under a new name (GPU_HARDWARE or *_TARGET_NAME changed): keep the row,
            # so its runs and its queue (named by the slug, which does not change) stay.
            renamed_from = existing.name
            existing.name = engine.name
            existing.save(update_fields=["name"])
        target = upsert_target(
            name=engine.name,
            kind=engine.kind,
            base_url=engine.base_url,
            models=engine.models,
            hardware=engine.hardware,
            description=f"{engine.label} on the GPU box, registered from the environment.",
            model_bytes=engine.model_bytes,
            hardware_group=group,
        )
        if engine.price_per_gpu_hour is not None and target.price_per_gpu_hour != engine.price_per_gpu_hour:
            target.price_per_gpu_hour = engine.price_per_gpu_hour
            target.save(update_fields=["price_per_gpu_hour"])
        registration = Registration(engine=engine, target=target, created=existing is None, renamed_from=renamed_from)
        registration.warnings += _context_warnings(engine=engine, target=target)
        if probe:
            registration.target = probe_and_record(target_id=target.pk)
            registration.warnings += _served_model_warnings(engine=engine, target=registration.target)
        registrations.append(registration)
    return registrations


def _existing_target(*, engine: EngineFromEnv) -> InferenceTarget | None:
    by_name = InferenceTarget.objects.filter(name=engine.name).first()
    if by_name is not None:
        return by_name
    same_engine = list(InferenceTarget.objects.filter(kind=engine.kind, base_url=engine.base_url)[:2])
    # Only an unambiguous match is the same engine; two targets on one address are staff's own.
    return same_engine[0] if len(same_engine) == 1 else None


def _context_warnings(*, engine: EngineFromEnv, target: InferenceTarget) -> list[str]:
    if engine.context_tokens is None:
        return []
    longest = target.max_prompt_tokens + target.max_output_tokens
    if longest <= engine.context_tokens:
        return []
    variable = "VLLM_MAX_MODEL_LEN" if engine.kind == InferenceTarget.Kind.VLLM else "OLLAMA_CONTEXT_LENGTH"
    consequence = (
        "vLLM refuses longer requests with HTTP 400"
        if engine.kind == InferenceTarget.Kind.VLLM
        else "Ollama cuts longer prompts silently"
    )
    return [
        f"the target allows {target.max_prompt_tokens:,} prompt + {target.max_output_tokens:,} output tokens "
        f"= {longest:,}, more than {variable}={engine.context_tokens:,}: {consequence}; raise {variable} or "
        "lower the target's limits in the admin"
    ]


def _served_model_warnings(*, engine: EngineFromEnv, target: InferenceTarget) -> list[str]:
    result = getattr(target, "probe_result", None)
    if target.probe_error or result is None or not result.models:
        return []
    missing = [model for model in engine.models if model not in result.models]
    if not missing:
        return []
    if engine.kind == InferenceTarget.Kind.OLLAMA:
        return [
            f"not pulled yet: {', '.join(missing)} (compose's ollama-pull pulls OLLAMA_MODELS; runs on a "
            "model Ollama does not have fail with 404)"
        ]
    return [
        f"the engine serves {', '.join(result.models)}, not {', '.join(missing)}: every run would fail with 404; "
        "set VLLM_MODEL to the id in /v1/models"
    ]
