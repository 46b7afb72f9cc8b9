"""What the components of one crawler share: the store and the evidence learned of the sites
(main regions, layout clusters, anchor texts, and the template models published by whichever
process relearned them last).

The pipeline, the relearning extension and the URL-rule middlewares each ask
:meth:`CrawlState.of` for it; the first to open it connects the store, the last to close it
disconnects.
"""

from __future__ import annotations

import functools
import logging
import os
import socket
import uuid
import weakref
from typing import ClassVar

from scrapy.crawler import Crawler
from scrapy.settings import BaseSettings

from scrapy_templates.crawl.stores import build_store
from scrapy_templates.store.resilient import ResilientStore
from scrapy_templates.templates.decide import Thresholds
from scrapy_templates.templates.evidence import Evidence
from scrapy_templates.templates.layout import SiteLayouts
from scrapy_templates.templates.variability import LayoutBlocks

logger = logging.getLogger(__name__)


def thresholds(settings: BaseSettings) -> Thresholds:
    """The template decision's thresholds from ``TEMPLATES_*`` settings."""
    return Thresholds(
        settings.getint("TEMPLATES_MIN_PAGES"),
        settings.getfloat("TEMPLATES_MIN_SHARE"),
        settings.getfloat("TEMPLATES_PATTERN_SHARE"),
        settings.getfloat("TEMPLATES_REGION_MIN_SHARE"),
    )


class CrawlState:
    """Per-crawler shared state (see the module docstring)."""

    _instances: ClassVar[weakref.WeakKeyDictionary[Crawler, CrawlState]] = (
        weakref.WeakKeyDictionary()
    )

    @classmethod
    def of(cls, crawler: Crawler) -> CrawlState:
        found = cls._instances.get(crawler)
        if found is None:
            found = cls._instances[crawler] = cls(crawler)
        return found

    def __init__(self, crawler: Crawler) -> None:
        s = crawler.settings
        self.stats = crawler.stats
        self.store = ResilientStore(
            build_store(s),
            on_change=self._store_changed,
            retry=s.getfloat("TEMPLATES_STORE_RETRY"),
            journal_max=s.getint("TEMPLATES_STORE_JOURNAL"),
            max_links=s.getint("TEMPLATES_MAX_LINKS"),
            max_owners=s.getint("TEMPLATES_MAX_OWNERS"),
        )
        self.layout = s.getbool("TEMPLATES_LAYOUT")
        self.evidence = Evidence(
            region_share=s.getfloat("TEMPLATES_MAIN_REGION_SHARE"),
            layouts=functools.partial(
                SiteLayouts,
                s.getfloat("TEMPLATES_LAYOUT_SIMILARITY"),
                s.getint("TEMPLATES_LAYOUT_MAX_CLUSTERS"),
            ),
            blocks=functools.partial(
                LayoutBlocks,
                samples=s.getint("TEMPLATES_BLOCK_SAMPLES"),
                min_pages=s.getint("TEMPLATES_BLOCK_MIN_PAGES"),
                min_share=s.getfloat("TEMPLATES_BLOCK_MIN_SHARE"),
                max_diff=s.getfloat("TEMPLATES_BLOCK_DIFF_MAX"),
                comparison=s.get("TEMPLATES_BLOCK_COMPARE"),
            ),
            max_sites=s.getint("TEMPLATES_LAYOUT_MAX_SITES"),
        )
        self.new_pages: dict[str, int] = {}
        # who holds a lock: unique per process and per crawler within it
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._users = 0

    async def open(self) -> None:
        if self._users == 0:
            await self.store.open()
        self._users += 1

    async def close(self) -> None:
        self._users -= 1
        if self._users == 0:
            await self.store.close()
            if self.store.journal:
                logger.error(
                    "scrapy-templates: the shared store was still down at close; %d writes of "
                    "this crawl were not merged into it",
                    len(self.store.journal),
                )
                self._set("templates/store/writes_unmerged", len(self.store.journal))

    def _set(self, key: str, value: int) -> None:
        if self.stats is not None:
            self.stats.set_value(key, value)

    def _store_changed(self, down: bool, detail: str) -> None:
        if self.stats is not None:
            self.stats.set_value("templates/store/down", int(down))
            if down:
                self.stats.inc_value("templates/store/outages")
            else:
                self.stats.set_value("templates/store/writes_replayed", self.store.replayed)
        if down:
            logger.error(
                "scrapy-templates: shared store unavailable (%s); counting in process memory "
                "and retrying every %gs",
                detail,
                self.store.retry,
            )
        else:
            logger.warning("scrapy-templates: shared store back (%s)", detail)
