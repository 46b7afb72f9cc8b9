"""The cold-start sample of a new site.

The first item of a site that the store knows fewer than ``TEMPLATES_BOOTSTRAP_PAGES`` pages of
triggers a one-off sample of the site's linked pages, fetched through Scrapy's downloader (so
throttling, robots.txt and the downloader middlewares apply), and the items of that site wait
for it — at most ``TEMPLATES_BOOTSTRAP_TIMEOUT`` seconds. Items from the first seconds of a
crawl are therefore decided on the same kind of evidence as later ones.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from urllib.parse import urljoin, urlsplit

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.http import HtmlResponse, Response
from scrapy.linkextractors import IGNORED_EXTENSIONS

from scrapy_templates.page import Page
from scrapy_templates.sites import SiteFunction

logger = logging.getLogger(__name__)

BOOTSTRAP_META = "templates_bootstrap"
_IGNORED = tuple(f".{ext}" for ext in IGNORED_EXTENSIONS)


class Bootstrap:
    """Samples new sites (see the module docstring). ``take``: count a sampled response in the
    store and return its page (``None``: not a page); ``learn``: decide a sampled page so that
    the site's evidence starts from it; ``count``: add to a stat."""

    def __init__(
        self,
        crawler: Crawler,
        *,
        pages: int,
        timeout: float,
        site_of: SiteFunction,
        take: Callable[[str, HtmlResponse], Awaitable[Page | None]],
        learn: Callable[[str, Page], Awaitable[None]],
        count: Callable[[str], None],
    ) -> None:
        self.crawler = crawler
        self.pages = pages
        self.timeout = timeout
        self.site_of = site_of
        self.take = take
        self.learn = learn
        self.count = count
        self._sites: dict[str, asyncio.Future[None]] = {}

    def wanted(self, known_pages: int) -> bool:
        """Whether a site the store knows ``known_pages`` pages of (this one included) is
        sampled first."""
        return self.pages > 0 and known_pages < self.pages + 1

    async def wait(self, site: str, page: Page) -> None:
        """Sample ``site`` from the links of ``page`` unless that was done; wait for it (at
        most the timeout)."""
        task = self._sites.get(site)
        if task is None:
            task = self._sites[site] = asyncio.ensure_future(self._sample_site(site, page))
        if task.done():
            return
        try:
            await asyncio.wait_for(asyncio.shield(task), self.timeout)
        except asyncio.TimeoutError:
            self.count("templates/bootstrap_timeouts")

    def cancel(self) -> None:
        for task in self._sites.values():
            task.cancel()

    def urls(self, page: Page) -> list[str]:
        """Up to ``pages`` distinct same-site links of ``page``, spread over the page so that
        one navigation list does not provide them all."""
        site = self.site_of(page.url)
        seen = {page.url.split("#", 1)[0]}
        candidates = []
        for href in page.hrefs():
            url = urljoin(page.url, href).split("#", 1)[0]
            if url in seen or urlsplit(url).scheme not in ("http", "https"):
                continue
            seen.add(url)
            if self.site_of(url) == site and not url.lower().endswith(_IGNORED):
                candidates.append(url)
        if len(candidates) <= self.pages:
            return candidates
        step = len(candidates) / self.pages
        return [candidates[int(i * step)] for i in range(self.pages)]

    async def _sample_site(self, site: str, page: Page) -> None:
        urls = self.urls(page)
        self.count("templates/bootstrap_sites")
        logger.info("scrapy-templates: new site %s, sampling %d linked pages", site, len(urls))
        samples = await asyncio.gather(*(self._sample_one(site, url) for url in urls))
        for sample in samples:
            if sample is not None:
                await self.learn(site, sample)

    async def _sample_one(self, site: str, url: str) -> Page | None:
        engine = self.crawler.engine
        if engine is None:
            return None
        # URL rules leave the sample alone: it must fetch what it asked for
        request = Request(
            url,
            meta={BOOTSTRAP_META: True, "dont_normalize": True},
            dont_filter=True,
            priority=100,
        )
        try:
            response: Response = await engine.download_async(request)
        except Exception as exc:
            self.count("templates/bootstrap_errors")
            logger.debug("scrapy-templates: bootstrap fetch of %s failed: %s", url, exc)
            return None
        if not isinstance(response, HtmlResponse) or response.status != 200:
            return None
        sample = await self.take(site, response)
        if sample is not None:
            self.count("templates/bootstrap_pages")
        return sample
