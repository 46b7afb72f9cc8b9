"""What only the Redis store does: tell a bad value under its keys from an outage."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import redis

from scrapy_templates.store.base import StoreError, StoreUnavailable
from scrapy_templates.store.redis import MAX_CONNECTIONS, RedisStore
from scrapy_templates.store.resilient import ResilientStore
from tests.conftest import RedisServer


async def test_foreign_values_are_errors_not_outages(redis_server: RedisServer) -> None:
    client = redis.Redis.from_url(redis_server.url)
    client.hset("foreign:s:pub", mapping={"rules:v": "not-a-number", "rules": "{}"})
    client.set("foreign:s:counts", "a string where a hash belongs")
    client.set("foreign:epoch", "x")
    store = ResilientStore(RedisStore(redis_server.url, prefix="foreign"))
    await store.open()
    for call in (
        store.published("s", "rules"),
        store.observe("s", "p", [1], content_key="c"),
        store.epoch(),
    ):
        with pytest.raises(StoreError) as caught:
            await call
        assert not isinstance(caught.value, StoreUnavailable)
    assert not store.down
    await store.close()


async def test_unreachable_redis_is_an_outage() -> None:
    from tests.conftest import free_port

    store = RedisStore(f"redis://127.0.0.1:{free_port()}/0")
    await store.open()
    with pytest.raises(StoreUnavailable):
        await store.ping()
    await store.close()


async def test_memory_usage_counts_every_key_under_the_prefix(redis_server: RedisServer) -> None:
    client = redis.Redis.from_url(redis_server.url)
    client.mset({f"usage:k{i}": "x" * 50 for i in range(2500)})  # more than one batch
    client.set("usage-other:k", "not ours")
    expected = sum(int(client.memory_usage(f"usage:k{i}", samples=0) or 0) for i in range(2500))
    store = RedisStore(redis_server.url, prefix="usage")
    await store.open()
    assert await store.memory_usage() == (2500, expected)
    await store.close()


async def test_a_burst_of_commands_waits_for_a_connection_instead_of_failing(
    tmp_path: Path,
) -> None:
    """A crawl marks many items at once: more commands in flight than the client keeps
    connections is a queue, not an outage."""
    server = RedisServer(tmp_path)  # its own: no other test's clients among its connections
    server.start()
    try:
        store = ResilientStore(RedisStore(server.url, prefix="burst"))
        await store.open()
        await asyncio.gather(
            *(store.observe("s", f"p{n}", [n, n + 1], content_key=f"c{n}") for n in range(400))
        )
        assert not store.down
        pages, counts = await store.counts("s")
        assert pages == 400 and len(counts) == 401
        with redis.Redis.from_url(server.url) as client:
            clients = client.info("clients")["connected_clients"]
        assert clients <= MAX_CONNECTIONS + 1  # and the one that asked
        await store.close()
    finally:
        server.stop()
