"""Generate llama-architecture GGUF models with random weights and a real tokenizer.

Nothing can be fetched from a model hub here, and the labs only need the *shape* of a model
(bytes to stream per token, FLOPs per token, KV bytes per token) to be real: the timings are
real, the words are noise. The tokenizer is llama's 32k SentencePiece vocabulary, taken from
the vocab-only GGUF that ships with the llama.cpp sources.

Random weights over a byte-fallback vocabulary would sample raw byte tokens (``<0x9F>`` ...),
which are fragments of UTF-8; a server holds streamed text back until it is valid, so the
inter-token gaps would show stalls that are not decode time. The generated models therefore
cannot emit byte, control or unknown tokens: dimension 0 of the residual stream is a constant
that no layer reads or writes, and the output rows of those tokens have a large negative weight
on it, so their logits sit hundreds of nats below every normal token.

``python -m engines.llamacpp.models`` writes ``var/models/`` (or ``PREFILL_MODELS_DIR``):
``prefill-<size>-<precision>.gguf`` for each size and precision, and ``manifest.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
import zlib
from dataclasses import asdict, dataclass
from pathlib import Path

import gguf
import numpy as np
from gguf import GGMLQuantizationType, LlamaFileType

from engines.filelock import locked
from engines.llamacpp.build import ensure_sources

# Bump when the weights a recipe produces change, so cached files are regenerated.
GENERATOR_VERSION = 1
SEED = 20240607
VOCAB_FILE = "ggml-vocab-llama-spm.gguf"
NORMAL_TOKEN = 1
INIT_STD = 0.02
# Logit of a banned token is about -BAN_WEIGHT * (normalised sentinel, 1 to 20): hundreds below
# any normal token, so no sampler setting can pick it.
BAN_WEIGHT = 1000.0
SENTINEL = 1.0
CONTEXT_LENGTH = 16384
ROPE_THETA = 10000.0
RMS_EPS = 1e-5


@dataclass(frozen=True)
class ModelSpec:
    size: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    ffn: int

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


@dataclass(frozen=True)
class Precision:
    name: str
    tensor_type: GGMLQuantizationType
    file_type: LlamaFileType


# About 58M and 246M parameters with the 32k vocabulary. The larger one uses grouped-query
# attention (4 KV heads for 16 query heads) like current Llama models, so the KV-cache lab
# has one model of each kind.
SPECS: dict[str, ModelSpec] = {
    "60m": ModelSpec(size="60m", hidden=512, layers=8, heads=8, kv_heads=8, ffn=1376),
    "250m": ModelSpec(size="250m", hidden=1024, layers=16, heads=16, kv_heads=4, ffn=2816),
}
PRECISIONS: dict[str, Precision] = {
    "f16": Precision("f16", GGMLQuantizationType.F16, LlamaFileType.MOSTLY_F16),
    "q8_0": Precision("q8_0", GGMLQuantizationType.Q8_0, LlamaFileType.MOSTLY_Q8_0),
    "q4_0": Precision("q4_0", GGMLQuantizationType.Q4_0, LlamaFileType.MOSTLY_Q4_0),
}
DEFAULT_MODEL = "prefill-60m-f16"


@dataclass(frozen=True)
class ModelInfo:
    name: str
    file: str
    size: str
    precision: str
    params: int
    file_bytes: int
    # Bytes a decode step streams from memory: every weight except the embedding table, of
    # which only one row per token is read. The numerator of the speed-of-light bound.
    weight_bytes_per_token: int
    kv_bytes_per_token: int
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    vocab: int
    context_length: int
    recipe: str


@dataclass(frozen=True)
class Vocab:
    tokens: list[str]
    scores: list[float]
    token_types: list[int]
    bos_id: int
    eos_id: int
    unk_id: int
    add_bos: bool
    add_eos: bool
    digest: str

    @property
    def banned_ids(self) -> np.ndarray:
        return np.flatnonzero(np.asarray(self.token_types) != NORMAL_TOKEN)


def models_dir() -> Path:
    override = os.environ.get("PREFILL_MODELS_DIR")
    if override:
        return Path(override).expanduser()
    return Path(__file__).resolve().parents[2] / "var" / "models"


def model_name(*, size: str, precision: str) -> str:
    return f"prefill-{size}-{precision}"


def load_vocab(*, path: Path) -> Vocab:
    reader = gguf.GGUFReader(path)

    def field(key: str) -> object:
        return reader.fields[key].contents()

    return Vocab(
        tokens=list(field("tokenizer.ggml.tokens")),
        scores=[float(s) for s in field("tokenizer.ggml.scores")],
        token_types=[int(t) for t in field("tokenizer.ggml.token_type")],
        bos_id=int(field("tokenizer.ggml.bos_token_id")),
        eos_id=int(field("tokenizer.ggml.eos_token_id")),
        unk_id=int(field("tokenizer.ggml.unknown_token_id")),
        add_bos=bool(field("tokenizer.ggml.add_bos_token")),
        add_eos=bool(field("tokenizer.ggml.add_eos_token")),
        digest=file_digest(path=path),
    )


def tensor_shapes(*, spec: ModelSpec, vocab_size: int) -> list[tuple[str, tuple[int, ...]]]:
    """Tensors in llama.cpp's naming, numpy shape (rows = outputs, columns = inputs)."""
    kv_dim = spec.kv_heads * spec.head_dim
    shapes: list[tuple[str, tuple[int, ...]]] = [("token_embd.weight", (vocab_size, spec.hidden))]
    for layer in range(spec.layers):
        block = f"blk.{layer}"
        shapes += [
            (f"{block}.attn_norm.weight", (spec.hidden,)),
            (f"{block}.attn_q.weight", (spec.hidden, spec.hidden)),
            (f"{block}.attn_k.weight", (kv_dim, spec.hidden)),
            (f"{block}.attn_v.weight", (kv_dim, spec.hidden)),
            (f"{block}.attn_output.weight", (spec.hidden, spec.hidden)),
            (f"{block}.ffn_norm.weight", (spec.hidden,)),
            (f"{block}.ffn_gate.weight", (spec.ffn, spec.hidden)),
            (f"{block}.ffn_up.weight", (spec.ffn, spec.hidden)),
            (f"{block}.ffn_down.weight", (spec.hidden, spec.ffn)),
        ]
    shapes += [("output_norm.weight", (spec.hidden,)), ("output.weight", (vocab_size, spec.hidden))]
    return shapes


