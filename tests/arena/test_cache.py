"""The Redis cache keeps one client per connection pool (arena.cache)."""

from __future__ import annotations

import pytest
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


def test_incr_is_one_command_and_never_creates_a_key(monkeypatch):
    # given a counter, incremented once (Redis loads the script on its first use), and
    # a record of the commands the cache's client sends to Redis from then on
    client = cache._cache.get_client(write=True)
    cache.set("arena-cache-counter", 7, 30)
    assert cache.incr("arena-cache-counter") == 8
    sent = []
    execute = client.execute_command

    def recorded(*args, **options):
        sent.append(args[0])
        return execute(*args, **options)

    monkeypatch.setattr(client, "execute_command", recorded)
    # when it is incremented again, then a missing key is
    assert cache.incr("arena-cache-counter", 3) == 11
    with pytest.raises(ValueError, match="not found"):
        cache.incr("arena-cache-missing")
    # then each took one command, the script (Django's backend sends EXISTS, then
    # INCRBY), and nothing was created for the missing key
    assert sent == ["EVALSHA", "EVALSHA"], sent
    assert client.exists(cache.make_key("arena-cache-missing")) == 0
    cache.delete("arena-cache-counter")
