"""What to measure (RunSpec) and against what (TargetSpec)."""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

from workers.measure.errors import InvalidSpec
from workers.measure.metrics import SLO
from workers.measure.protocols import Api

ENGINE_KINDS = ("vllm", "llamacpp", "ollama", "openai-compatible")


@dataclass(frozen=True)
class Capabilities:
    """What a target accepts. Unknown fields make strict servers answer 400, so every optional
    request field is sent only when the capability says the target takes it."""

    include_usage: bool = False
    ignore_eos: bool = False
    # Which /tokenize dialect the target speaks: "vllm" ({"prompt"} -> {"count"}),
    # "llamacpp" ({"content"} -> {"tokens"}), or None.
    tokenize: str | None = None
    # Open a new connection for every streamed request. llama.cpp's server was seen dropping
    # back-to-back streams on reused keep-alive connections; connect time stays out of TTFT.
    fresh_connection_per_stream: bool = False
    # Which Prometheus dialect /metrics speaks ("vllm", "llamacpp"), or None.
    metrics: str | None = None
    # The request may say whether the server reuses a cached prompt prefix (llama.cpp's
    # ``cache_prompt``). vLLM's prefix cache is server-wide and cannot be turned off per request.
    cache_prompt: bool = False

    @classmethod
    def for_engine(cls, kind: str) -> Capabilities:
        """Known-good defaults for an engine kind, for callers that skip the probe."""
        if kind == "vllm":
            return cls(include_usage=True, ignore_eos=True, tokenize="vllm", metrics="vllm")
        if kind == "llamacpp":
            return cls(
                include_usage=True,
                ignore_eos=True,
                tokenize="llamacpp",
                fresh_connection_per_stream=True,
                metrics="llamacpp",
                cache_prompt=True,
            )
        if kind in ("ollama", "openai-compatible"):
            return cls()
        raise InvalidSpec(f"unknown engine kind {kind!r}; expected one of {ENGINE_KINDS}")


@dataclass(frozen=True)
class TargetSpec:
    base_url: str
    api: Api
    model: str
    api_key: str | None = field(default=None, repr=False)
    capabilities: Capabilities = field(default_factory=Capabilities)
    headers: dict[str, str] = field(default_factory=dict)
    verify_tls: bool = True

    def __post_init__(self) -> None:
        parts = urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InvalidSpec(f"base URL must be http(s)://host[:port], got {self.base_url!r}")
        object.__setattr__(self, "base_url", self.base_url.rstrip("/"))
        object.__setattr__(self, "api", Api(self.api))
        if not self.model:
            raise InvalidSpec("a model name is required")

    def url(self, path: str) -> str:
        # Targets are often configured as ".../v1"; the API paths already carry /v1.
        base = self.base_url.removesuffix("/v1") if path.startswith("/v1/") else self.base_url
        return base + path

    def request_headers(self) -> dict[str, str]:
        headers = {"content-type": "application/json", **self.headers}
        if self.api_key:
            headers["authorization"] = f"Bearer {self.api_key}"
        return headers

    def with_capabilities(self, capabilities: Capabilities) -> TargetSpec:
        return replace(self, capabilities=capabilities)

    def public_dict(self) -> dict[str, Any]:
        """For results: everything except the API key."""
        return {
            "base_url": self.base_url,
            "api": str(self.api),
            "model": self.model,
            "api_key_set": bool(self.api_key),
            "capabilities": {
                "include_usage": self.capabilities.include_usage,
                "ignore_eos": self.capabilities.ignore_eos,
                "tokenize": self.capabilities.tokenize,
                "fresh_connection_per_stream": self.capabilities.fresh_connection_per_stream,
                "metrics": self.capabilities.metrics,
                "cache_prompt": self.capabilities.cache_prompt,
            },
        }


SWEEP_PARAMS = ("prompt_tokens", "max_tokens")


def fresh_seed() -> int:
    """A workload seed no earlier run is likely to have used (2**48 values): prompts, and so the
    prefixes an engine may have cached, differ from every other run's."""
    return secrets.randbits(48)
ARRIVALS = ("poisson", "constant")


