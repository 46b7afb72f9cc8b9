"""One protocol for what a process learns and every process uses: learn under the site's lock
in the store, publish a versioned document, adopt anything newer.

URL rule sets and template models both travel this way (``kind`` ``"rules"`` and
``"model"``). Whoever holds a site's lock learns, from a version above both the newest
publication and its own, and publishes; the others adopt the publication when they sync. The
holder extends its lock every third of its time to live while it learns, and publishes only
if it still holds it then: a learn that outlives the lock (a store that lost it) leaves the
publication to whoever took it over. A document that does not load, or that names another
site, is refused once per version (a stat and one log line), and the one in force stays.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Generic, Protocol, TypeVar

from scrapy_templates.store.base import StoreError, StoreUnavailable, TemplateStore

logger = logging.getLogger(__name__)


class Document(Protocol):
    """A published document: its site, its version and its JSON text."""

    @property
    def site(self) -> str: ...

    @property
    def version(self) -> int: ...

    def dumps(self) -> str: ...


D = TypeVar("D", bound=Document)


class Publisher(Generic[D]):
    """Publication of one ``kind`` of document (see the module docstring). ``load`` parses a
    document (raising ``ValueError``), ``current`` gives the version in force for a site (0:
    none), ``refused`` counts a refused document; ``lock`` names the sites' locks and
    ``label`` the documents in the log."""

    def __init__(
        self,
        kind: str,
        *,
        label: str,
        lock: str,
        load: Callable[[str], D],
        current: Callable[[str], int],
        refused: Callable[[], None],
        lock_ttl: float,
    ) -> None:
        self.kind = kind
        self.label = label
        self.lock = lock
        self.load = load
        self.current = current
        self.on_refused = refused
        self.lock_ttl = lock_ttl
        self.store: TemplateStore | None = None
        self.owner = ""
        self._refused: set[tuple[str, int]] = set()

    def attach(self, store: TemplateStore, owner: str) -> None:
        """The store that holds the publications, and this process's lock holder id."""
        self.store, self.owner = store, owner

    def accept(self, site: str, version: int, document: str) -> D | None:
        """The document published for ``site`` at ``version`` when it is newer than the one
        in force and loads as a document of that site; ``None`` otherwise."""
        if self.current(site) >= version or (site, version) in self._refused:
            return None
        try:
            loaded = self.load(document)
            if loaded.site != site:
                raise ValueError(f"it is the {self.label} of {loaded.site!r}")
            if loaded.version != version:
                raise ValueError(f"it says it is v{loaded.version}")
        except Exception as exc:  # whatever a document holds, it is refused, never raised
            self._refuse(site, version, exc)
            return None
        return loaded

    def _refuse(self, site: str, version: int, why: object) -> None:
        """Count and log a refusal once per site and version (-1: an unreadable version)."""
        self._refused.add((site, version))
        self.on_refused()
        logger.error(
            "scrapy-templates: published %s %s of %s refused (%s); the previous one stays",
            self.label,
            f"v{version}" if version >= 0 else "(unreadable version)",
            site,
            why,
        )

    async def _published(self, store: TemplateStore, site: str) -> tuple[int, str] | None:
        """The site's publication; one the store cannot read (a version that is not a
        number) is refused like a bad document, and reads as none. An outage propagates."""
        try:
            return await store.published(site, self.kind)
        except StoreUnavailable:
            raise
        except StoreError as exc:
            if (site, -1) not in self._refused:
                self._refuse(site, -1, exc)
            return None

    async def newer(self, site: str) -> D | None:
        """The site's publication, when it is newer than the one in force (see
        :meth:`accept`)."""
        if self.store is None:
            return None
        found = await self._published(self.store, site)
        return None if found is None else self.accept(site, *found)

    async def learn(self, site: str, work: Callable[[int, D | None], Awaitable[D | None]]) -> bool:
        """Under the site's lock, call ``work(version, newer)`` — ``newer``: the newest
        publication when it is newer than the one in force, for ``work`` to adopt first;
        ``version``: the version to learn — and publish the document it returns (``None``:
        nothing to publish). Returns ``False`` without calling ``work`` when another process
        holds the lock or the store is down; a store error taking the lock propagates."""
        store = self.store
        if store is None:
            return False
        name = f"{self.lock}:{site}"
        if not await store.acquire(name, self.owner, self.lock_ttl):
            return False
        keeper = asyncio.ensure_future(self._keep(store, name))
        try:
            found = await self._published(store, site)
            newer = None if found is None else self.accept(site, *found)
            version = max(found[0] if found else 0, self.current(site)) + 1
            document = await work(version, newer)
            if document is not None:
                if await store.acquire(name, self.owner, self.lock_ttl):
                    await store.publish(site, self.kind, version, document.dumps())
                else:
                    logger.warning(
                        "scrapy-templates: the lock on %s of %s passed to another process "
                        "while learning v%d; not published (theirs will be adopted)",
                        self.label,
                        site,
                        version,
                    )
        finally:
            keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await keeper
            with contextlib.suppress(StoreError):  # the lock expires by itself
                await store.release(name, self.owner)
        return True

    async def _keep(self, store: TemplateStore, name: str) -> None:
        """Extend the lock ``name`` every third of its time to live, until cancelled or
        lost (a failed extension is tried again at the next third)."""
        while True:
            await asyncio.sleep(self.lock_ttl / 3)
            try:
                if not await store.acquire(name, self.owner, self.lock_ttl):
                    return  # another process holds it: the publication check will say so
            except StoreError as exc:
                logger.debug("scrapy-templates: extending lock %s failed: %s", name, exc)