def make_tensor(
    *, name: str, shape: tuple[int, ...], spec: ModelSpec, banned_ids: np.ndarray
) -> np.ndarray:
    """Deterministic F32 values of one tensor, the same for every precision of a size."""
    if len(shape) == 1:
        return np.ones(shape, dtype=np.float32)
    entropy = (SEED, zlib.crc32(spec.size.encode()), zlib.crc32(name.encode()))
    rng = np.random.default_rng(np.random.SeedSequence(entropy))
    values = rng.standard_normal(shape, dtype=np.float32)
    values *= INIT_STD
    # Dimension 0 of the residual stream carries a constant: layers neither read it (input
    # column 0 zeroed) nor write it (output row 0 zeroed), so it reaches the final norm intact.
    if name == "token_embd.weight":
        values[:, 0] = SENTINEL
    elif name == "output.weight":
        values[:, 0] = 0.0
        values[banned_ids, 0] = -BAN_WEIGHT
    elif name.endswith(("attn_output.weight", "ffn_down.weight")):
        values[0, :] = 0.0
    else:
        values[:, 0] = 0.0
    return values


def encode(*, values: np.ndarray, precision: Precision) -> np.ndarray:
    if values.ndim == 1:
        # Norm weights stay F32, as in llama.cpp's own conversions at every precision.
        return values
    if precision.tensor_type == GGMLQuantizationType.F16:
        return values.astype(np.float16)
    # Quantise from the F16-rounded weights, as one would quantise a released F16 checkpoint.
    return gguf.quants.quantize(values.astype(np.float16).astype(np.float32), precision.tensor_type)


