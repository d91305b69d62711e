"""Turn a GGUF file into the safetensors + tokenizer directory vLLM loads (run in vLLM's own env).

``<vllm env>/bin/python engines/vllm/convert.py --gguf FILE --out DIR`` - standard library and
the vLLM environment's packages only (torch, transformers, gguf, accelerate), never the project's.

transformers' GGUF loader dequantises the weights (SmolLM2's Q4_1) to 16 bits. The model it
returns keeps a GGUF quantization marker in its config, and transformers 5.x then refuses
``save_pretrained``; a fresh model built from the same config without ``quantization_config``,
given the loaded state dict (every key matches), saves normally. The tokenizer, with the chat
template and end-of-sequence token from the GGUF, is saved beside it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def convert(*, gguf_file: Path, out: Path) -> dict[str, object]:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    started = time.monotonic()
    directory, name = str(gguf_file.parent), gguf_file.name
    tokenizer = AutoTokenizer.from_pretrained(directory, gguf_file=name)
    loaded = AutoModelForCausalLM.from_pretrained(directory, gguf_file=name, dtype=torch.bfloat16)
    config = AutoConfig.from_pretrained(directory, gguf_file=name)
    if hasattr(config, "quantization_config"):
        delattr(config, "quantization_config")
    fresh = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    result = fresh.load_state_dict(loaded.state_dict(), strict=False)
    missing = [key for key in result.missing_keys if "lm_head" not in key]
    if missing or result.unexpected_keys:
        raise SystemExit(f"state dict mismatch: missing {missing[:5]}, unexpected {result.unexpected_keys[:5]}")
    if getattr(config, "tie_word_embeddings", False):
        fresh.tie_weights()
    out.mkdir(parents=True, exist_ok=True)
    fresh.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    params = sum(p.numel() for p in fresh.parameters())
    return {"params": params, "seconds": round(time.monotonic() - started, 1),
            "eos_token": tokenizer.eos_token, "chat_template": bool(tokenizer.chat_template)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gguf", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    print(json.dumps(convert(gguf_file=args.gguf, out=args.out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
