"""The site's cache is an optimisation: with Redis gone it misses and drops writes, never fails."""

import pytest

from core.cache import ForgivingRedisCache


@pytest.fixture
def cache_on_private_redis(private_redis):
    cache = ForgivingRedisCache(private_redis["url"], {"OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1}})
    yield cache, private_redis


def test_with_redis_up_it_is_an_ordinary_cache(cache_on_private_redis):
    cache, _ = cache_on_private_redis
    cache.set("lesson", "<html>")
    assert cache.get("lesson") == "<html>"
    assert cache.get_or_set("count", 0) == 0
    assert cache.incr("count") == 1


def test_with_redis_gone_reads_miss_writes_drop_and_counters_look_missing(cache_on_private_redis):
    cache, redis = cache_on_private_redis
    cache.set("lesson", "<html>")
    redis["process"].terminate()
    redis["process"].wait(timeout=10)

    assert cache.get("lesson") is None
    assert cache.get("lesson", "default") == "default"
    assert cache.get_many(["lesson"]) == {}
    cache.set("lesson", "<html>")  # dropped, no error
    assert cache.add("other", 1) is False
    assert cache.get_or_set("count", 0) == 0  # the rate limiter's read: lets the answer through
    with pytest.raises(ValueError):
        cache.incr("count")  # what a missing key raises; the rate limiter already handles it
    assert cache.delete("lesson") is False
