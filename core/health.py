"""Health checks for /healthz: each probe reports ok/error with a short reason and its latency."""

import time
import uuid
from dataclasses import dataclass

import redis
from django.conf import settings
from django.core.cache import cache
from django.db import connection

from core.tasks import PING_KEY, ping


@dataclass(frozen=True, kw_only=True)
class ProbeResult:
    ok: bool
    latency_ms: float
    error: str = ""

    def as_dict(self) -> dict[str, object]:
        data: dict[str, object] = {"ok": self.ok, "latency_ms": round(self.latency_ms, 2)}
        if self.error:
            data["error"] = self.error
        return data


def check_database() -> ProbeResult:
    started = time.perf_counter()
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as error:
        return ProbeResult(ok=False, latency_ms=_ms_since(started), error=_one_line(error))
    return ProbeResult(ok=True, latency_ms=_ms_since(started))


def check_redis(*, url: str | None = None) -> ProbeResult:
    started = time.perf_counter()
    client = redis.Redis.from_url(
        url or settings.REDIS_URL,
        socket_connect_timeout=settings.HEALTHZ_TIMEOUT_S,
        socket_timeout=settings.HEALTHZ_TIMEOUT_S,
    )
    try:
        client.ping()
    except redis.RedisError as error:
        return ProbeResult(ok=False, latency_ms=_ms_since(started), error=_one_line(error))
    finally:
        client.close()
    return ProbeResult(ok=True, latency_ms=_ms_since(started))


def health_report(*, redis_url: str | None = None, deep: bool = False) -> tuple[bool, dict[str, object]]:
    """Database and Redis decide the status; with deep=True a worker round trip is reported too."""
    checks = {"database": check_database(), "redis": check_redis(url=redis_url)}
    healthy = all(result.ok for result in checks.values())
    if deep and checks["redis"].ok:
        checks["worker"] = check_worker()
    return healthy, {
        "status": "ok" if healthy else "degraded",
        "checks": {name: result.as_dict() for name, result in checks.items()},
    }


def _ms_since(started: float) -> float:
    return (time.perf_counter() - started) * 1000


def _one_line(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}".splitlines()[0][:300]


def check_worker(*, wait_s: float = 3.0) -> ProbeResult:
    """Round trip through the broker: enqueue core.tasks.ping and wait for a worker to run it."""
    started = time.perf_counter()
    token = uuid.uuid4().hex
    try:
        ping.apply_async(kwargs={"token": token}, expires=wait_s + 5)
    except Exception as error:
        return ProbeResult(ok=False, latency_ms=_ms_since(started), error=_one_line(error))
    deadline = started + wait_s
    while time.perf_counter() < deadline:
        seen = cache.get(PING_KEY)
        if seen and seen.get("token") == token:
            return ProbeResult(ok=True, latency_ms=_ms_since(started))
        time.sleep(0.05)
    return ProbeResult(ok=False, latency_ms=_ms_since(started), error=f"no worker answered within {wait_s:.0f} s")