def encoded_nbytes(*, shape: tuple[int, ...], precision: Precision) -> int:
    count = int(np.prod(shape))
    if len(shape) == 1:
        return count * 4
    block, type_size = gguf.GGML_QUANT_SIZES[precision.tensor_type]
    return count // block * type_size


def file_digest(*, path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def recipe_digest(*, spec: ModelSpec, precision: Precision, vocab_digest: str) -> str:
    recipe = {
        "generator": GENERATOR_VERSION, "seed": SEED, "spec": asdict(spec),
        "precision": precision.name, "vocab": vocab_digest, "ban": BAN_WEIGHT,
        "std": INIT_STD, "context": CONTEXT_LENGTH,
    }
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:16]


def write_model(*, path: Path, spec: ModelSpec, precision: Precision, vocab: Vocab) -> None:
    """Stream one GGUF file to ``path`` tensor by tensor, keeping memory to one tensor."""
    name = path.stem
    writer = gguf.GGUFWriter(path, "llama")
    writer.add_name(name)
    writer.add_description("Prefill synthetic model: random weights, real llama tokenizer")
    writer.add_context_length(CONTEXT_LENGTH)
    writer.add_embedding_length(spec.hidden)
    writer.add_block_count(spec.layers)
    writer.add_feed_forward_length(spec.ffn)
    writer.add_head_count(spec.heads)
    writer.add_head_count_kv(spec.kv_heads)
    writer.add_rope_dimension_count(spec.head_dim)
    writer.add_rope_freq_base(ROPE_THETA)
    writer.add_layer_norm_rms_eps(RMS_EPS)
    writer.add_vocab_size(len(vocab.tokens))
    writer.add_file_type(precision.file_type)
    writer.add_tokenizer_model("llama")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(vocab.tokens)
    writer.add_token_scores(vocab.scores)
    writer.add_token_types(vocab.token_types)
    writer.add_bos_token_id(vocab.bos_id)
    writer.add_eos_token_id(vocab.eos_id)
    writer.add_unk_token_id(vocab.unk_id)
    writer.add_add_bos_token(vocab.add_bos)
    writer.add_add_eos_token(vocab.add_eos)

    shapes = tensor_shapes(spec=spec, vocab_size=len(vocab.tokens))
    for tensor_name, shape in shapes:
        nbytes = encoded_nbytes(shape=shape, precision=precision)
        if len(shape) == 1:
            writer.add_tensor_info(tensor_name, shape, np.dtype(np.float32), nbytes)
        elif precision.tensor_type == GGMLQuantizationType.F16:
            writer.add_tensor_info(tensor_name, shape, np.dtype(np.float16), nbytes)
        else:
            byte_shape = gguf.quant_shape_to_byte_shape(shape, precision.tensor_type)
            writer.add_tensor_info(tensor_name, byte_shape, np.dtype(np.uint8), nbytes,
                                   raw_dtype=precision.tensor_type)
    writer.write_header_to_file(path)
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    banned = vocab.banned_ids
    for tensor_name, shape in shapes:
        values = make_tensor(name=tensor_name, shape=shape, spec=spec, banned_ids=banned)
        writer.write_tensor_data(encode(values=values, precision=precision))
    writer.close()


def describe(
    *, spec: ModelSpec, precision: Precision, vocab: Vocab, file_bytes: int, recipe: str
) -> ModelInfo:
    shapes = tensor_shapes(spec=spec, vocab_size=len(vocab.tokens))
    params = sum(int(np.prod(shape)) for _, shape in shapes)
    per_token = sum(
        encoded_nbytes(shape=shape, precision=precision)
        for tensor_name, shape in shapes if tensor_name != "token_embd.weight"
    )
    name = model_name(size=spec.size, precision=precision.name)
    return ModelInfo(
        name=name, file=f"{name}.gguf", size=spec.size, precision=precision.name,
        params=params, file_bytes=file_bytes, weight_bytes_per_token=per_token,
        # K and V, every layer, F16 cache entries (llama-server's default cache type).
        kv_bytes_per_token=2 * spec.layers * spec.kv_heads * spec.head_dim * 2,
        layers=spec.layers, hidden=spec.hidden, heads=spec.heads, kv_heads=spec.kv_heads,
        head_dim=spec.head_dim, ffn=spec.ffn, vocab=len(vocab.tokens),
        context_length=CONTEXT_LENGTH, recipe=recipe,
    )


