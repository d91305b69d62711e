"""Recorded runs for the golden tests: per lab, requests with known timings shaped like what the
local CPU engine and a GPU engine really produce, noise and non-monotonic steps included.

Each run is built from RequestRecords through the measurement library's own summarize, so the
golden tests read exactly the summary format a finished lab stores.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.labs.test_checks import closed_loop, open_loop, request, run_summary, sequential
from workers.measure.metrics import SLO, RequestRecord

BOUND_CPU = {"decode_tokens_per_s": 478.0, "label": "83 MB of weights ÷ 39.8 GB/s (AMD EPYC, measured)"}


@dataclass(frozen=True)
class Recorded:
    """A recorded run: what a finished lab stores, its summary and its request records."""

    sweep_param: str | None
    steps: list[tuple[Any, list[RequestRecord]]]
    slo: SLO | None = None

    @property
    def summary(self) -> dict[str, Any]:
        return run_summary(sweep_param=self.sweep_param, steps=self.steps, slo=self.slo)

    @property
    def records(self) -> list[dict[str, Any]]:
        return [record.to_dict() for _, records in self.steps for record in records]


def _recorded(
    *, sweep_param: str | None, steps: list[tuple[Any, list[RequestRecord]]], slo: SLO | None = None
) -> Recorded:
    return Recorded(sweep_param=sweep_param, steps=steps, slo=slo)


def noisier(run: Recorded, *, seed: int, repeats: int = 4, spread: float = 0.45) -> Recorded:
    """The same run measured `repeats` times over on a busy machine: each request's TTFT and TPOT
    scaled by a seeded log-normal factor (sigma `spread`), one request in seven a straggler at
    three times its TTFT, and one in eleven failed. Steps overlap each other's values, which is
    what puts a legend or a label on top of someone's data."""
    rng = random.Random(seed)
    steps = []
    for value, records in run.steps:
        span = max(((r.end_s or 0.0) - (r.scheduled_s or r.send_s or 0.0) for r in records), default=1.0)
        rough: list[RequestRecord] = []
        for repeat in range(repeats):
            for record in records:
                copy = dataclasses.replace(
                    record,
                    index=len(rough),
                    params=dict(record.params),
                    send_s=(record.send_s or 0.0) + repeat * span,
                    scheduled_s=None if record.scheduled_s is None else record.scheduled_s + repeat * span,
                )
                number = len(rough)
                if record.ok and number % 11 == 10:
                    copy.error = {"kind": "timeout", "message": "timeout happened", "status": None}
                    copy.ttft_s = copy.tpot_s = copy.e2e_s = copy.output_tokens = None
                    copy.itl_s = []
                    copy.end_s = (copy.send_s or 0.0) + (record.ttft_s or 0.0)
                elif record.ok and record.ttft_s is not None:
                    ttft = record.ttft_s * rng.lognormvariate(0.0, spread) * (3.0 if number % 7 == 3 else 1.0)
                    tpot = (record.tpot_s or 0.0) * rng.lognormvariate(0.0, spread / 2)
                    tokens = record.output_tokens or 1
                    copy.ttft_s = ttft
                    copy.tpot_s = tpot if tokens > 1 else None
                    copy.e2e_s = ttft + (tokens - 1) * tpot
                    copy.end_s = (copy.send_s or 0.0) + copy.e2e_s
                rough.append(copy)
        steps.append((value, rough))
    return Recorded(sweep_param=run.sweep_param, steps=steps, slo=run.slo)


def ttft_vs_output_length() -> Recorded:
    """60M model on the CPU, 256-token prompt: TTFT ~130 ms (one step 20 % high: noise), TPOT
    rising with context as attention grows (6 ms at 128 tokens out, 9 at 512, 13 at 2,048)."""
    steps = []
    for max_tokens, ttft, tpot, seed in ((128, 0.125, 0.0060, 1), (512, 0.152, 0.0090, 2), (2048, 0.131, 0.0130, 3)):
        records = sequential(
            params={"max_tokens": max_tokens},
            n=3,
            ttft=ttft,
            tpot=tpot,
            tokens=max_tokens,
            prompt_tokens=256,
            jitter=0.08,
            seed=seed,
        )
        steps.append((max_tokens, records))
    return _recorded(sweep_param="max_tokens", steps=steps)


def prompt_length_ttft() -> Recorded:
    """CPU prefill ~1,300 tokens/s with the longest prompt above the line; TPOT 5.6 -> 15 ms."""
    shape = {16: (0.021, 0.0052), 256: (0.160, 0.0056), 1024: (0.730, 0.0125), 2048: (1.900, 0.0150)}
    steps = [
        (
            prompt,
            sequential(
                params={"prompt_tokens": prompt},
                n=3,
                ttft=ttft,
                tpot=tpot,
                tokens=64,
                prompt_tokens=prompt,
                jitter=0.05,
                seed=prompt,
            ),
        )
        for prompt, (ttft, tpot) in shape.items()
    ]
    return _recorded(sweep_param="prompt_tokens", steps=steps)


