"""A second reader for misconceptions: the belief and the learner's sentence read together.

The semantic layer compares one vector per sentence with one vector per statement of a wrong
belief (a bi-encoder): fast, but a sentence that shares the belief's words while saying
something else ("GQA shrinks the cache; the FLOPs barely change") sits as close as one that
states it. A cross-encoder reads both texts in one pass, every word of each attending to every
word of the other, and says whether the sentence states the belief.

This one is all-MiniLM-L6-v2 (the grader's sentence model) fine-tuned whole on our own
labelled rounds: per (answer, misconception) of the development rounds, the learner unit the
semantic layer found closest to the belief, labelled by whether the answer holds that belief,
plus pairs from the bank itself (a belief's other statements as yes; its question's criteria,
paraphrases and other beliefs as no). Its input is "<first statement> || <first sentence of
the correction>" [SEP] "<learner unit>", and its output one logit (mean pooling, then a
linear head); both segments are read with BERT's first token type, as in training.
`tools/train_belief_reader.py` trained it (PyTorch, outside the app); the weights ship in the
repo as float16 safetensors (`belief_reader.safetensors`), with only the rows of the word
table that training moved (see WORD_TABLE): the rest are the base model's. Here it runs with
the same numpy forward pass as the sentence encoder, loaded once per process on first use.

It is not used alone: `semantic.py` asks it only about a misconception whose decision-model
probability lies in the band where its answer can change the decision, and combines the two
with a logistic fitted on rounds neither was trained on (`SemanticModel.reader`).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from questions.bank import Misconception
from questions.grading.embedding import Bert, encoder, model_dir, read_safetensors, safetensors_metadata

READER_FILE = Path(__file__).with_name("belief_reader.safetensors")
# The same architecture trained to read a criterion and a learner unit: does the unit say it?
CRITERION_READER_FILE = Path(__file__).with_name("criterion_reader.safetensors")
# A belief and a learner unit together are cut to this many word pieces (longest side first),
# as in training.
MAX_PAIR_TOKENS = 160
# The word table is half the model, and training moves only the rows of the few thousand word
# pieces it saw: the file carries those rows (CHANGED_ROWS, their indexes in ROW_INDEXES) and
# the base model's table supplies the rest.
WORD_TABLE = "embeddings.word_embeddings.weight"
CHANGED_ROWS = "embeddings.word_embeddings.changed_rows"
ROW_INDEXES = "embeddings.word_embeddings.row_indexes"
# Pairs are read this many at a time.
BATCH = 16

_FIRST_SENTENCE = re.compile(r"(.+?[.!?])(?:\s|$)")


def belief_text(misconception: Misconception) -> str:
    """The reader's first segment: the belief as stated, and what is right instead."""
    correction = misconception.correction.strip()
    found = _FIRST_SENTENCE.match(correction)
    return f"{misconception.statements[0]} || {found.group(1) if found else correction}"


class BeliefReader:
    def __init__(self, *, weights: Path, base_directory: Path, base_words: np.ndarray) -> None:
        """`base_words` is the base model's word table (the sentence encoder's, not read again)."""
        from tokenizers import Tokenizer

        tensors = read_safetensors(weights)
        words = base_words.copy()
        words[tensors.pop(ROW_INDEXES)] = tensors.pop(CHANGED_ROWS)
        tensors[WORD_TABLE] = words
        self._head_weight = tensors.pop("head.weight").reshape(-1)
        self._head_bias = float(tensors.pop("head.bias").reshape(-1)[0])
        self._bert = Bert(tensors)
        self._tokenizer = Tokenizer.from_file(str(base_directory / "tokenizer.json"))
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(max_length=MAX_PAIR_TOKENS)
        # Learner text is not kept, except by tools that grade the same answers many times
        # over (fitting the reader stage, leave-one-round-out): see remember_pairs.
        self._memo: dict[tuple[str, str], float] | None = None

    def remember_pairs(self, on: bool = True) -> None:
        """Keep every pair's logit for the life of the process (or stop): for tools only."""
        self._memo = {} if on else None

    def logits(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """Per (belief text, learner unit): the log-odds that the unit states the belief."""
        memo = self._memo
        if memo is None:
            return self._logits(pairs)
        missing = [p for p in dict.fromkeys(pairs) if p not in memo]
        if missing:
            memo.update(zip(missing, self._logits(missing), strict=True))
        return [memo[p] for p in pairs]

    def _logits(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        results: list[float] = []
        for begin in range(0, len(pairs), BATCH):
            chunk = pairs[begin : begin + BATCH]
            encodings = self._tokenizer.encode_batch(list(chunk))
            x, bounds = self._bert.forward([e.ids for e in encodings])
            counts = np.diff(bounds)[:, None].astype(np.float32)
            pooled = np.add.reduceat(x, bounds[:-1], axis=0) / counts
            results.extend(float(v) for v in pooled @ self._head_weight + self._head_bias)
        return results


def trained_on(weights: Path) -> frozenset[str]:
    """The evaluation rounds a reader's weights were trained on, as its file names them (the
    safetensors header's `trained_on` metadata, comma-separated); none named: the decision
    model's rounds, which every reader was trained on."""
    names = safetensors_metadata(weights).get("trained_on", "")
    return frozenset(n for n in names.split(",") if n)


# Each weights file's reader, loaded once per process.
_readers: dict[str, BeliefReader] = {}
_reader_lock = threading.Lock()


def _loaded(weights: Path) -> BeliefReader:
    """The process-wide reader of these weights, loaded on first use (thread-safe)."""
    key = str(weights)
    found = _readers.get(key)
    if found is None:
        with _reader_lock:
            found = _readers.get(key)
            if found is None:
                found = _readers[key] = BeliefReader(
                    weights=weights, base_directory=model_dir(), base_words=encoder().word_table,
                )
    return found


def reader() -> BeliefReader:
    """The belief reader (misconceptions)."""
    return _loaded(READER_FILE)


def criterion_reader() -> BeliefReader:
    """The criterion reader: the same model trained to read a criterion and a learner unit."""
    return _loaded(CRITERION_READER_FILE)
