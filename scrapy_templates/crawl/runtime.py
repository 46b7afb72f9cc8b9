"""The one owner of a crawler's scrapy-templates parts.

The add-on enables :class:`TemplatesRuntime` as an extension. Scrapy builds extensions before
the engine, so it exists before the pipeline and the middlewares, which find it with
:meth:`TemplatesRuntime.of`. It reads the settings once (:class:`~scrapy_templates.config.
TemplatesConfig`) and holds what they share: the store, the evidence learned of the sites
(main regions, layout clusters, anchor texts, template models), the URL rules and the
relearning. It opens the store when the first of them needs it (the pipeline opens before the
``spider_opened`` signal) and closes it at ``spider_closed``, after the pipeline has closed;
so the URL rules work whether the template pipeline is enabled or not.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import uuid

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import is_asyncio_available
from scrapy.utils.url import strip_url

from scrapy_templates.config import TemplatesConfig
from scrapy_templates.crawl.evidence_view import EvidenceView
from scrapy_templates.crawl.relearn import Relearner
from scrapy_templates.crawl.stores import build_store
from scrapy_templates.crawl.urlrules import UrlRules
from scrapy_templates.marker import build_evidence
from scrapy_templates.store.base import TemplateStore
from scrapy_templates.store.memory import MemoryStore
from scrapy_templates.store.resilient import ResilientStore

logger = logging.getLogger(__name__)

_ADDON_HINT = "enable scrapy-templates with ADDONS = {'scrapy_templates.Addon': 500}"


class TemplatesRuntime:
    """Per-crawler owner (see the module docstring)."""

    def __init__(self, crawler: Crawler, config: TemplatesConfig) -> None:
        self.crawler = crawler
        self.config = config
        self.stats = crawler.stats
        # who holds a lock: unique per process and per crawler within it
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.store = ResilientStore(
            build_store(config, crawler.settings),
            on_change=self._store_changed,
            retry=config.store_retry,
            journal_max=config.store_journal,
            max_links=config.max_links,
            max_owners=config.max_owners,
        )
        self.evidence = build_evidence(config)
        self.view = EvidenceView(
            self.evidence, merges=not isinstance(self.store.primary, MemoryStore)
        )
        self.urls = UrlRules(crawler, config)
        self.relearner = Relearner(config, self.store, self.owner, self.view, self.urls, self.stats)
        self._opening: asyncio.Future[None] | None = None
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> TemplatesRuntime:
        if not crawler.settings.getbool("TEMPLATES_ENABLED"):
            raise NotConfigured("TEMPLATES_ENABLED is false")
        return cls(crawler, TemplatesConfig.from_settings(crawler.settings))

    @classmethod
    def of(cls, crawler: Crawler, component: str) -> TemplatesRuntime:
        """The crawler's runtime, for ``component`` (a name for the error): raises
        ``NotConfigured`` when ``TEMPLATES_ENABLED`` is false, and an error saying how to
        enable scrapy-templates when the runtime is missing."""
        found = crawler.get_extension(cls)
        if found is not None:
            return found
        if not crawler.settings.getbool("TEMPLATES_ENABLED"):
            raise NotConfigured("TEMPLATES_ENABLED is false")
        raise RuntimeError(
            f"scrapy-templates: {component} needs the TemplatesRuntime extension; {_ADDON_HINT}"
        )

    @property
    def new_pages(self) -> dict[str, int]:
        """Pages marked per site since its model was last relearned."""
        return self.relearner.new_pages

    async def open(self) -> None:
        """Open the store and start relearning, once, whoever asks first."""
        if self._opening is None:
            self._opening = asyncio.ensure_future(self._open())
        await self._opening

    async def _open(self) -> None:
        if not is_asyncio_available():
            raise RuntimeError(
                "scrapy-templates needs the asyncio reactor: set TWISTED_REACTOR to "
                "'twisted.internet.asyncioreactor.AsyncioSelectorReactor'"
            )
        await self.store.open()
        # samples are stored, and rules learned and published, once the store is open
        self.urls.attach(self.store, self.owner)
        logger.info(
            "scrapy-templates: counting pages %s; URL rules %s",
            _where(self.store.primary),
            "on" if self.config.url_rules else "off",
        )
        await self.relearner.start()

    async def spider_opened(self) -> None:
        await self.open()

    async def spider_closed(self) -> None:
        """Store the samples waiting, relearn what has new evidence, close the store."""
        if self._opening is None:
            return
        await self.relearner.stop()
        await self.urls.flush(force=True)
        await self.relearner.final()
        await self.urls.close()
        await self.store.close()
        self._report_lost()
        refused = self.urls.guards.results_refused()
        if refused:
            self._set("templates/urls/results_refused", refused)
        if self.store.journal:
            logger.error(
                "scrapy-templates: the shared store was still down at close; %d writes of "
                "this crawl were not merged into it",
                len(self.store.journal),
            )
            self._set("templates/store/writes_unmerged", len(self.store.journal))

    def _report_lost(self) -> None:
        """Writes of an outage past ``TEMPLATES_STORE_JOURNAL`` (the oldest, not replayed)."""
        if self.store.journal_lost:
            self._set("templates/store/writes_lost", self.store.journal_lost)

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
                self._report_lost()
        if down:
            logger.error(
                "scrapy-templates: shared store unavailable (%s); counting in process memory "
                "and retrying every %gs",
                detail,
                self.store.retry,
            )
        else:
            logger.warning("scrapy-templates: shared store back (%s)", detail)


def _where(store: TemplateStore) -> str:
    """Where ``store`` counts, in the words of the start-up log line."""
    if isinstance(store, MemoryStore):
        kept = f", kept in {store.path}" if store.path else ""
        return (
            f"in this process's memory{kept} (set TEMPLATES_REDIS_URL to share counts between "
            "processes)"
        )
    # imported here: a crawl with the embedded store does without redis-py (a twentieth of
    # a second at start-up)
    from scrapy_templates.store.redis import RedisStore

    if isinstance(store, RedisStore):
        url = store.url
        if "@" in url:  # no password in the log
            url = strip_url(url, origin_only=False, strip_default_port=False)
        return (
            f"in Redis at {url} (prefix {store.prefix!r}), shared with every process that uses it"
        )
    return f"in {type(store).__name__}"