def read_manifest(*, directory: Path | None = None) -> list[ModelInfo]:
    path = (directory or models_dir()) / "manifest.json"
    try:
        entries = json.loads(path.read_text())["models"]
    except (OSError, ValueError, KeyError):
        return []
    return [ModelInfo(**entry) for entry in entries]


def ensure_models(
    *,
    sizes: tuple[str, ...] = tuple(SPECS),
    precisions: tuple[str, ...] = tuple(PRECISIONS),
    directory: Path | None = None,
) -> list[ModelInfo]:
    """Generate whichever requested models are missing or stale; return the whole manifest.

    The manifest keeps entries of models generated earlier but not requested now, so a test
    that asks only for the smallest model does not hide the others from the labs.
    """
    directory = directory or models_dir()
    unknown = [s for s in sizes if s not in SPECS] + [p for p in precisions if p not in PRECISIONS]
    if unknown:
        raise ValueError(f"unknown model size or precision: {', '.join(unknown)}")
    vocab_path = ensure_sources() / "models" / VOCAB_FILE
    vocab_digest = file_digest(path=vocab_path)
    # Parsing the vocabulary takes seconds; an up-to-date cache never needs it.
    vocab: Vocab | None = None
    with locked(directory / ".models.lock"):
        known = {info.name: info for info in read_manifest(directory=directory)}
        changed = False
        for size in sizes:
            for precision_name in precisions:
                spec, precision = SPECS[size], PRECISIONS[precision_name]
                recipe = recipe_digest(spec=spec, precision=precision, vocab_digest=vocab_digest)
                name = model_name(size=size, precision=precision_name)
                path = directory / f"{name}.gguf"
                cached = known.get(name)
                if (cached and cached.recipe == recipe and path.is_file()
                        and path.stat().st_size == cached.file_bytes):
                    continue
                started = time.monotonic()
                vocab = vocab or load_vocab(path=vocab_path)
                partial = path.with_name(f".{path.name}.partial")
                write_model(path=partial, spec=spec, precision=precision, vocab=vocab)
                partial.replace(path)
                known[name] = describe(spec=spec, precision=precision, vocab=vocab,
                                       file_bytes=path.stat().st_size, recipe=recipe)
                changed = True
                print(f"wrote {path} in {time.monotonic() - started:.1f} s", file=sys.stderr)
        infos = sorted(known.values(), key=lambda info: (SPECS[info.size].hidden, info.name))
        if changed or not (directory / "manifest.json").is_file():
            manifest = {"default": DEFAULT_MODEL, "models": [asdict(info) for info in infos]}
            partial_manifest = directory / ".manifest.json.partial"
            partial_manifest.write_text(json.dumps(manifest, indent=2) + "\n")
            partial_manifest.replace(directory / "manifest.json")
    return infos


def model_path(*, name: str = DEFAULT_MODEL, directory: Path | None = None) -> Path:
    return (directory or models_dir()) / f"{name}.gguf"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m engines.llamacpp.models",
        description="Generate the synthetic GGUF models the local labs serve.",
    )
    parser.add_argument("--sizes", default=",".join(SPECS),
                        help=f"comma list of {', '.join(SPECS)}")
    parser.add_argument("--precisions", default=",".join(PRECISIONS),
                        help=f"comma list of {', '.join(PRECISIONS)}")
    args = parser.parse_args(argv)
    try:
        infos = ensure_models(sizes=tuple(args.sizes.split(",")),
                              precisions=tuple(args.precisions.split(",")))
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(models_dir() / "manifest.json")
    for info in infos:
        print(f"  {info.name:<20} {info.params / 1e6:6.1f}M params {info.file_bytes / 1e6:7.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
