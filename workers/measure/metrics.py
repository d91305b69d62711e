"""Per-request records and the run summary, with the metric definitions of DESIGN.md.

- TTFT: request sent -> first chunk carrying non-empty generated text.
- ITL: gaps between successive content chunks.
- TPOT: (E2E - TTFT) / (output tokens - 1).
- E2E: request sent -> last content chunk (a trailing usage-only chunk is not a token).
- Output tokens: server usage (or llama.cpp timings, Ollama eval_count); counted content
  chunks only when the server reports nothing, and then the record says so.
- Queue time: how long the request waited for a client concurrency slot.
- Throughput: over the measured window, from the start of the measured phase (warm-up
  excluded) to the end of its last request.

"Request sent" is when the request's first byte was handed to the socket, so connection set-up
(reported separately as ``connect_s``) and waiting for a slot never count as TTFT.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(slots=True)
class RequestRecord:
    index: int
    max_tokens: int
    # Sent as X-Request-Id, to match a record with the engine's own logs.
    request_id: str | None = None
    warmup: bool = False
    # The swept parameter values this request belongs to, e.g. {"prompt_tokens": 512}.
    params: dict[str, Any] = field(default_factory=dict)
    prompt_tokens_target: int | None = None
    # Offsets in seconds from the run's start.
    scheduled_s: float | None = None
    send_s: float | None = None
    end_s: float | None = None
    queue_s: float = 0.0
    connect_s: float | None = None
    headers_s: float | None = None
    ttft_s: float | None = None
    tpot_s: float | None = None
    e2e_s: float | None = None
    itl_s: list[float] = field(default_factory=list)
    output_tokens: int | None = None
    output_tokens_source: str | None = None
    content_chunks: int = 0
    prompt_tokens: int | None = None
    prompt_tokens_source: str | None = None
    finish_reason: str | None = None
    server: dict[str, Any] | None = None
    retries: int = 0
    error: dict[str, Any] | None = None
    warnings: list[dict[str, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for key, value in data.items():
            if key.endswith("_s") and isinstance(value, float):
                data[key] = round(value, 7)
        data["itl_s"] = [round(gap, 7) for gap in self.itl_s]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RequestRecord:
        return cls(**data)


def tpot(*, e2e_s: float, ttft_s: float, output_tokens: int) -> float | None:
    """Time per output token after the first; undefined for fewer than two tokens."""
    if output_tokens < 2:
        return None
    return (e2e_s - ttft_s) / (output_tokens - 1)


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), on sorted input."""
    if not sorted_values:
        raise ValueError("no values")
    pos = (len(sorted_values) - 1) * q / 100.0
    low = math.floor(pos)
    high = min(low + 1, len(sorted_values) - 1)
    frac = pos - low
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * frac


def describe(values: Iterable[float]) -> dict[str, float | int] | None:
    """P50/P90/P95/P99, mean, std (population, as vLLM's bench), min, max and n."""
    ordered = sorted(values)
    n = len(ordered)
    if n == 0:
        return None
    mean = math.fsum(ordered) / n
    var = math.fsum((v - mean) ** 2 for v in ordered) / n
    return {
        "p50": percentile(ordered, 50),
        "p90": percentile(ordered, 90),
        "p95": percentile(ordered, 95),
        "p99": percentile(ordered, 99),
        "mean": mean,
        "std": math.sqrt(var),
        "min": ordered[0],
        "max": ordered[-1],
        "n": n,
    }


@dataclass(frozen=True, slots=True)
class SLO:
    """Targets a request must all meet to count towards goodput (None: not constrained)."""

    ttft_s: float | None = None
    tpot_s: float | None = None
    e2e_s: float | None = None

    @property
    def empty(self) -> bool:
        return self.ttft_s is None and self.tpot_s is None and self.e2e_s is None

    def met_by(self, record: RequestRecord) -> bool:
        if not record.ok:
            return False
        if self.ttft_s is not None and (record.ttft_s is None or record.ttft_s > self.ttft_s):
            return False
        if self.e2e_s is not None and (record.e2e_s is None or record.e2e_s > self.e2e_s):
            return False
        # A one-token answer has no TPOT, so it cannot miss a TPOT target.
        return not (self.tpot_s is not None and record.tpot_s is not None and record.tpot_s > self.tpot_s)


