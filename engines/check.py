"""Check a running local engine against the figures the labs rely on.

``python -m engines.check`` measures both local targets and prints JSON: TTFT against prompt
length, time per output token, four concurrent streams on the serial and the batched target,
and the TTFT of a shared prefix with the prompt cache. It is a self-test for the engine, not
the measurement library (that is workers/measure); it is small enough to read in one sitting.

Each stream opens a fresh connection, timed apart from TTFT: llama-server has been seen to
drop back-to-back streams on a reused keep-alive connection. Prompts are token ids, so their
length is exact, and each starts with tokens of its own so no cached prefix is reused unless
the check means it to be. Output tokens are counted from the server's ``usage``, never from
chunks: a token that is an incomplete UTF-8 sequence is not streamed on its own.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np

from engines.llamacpp.models import DEFAULT_MODEL
from engines.local import DEFAULT_BATCHED_URL, DEFAULT_SERIAL_URL, start_local_engines

# Ids below this are <unk>, <s>, </s> and the 256 byte tokens of the llama vocabulary.
FIRST_TEXT_TOKEN = 259
VOCAB_SIZE = 32000
REQUEST_TIMEOUT_S = 300.0


@dataclass
class Completion:
    connect_s: float
    ttft_s: float
    e2e_s: float
    # Arrival of each chunk that carried text, seconds after the request was sent.
    chunk_times: list[float] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    started_at: float = 0.0
    text: str = ""
    # The last JSON chunk before [DONE]: where llama-server puts ``usage`` and ``timings``.
    final_chunk: dict[str, object] = field(default_factory=dict)

    @property
    def output_tokens(self) -> int:
        return int(self.usage.get("completion_tokens", 0))

    @property
    def gaps_s(self) -> list[float]:
        return [b - a for a, b in zip(self.chunk_times, self.chunk_times[1:], strict=False)]

    @property
    def tpot_s(self) -> float:
        return (self.e2e_s - self.ttft_s) / max(self.output_tokens - 1, 1)


def free_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


def prompt_tokens(*, length: int, seed: int, prefix: list[int] | None = None) -> list[int]:
    """``prefix`` then random text tokens up to ``length``; the seed makes the tail unique."""
    head = list(prefix or [])
    rng = np.random.default_rng(seed)
    tail = rng.integers(FIRST_TEXT_TOKEN, VOCAB_SIZE, size=max(length - len(head), 0))
    return head + [int(token) for token in tail]


def stream_completion(
    *,
    url: str,
    prompt: list[int] | str,
    max_tokens: int,
    model: str = DEFAULT_MODEL,
    ignore_eos: bool = True,
    cache_prompt: bool = True,
    timeout: float = REQUEST_TIMEOUT_S,
) -> Completion:
    """Stream one ``/v1/completions`` request on a new connection and time its chunks."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port or 80,
                                            timeout=timeout)
    body = json.dumps({
        "model": model, "prompt": prompt, "max_tokens": max_tokens, "stream": True,
        "ignore_eos": ignore_eos, "cache_prompt": cache_prompt,
        "stream_options": {"include_usage": True},
    })
    try:
        connect_started = time.perf_counter()
        connection.connect()
        sent = time.perf_counter()
        connection.request("POST", "/v1/completions", body=body,
                           headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        if response.status != 200:
            detail = response.read().decode(errors="replace")[:300]
            raise RuntimeError(f"{url} answered {response.status}: {detail}")
        result = Completion(connect_s=sent - connect_started, ttft_s=0.0, e2e_s=0.0,
                            started_at=sent)
        texts = []
        for raw in response:
            line = raw.decode().strip()
            if not line.startswith("data:"):
                continue
            payload = line.removeprefix("data:").strip()
            if payload == "[DONE]":
                break
            chunk = json.loads(payload)
            now = time.perf_counter() - sent
            text = "".join(choice.get("text") or "" for choice in chunk.get("choices", []))
            if text:
                result.chunk_times.append(now)
                texts.append(text)
            if chunk.get("usage"):
                result.usage = chunk["usage"]
            if chunk.get("timings"):
                result.timings = chunk["timings"]
            result.final_chunk = chunk
    finally:
        connection.close()
    if not result.chunk_times:
        raise RuntimeError(f"{url} streamed no text")
    result.ttft_s = result.chunk_times[0]
    result.e2e_s = result.chunk_times[-1]
    result.text = "".join(texts)
    return result


def ttft_by_prompt_length(
    *, url: str, model: str, lengths: tuple[int, ...], max_tokens: int, repeats: int, seed: int
) -> list[dict[str, object]]:
    rows = []
    for length in lengths:
        runs = [
            stream_completion(url=url, model=model, max_tokens=max_tokens,
                              prompt=prompt_tokens(length=length, seed=seed + 1000 * length + i))
            for i in range(repeats)
        ]
        rows.append({
            "prompt_tokens": runs[0].usage.get("prompt_tokens"),
            "ttft_ms": [round(run.ttft_s * 1000, 1) for run in runs],
            "tpot_ms": [round(run.tpot_s * 1000, 2) for run in runs],
            "server_prompt_ms": [round(run.timings.get("prompt_ms", 0.0), 1) for run in runs],
            "server_per_token_ms": [round(run.timings.get("predicted_per_token_ms", 0.0), 2)
                                    for run in runs],
            "output_tokens": [run.output_tokens for run in runs],
            "max_gap_over_median_gap": [
                round(max(run.gaps_s) / statistics.median(run.gaps_s), 2) for run in runs
            ],
        })
    return rows


def concurrent_streams(
    *, url: str, model: str, streams: int, prompt_length: int, max_tokens: int, seed: int
) -> dict[str, object]:
    """Send ``streams`` requests at once; aggregate output tokens/s over the whole window."""
    prompts = [prompt_tokens(length=prompt_length, seed=seed + i) for i in range(streams)]
    with ThreadPoolExecutor(max_workers=streams) as pool:
        runs = list(pool.map(
            lambda p: stream_completion(url=url, model=model, prompt=p, max_tokens=max_tokens),
            prompts,
        ))
    window_start = min(run.started_at for run in runs)
    window_end = max(run.started_at + run.e2e_s for run in runs)
    tokens = sum(run.output_tokens for run in runs)
    return {
        "streams": streams,
        "output_tokens": tokens,
        "window_s": round(window_end - window_start, 3),
        "tokens_per_s": round(tokens / (window_end - window_start), 1),
        "ttft_ms": sorted(round(run.ttft_s * 1000, 1) for run in runs),
    }


def shared_prefix(
    *, url: str, model: str, prefix_length: int, suffix_length: int, max_tokens: int, seed: int
) -> dict[str, object]:
    """TTFT of a new prefix (cold), then of the same prefix with a new suffix (warm)."""
    prefix = prompt_tokens(length=prefix_length, seed=seed)
    total = prefix_length + suffix_length
    cold = stream_completion(url=url, model=model, max_tokens=max_tokens,
                             prompt=prompt_tokens(length=total, seed=seed + 1, prefix=prefix))
    warm = stream_completion(url=url, model=model, max_tokens=max_tokens,
                             prompt=prompt_tokens(length=total, seed=seed + 2, prefix=prefix))
    return {
        "prefix_tokens": prefix_length,
        "cold_ttft_ms": round(cold.ttft_s * 1000, 1),
        "warm_ttft_ms": round(warm.ttft_s * 1000, 1),
        "warm_server_prompt_tokens": warm.timings.get("prompt_n"),
        "warm_server_cached_tokens": warm.timings.get("cache_n"),
    }


def stream_contract(*, url: str, model: str, max_tokens: int, seed: int) -> dict[str, object]:
    """What the measurement library relies on: exact length, usage and timings at the end."""
    result = stream_completion(url=url, model=model, max_tokens=max_tokens,
                               prompt=prompt_tokens(length=32, seed=seed))
    gaps = result.gaps_s
    return {
        "asked_tokens": max_tokens,
        "usage_completion_tokens": result.output_tokens,
        "content_chunks": len(result.chunk_times),
        "usage_in_last_chunk": "usage" in result.final_chunk,
        "timings_in_last_chunk": "timings" in result.final_chunk,
        "median_gap_ms": round(statistics.median(gaps) * 1000, 2),
        "max_gap_ms": round(max(gaps) * 1000, 2),
    }


def run_checks(*, serial_url: str, batched_url: str, model: str, seed: int) -> dict[str, object]:
    # Load the model's pages and warm the threads so the first measured request is not an outlier.
    stream_completion(url=serial_url, model=model, prompt=prompt_tokens(length=8, seed=seed),
                      max_tokens=4)
    stream_completion(url=batched_url, model=model, prompt=prompt_tokens(length=8, seed=seed + 1),
                      max_tokens=4)
    return {
        "model": model,
        "stream_contract": {
            name: stream_contract(url=url, model=model, max_tokens=200, seed=seed + 5 + i)
            for i, (name, url) in enumerate((("serial", serial_url), ("batched", batched_url)))
        },
        "ttft_by_prompt_length": ttft_by_prompt_length(
            url=serial_url, model=model, lengths=(16, 256, 1024), max_tokens=64, repeats=3,
            seed=seed + 10),
        "concurrent": {
            name: concurrent_streams(url=url, model=model, streams=4, prompt_length=64,
                                     max_tokens=128, seed=seed + 20 + i * 10)
            for i, (name, url) in enumerate((("serial", serial_url), ("batched", batched_url)))
        },
        "shared_prefix": shared_prefix(url=serial_url, model=model, prefix_length=1500,
                                       suffix_length=16, max_tokens=8, seed=seed + 50),
        "note": "real timings, synthetic text",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m engines.check", description="Measure the running local engines."
    )
    parser.add_argument("--serial-url",
                        default=os.environ.get("LOCAL_ENGINE_URL", DEFAULT_SERIAL_URL))
    parser.add_argument("--batched-url",
                        default=os.environ.get("LOCAL_ENGINE_BATCHED_URL", DEFAULT_BATCHED_URL))
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--start", action="store_true",
                        help="start both engines on free ports for the check, stop them after")
    args = parser.parse_args(argv)
    if not args.start:
        report = run_checks(serial_url=args.serial_url.rstrip("/"),
                            batched_url=args.batched_url.rstrip("/"), model=args.model,
                            seed=args.seed)
        print(json.dumps(report, indent=2))
        return 0
    size, precision = args.model.removeprefix("prefill-").split("-", 1)
    with start_local_engines(serial_url=free_url(), batched_url=free_url(), model=args.model,
                             sizes=(size,), precisions=(precision,),
                             log_dir=Path(tempfile.mkdtemp(prefix="prefill-check-"))) as engines:
        report = run_checks(serial_url=engines.serial.url, batched_url=engines.batched.url,
                            model=args.model, seed=args.seed)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
