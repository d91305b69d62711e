"""The site's cache on Redis, made so that a Redis outage cannot turn into an error page.

Everything the cache holds can be recomputed (rendered lessons, drawn charts, rate-limit counts),
so while Redis is away reads miss and writes are dropped: pages render from the database, a
learner's answer is graded and stored, and the rate limit lets answers through. Django's own
RedisCache raises instead, which made every cached page a 500 during a Redis restart.
"""

import logging
import time
from typing import Any

import redis
from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.redis import RedisCache, RedisCacheClient

logger = logging.getLogger(__name__)
WARN_EVERY_S = 30.0


class SharedClientRedisCacheClient(RedisCacheClient):
    """Django's client builds a new ``redis.Redis`` for every operation, and building one fills a
    table of about 170 response callbacks: profiled, that cost more CPU than the GET it was made
    for (a kept signed-in page does two). One per connection pool does the same work; a redis.Redis
    may be shared, and Django gives each thread its own cache backend anyway."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._clients: dict[int, Any] = {}

    def get_client(self, key: Any = None, *, write: bool = False) -> Any:
        index = self._get_connection_pool_index(write)
        client = self._clients.get(index)
        if client is None:
            client = self._clients[index] = self._client(connection_pool=self._get_connection_pool(write))
        return client


class ForgivingRedisCache(RedisCache):
    _last_warning = 0.0

    def __init__(self, server: Any, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = SharedClientRedisCacheClient

    def _redis_away(self, operation: str, error: redis.RedisError) -> None:
        now = time.monotonic()
        if now - ForgivingRedisCache._last_warning >= WARN_EVERY_S:
            ForgivingRedisCache._last_warning = now
            logger.warning("cache %s skipped, Redis is unavailable: %s", operation, error)

    def get(self, key: Any, default: Any = None, version: int | None = None) -> Any:
        try:
            return super().get(key, default, version)
        except redis.RedisError as error:
            self._redis_away("get", error)
            return default

    def get_many(self, keys: Any, version: int | None = None) -> dict[Any, Any]:
        try:
            return super().get_many(keys, version)
        except redis.RedisError as error:
            self._redis_away("get_many", error)
            return {}

    def has_key(self, key: Any, version: int | None = None) -> bool:
        try:
            return super().has_key(key, version)
        except redis.RedisError as error:
            self._redis_away("has_key", error)
            return False

    def set(self, key: Any, value: Any, timeout: Any = DEFAULT_TIMEOUT, version: int | None = None) -> None:
        try:
            super().set(key, value, timeout, version)
        except redis.RedisError as error:
            self._redis_away("set", error)

    def set_many(self, data: dict[Any, Any], timeout: Any = DEFAULT_TIMEOUT, version: int | None = None) -> list[Any]:
        try:
            return super().set_many(data, timeout, version)
        except redis.RedisError as error:
            self._redis_away("set_many", error)
            return list(data)

    def add(self, key: Any, value: Any, timeout: Any = DEFAULT_TIMEOUT, version: int | None = None) -> bool:
        try:
            return super().add(key, value, timeout, version)
        except redis.RedisError as error:
            self._redis_away("add", error)
            return False

    def touch(self, key: Any, timeout: Any = DEFAULT_TIMEOUT, version: int | None = None) -> bool:
        try:
            return super().touch(key, timeout, version)
        except redis.RedisError as error:
            self._redis_away("touch", error)
            return False

    def incr(self, key: Any, delta: int = 1, version: int | None = None) -> int:
        try:
            return super().incr(key, delta, version)
        except redis.RedisError as error:
            self._redis_away("incr", error)
            # What Django's caches raise for a missing key: callers already handle it.
            raise ValueError(f"Key '{key}' not found (Redis is unavailable)") from None

    def delete(self, key: Any, version: int | None = None) -> bool:
        try:
            return super().delete(key, version)
        except redis.RedisError as error:
            self._redis_away("delete", error)
            return False

    def delete_many(self, keys: Any, version: int | None = None) -> None:
        try:
            super().delete_many(keys, version)
        except redis.RedisError as error:
            self._redis_away("delete_many", error)

    def clear(self) -> bool:
        try:
            return super().clear()
        except redis.RedisError as error:
            self._redis_away("clear", error)
            return False
