"""The result of a run, as versioned JSON.

Schema (``schema_version`` 1). Every duration is in seconds and its field name ends in ``_s``.

- ``schema_version``: int; bumped on any incompatible change.
- ``status``: ``succeeded`` | ``failed`` | ``cancelled``; ``stop_reason``: why it ended early.
- ``started_at`` / ``finished_at``: ISO 8601 UTC wall-clock times.
- ``target``: base URL, API, model, capabilities used (never the API key).
- ``engine``: the probe's findings (kind, version, models, capabilities), or null.
- ``spec``: the run specification (load shape, lengths, counts, SLOs, timeouts).
- ``workload``: how prompt lengths were controlled (tokenize | calibrated | estimate).
- ``requests_planned``: how many measured requests the spec asked for.
- ``requests``: one record per request, warm-up included (``warmup: true``), each with
  ``index``, ``request_id`` (sent as X-Request-Id), ``params``, ``scheduled_s``, ``send_s``,
  ``end_s`` (offsets from the run start),
  ``queue_s``, ``connect_s``, ``headers_s``, ``ttft_s``, ``tpot_s``, ``itl_s`` (a list),
  ``e2e_s``, ``output_tokens`` + ``output_tokens_source`` (usage | timings | ollama | chunks),
  ``prompt_tokens`` + ``prompt_tokens_source``, ``prompt_tokens_target``, ``max_tokens``,
  ``content_chunks``, ``finish_reason``, ``server`` (server-side prefill/decode split),
  ``retries``, ``error`` ({kind, message, status} or null), ``warnings`` ([{kind, message}]).
- ``summary``: over measured requests. ``ttft_s``, ``tpot_s``, ``itl_s``, ``e2e_s``,
  ``queue_s``, ``connect_s``, ``output_tokens``, ``prompt_tokens`` as
  ``{"p50", "p90", "p95", "p99", "mean", "std", "min", "max", "n"}`` (null when n = 0);
  ``output_tokens_per_s``, ``requests_per_s`` and ``duration_s`` over the measured window;
  ``peak_concurrency``; ``goodput`` against the SLOs; ``errors_by_kind``;
  ``warnings_by_kind``; ``requests`` counts; ``server`` (server-side split summary).
- ``groups``: for a sweep, ``[{"param", "value", "summary"}]`` in sweep order.
- ``server_metrics``: /metrics deltas and peaks, or null.
- ``connections``: pool statistics (opened, reused, connect_s).
- ``notes``: plain-language caveats (e.g. output tokens counted from chunks).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from workers.measure.metrics import RequestRecord

SCHEMA_VERSION = 1


class SchemaVersionError(ValueError):
    pass


@dataclass
class RunResult:
    status: str
    started_at: str
    finished_at: str
    target: dict[str, Any]
    spec: dict[str, Any]
    requests: list[RequestRecord]
    summary: dict[str, Any]
    requests_planned: int = 0
    stop_reason: str | None = None
    engine: dict[str, Any] | None = None
    workload: dict[str, Any] = field(default_factory=dict)
    groups: list[dict[str, Any]] = field(default_factory=list)
    server_metrics: dict[str, Any] | None = None
    connections: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    schema_version: int = SCHEMA_VERSION

    @property
    def measured(self) -> list[RequestRecord]:
        return [r for r in self.requests if not r.warmup]

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": self.schema_version,
            "status": self.status,
            "stop_reason": self.stop_reason,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "target": self.target,
            "engine": self.engine,
            "spec": self.spec,
            "workload": self.workload,
            "requests_planned": self.requests_planned,
            "summary": self.summary,
            "groups": self.groups,
            "server_metrics": self.server_metrics,
            "connections": self.connections,
            "notes": self.notes,
            "requests": [r.to_dict() for r in self.requests],
        }

    def to_json(self, *, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunResult:
        version = data.get("schema_version")
        if version != SCHEMA_VERSION:
            raise SchemaVersionError(f"result schema_version {version!r}; this library reads {SCHEMA_VERSION}")
        return cls(
            status=data["status"],
            stop_reason=data.get("stop_reason"),
            started_at=data["started_at"],
            finished_at=data["finished_at"],
            target=data["target"],
            engine=data.get("engine"),
            spec=data["spec"],
            workload=data.get("workload") or {},
            requests_planned=data.get("requests_planned", 0),
            summary=data["summary"],
            groups=data.get("groups") or [],
            server_metrics=data.get("server_metrics"),
            connections=data.get("connections") or {},
            notes=data.get("notes") or [],
            requests=[RequestRecord.from_dict(r) for r in data["requests"]],
        )

    @classmethod
    def from_json(cls, text: str) -> RunResult:
        return cls.from_dict(json.loads(text))