@dataclass(frozen=True)
class Sweep:
    """Run the workload once per value of one parameter, in order."""

    param: str
    values: tuple[int, ...]

    def __post_init__(self) -> None:
        if self.param not in SWEEP_PARAMS:
            raise InvalidSpec(f"sweep parameter must be one of {SWEEP_PARAMS}")
        if not self.values or any(v < 1 for v in self.values):
            raise InvalidSpec("sweep values must be positive integers")
        object.__setattr__(self, "values", tuple(int(v) for v in self.values))


@dataclass(frozen=True)
class RunSpec:
    """One measurement run.

    Closed loop (``rate`` unset): ``concurrency`` streams are kept in flight until ``requests``
    are done. Open loop (``rate`` set): requests arrive at ``rate`` per second, Poisson or
    evenly spaced, whatever the engine does; ``concurrency`` then caps requests in flight and
    arrivals over the cap wait for a slot (reported as queue time). With a ``sweep``,
    ``requests`` is per swept value.
    """

    requests: int = 20
    prompt_tokens: int = 128
    max_tokens: int = 128
    concurrency: int | None = None
    rate: float | None = None
    arrival: str = "poisson"
    warmup: int = 0
    ignore_eos: bool = False
    seed: int = 0
    shared_prefix_tokens: int = 0
    # Let the engine reuse a cached prompt prefix where the request can say so (llama.cpp).
    # Off unless the run measures caching: a cached prefill is not the prefill being measured.
    prompt_cache: bool = False
    sweep: Sweep | None = None
    slo: SLO | None = None
    timeout_s: float = 300.0
    read_timeout_s: float = 60.0
    connect_timeout_s: float = 10.0
    max_duration_s: float | None = None
    max_errors: int | None = None
    retries_before_first_byte: int = 2
    server_metrics: bool = True
    extra_body: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.requests < 1:
            raise InvalidSpec("requests must be at least 1")
        if self.prompt_tokens < 1 or self.max_tokens < 1:
            raise InvalidSpec("prompt_tokens and max_tokens must be at least 1")
        if self.concurrency is not None and self.concurrency < 1:
            raise InvalidSpec("concurrency must be at least 1")
        if self.rate is not None and (not math.isfinite(self.rate) or self.rate <= 0):
            raise InvalidSpec("rate must be a positive number of requests per second")
        if self.arrival not in ARRIVALS:
            raise InvalidSpec(f"arrival must be one of {ARRIVALS}")
        if self.warmup < 0 or self.shared_prefix_tokens < 0:
            raise InvalidSpec("warmup and shared_prefix_tokens cannot be negative")
        if self.shared_prefix_tokens >= self.prompt_tokens and self.shared_prefix_tokens:
            raise InvalidSpec("shared_prefix_tokens must be shorter than prompt_tokens")
        for name in ("timeout_s", "read_timeout_s", "connect_timeout_s"):
            if getattr(self, name) <= 0:
                raise InvalidSpec(f"{name} must be positive")
        if self.max_duration_s is not None and self.max_duration_s <= 0:
            raise InvalidSpec("max_duration_s must be positive")
        if self.max_errors is not None and self.max_errors < 1:
            raise InvalidSpec("max_errors must be at least 1")

    @property
    def open_loop(self) -> bool:
        return self.rate is not None

    @property
    def effective_concurrency(self) -> int | None:
        """Streams in flight at most; None means no cap (open loop without a cap)."""
        if self.open_loop:
            return self.concurrency
        return self.concurrency or 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "prompt_tokens": self.prompt_tokens,
            "max_tokens": self.max_tokens,
            "concurrency": self.concurrency,
            "rate": self.rate,
            "arrival": self.arrival if self.open_loop else None,
            "load_shape": "open_loop" if self.open_loop else "closed_loop",
            "warmup": self.warmup,
            "ignore_eos": self.ignore_eos,
            "seed": self.seed,
            "shared_prefix_tokens": self.shared_prefix_tokens,
            "prompt_cache": self.prompt_cache,
            "sweep": {"param": self.sweep.param, "values": list(self.sweep.values)} if self.sweep else None,
            "slo": {"ttft_s": self.slo.ttft_s, "tpot_s": self.slo.tpot_s, "e2e_s": self.slo.e2e_s}
            if self.slo
            else None,
            "timeout_s": self.timeout_s,
            "read_timeout_s": self.read_timeout_s,
            "connect_timeout_s": self.connect_timeout_s,
            "max_duration_s": self.max_duration_s,
            "max_errors": self.max_errors,
        }
