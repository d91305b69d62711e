"""The engine's own view of a run: Prometheus /metrics scraped before, during and after.

Counters (tokens, prefix-cache queries and hits, queue time) are reported as the difference
between the scrape after the run and the one before, so other traffic before the run does not
count. Gauges (requests running/waiting, KV-cache use) are sampled during the run and reported
as their peak. Only the vLLM and llama.cpp dialects are read; other metrics are ignored.
"""

from __future__ import annotations

import asyncio
import math
import re
from typing import Any

import httpx

from workers.measure.spec import TargetSpec

_LINE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>[^}]*)\})?\s+(?P<value>\S+)")

COUNTERS: dict[str, dict[str, str]] = {
    "vllm": {
        "prompt_tokens": "vllm:prompt_tokens_total",
        "generation_tokens": "vllm:generation_tokens_total",
        "requests_succeeded": "vllm:request_success_total",
        "prefix_cache_queries": "vllm:prefix_cache_queries_total",
        "prefix_cache_hits": "vllm:prefix_cache_hits_total",
        "queue_time_sum_s": "vllm:request_queue_time_seconds_sum",
        "queue_time_count": "vllm:request_queue_time_seconds_count",
        "preemptions": "vllm:num_preemptions_total",
        # The engine's own TTFT (request arrival to first token, no network or client parsing):
        # a check on the client's figure.
        "ttft_sum_s": "vllm:time_to_first_token_seconds_sum",
        "ttft_count": "vllm:time_to_first_token_seconds_count",
    },
    "llamacpp": {
        "prompt_tokens": "llamacpp:prompt_tokens_total",
        "generation_tokens": "llamacpp:tokens_predicted_total",
        "prompt_seconds": "llamacpp:prompt_seconds_total",
        "generation_seconds": "llamacpp:tokens_predicted_seconds_total",
    },
}
GAUGES: dict[str, dict[str, tuple[str, ...]]] = {
    "vllm": {
        "running": ("vllm:num_requests_running",),
        "waiting": ("vllm:num_requests_waiting",),
        "kv_cache_usage": ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),
    },
    "llamacpp": {
        "running": ("llamacpp:requests_processing",),
        "waiting": ("llamacpp:requests_deferred",),
        "kv_cache_usage": ("llamacpp:kv_cache_usage_ratio",),
    },
}


def parse_prometheus(text: str) -> dict[str, float]:
    """Metric name -> value, summed over label sets (one model per engine here)."""
    values: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line[0] == "#":
            continue
        match = _LINE.match(line)
        if match is None:
            continue
        try:
            value = float(match["value"])
        except ValueError:
            continue
        if math.isnan(value):
            continue
        name = match["name"]
        values[name] = values.get(name, 0.0) + value
    return values


class ServerMetrics:
    """Scrapes one target's /metrics; every failure is a note, never an exception."""

    def __init__(self, *, http: httpx.AsyncClient, target: TargetSpec, dialect: str) -> None:
        self._http = http
        self._url = target.url("/metrics")
        self.dialect = dialect
        self.before: dict[str, float] | None = None
        self.after: dict[str, float] | None = None
        self.peaks: dict[str, float] = {}
        self.samples = 0
        self.notes: list[str] = []

    async def scrape(self) -> dict[str, float] | None:
        try:
            response = await self._http.get(self._url)
        except httpx.HTTPError as exc:
            self.notes.append(f"/metrics scrape failed: {type(exc).__name__}: {exc}")
            return None
        if response.status_code != 200:
            self.notes.append(f"/metrics answered HTTP {response.status_code}")
            return None
        values = parse_prometheus(response.text)
        self._track_peaks(values)
        return values

    def _track_peaks(self, values: dict[str, float]) -> None:
        self.samples += 1
        for key, names in GAUGES.get(self.dialect, {}).items():
            for name in names:
                if name in values:
                    self.peaks[key] = max(self.peaks.get(key, values[name]), values[name])
                    break

    async def sample_until(self, stop: asyncio.Event, *, interval_s: float) -> None:
        """Sample gauges while the run goes on; a request each ``interval_s`` is cheap."""
        while not stop.is_set():
            try:
                async with asyncio.timeout(interval_s):
                    await stop.wait()
            except TimeoutError:
                await self.scrape()

    def report(self) -> dict[str, Any] | None:
        if self.before is None or self.after is None:
            return {"dialect": self.dialect, "available": False, "notes": self.notes}
        deltas: dict[str, float] = {}
        for key, name in COUNTERS.get(self.dialect, {}).items():
            if name in self.before and name in self.after:
                deltas[key] = self.after[name] - self.before[name]
        derived: dict[str, float | None] = {}
        queries = deltas.get("prefix_cache_queries")
        if queries:
            derived["prefix_cache_hit_rate"] = deltas.get("prefix_cache_hits", 0.0) / queries
        count = deltas.get("queue_time_count")
        if count:
            derived["mean_queue_time_s"] = deltas.get("queue_time_sum_s", 0.0) / count
        ttft_count = deltas.get("ttft_count")
        if ttft_count:
            derived["mean_ttft_s"] = deltas.get("ttft_sum_s", 0.0) / ttft_count
        return {
            "dialect": self.dialect,
            "available": True,
            "deltas": deltas,
            "derived": derived,
            "peaks": self.peaks,
            "samples": self.samples,
            "notes": self.notes,
        }