def peak_concurrency(records: Iterable[RequestRecord]) -> int:
    """Most requests in flight at once (send -> end), from the client's point of view."""
    edges: list[tuple[float, int]] = []
    for r in records:
        if r.send_s is not None and r.end_s is not None:
            edges.append((r.send_s, 1))
            edges.append((r.end_s, -1))
    # Ends sort before starts at the same instant, so back-to-back requests do not overlap.
    edges.sort(key=lambda edge: (edge[0], edge[1]))
    peak = current = 0
    for _, step in edges:
        current += step
        peak = max(peak, current)
    return peak


def summarize(
    records: Sequence[RequestRecord],
    *,
    window_start_s: float | None,
    slo: SLO | None = None,
    include_itl: bool = True,
) -> dict[str, Any]:
    """The run summary over measured (non-warm-up) records.

    ``include_itl=False`` skips the ITL distribution, which is the one expensive part (every
    gap of every request); partial summaries sent with progress use it so the callback never
    holds up the loop that is taking timestamps.
    """
    measured = [r for r in records if not r.warmup]
    ok = [r for r in measured if r.ok]
    cancelled = [r for r in measured if r.error and r.error.get("kind") == "cancelled"]
    failed = [r for r in measured if r.error and r.error.get("kind") != "cancelled"]
    ends = [r.end_s for r in measured if r.end_s is not None]
    starts = [r.send_s for r in measured if r.send_s is not None]
    begin = window_start_s if window_start_s is not None else (min(starts) if starts else None)
    duration = (max(ends) - begin) if ends and begin is not None else 0.0
    duration = max(duration, 0.0)
    out_tokens = sum(r.output_tokens or 0 for r in ok)

    def per_s(amount: float) -> float | None:
        return amount / duration if duration > 0 else None

    summary: dict[str, Any] = {
        "requests": {
            "total": len(measured),
            "succeeded": len(ok),
            "failed": len(failed),
            "cancelled": len(cancelled),
            "warmup": len(records) - len(measured),
        },
        "ttft_s": describe(r.ttft_s for r in ok if r.ttft_s is not None),
        "tpot_s": describe(r.tpot_s for r in ok if r.tpot_s is not None),
        "itl_s": describe(g for r in ok for g in r.itl_s) if include_itl else None,
        "e2e_s": describe(r.e2e_s for r in ok if r.e2e_s is not None),
        "queue_s": describe(r.queue_s for r in measured if r.send_s is not None),
        "connect_s": describe(r.connect_s for r in measured if r.connect_s is not None),
        "output_tokens": describe(r.output_tokens for r in ok if r.output_tokens is not None),
        "prompt_tokens": describe(r.prompt_tokens for r in ok if r.prompt_tokens is not None),
        "output_tokens_total": out_tokens,
        "duration_s": duration,
        "output_tokens_per_s": per_s(out_tokens),
        "requests_per_s": per_s(len(ok)),
        "peak_concurrency": peak_concurrency(measured),
        "errors_by_kind": dict(Counter(r.error["kind"] for r in failed if r.error)),
        "warnings_by_kind": dict(Counter(w["kind"] for r in measured for w in r.warnings)),
        "output_tokens_source": dict(Counter(r.output_tokens_source for r in ok if r.output_tokens_source)),
        "retries": sum(r.retries for r in measured),
        "server": _server_split(ok),
        "prefix_cache": prefix_cache_use(ok),
        "goodput": None,
    }
    if slo is not None and not slo.empty:
        good = [r for r in ok if slo.met_by(r)]
        summary["goodput"] = {
            "slo": {"ttft_s": slo.ttft_s, "tpot_s": slo.tpot_s, "e2e_s": slo.e2e_s},
            "requests": len(good),
            "fraction": len(good) / len(measured) if measured else None,
            "requests_per_s": per_s(len(good)),
            "output_tokens_per_s": per_s(sum(r.output_tokens or 0 for r in good)),
        }
    return summary


