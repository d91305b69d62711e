"""The GPU and model catalogues (`catalogue/gpus.toml`, `catalogue/models.toml`) as typed rows.

Each TOML table is one row keyed by its slug. Loading validates every row and raises
`CatalogueError` naming the file, the row and the key, so a typo in a datasheet number fails at
import of the catalogue rather than as a wrong bound on a lesson page.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

CATALOGUE_DIR = Path(__file__).resolve().parent / "catalogue"
GPUS_FILE = CATALOGUE_DIR / "gpus.toml"
MODELS_FILE = CATALOGUE_DIR / "models.toml"

# Dots are allowed because model names carry versions ("qwen2.5-7b").
SLUG_PATTERN = re.compile(r"^[a-z0-9][a-z0-9.-]*$")

# The stated parameter count must match the one recomputed from the architecture this closely;
# a mistyped hidden size or layer count moves it by far more.
PARAM_COUNT_TOLERANCE = 0.001


class CatalogueError(ValueError):
    """A catalogue file is malformed; the message names the file, the row and the key."""


class UnknownSlugError(LookupError):
    """A slug that is not in the catalogue; the message lists the valid ones."""

    def __init__(self, *, kind: str, slug: str, valid: list[str]) -> None:
        self.kind = kind
        self.slug = slug
        self.valid = valid
        super().__init__(f"unknown {kind} '{slug}'; valid {kind}s: {', '.join(valid)}")

    def __str__(self) -> str:
        return str(self.args[0])


@dataclass(frozen=True, slots=True)
class Gpu:
    slug: str
    name: str
    vendor: str
    memory_bytes: int
    memory_label: str
    memory_bandwidth_bytes_per_s: float
    peak_16bit_flops: float
    peak_fp8_flops: float | None
    peak_int8_ops: float | None
    source: str
    notes: str


@dataclass(frozen=True, slots=True)
class Model:
    slug: str
    name: str
    hf_repo: str
    source: str
    params_total: int
    params_active: int
    layers: int
    hidden_size: int
    attention_heads: int
    kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    tied_embeddings: bool
    attention_bias: bool
    max_context: int
    experts: int
    experts_per_token: int

    @property
    def is_moe(self) -> bool:
        return self.experts > 1

    @property
    def params_per_expert(self) -> int:
        """Parameters of one expert's SwiGLU MLP in one layer (gate, up and down projections)."""
        return 3 * self.hidden_size * self.intermediate_size

    @property
    def params_shared(self) -> int:
        """Parameters every token uses: everything except the routed expert MLPs."""
        if not self.is_moe:
            return self.params_total
        return self.params_total - self.layers * self.experts * self.params_per_expert


def architecture_param_count(*, model: Model, experts_used: int | None = None) -> int:
    """Parameter count implied by the architecture fields (Llama/Qwen2/Mistral/Mixtral layout).

    Per layer: Q and O projections (hidden x heads*head_dim each), K and V projections
    (hidden x kv_heads*head_dim each), optional Q/K/V biases, a SwiGLU MLP of three
    hidden x intermediate matrices per expert, a router (hidden x experts) for MoE, and two
    RMSNorm weight vectors. Plus the embedding table, a separate LM head unless tied, and the
    final norm. `experts_used` counts only that many experts per layer (the active count).
    """
    experts = model.experts if experts_used is None else experts_used
    q_width = model.attention_heads * model.head_dim
    kv_width = model.kv_heads * model.head_dim
    attention = 2 * model.hidden_size * q_width + 2 * model.hidden_size * kv_width
    if model.attention_bias:
        attention += q_width + 2 * kv_width
    mlp = experts * model.params_per_expert
    router = model.hidden_size * model.experts if model.is_moe else 0
    norms = 2 * model.hidden_size
    per_layer = attention + mlp + router + norms
    embeddings = model.vocab_size * model.hidden_size * (1 if model.tied_embeddings else 2)
    return model.layers * per_layer + embeddings + model.hidden_size


