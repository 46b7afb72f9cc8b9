"""The cold start of a new site: its first items wait for the spider's next pages.

A site the store knows fewer than ``TEMPLATES_BOOTSTRAP_PAGES`` pages of has no evidence yet:
deciding its first item on one page would flag nothing. So its first items are counted and then
wait until the store has counted that many more of the site's pages — the spider's own pages,
as its crawl brings them. The first of them to be released decides them all
(:meth:`Bootstrap.hold`): each in turn, the site learning from it, and then each again on what
all of them taught, so that a site's first items are as clean as its later ones.

Nothing is downloaded for this: the crawl's limits (``DEPTH_LIMIT``,
``CLOSESPIDER_PAGECOUNT``), its scheduler, cache and politeness see only the spider's requests.
A wait ends when the pages are counted, when the crawl has had nothing in flight for a moment
(no more pages are coming: a small site, a depth or page limit, or a scraper backed up by the
waiting items themselves), or when for ``TEMPLATES_BOOTSTRAP_TIMEOUT`` seconds no page of the
site has come to the pipeline or been counted. A site whose pages keep coming, however slowly
(a download delay, a spider whose link following leaves the pipeline little of the crawl's
thread), is waited for — but its items wait no longer than :data:`MAX_WAITS` timeouts after
its first item came, whichever batch they are in.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

Held = TypeVar("Held")
Marked = TypeVar("Marked")

# How long the crawl must have no download in flight before waiting items stop waiting, and how
# often that is looked at.
IDLE_SECONDS = 0.5
_POLL_SECONDS = 0.05
# A wait is never longer than this many timeouts, however steadily pages come.
MAX_WAITS = 10


class Bootstrap:
    """Holds the first items of new sites (see the module docstring). ``count`` adds to a
    stat."""

    def __init__(
        self, crawler: Crawler, *, pages: int, timeout: float, count: Callable[[str], None]
    ) -> None:
        self.crawler = crawler
        self.pages = pages
        self.timeout = timeout
        self.count = count
        self._ready: dict[str, asyncio.Event] = {}
        self._last_news: dict[str, float] = {}
        self._since: dict[str, float] = {}
        self._held: dict[str, list[tuple[Any, asyncio.Future[Any]]]] = {}
        self._deciding: dict[str, list[tuple[Any, asyncio.Future[Any]]]] = {}
        self._watches: dict[str, asyncio.Future[None]] = {}

    def wanted(self, known_pages: int) -> bool:
        """Whether an item of a site the store knows ``known_pages`` pages of (its own
        included) waits for more."""
        return self.pages > 0 and known_pages < self.pages + 1

    def counted(self, site: str, known_pages: int) -> None:
        """The store now knows ``known_pages`` pages of ``site``: release its waiting items
        once that is enough."""
        ready = self._ready.get(site)
        if ready is None or ready.is_set():
            return
        self._last_news[site] = time.monotonic()
        if not self.wanted(known_pages):
            ready.set()

    def arriving(self, site: str) -> None:
        """An item of ``site`` came to the pipeline: its page is on its way to be counted, so
        the site's waiting items wait on (an item whose page then fails to parse kept them
        waiting for one timeout more)."""
        ready = self._ready.get(site)
        if ready is not None and not ready.is_set():
            self._last_news[site] = time.monotonic()

    async def hold(
        self,
        site: str,
        held: Held,
        decide: Callable[[str, list[Held]], Awaitable[list[Marked | Exception]]],
    ) -> Marked:
        """Hold an item of ``site`` (``held``: what deciding it takes) as :meth:`wait` does;
        the first held item to be released decides all those of the site held with it,
        ``decide`` giving each its marks or its exception, which is raised here; the others
        wait for its answer."""
        future: asyncio.Future[Marked] = asyncio.get_running_loop().create_future()
        batch = self._held.setdefault(site, [])
        entry = (held, future)
        batch.append(entry)
        try:
            await self.wait(site, future)
        except BaseException:  # cancelled, or the wait failed: no longer held (a batch
            # being decided keeps it, and skips its answer)
            if self._held.get(site) is batch and entry in batch:
                batch.remove(entry)
            future.cancel()
            raise
        if not future.done() and self._held.get(site) is batch:  # not taken by another
            del self._held[site]
            self._deciding[site] = batch
            try:
                try:
                    results: list[Marked | Exception] = await decide(site, [e for e, _ in batch])
                except Exception as exc:  # the batch's failure is each of its items'
                    results = [exc] * len(batch)
                for (_, waiting), result in zip(batch, results, strict=False):
                    if waiting.done():  # its item was cancelled
                        continue
                    if isinstance(result, Exception):
                        waiting.set_exception(result)
                    else:
                        waiting.set_result(result)
            finally:
                # an item is never left waiting: one the decision did not answer (it was
                # cancelled, or answered too few) gets an error, and its item passes unmarked
                for _, waiting in batch:
                    if not waiting.done():
                        waiting.set_exception(RuntimeError("the cold-start decision ended early"))
                if self._deciding.get(site) is batch:
                    del self._deciding[site]
        return await future

    async def after_held(self, site: str) -> bool:
        """Wait until the items of ``site`` held now (if any) are decided, so that a page
        counted as the wait ends is decided after them, on what they taught (as the replay
        decides it); whether there were any."""
        batch = self._held.get(site) or self._deciding.get(site)
        if not batch:
            return False
        await asyncio.wait([future for _, future in batch])
        return True

    async def wait(self, site: str, decided: asyncio.Future[Any] | None = None) -> None:
        """Wait until ``site`` has enough pages counted, the crawl has nothing in flight, no
        page of the site has come or been counted for the timeout (or :data:`MAX_WAITS`
        timeouts have passed since the site's first wait), or ``decided`` is done (another held
        item decided this one). The site's waiting items share one watch over these."""
        ready = self._ready.get(site)
        if ready is None:
            ready = self._ready[site] = asyncio.Event()
            self.count("templates/bootstrap_sites")
            logger.info(
                "scrapy-templates: new site %s; its first items wait for %d more of its pages",
                site,
                self.pages,
            )
        if ready.is_set() or self.timeout <= 0:
            return
        self.count("templates/bootstrap_waits")
        watch = self._watches.get(site)
        if watch is None or watch.done():
            watch = self._watches[site] = asyncio.ensure_future(self._watch(site, ready))
        if decided is None:
            await asyncio.shield(watch)
        else:
            await asyncio.wait([watch, decided], return_when=asyncio.FIRST_COMPLETED)
            if watch.done():
                watch.result()  # a watch that failed fails its items' waits

    async def _watch(self, site: str, ready: asyncio.Event) -> None:
        """Return when the site's wait ends (see :meth:`wait`)."""
        start = time.monotonic()
        # the cap is the site's: a batch decided at it leaves the next items no new budget
        cap = self._since.setdefault(site, start) + MAX_WAITS * self.timeout
        idle_since: float | None = None
        try:
            while not ready.is_set():
                now = time.monotonic()
                last = max(start, self._last_news.get(site, start))
                if now >= min(last + self.timeout, cap):
                    self.count("templates/bootstrap_timeouts")
                    return
                if self._downloading():
                    idle_since = None
                elif idle_since is None:
                    idle_since = now
                elif now - idle_since >= IDLE_SECONDS:
                    self.count("templates/bootstrap_idle")
                    return
                try:
                    await asyncio.wait_for(ready.wait(), _POLL_SECONDS)
                except asyncio.TimeoutError:
                    continue
        finally:
            if self._watches.get(site) is asyncio.current_task():
                del self._watches[site]

    def _downloading(self) -> bool:
        """Whether the crawl has a download in flight (a crawler without an engine, outside a
        crawl, has none)."""
        try:
            engine = self.crawler.engine
        except RuntimeError:  # Scrapy raises for the engine of a crawler that never started
            return False
        downloader = getattr(engine, "downloader", None)
        return bool(getattr(downloader, "active", None))