def prefix_cache_use(ok: Sequence[RequestRecord]) -> dict[str, Any] | None:
    """How much of the measured prompts the engine served from its prefix cache, as it said per
    request (llama.cpp's ``timings.cache_n``); None when the engine reports nothing per request.

    A cached token skipped prefill, so TTFT over cached prompts is not the prefill being
    measured unless the run measures caching on purpose.
    """
    pairs = [
        (int(r.server["cached_prompt_tokens"]), int(r.prompt_tokens))
        for r in ok
        if r.server and r.server.get("cached_prompt_tokens") is not None and r.prompt_tokens
    ]
    if not pairs:
        return None
    cached = sum(c for c, _ in pairs)
    prompt = sum(p for _, p in pairs)
    return _with_beyond_template(
        {
            "source": "engine timings per request",
            "cached_tokens": cached,
            "prompt_tokens": prompt,
            "hit_rate": cached / prompt if prompt else 0.0,
            "requests_with_hits": sum(1 for c, _ in pairs if c > 0),
            "requests": len(pairs),
            "template_tokens": 0,
        }
    )


def prefix_cache_from_server_metrics(report: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The same figure from the engine's /metrics counters (vLLM's prefix_cache_queries/hits,
    in tokens), counted over the run's window; None when the engine exposes no such counter."""
    deltas = (report or {}).get("deltas") or {}
    queries = deltas.get("prefix_cache_queries")
    if not queries:
        return None
    hits = deltas.get("prefix_cache_hits", 0.0)
    return _with_beyond_template(
        {
            "source": "engine /metrics counters",
            "cached_tokens": int(hits),
            "prompt_tokens": int(queries),
            "hit_rate": hits / queries,
            "requests_with_hits": None,
            "requests": None,
            "template_tokens": 0,
        }
    )


def with_template_allowance(cache: dict[str, Any] | None, *, template_tokens: int) -> dict[str, Any] | None:
    """Add what a cache may serve without harm: a chat template's fixed opening (e.g. a default
    system prompt) is the same in every chat request, so an engine may serve its whole blocks
    from cache; only hits beyond it (``beyond_template_rate``) shorten the prefill being measured."""
    if cache is None:
        return None
    cache = dict(cache)
    cache["template_tokens"] = template_tokens
    return _with_beyond_template(cache)


def _with_beyond_template(cache: dict[str, Any]) -> dict[str, Any]:
    beyond = max(0, cache["cached_tokens"] - cache.get("template_tokens", 0))
    cache["beyond_template_tokens"] = beyond
    cache["beyond_template_rate"] = beyond / cache["prompt_tokens"] if cache["prompt_tokens"] else 0.0
    return cache


def combine_prefix_cache(parts: Iterable[Mapping[str, Any] | None]) -> dict[str, Any] | None:
    """One figure over several steps' prefix-cache figures (token-weighted)."""
    known = [p for p in parts if p]
    if not known:
        return None
    cached = sum(p["cached_tokens"] for p in known)
    prompt = sum(p["prompt_tokens"] for p in known)
    with_hits = [p.get("requests_with_hits") for p in known]
    requests = [p.get("requests") for p in known]
    return _with_beyond_template(
        {
            "source": known[0]["source"],
            "cached_tokens": cached,
            "prompt_tokens": prompt,
            "hit_rate": cached / prompt if prompt else 0.0,
            "requests_with_hits": sum(with_hits) if None not in with_hits else None,
            "requests": sum(requests) if None not in requests else None,
            "template_tokens": sum(p.get("template_tokens", 0) for p in known),
        }
    )


def _server_split(ok: Sequence[RequestRecord]) -> dict[str, Any] | None:
    """Server-reported prefill/decode time, where the engine reports it per request."""
    with_server = [r.server for r in ok if r.server]
    if not with_server:
        return None
    prefill = [s["prefill_s"] for s in with_server if s.get("prefill_s") is not None]
    decode_per_token = [
        s["decode_s"] / (s["output_tokens"] - 1)
        for s in with_server
        if s.get("decode_s") is not None and (s.get("output_tokens") or 0) > 1
    ]
    return {
        "source": with_server[0].get("source"),
        "prefill_s": describe(prefill),
        "decode_per_token_s": describe(decode_per_token),
    }
