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
    # Dense FP4 (NVFP4/MXFP4) tensor-core peak; only Blackwell-class GPUs have one.
    peak_fp4_flops: float | None = None


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
    # Optional architecture fields (0 / False when the model does not have the feature).
    # MoE: width of one routed expert's MLP (0: intermediate_size), always-on shared experts per
    # MoE layer, leading layers that keep a dense MLP of intermediate_size (DeepSeek's
    # first_k_dense_replace), and biases on the experts and the router (gpt-oss; DeepSeek-V3's
    # router has a 256-entry score-correction bias).
    moe_intermediate_size: int = 0
    shared_experts: int = 0
    dense_layers: int = 0
    expert_bias: bool = False
    router_bias: bool = False
    # Multi-head latent attention (DeepSeek-V2/V3): queries through a rank-q_lora_rank bottleneck,
    # keys and values from one kv_lora_rank latent per token plus a qk_rope_head_dim RoPE key
    # shared by all heads. head_dim is the query/key head width (nope + rope), v_head_dim the
    # value head width.
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0
    # Per-head RMSNorm on queries and keys (Qwen3), a bias on the output projection and one
    # learned attention-sink logit per head (gpt-oss).
    qk_norm: bool = False
    output_bias: bool = False
    attention_sinks: bool = False
    # Sliding-window attention: sliding_window_layers of the layers attend only to the last
    # sliding_window tokens (gpt-oss alternates 128-token windows with full attention).
    sliding_window: int = 0
    sliding_window_layers: int = 0

    @property
    def is_moe(self) -> bool:
        return self.experts > 1

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def expert_intermediate_size(self) -> int:
        return self.moe_intermediate_size or self.intermediate_size

    @property
    def moe_layers(self) -> int:
        """Layers whose MLP is a set of routed experts (all layers of a dense model count 0)."""
        return self.layers - self.dense_layers if self.is_moe else 0

    @property
    def full_attention_layers(self) -> int:
        return self.layers - self.sliding_window_layers

    @property
    def value_head_dim(self) -> int:
        return self.v_head_dim or self.head_dim

    @property
    def params_per_expert(self) -> int:
        """Parameters of one routed expert's SwiGLU MLP in one layer (gate, up, down, biases)."""
        width = self.expert_intermediate_size
        biases = 2 * width + self.hidden_size if self.expert_bias else 0
        return 3 * self.hidden_size * width + biases

    @property
    def params_shared(self) -> int:
        """Parameters every token uses: everything except the routed expert MLPs.

        Shared experts, dense-MLP layers, attention, embeddings and routers all count here.
        """
        if not self.is_moe:
            return self.params_total
        return self.params_total - self.moe_layers * self.experts * self.params_per_expert


def attention_param_count(*, model: Model) -> int:
    """Parameters of one layer's attention block.

    Grouped-query attention: Q and O projections (hidden x heads*head_dim each), K and V
    (hidden x kv_heads*head_dim each), optional Q/K/V biases and output bias. Multi-head latent
    attention (DeepSeek-V2/V3 modeling code): q_a (hidden x q_lora_rank) + its norm + q_b
    (q_lora_rank x heads*head_dim); kv_a (hidden x (kv_lora_rank + qk_rope_head_dim)) + its norm;
    kv_b (kv_lora_rank x heads*(nope + v_head_dim)); O (heads*v_head_dim x hidden). Plus per-head
    Q/K norms (Qwen3) and one sink logit per head (gpt-oss).
    """
    hidden, heads = model.hidden_size, model.attention_heads
    if model.is_mla:
        nope = model.head_dim - model.qk_rope_head_dim
        if model.q_lora_rank:
            query = hidden * model.q_lora_rank + model.q_lora_rank
            query += model.q_lora_rank * heads * model.head_dim
        else:
            query = hidden * heads * model.head_dim
        latent = hidden * (model.kv_lora_rank + model.qk_rope_head_dim) + model.kv_lora_rank
        expand = model.kv_lora_rank * heads * (nope + model.value_head_dim)
        attention = query + latent + expand + heads * model.value_head_dim * hidden
    else:
        q_width = heads * model.head_dim
        kv_width = model.kv_heads * model.head_dim
        attention = 2 * hidden * q_width + 2 * hidden * kv_width
        if model.attention_bias:
            attention += q_width + 2 * kv_width
    if model.output_bias:
        attention += hidden
    if model.qk_norm:
        attention += 2 * model.head_dim
    if model.attention_sinks:
        attention += heads
    return attention


