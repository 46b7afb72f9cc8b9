"""The cold start of a new site: its first items wait for the spider's next pages.

A site the store knows fewer than ``TEMPLATES_BOOTSTRAP_PAGES`` pages of has no evidence yet:
deciding its first item on one page would flag nothing. So its first items are counted and then
wait until the store has counted that many more of the site's pages — the spider's own pages,
as its crawl brings them — and are decided then, on the same kind of evidence as later ones.

Nothing is downloaded for this: the crawl's limits (``DEPTH_LIMIT``,
``CLOSESPIDER_PAGECOUNT``), its scheduler, cache and politeness see only the spider's requests.
A wait ends when the pages are counted, when the crawl has had nothing in flight for a moment
(no more pages are coming: a small site, a depth or page limit, or a scraper backed up by the
waiting items themselves), or after ``TEMPLATES_BOOTSTRAP_TIMEOUT`` seconds.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

# How long the crawl must have no download in flight before waiting items stop waiting, and how
# often that is looked at.
IDLE_SECONDS = 0.5
_POLL_SECONDS = 0.05


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

    def wanted(self, known_pages: int) -> bool:
        """Whether an item of a site the store knows ``known_pages`` pages of (its own
        included) waits for more."""
        return self.pages > 0 and known_pages < self.pages + 1

    def counted(self, site: str, known_pages: int) -> None:
        """The store now knows ``known_pages`` pages of ``site``: release its waiting items
        once that is enough."""
        ready = self._ready.get(site)
        if ready is not None and not self.wanted(known_pages):
            ready.set()

    async def wait(self, site: str) -> None:
        """Wait until ``site`` has enough pages counted, the crawl has nothing in flight, or
        the timeout is over."""
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
        deadline = time.monotonic() + self.timeout
        idle_since: float | None = None
        while not ready.is_set():
            now = time.monotonic()
            if now >= deadline:
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

    def _downloading(self) -> bool:
        """Whether the crawl has a download in flight (a crawler without an engine, outside a
        crawl, has none)."""
        engine = self.crawler.engine
        downloader = getattr(engine, "downloader", None)
        return bool(getattr(downloader, "active", None))
