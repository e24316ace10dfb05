"""The Redis cache keeps one client per connection pool (arena.cache)."""

from __future__ import annotations

from django.core.cache import cache


def test_cache_operations_share_one_redis_client():
    # given the shared cache (Redis in the test settings)
    client = cache._cache.get_client(write=True)
    # when it serves a set, a get, an incr and a get_many
    cache.set("arena-cache-test", 1, 30)
    assert cache.get("arena-cache-test") == 1
    assert cache.incr("arena-cache-test") == 2
    assert cache.get_many(["arena-cache-test"]) == {"arena-cache-test": 2}
    # then every one of them went through the same client (Django's builds one each time)
    assert cache._cache.get_client() is client
    assert cache._cache.get_client(write=True) is client
    cache.delete("arena-cache-test")