def architecture_param_count(*, model: Model, experts_used: int | None = None) -> int:
    """Parameter count implied by the architecture fields.

    Per layer: the attention block (`attention_param_count`), two RMSNorm weight vectors, and an
    MLP. The MLP is a SwiGLU of three hidden x intermediate matrices for a dense model or one of
    the `dense_layers`; in an MoE layer it is `experts` routed SwiGLU experts of
    hidden x expert width (plus biases where the model has them), `shared_experts` always-on
    experts of the same width, and a router (hidden x experts, plus a bias where present). Plus
    the embedding table, a separate LM head unless tied, and the final norm. `experts_used`
    counts only that many routed experts per MoE layer (the active count).
    """
    hidden = model.hidden_size
    norms = 2 * hidden
    attention = attention_param_count(model=model)
    dense_mlp = 3 * hidden * model.intermediate_size
    if model.is_moe:
        routed = model.experts if experts_used is None else experts_used
        moe_mlp = routed * model.params_per_expert
        moe_mlp += model.shared_experts * 3 * hidden * model.expert_intermediate_size
        moe_mlp += hidden * model.experts + (model.experts if model.router_bias else 0)
        layers = model.dense_layers * (attention + dense_mlp + norms)
        layers += model.moe_layers * (attention + moe_mlp + norms)
    else:
        layers = model.layers * (attention + dense_mlp + norms)
    embeddings = model.vocab_size * hidden * (1 if model.tied_embeddings else 2)
    return layers + embeddings + hidden


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
    "peak_fp4_flops": (_positive_number, False),
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
    "moe_intermediate_size": (_positive_int, False),
    "shared_experts": (_positive_int, False),
    "dense_layers": (_positive_int, False),
    "expert_bias": (_boolean, False),
    "router_bias": (_boolean, False),
    "q_lora_rank": (_positive_int, False),
    "kv_lora_rank": (_positive_int, False),
    "qk_rope_head_dim": (_positive_int, False),
    "v_head_dim": (_positive_int, False),
    "qk_norm": (_boolean, False),
    "output_bias": (_boolean, False),
    "attention_sinks": (_boolean, False),
    "sliding_window": (_positive_int, False),
    "sliding_window_layers": (_positive_int, False),
    "notes": (_text, False),
}

# Optional keys left out of a row take the Model dataclass default (0 or False).
_MODEL_DEFAULTS: dict[str, Any] = {
    "moe_intermediate_size": 0,
    "shared_experts": 0,
    "dense_layers": 0,
    "expert_bias": False,
    "router_bias": False,
    "q_lora_rank": 0,
    "kv_lora_rank": 0,
    "qk_rope_head_dim": 0,
    "v_head_dim": 0,
    "qk_norm": False,
    "output_bias": False,
    "attention_sinks": False,
    "sliding_window": 0,
    "sliding_window_layers": 0,
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
        for key in ("peak_16bit_flops", "peak_fp8_flops", "peak_int8_ops", "peak_fp4_flops"):
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
    if model.is_mla and not (model.qk_rope_head_dim and model.v_head_dim):
        raise CatalogueError(
            f"{where} kv_lora_rank: MLA also needs qk_rope_head_dim and v_head_dim"
        )
    if model.is_mla and model.qk_rope_head_dim >= model.head_dim:
        raise CatalogueError(
            f"{where} qk_rope_head_dim: must be less than head_dim ({model.head_dim}), which "
            "counts the rope and non-rope parts of a query/key head"
        )
    if bool(model.sliding_window) != bool(model.sliding_window_layers):
        raise CatalogueError(
            f"{where} sliding_window: give both sliding_window and sliding_window_layers, or neither"
        )
    if model.sliding_window_layers > model.layers:
        raise CatalogueError(f"{where} sliding_window_layers: must not exceed layers")
    if model.dense_layers and not model.is_moe:
        raise CatalogueError(f"{where} dense_layers: only an MoE model has dense layers")
    if model.dense_layers >= model.layers:
        raise CatalogueError(f"{where} dense_layers: must be fewer than layers")
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
        values.pop("notes")
        for key, default in _MODEL_DEFAULTS.items():
            if values[key] is None:
                values[key] = default
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