def decode_speed_of_light() -> Recorded:
    """A 60M F16 model at about 6.5 ms per token against a 2.09 ms bound: 32 %."""
    records = sequential(params={}, n=5, ttft=0.03, tpot=0.0065, tokens=256, prompt_tokens=16, jitter=0.1, seed=7)
    return _recorded(sweep_param=None, steps=[(None, records)])


def batching_almost_free() -> Recorded:
    """The local batched engine (4 slots): aggregate 143, 201, 335, 335, 298 tokens/s."""
    steps = []
    for c, aggregate in ((1, 143.0), (2, 201.0), (4, 335.0), (8, 334.6), (16, 298.5)):
        tokens, ttft = 128, 0.1
        tpot = (c * tokens / aggregate - ttft) / (tokens - 1)
        waves = max(4 // c, 1) if c < 4 else 3
        steps.append(
            (c, closed_loop(params={"concurrency": c}, concurrency=c, waves=waves, ttft=ttft, tpot=tpot, tokens=tokens))
        )
    return _recorded(sweep_param="concurrency", steps=steps)


def continuous_batching() -> Recorded:
    """One request at a time: at concurrency 4 each request waits for up to three answers of 256
    tokens ahead of it (about 1.7 s each), so P95 TTFT climbs from 0.1 s to about 5 s."""
    steps = []
    service = 0.1 + 255 * 0.0065
    for c in (1, 2, 4):
        records = [
            request(
                index=wave * c + k,
                send=wave * c * service,
                ttft=0.1 + k * service,
                tpot=0.0065,
                tokens=256,
                params={"concurrency": c},
            )
            for wave in range(2)
            for k in range(c)
        ]
        steps.append((c, records))
    return _recorded(sweep_param="concurrency", steps=steps)


def prefix_caching() -> Recorded:
    """1,536-token prompts: 1.2 s to the first token unique, 0.3 s with the 1,504-token prefix cached."""
    unique = sequential(params={"shared_prefix": 0}, n=6, ttft=1.2, tpot=0.0065, tokens=16, jitter=0.06, seed=11)
    shared = sequential(params={"shared_prefix": 1}, n=6, ttft=0.3, tpot=0.0065, tokens=16, jitter=0.15, seed=12)
    return _recorded(sweep_param="shared_prefix", steps=[(0, unique), (1, shared)])


def open_loop_slo() -> Recorded:
    """Capacity about 75 requests per minute: 30 and 60 keep the 1 s TTFT SLO, 90 on do not."""
    steps = []
    for rate in (30, 60, 90, 120):
        over = max(0.0, rate / 75 - 1.0)
        steps.append(
            (
                rate,
                open_loop(
                    rate_rpm=rate, n=20, ttft_of=lambda i, over=over: 0.16 + over * i * 0.4, tpot=0.007, tokens=128
                ),
            )
        )
    return _recorded(sweep_param="rate_rpm", steps=steps, slo=SLO(ttft_s=1.0, tpot_s=0.05))


def quantization() -> Recorded:
    """The 60M model at F16, Q8_0, Q4_0 decoding at 7.0, 2.6 and 2.1 ms per token (non-linear in
    bytes: Q8_0 gains more than its byte ratio); TTFT worst for Q8_0."""
    shape = {"prefill-60m-f16": (0.30, 0.0070), "prefill-60m-q8_0": (0.31, 0.0026), "prefill-60m-q4_0": (0.21, 0.0021)}
    steps = [
        (name, sequential(params={"model": name}, n=3, ttft=ttft, tpot=tpot, tokens=128, jitter=0.05, seed=i))
        for i, (name, (ttft, tpot)) in enumerate(shape.items())
    ]
    return _recorded(sweep_param="model", steps=steps)


RECORDED: dict[str, Callable[[], Recorded]] = {
    "ttft-vs-output-length": ttft_vs_output_length,
    "prompt-length-ttft": prompt_length_ttft,
    "decode-speed-of-light": decode_speed_of_light,
    "batching-almost-free": batching_almost_free,
    "continuous-batching": continuous_batching,
    "prefix-caching": prefix_caching,
    "open-loop-slo": open_loop_slo,
    "quantization": quantization,
}


# The summaries alone, as the golden tests of findings and chart titles read them.
RUNS: dict[str, Callable[[], dict[str, Any]]] = {
    slug: (lambda build=build: build().summary) for slug, build in RECORDED.items()
}
