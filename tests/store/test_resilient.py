"""Riding out a Redis outage: a real redis-server is stopped and started again."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from scrapy_templates.store.memory import MemoryStore
from scrapy_templates.store.redis import RedisStore
from scrapy_templates.store.resilient import ResilientStore
from tests.conftest import RedisServer


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path, persist=True)
    server.start()
    yield server
    server.stop()


async def test_outage_counts_locally_and_replays_exactly(own_redis: RedisServer) -> None:
    events: list[tuple[bool, str]] = []
    store = ResilientStore(
        RedisStore(own_redis.url, prefix="r"),
        on_change=lambda down, detail: events.append((down, detail)),
        retry=0,
    )
    await store.open()
    reference = MemoryStore()
    pages = [(f"p{i}", [1, 2, 100 + i]) for i in range(12)]
    for pid, fps in pages[:4]:
        await store.observe("s", pid, fps, content_key=pid)
        await reference.observe("s", pid, fps, content_key=pid)

    own_redis.stop()
    for pid, fps in pages[4:8]:
        obs = await store.observe("s", pid, fps, content_key=pid)
        expected = await reference.observe("s", pid, fps, content_key=pid)
        # last known shared counts plus the local increments
        assert (obs.pages, obs.counts) == (expected.pages, expected.counts)
    await store.observe("s", "p0", [1, 2, 100], content_key="p0")  # a re-fetch stays uncounted
    await store.add_url_samples("s", ["a", "b"], 10, [0.1, 0.2])
    assert store.down and events == [(True, events[0][1])]
    assert not await store.acquire("learn:s", "me", 30)

    own_redis.start()
    for pid, fps in pages[8:]:
        await store.observe("s", pid, fps, content_key=pid)
        await reference.observe("s", pid, fps, content_key=pid)
    assert not store.down and events[-1][0] is False
    assert await store.counts("s") == await reference.counts("s")
    assert await store.url_samples("s") == ["a", "b"]
    assert await store.acquire("learn:s", "me", 30)
    await store.close()


async def test_outage_at_close_keeps_the_journal_for_nobody(own_redis: RedisServer) -> None:
    store = ResilientStore(RedisStore(own_redis.url, prefix="c"), retry=0)
    await store.open()
    own_redis.stop()
    await store.observe("s", "p1", [1], content_key="p1")
    await store.close()  # nothing to replay into: close does not hang or raise
    assert store.down and len(store.journal) == 1
