"""The publication protocol over a real memory store (and a real Redis for the lock): learn
under the lock, publish a versioned document, adopt anything newer, refuse what does not
load."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

import pytest

from scrapy_templates.crawl.publisher import Publisher
from scrapy_templates.store.base import TemplateStore
from scrapy_templates.store.memory import MemoryStore
from scrapy_templates.store.redis import RedisStore


@dataclass(frozen=True)
class Note:
    site: str
    version: int
    text: str

    def dumps(self) -> str:
        return json.dumps({"site": self.site, "version": self.version, "text": self.text})

    @classmethod
    def loads(cls, text: str) -> Note:
        try:
            data = json.loads(text)
            return cls(data["site"], int(data["version"]), str(data["text"]))
        except (KeyError, TypeError, json.JSONDecodeError) as exc:
            raise ValueError(f"not a note: {exc}") from None


class Process:
    """One process's side: the note in force per site and the refusals counted."""

    def __init__(self, store: TemplateStore, owner: str, lock_ttl: float = 5.0) -> None:
        self.notes: dict[str, Note] = {}
        self.refused = 0
        self.publisher: Publisher[Note] = Publisher(
            "note",
            label="note",
            lock="note",
            load=Note.loads,
            current=lambda site: self.notes[site].version if site in self.notes else 0,
            refused=self._refuse,
            lock_ttl=lock_ttl,
        )
        self.publisher.attach(store, owner)

    def _refuse(self) -> None:
        self.refused += 1

    async def learn(
        self, site: str, text: str, meanwhile: Callable[[], Awaitable[None]] | None = None
    ) -> bool:
        async def work(version: int, newer: Note | None) -> Note:
            if newer is not None:
                self.notes[site] = newer
            if meanwhile is not None:
                await meanwhile()
            note = Note(site, version, text)
            self.notes[site] = note
            return note

        return await self.publisher.learn(site, work)


async def _store() -> MemoryStore:
    store = MemoryStore()
    await store.open()
    return store


async def test_a_learned_document_is_published_and_adopted_by_another_process() -> None:
    store = await _store()
    a, b = Process(store, "a"), Process(store, "b")
    assert await a.learn("s.test", "first")
    assert await store.published("s.test", "note") == (1, Note("s.test", 1, "first").dumps())
    newer = await b.publisher.newer("s.test")
    assert newer == Note("s.test", 1, "first")
    b.notes["s.test"] = newer
    assert await b.publisher.newer("s.test") is None, "nothing newer than what is in force"
    # b learns next: above the publication it adopted
    assert await b.learn("s.test", "second")
    assert (await store.published("s.test", "note") or (0,))[0] == 2


async def test_the_version_learned_is_above_the_publication_and_the_one_in_force() -> None:
    store = await _store()
    a = Process(store, "a")
    a.notes["s.test"] = Note("s.test", 7, "own")
    assert await a.learn("s.test", "next")
    assert a.notes["s.test"].version == 8


async def test_without_the_lock_nothing_is_learned() -> None:
    store = await _store()
    a, b = Process(store, "a"), Process(store, "b")
    assert await store.acquire("note:s.test", "a", 5.0)
    assert not await b.learn("s.test", "blocked")
    assert await store.published("s.test", "note") is None
    await store.release("note:s.test", "a")
    assert await b.learn("s.test", "free")
    assert a.notes == {}


async def test_a_bad_or_foreign_document_is_refused_once_per_version() -> None:
    store = await _store()
    a = Process(store, "a")
    await store.publish("s.test", "note", 3, "{not json")
    assert await a.publisher.newer("s.test") is None
    assert await a.publisher.newer("s.test") is None
    assert a.refused == 1
    await store.publish("s.test", "note", 4, Note("other.test", 4, "x").dumps())
    assert await a.publisher.newer("s.test") is None
    assert a.refused == 2
    assert a.notes == {}


_prefixes = itertools.count()


@pytest.fixture(params=["memory", "redis"])
async def shared(request: pytest.FixtureRequest) -> AsyncIterator[TemplateStore]:
    """A store two processes share: the memory store, and a real Redis server."""
    store: TemplateStore
    if request.param == "memory":
        store = MemoryStore()
    else:
        server = request.getfixturevalue("redis_server")
        store = RedisStore(server.url, prefix=f"pub{next(_prefixes)}")
    await store.open()
    yield store
    await store.close()


async def test_the_lock_is_extended_for_as_long_as_the_learn_takes(shared: TemplateStore) -> None:
    a, b = Process(shared, "a", lock_ttl=0.3), Process(shared, "b", lock_ttl=0.3)
    tries: list[bool] = []

    async def slow() -> None:  # a learn four times longer than the lock lives
        for _ in range(12):
            await asyncio.sleep(0.1)
            tries.append(await b.learn("s.test", "intruder"))

    assert await a.learn("s.test", "slow", meanwhile=slow)
    assert tries == [False] * 12
    assert await shared.published("s.test", "note") == (1, Note("s.test", 1, "slow").dumps())
    assert await b.learn("s.test", "after")  # released at the end


async def test_a_lock_lost_while_learning_means_no_publication(
    shared: TemplateStore, caplog: pytest.LogCaptureFixture
) -> None:
    a, b = Process(shared, "a"), Process(shared, "b")

    async def taken_over() -> None:  # the store lost a's lock and b took it
        await shared.release("note:s.test", "a")
        assert await shared.acquire("note:s.test", "b", 5.0)

    assert await a.learn("s.test", "stale", meanwhile=taken_over)
    assert await shared.published("s.test", "note") is None
    assert "passed to another process" in caplog.text
    await shared.release("note:s.test", "b")
    assert await b.learn("s.test", "fresh")
    assert (await shared.published("s.test", "note") or (0,))[0] == 1
