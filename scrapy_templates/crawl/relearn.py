"""Relearning: keeps every process's rules and template models current.

Every ``TEMPLATES_SYNC_INTERVAL`` seconds it reads the store's publication counter and, when
another process published something, installs the newer URL rule sets and template models.
Every ``TEMPLATES_RELEARN_INTERVAL`` seconds (and for a site as soon as this process marked
``TEMPLATES_RELEARN_PAGES`` new pages of it, and once more at spider close) it relearns what
has new evidence: the URL rules (in a worker thread, see
:class:`~scrapy_templates.crawl.urlrules.UrlRules`) and the template model (main region and
template list; counters at 1 pruned every ``TEMPLATES_PRUNE_PAGES`` pages), each under a
per-site lock in the store so that one process learns while the others crawl. A tick never
overlaps the previous one, and nothing it does blocks downloads. The crawler's
:class:`~scrapy_templates.crawl.runtime.TemplatesRuntime` starts and stops it.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time

from scrapy.statscollectors import StatsCollector
from scrapy.utils.asyncio import AsyncioLoopingCall, create_looping_call
from twisted.internet.task import LoopingCall

from scrapy_templates.config import TemplatesConfig
from scrapy_templates.crawl.evidence_view import EvidenceView
from scrapy_templates.crawl.publisher import Publisher
from scrapy_templates.crawl.urlrules import UrlRules
from scrapy_templates.marker import prune_below, thresholds
from scrapy_templates.store.base import StoreError, StoreUnavailable
from scrapy_templates.store.resilient import ResilientStore
from scrapy_templates.templates.model import TemplateModel, learn_model

logger = logging.getLogger(__name__)


class Relearner:
    """See the module docstring. ``new_pages``: pages marked per site since its last
    relearn (the pipeline adds to it)."""

    def __init__(
        self,
        config: TemplatesConfig,
        store: ResilientStore,
        owner: str,
        view: EvidenceView,
        urls: UrlRules,
        stats: StatsCollector | None,
    ) -> None:
        self.config = config
        self.store = store
        self.view = view
        self.evidence = view.evidence
        self.urls = urls
        self.stats = stats
        self.thresholds = thresholds(config)
        self.new_pages: dict[str, int] = {}
        self._epoch = -1
        self._epoch_unreadable = False
        self._last_relearn = time.monotonic()
        self._pruned_at: dict[str, int] = {}
        self.models: Publisher[TemplateModel] = Publisher(
            "model",
            label="template model",
            lock="model",
            load=TemplateModel.loads,
            current=self._model_version,
            refused=functools.partial(self._inc, "templates/relearn/models_refused"),
            lock_ttl=config.lock_ttl,
        )
        self.models.attach(store, owner)
        self._tick: asyncio.Task[None] | None = None
        self._loop: AsyncioLoopingCall | LoopingCall | None = None

    async def start(self) -> None:
        """Install what was published (a process that joins late, or a second crawl, starts
        with it), then tick every ``TEMPLATES_SYNC_INTERVAL`` seconds. A store that fails
        here is logged; the ticks try again."""
        try:
            await self._sync(force=True)
        except Exception:  # the crawl must start whatever the store answers
            logger.exception("scrapy-templates: reading what was published failed")
        self._loop = create_looping_call(self._start_tick)
        self._loop.start(max(0.1, self.config.sync_interval), now=False)

    async def stop(self) -> None:
        """Stop ticking and wait for the tick under way."""
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        if self._tick is not None:
            await asyncio.gather(self._tick, return_exceptions=True)

    async def final(self) -> None:
        """At spider close: relearn every site with new evidence (models pruned)."""
        await self.urls.wait_learning()
        for site in self.urls.stale():
            self.urls.relearn(site)
        await self.urls.wait_learning()
        await self._relearn_models(self._sites_with_new_pages(0), final=True)

    def _start_tick(self) -> None:
        if self._tick is not None and not self._tick.done():
            self._inc("templates/relearn/ticks_skipped")
            return
        self._tick = asyncio.ensure_future(self._run_tick())

    async def _run_tick(self) -> None:
        try:
            await self._sync()
            interval = self.config.relearn_interval
            due_by_time = interval > 0 and time.monotonic() - self._last_relearn >= interval
            if due_by_time:
                self._last_relearn = time.monotonic()
                for site in self.urls.stale():
                    self.urls.relearn(site)
                await self._relearn_models(self._sites_with_new_pages(0))
            elif self.config.relearn_pages > 0:
                await self._relearn_models(self._sites_with_new_pages(self.config.relearn_pages))
        except StoreError as exc:
            logger.error("scrapy-templates: relearn tick failed: %s", exc)
        except Exception:  # the crawl must go on whatever a tick meets
            logger.exception("scrapy-templates: relearn tick failed")

    def _sites_with_new_pages(self, at_least: int) -> list[str]:
        return [site for site, n in self.new_pages.items() if n > 0 and n >= max(1, at_least)]

    # -- picking up what other processes published ---------------------------------------

    async def _sync(self, *, force: bool = False) -> None:
        """Install what other processes published, when the store's epoch moved. An epoch
        that is not a number (not written by a crawl; the next publication resets it) is
        logged once, and every tick reads the publications until then."""
        try:
            epoch = await self.store.epoch()
        except StoreUnavailable:
            raise
        except StoreError as exc:
            self._inc("templates/relearn/epoch_unreadable")
            if not self._epoch_unreadable:
                self._epoch_unreadable = True
                logger.error(
                    "scrapy-templates: %s; reading every publication at each sync until the "
                    "next publication resets it",
                    exc,
                )
            epoch, force = -1, True
        if epoch == self._epoch and not force:
            return
        self._epoch = epoch
        sites = await self.store.sites()
        await self.urls.sync(sites)
        for site in sites:
            model = await self.models.newer(site)
            if model is not None:
                self.evidence.models[site] = model
        self._set("templates/relearn/models_version", self._max_model_version())

    def _model_version(self, site: str) -> int:
        model = self.evidence.models.get(site)
        return model.version if model is not None else 0

    def _max_model_version(self) -> int:
        return max((m.version for m in self.evidence.models.values()), default=0)

    # -- relearning template models ------------------------------------------------------

    async def _relearn_models(self, sites: list[str], *, final: bool = False) -> None:
        """Relearn the sites' models; ``final`` (spider close) prunes whatever the page count,
        so the store a crawl leaves behind holds no counter at 1. Each process settles its
        own layout clusters first (they are not shared)."""
        if self.config.layout:
            for site in sites:
                self.view.settle(site)
            self._set("templates/layout/clusters", self.view.all_clusters())
        for site in sites:
            try:
                took = await self.models.learn(
                    site, functools.partial(self._relearn_model, site, final)
                )
            except Exception:  # the crawl must go on; the model in force stays
                self._inc("templates/relearn/errors")
                logger.exception("scrapy-templates: relearning the model of %s failed", site)
                continue
            if not took:
                self._inc("templates/relearn/skipped")

    async def _relearn_model(
        self, site: str, final: bool, version: int, newer: TemplateModel | None
    ) -> TemplateModel:
        """Learn model ``version`` of ``site`` from the store's counts (pruned first when
        due; ``newer``: a publication to adopt first); the model to publish."""
        t0 = time.perf_counter()
        self.new_pages[site] = 0
        pages, counts = await self.store.counts(site)
        pruned = 0
        grown = pages - self._pruned_at.get(site, 0)
        if self.config.prune_pages > 0 and (
            grown >= self.config.prune_pages or (final and grown > 0)
        ):
            below = prune_below(self.config, pages)
            pruned = await self.store.prune(site, below)
            self.view.pruned(site, below)
            self._pruned_at[site] = pages
            self._inc("templates/relearn/counters_pruned", pruned)
            counts = {fp: n for fp, n in counts.items() if n >= below}
        if newer is not None:
            self.evidence.models[site] = newer
        own = self.evidence.models.get(site)
        main_path, region_pages = self.view.region(site)
        if own is not None and own.region_pages > region_pages:
            main_path, region_pages = own.main_path, own.region_pages
        model = learn_model(
            site,
            version,
            pages,
            counts,
            self.thresholds,
            main_path=main_path,
            region_pages=region_pages,
            layout_clusters=self.view.clusters(site),
        )
        self.evidence.models[site] = model
        self._inc("templates/relearn_count")
        self._set("templates/relearn/models_version", self._max_model_version())
        ruleset = next((r for r in self.urls.guards.rulesets() if r.site == site), None)
        logger.info(
            "scrapy-templates: relearned %s: %d pages, %d template fingerprints, %d layout "
            "clusters, main region %s, URL rules v%d (%d rules), %d counters pruned, in %.2fs",
            site,
            pages,
            len(model.templates),
            model.layout_clusters,
            model.main_path or "the whole page",
            ruleset.version if ruleset else 0,
            ruleset.rule_count if ruleset else 0,
            pruned,
            time.perf_counter() - t0,
        )
        return model

    def _inc(self, key: str, count: int = 1) -> None:
        if self.stats is not None:
            self.stats.inc_value(key, count)

    def _set(self, key: str, value: int) -> None:
        if self.stats is not None:
            self.stats.set_value(key, value)
