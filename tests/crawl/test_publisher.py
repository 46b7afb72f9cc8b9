"""The publication protocol over a real memory store: learn under the lock, publish a
versioned document, adopt anything newer, refuse what does not load."""

from __future__ import annotations

import json
from dataclasses import dataclass

from scrapy_templates.crawl.publisher import Publisher
from scrapy_templates.store.memory import MemoryStore


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

    def __init__(self, store: MemoryStore, owner: str) -> None:
        self.notes: dict[str, Note] = {}
        self.refused = 0
        self.publisher: Publisher[Note] = Publisher(
            "note",
            label="note",
            lock="note",
            load=Note.loads,
            current=lambda site: self.notes[site].version if site in self.notes else 0,
            refused=self._refuse,
            lock_ttl=5.0,
        )
        self.publisher.attach(store, owner)

    def _refuse(self) -> None:
        self.refused += 1

    async def learn(self, site: str, text: str) -> bool:
        async def work(version: int, newer: Note | None) -> Note:
            if newer is not None:
                self.notes[site] = newer
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
