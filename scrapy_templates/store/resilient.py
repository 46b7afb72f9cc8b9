"""A store that rides out outages of the shared one.

While the shared store (Redis) is unreachable, pages are counted in a local
:class:`~scrapy_templates.store.memory.MemoryStore` and every write is kept in a journal;
every ``retry`` seconds a call first checks whether the shared store is back, and when it is
the journal is replayed into it and the local state is dropped. Replaying is exact because
recording a page is idempotent (a page id counts once), so no increment is lost or doubled.
Locks are never granted while the shared store is down: learning waits for the full evidence
instead of learning from the local fraction.

Counts answered during an outage are the last counts the shared store gave for each
fingerprint plus the local increments since, so pages decided while Redis is away are decided
on nearly the evidence they would have had.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from scrapy_templates.store.base import Observation, StoreUnavailable, TemplateStore
from scrapy_templates.store.memory import MemoryStore

Journaled = Callable[[TemplateStore], Awaitable[Any]]


class ResilientStore:
    """Wraps ``primary``; ``on_change(down, detail)`` is told when it goes down or comes back.

    ``journal_max`` bounds the writes kept for replay; past it the oldest go (counted in
    :attr:`journal_lost`) — a long outage then loses old increments, never items.
    """

    def __init__(
        self,
        primary: TemplateStore,
        *,
        on_change: Callable[[bool, str], None] | None = None,
        retry: float = 5.0,
        journal_max: int = 200_000,
        known_max: int = 200_000,
        max_links: int = 200,
        max_owners: int = 256,
    ) -> None:
        self.primary = primary
        self.on_change = on_change
        self.retry = retry
        self.journal_max = journal_max
        self._limits = (max_links, max_owners)
        self.local = self._local_store()
        self.down = False
        self.journal: deque[Journaled] = deque()
        self.known_max = known_max
        self._known: dict[str, tuple[int, dict[int, int]]] = {}
        self.journal_lost = 0
        self.replayed = 0
        self._next_probe = 0.0
        self._recovering = asyncio.Lock()

    async def open(self) -> None:
        await self.primary.open()

    async def close(self) -> None:
        if self.down:
            await self._probe(force=True)
        await self.primary.close()

    def _local_store(self) -> MemoryStore:
        return MemoryStore(max_links=self._limits[0], max_owners=self._limits[1])

    # -- outage handling ---------------------------------------------------------------------

    def _fail(self, exc: StoreUnavailable) -> None:
        self._next_probe = time.monotonic() + self.retry
        if not self.down:
            self.down = True
            if self.on_change is not None:
                self.on_change(True, str(exc))

    async def _probe(self, *, force: bool = False) -> None:
        """While down, at most every ``retry`` seconds: if the primary answers, replay the
        journal into it and switch back."""
        if not self.down or (not force and time.monotonic() < self._next_probe):
            return
        if self._recovering.locked():
            return
        async with self._recovering:
            self._next_probe = time.monotonic() + self.retry
            try:
                await self.primary.ping()
                while self.journal:
                    await self.journal[0](self.primary)
                    self.journal.popleft()
                    self.replayed += 1
            except StoreUnavailable:
                return
            self.down = False
            self.local = self._local_store()
            if self.on_change is not None:
                self.on_change(False, f"{self.replayed} writes replayed")

    def _record(self, write: Journaled) -> None:
        self.journal.append(write)
        if len(self.journal) > self.journal_max:
            self.journal.popleft()
            self.journal_lost += 1

    def _remember(self, site: str, fingerprints: Sequence[int], obs: Observation) -> None:
        pages, counts = self._known.get(site) or (0, {})
        if len(counts) > self.known_max:
            counts = {}
        counts.update(zip(fingerprints, obs.counts, strict=True))
        self._known[site] = (max(pages, obs.pages), counts)

    def _with_known(self, site: str, fingerprints: Sequence[int], obs: Observation) -> Observation:
        pages, counts = self._known.get(site) or (0, {})
        return Observation(
            pages + obs.pages,
            [counts.get(fp, 0) + n for fp, n in zip(fingerprints, obs.counts, strict=True)],
            obs.components,
            obs.new,
        )

    async def _write(self, write: Journaled) -> Any:
        await self._probe()
        if not self.down:
            try:
                return await write(self.primary)
            except StoreUnavailable as exc:
                self._fail(exc)
        self._record(write)
        return await write(self.local)

    async def _read(self, read: Journaled) -> Any:
        await self._probe()
        if not self.down:
            try:
                return await read(self.primary)
            except StoreUnavailable as exc:
                self._fail(exc)
        return await read(self.local)

    # -- the store protocol ------------------------------------------------------------------

    async def observe(
        self,
        site: str,
        page_id: str,
        fingerprints: Sequence[int],
        links: Sequence[str] = (),
        *,
        content_key: str = "",
        components: bool = False,
    ) -> Observation:
        fps, out = list(fingerprints), list(links)
        result: Observation = await self._write(
            lambda s: s.observe(
                site, page_id, fps, out, content_key=content_key, components=components
            )
        )
        return self._answer(site, fps, result)

    async def lookup(
        self, site: str, page_id: str, fingerprints: Sequence[int], *, components: bool = False
    ) -> Observation:
        result: Observation = await self._read(
            lambda s: s.lookup(site, page_id, fingerprints, components=components)
        )
        return self._answer(site, fingerprints, result)

    def _answer(self, site: str, fingerprints: Sequence[int], obs: Observation) -> Observation:
        if self.down:
            return self._with_known(site, fingerprints, obs)
        self._remember(site, fingerprints, obs)
        return obs

    async def add_url_samples(
        self, site: str, samples: Sequence[str], cap: int, draws: Sequence[float]
    ) -> int:
        kept, rolls = list(samples), list(draws)
        offered: int = await self._write(lambda s: s.add_url_samples(site, kept, cap, rolls))
        return offered

    async def url_samples(self, site: str, most: int | None = None) -> list[str]:
        samples: list[str] = await self._read(lambda s: s.url_samples(site, most))
        return samples

    async def ping(self) -> None:
        await self._probe()
        if self.down:
            raise StoreUnavailable("the shared store is down; counting locally")

    async def sites(self) -> list[str]:
        found: list[str] = await self._read(lambda s: s.sites())
        return found

    async def counts(self, site: str) -> tuple[int, dict[int, int]]:
        found: tuple[int, dict[int, int]] = await self._read(lambda s: s.counts(site))
        return found

    async def prune(self, site: str, below: int = 2) -> int:
        gone: int = await self._read(lambda s: s.prune(site, below))
        return gone

    async def publish(self, site: str, kind: str, version: int, document: str) -> bool:
        stored: bool = await self._write(lambda s: s.publish(site, kind, version, document))
        return stored

    async def published(self, site: str, kind: str) -> tuple[int, str] | None:
        found: tuple[int, str] | None = await self._read(lambda s: s.published(site, kind))
        return found

    async def epoch(self) -> int:
        value: int = await self._read(lambda s: s.epoch())
        return value

    async def acquire(self, name: str, owner: str, ttl: float) -> bool:
        await self._probe()
        if self.down:
            return False
        try:
            return await self.primary.acquire(name, owner, ttl)
        except StoreUnavailable as exc:
            self._fail(exc)
            return False

    async def release(self, name: str, owner: str) -> None:
        if self.down:
            return  # the lock expires on its own
        try:
            await self.primary.release(name, owner)
        except StoreUnavailable as exc:
            self._fail(exc)