def _positive_int(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return "must be a positive integer"
    return None


def _positive_number(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        return "must be a positive number"
    return None


def _text(value: Any) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return "must be a non-empty string"
    return None


def _url(value: Any) -> str | None:
    if not isinstance(value, str) or not value.startswith("https://"):
        return "must be an https:// URL"
    return None


def _boolean(value: Any) -> str | None:
    if not isinstance(value, bool):
        return "must be true or false"
    return None


Check = Callable[[Any], str | None]

# key -> (check, required)
_GPU_SCHEMA: dict[str, tuple[Check, bool]] = {
    "name": (_text, True),
    "vendor": (_text, True),
    "memory_bytes": (_positive_int, True),
    "memory_label": (_text, True),
    "memory_bandwidth_bytes_per_s": (_positive_number, True),
    "peak_16bit_flops": (_positive_number, True),
    "peak_fp8_flops": (_positive_number, False),
    "peak_int8_ops": (_positive_number, False),
    "source": (_url, True),
    "notes": (_text, True),
}

_MODEL_SCHEMA: dict[str, tuple[Check, bool]] = {
    "name": (_text, True),
    "hf_repo": (_text, True),
    "source": (_url, True),
    "params_total": (_positive_int, True),
    "params_active": (_positive_int, True),
    "layers": (_positive_int, True),
    "hidden_size": (_positive_int, True),
    "attention_heads": (_positive_int, True),
    "kv_heads": (_positive_int, True),
    "head_dim": (_positive_int, True),
    "intermediate_size": (_positive_int, True),
    "vocab_size": (_positive_int, True),
    "tied_embeddings": (_boolean, True),
    "attention_bias": (_boolean, True),
    "max_context": (_positive_int, True),
    "experts": (_positive_int, True),
    "experts_per_token": (_positive_int, True),
}


def _read_rows(*, path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except OSError as error:
        raise CatalogueError(f"{path.name}: cannot read: {error}") from None
    except tomllib.TOMLDecodeError as error:
        raise CatalogueError(f"{path.name}: not valid TOML: {error}") from None
    if not data:
        raise CatalogueError(f"{path.name}: no rows")
    return data


def _checked_row(
    *, path: Path, slug: str, row: Any, schema: Mapping[str, tuple[Check, bool]]
) -> dict[str, Any]:
    where = f"{path.name}: [{slug}]"
    if not SLUG_PATTERN.match(slug):
        raise CatalogueError(f"{where}: slug must be lowercase letters, digits, '.' and '-'")
    if not isinstance(row, dict):
        raise CatalogueError(f"{where}: must be a table")
    for key in row:
        if key not in schema:
            raise CatalogueError(f"{where} {key}: unknown key; known keys: {', '.join(schema)}")
    values: dict[str, Any] = {}
    for key, (check, required) in schema.items():
        if key not in row:
            if required:
                raise CatalogueError(f"{where} {key}: missing")
            values[key] = None
            continue
        problem = check(row[key])
        if problem:
            raise CatalogueError(f"{where} {key}: {problem} (got {row[key]!r})")
        values[key] = row[key]
    return values


def load_gpus(*, path: Path = GPUS_FILE) -> dict[str, Gpu]:
    rows = _read_rows(path=path)
    gpus: dict[str, Gpu] = {}
    for slug, row in rows.items():
        values = _checked_row(path=path, slug=slug, row=row, schema=_GPU_SCHEMA)
        for key in ("peak_16bit_flops", "peak_fp8_flops", "peak_int8_ops"):
            if values[key] is not None:
                values[key] = float(values[key])
        values["memory_bandwidth_bytes_per_s"] = float(values["memory_bandwidth_bytes_per_s"])
        gpus[slug] = Gpu(slug=slug, **values)
    return gpus


def _check_model(*, path: Path, model: Model) -> None:
    where = f"{path.name}: [{model.slug}]"
    if model.attention_heads % model.kv_heads:
        raise CatalogueError(
            f"{where} kv_heads: must divide attention_heads ({model.attention_heads})"
        )
    if model.experts_per_token > model.experts:
        raise CatalogueError(
            f"{where} experts_per_token: must not exceed experts ({model.experts})"
        )
    if model.params_active > model.params_total:
        raise CatalogueError(f"{where} params_active: must not exceed params_total")
    if not model.is_moe and model.params_active != model.params_total:
        raise CatalogueError(f"{where} params_active: must equal params_total for a dense model")
    expected_total = architecture_param_count(model=model)
    if abs(expected_total - model.params_total) > PARAM_COUNT_TOLERANCE * model.params_total:
        raise CatalogueError(
            f"{where} params_total: {model.params_total:,} disagrees with {expected_total:,} "
            "counted from the architecture fields; check the dimensions"
        )
    expected_active = architecture_param_count(model=model, experts_used=model.experts_per_token)
    if abs(expected_active - model.params_active) > PARAM_COUNT_TOLERANCE * model.params_active:
        raise CatalogueError(
            f"{where} params_active: {model.params_active:,} disagrees with {expected_active:,} "
            "counted from the architecture fields"
        )


def load_models(*, path: Path = MODELS_FILE) -> dict[str, Model]:
    rows = _read_rows(path=path)
    models: dict[str, Model] = {}
    for slug, row in rows.items():
        values = _checked_row(path=path, slug=slug, row=row, schema=_MODEL_SCHEMA)
        model = Model(slug=slug, **values)
        _check_model(path=path, model=model)
        models[slug] = model
    return models


@cache
def gpus() -> dict[str, Gpu]:
    """The shipped GPU catalogue, loaded once per process."""
    return load_gpus()


@cache
def models() -> dict[str, Model]:
    """The shipped model catalogue, loaded once per process."""
    return load_models()


def gpu_slugs() -> list[str]:
    return list(gpus())


def model_slugs() -> list[str]:
    return list(models())


def get_gpu(*, slug: str) -> Gpu:
    try:
        return gpus()[slug]
    except KeyError:
        raise UnknownSlugError(kind="gpu", slug=slug, valid=gpu_slugs()) from None


def get_model(*, slug: str) -> Model:
    try:
        return models()[slug]
    except KeyError:
        raise UnknownSlugError(kind="model", slug=slug, valid=model_slugs()) from None


@cache
def catalogue_fingerprint() -> str:
    """Hash of both catalogue files, so caches of anything drawn from them expire on an edit."""
    digest = hashlib.sha256()
    for path in (GPUS_FILE, MODELS_FILE):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]
