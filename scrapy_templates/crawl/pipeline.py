"""Item pipeline that marks template pagelets on every item.

Each item is answered as soon as its page is counted: one parse, one store round trip, one
decision (:func:`~scrapy_templates.templates.marking.decide_page`). The only wait is the cold
start of a site (:mod:`~scrapy_templates.crawl.bootstrap`).

With a parse worker and the local algorithm (the defaults on more than one CPU), the worker
does all of a page's marking in one exchange — parse, count in its own copy of its sites'
counts, decide on the evidence it holds (:mod:`scrapy_templates.worker_marking`) — and the
crawl's thread counts the page in the shared store, whose answer goes back with the site's
next page (:class:`~scrapy_templates.crawl.evidence_view.EvidenceView`). A site's first pages
are held in the worker until the cold start releases them. Pages the worker cannot mark (none
running, or it was lost with them) are marked here; a page the worker spends more than
``TEMPLATES_PARSE_TIMEOUT`` on passes unmarked (``parse-timeout``).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Sequence
from typing import Any

import lxml.etree
from itemadapter import ItemAdapter
from scrapy.crawler import Crawler

from scrapy_templates.crawl.bootstrap import Bootstrap
from scrapy_templates.crawl.evidence_view import EvidenceView
from scrapy_templates.crawl.runtime import TemplatesRuntime
from scrapy_templates.marker import Marker, mark_settings, page_fingerprints
from scrapy_templates.page import Page, PageError, parse_elements, parse_page
from scrapy_templates.sites import page_id
from scrapy_templates.store.base import StoreError
from scrapy_templates.templates.marking import PageMarks
from scrapy_templates.urlnorm.samples import content_hash as text_hash
from scrapy_templates.worker_marking import Marked
from scrapy_templates.worker_process import ParseOptions
from scrapy_templates.workers import WorkerPool, WorkerStarting, WorkerUnavailable, worker_count

logger = logging.getLogger(__name__)

# The longest an item waits for a parse worker to start (a fresh interpreter loads the parser
# in a few tenths of a second) before it is parsed in the crawl's thread.
_START_WAIT = 10.0

# Items whose counters are gathered before they are added to ``crawler.stats`` in one go, and
# the most seconds they wait (the progress line and the stats stay current on slow crawls).
_TALLY_ITEMS = 32
_TALLY_SECONDS = 1.0


class TemplatePipeline:
    """Marks template pagelets (``000_…``) on items; see the module docstring for the flow."""

    def __init__(self, crawler: Crawler) -> None:
        runtime = TemplatesRuntime.of(crawler, "TemplatePipeline")
        config = runtime.config
        self.runtime = runtime
        self.stats = crawler.stats
        self.algorithm = config.algorithm
        self.html_field = config.html_field
        self.url_field = config.url_field
        self.keep_html = config.keep_html
        self.pagelets_field = config.pagelets_field
        self.content_field = config.content_field
        self.info_field = config.info_field
        self.k = config.link_threshold
        self.site_of = config.site_function()
        self.max_bytes = config.max_html_bytes
        self.max_tags = config.max_tags
        workers = worker_count(config.parse_workers)
        # the worker decides too, unless the decision needs the store's link components
        self.marks_there = workers > 0 and config.algorithm == "local"
        self.workers = (
            WorkerPool(
                workers,
                deadline=config.parse_timeout,
                work="mark" if self.marks_there else "parse",
            )
            if workers > 0
            else None
        )
        self.config = config
        self.marking = mark_settings(config)
        self.store = runtime.store
        self.evidence = runtime.evidence
        self.view: EvidenceView = runtime.view
        self.marker = Marker(self.store, self.evidence, self.marking, config.layout)
        self.urls = runtime.urls
        self.bootstrap = Bootstrap(
            crawler,
            pages=config.bootstrap_pages,
            timeout=config.bootstrap_timeout,
            count=self._inc,
        )
        self._main_paths: dict[str, str | None] = {}
        self._releasing: dict[str, asyncio.Future[None]] = {}
        self._start_waited_out = False  # the workers did not start in _START_WAIT
        self._logged_reasons: set[str] = set()
        self._tally: dict[str, int] = {}
        self._tallied = 0
        self._tally_time = time.monotonic()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> TemplatePipeline:
        return cls(crawler)

    async def open_spider(self, spider: Any = None) -> None:
        await self.runtime.open()
        if self.workers is not None:
            await self.workers.start()
        logger.info(
            "scrapy-templates: marking template pagelets (%s algorithm, k=%d)",
            self.algorithm,
            self.k,
        )

    async def close_spider(self, spider: Any = None) -> None:
        self._publish_tally()
        if self.workers is not None:
            await self.workers.close()
            if self.workers.lost:
                self._inc("templates/parse_workers/lost", self.workers.lost)
            if self.workers.timeouts:
                self._inc("templates/parse_workers/timeouts", self.workers.timeouts)

    async def process_item(self, item: Any, spider: Any = None) -> Any:
        adapter = ItemAdapter(item)
        try:
            await self._mark(adapter)
        except Exception as exc:  # one bad page must never lose an item or stop the crawl
            logger.exception("scrapy-templates: could not mark %r", adapter.get(self.url_field))
            self._skip(adapter, "internal-error", f"{type(exc).__name__}: {exc}")
        return item

    def _skip(self, adapter: ItemAdapter, reason: str, detail: str) -> None:
        self._inc(f"templates/items_skipped/{reason}")
        if reason not in self._logged_reasons:
            self._logged_reasons.add(reason)
            logger.warning(
                "scrapy-templates: item not marked (%s: %s); such items pass on with "
                "%s.reason=%r (logged once per reason)",
                reason,
                detail,
                self.info_field,
                reason,
            )
        self._set(adapter, self.info_field, {"reason": reason, "detail": detail})

    def _set(self, adapter: ItemAdapter, key: str, value: Any) -> None:
        try:
            adapter[key] = value
        except KeyError:
            self._inc("templates/fields_undeclared")
            if "undeclared" not in self._logged_reasons:
                self._logged_reasons.add("undeclared")
                logger.warning(
                    "scrapy-templates: the item class %s does not declare field %r; add the "
                    "TEMPLATES_*_FIELD names to it to receive the marks",
                    type(adapter.item).__name__,
                    key,
                )

    def _inc(self, key: str, count: int = 1) -> None:
        if self.stats is not None:
            self.stats.inc_value(key, count)

    def _count(self, key: str, count: int = 1) -> None:
        """Add to a per-item counter; these reach ``crawler.stats`` every
        :data:`_TALLY_ITEMS` items or :data:`_TALLY_SECONDS`, and when the spider closes (a
        stats call costs as much as a small part of the marking)."""
        tally = self._tally
        tally[key] = tally.get(key, 0) + count

    def _publish_tally(self) -> None:
        tally, self._tally = self._tally, {}
        self._tallied = 0
        for key, count in tally.items():
            self._inc(key, count)
        if self.evidence.evicted and self.stats is not None:
            self.stats.set_value("templates/layout/sites_evicted", self.evidence.evicted)

    async def _mark(self, adapter: ItemAdapter) -> None:
        """Read the fields, parse (here or in a worker), count in the store, decide, learn
        from the decided page, write the marks."""
        url = adapter.get(self.url_field)
        html = adapter.get(self.html_field)
        if not isinstance(url, str) or not url:
            self._skip(adapter, "missing-url", f"no str in field {self.url_field!r}")
            return
        if html is None:
            self._skip(adapter, "missing-html", f"no field {self.html_field!r}")
            return
        if not isinstance(html, (str, bytes)):
            self._skip(adapter, "bad-html", f"field {self.html_field!r} is {type(html).__name__}")
            return
        site = self.site_of(url)
        pid = page_id(url)
        self.bootstrap.arriving(site)
        here = False
        if self.marks_there:
            try:
                await self._mark_there(adapter, html, url, site, pid)
                return
            except PageError as exc:
                self._skip(adapter, exc.reason, str(exc))
                return
            except StoreError as exc:  # a bad value under our keys (an outage is absorbed)
                self._skip(adapter, "store-error", str(exc))
                return
            except WorkerStarting:
                self._count("templates/parse_workers/before_start")
                here = True
            except WorkerUnavailable as exc:
                self._inc("templates/parse_workers/fallbacks")
                logger.debug("scrapy-templates: marking %s here: %s", url, exc)
                here = True
        try:
            page = await self._parse(html, url, site, pid, here=here)
        except PageError as exc:
            self._skip(adapter, exc.reason, str(exc))
            return
        fingerprints = page_fingerprints(page)
        held: PageMarks | None = None
        try:
            obs = await self.marker.count(site, page, fingerprints)
            new = obs.new
            self.bootstrap.counted(site, obs.pages)
            if self.bootstrap.wanted(obs.pages):
                held = await self.bootstrap.hold(
                    site, (page, fingerprints, obs.new), self.marker.decide_held
                )
            elif await self.bootstrap.after_held(site):
                obs = await self.marker.recount(site, page, fingerprints)
        except StoreError as exc:  # a bad value under our keys, not an outage (that is absorbed)
            self._skip(adapter, "store-error", str(exc))
            return
        if self.marks_there:  # the worker's copy did not count it
            self.view.counted_here(site)
        self._count_new(site)
        if held is None:
            if page.refetch is not None:
                (page,) = await self.marker.answering(site, [page])
            marks = self.marker.decide(site, page, fingerprints, obs, new=new)
        else:
            marks = held
        self._note_main_path(site, marks.main_path)
        content_hash = self._write(adapter, marks)
        await self._add_page(url, page.simhash, content_hash, marks)

    def _count_new(self, site: str) -> None:
        new_pages = self.runtime.new_pages
        new_pages[site] = new_pages.get(site, 0) + 1

    async def _add_page(
        self, url: str, simhash: int, content_hash: str | None, marks: PageMarks
    ) -> None:
        """The page's content, for the URL rules' duplicate evidence."""
        parts = [t for t, flag in zip(marks.texts, marks.flags, strict=True) if t and not flag]
        self.urls.add_page(url, simhash, content_hash, parts)
        await self.urls.flush()

    async def _mark_there(
        self, adapter: ItemAdapter, html: str | bytes, url: str, site: str, pid: str
    ) -> None:
        """Mark the item's page in the worker that holds its site, count it in the store, and
        wait for the cold start when the worker holds it; raises
        :class:`~scrapy_templates.workers.WorkerUnavailable` when no worker marked it."""
        marked, held = await self._send_mark(html, url, site)
        try:
            marks = await self._count_there(site, pid, marked, held)
        finally:
            if held is not None:  # when its item failed, no one asks for its outcome
                held.add_done_callback(lambda f: f.cancelled() or f.exception())
        self._count("templates/parse_workers/pages")
        self._count_new(site)
        self._note_main_path(site, marks.main_path)
        content_hash = self._write(adapter, marks)
        await self._add_page(url, marked.simhash, content_hash, marks)

    async def _count_there(
        self, site: str, pid: str, marked: Marked, held: asyncio.Future[PageMarks] | None
    ) -> PageMarks:
        """Count a page the worker marked in the store; its marks (after the cold start when
        the worker holds it)."""
        obs = await self.store.observe(site, pid, marked.fingerprints, content_key=marked.text_hash)
        view = self.view
        view.answered(site, marked.fingerprints, obs)
        self.bootstrap.counted(site, obs.pages)
        if not marked.known or view.behind(site):
            # a new site, or one the store knows (a new worker, a site it evicted, another
            # process's or an earlier run's), or pages of it were marked here since: the
            # worker's copy takes the store's counters
            pages, counts = obs.pages, None
            if pages > 1:
                pages, counts = await self.store.counts(site)
            view.unknown(site, pages, counts)
            if not marked.known and view.released(site):
                self._inc("templates/parse_workers/sites_restarted")
        if held is None:
            assert marked.marks is not None
            return marked.marks
        return await self._held_marks(site, obs.pages, held)

    async def _send_mark(
        self, html: str | bytes, url: str, site: str
    ) -> tuple[Marked, asyncio.Future[PageMarks] | None]:
        """The worker's answer for the page (waiting for a worker that starts), its held
        marks' future when it holds it."""
        assert self.workers is not None
        hold = self.bootstrap.pages > 0 and not self.view.released(site)
        for attempt in range(2):
            news = self.view.news(site)
            try:
                marked, held = await self.workers.mark(
                    html, url, site, self.config, hold=hold, news=news
                )
            except WorkerStarting:
                self.view.unsent(site, news)
                if attempt or self._start_waited_out:
                    raise
                await self._until_started()
                continue
            except WorkerUnavailable:
                self.view.unsent(site, news)
                raise
            self.view.marked(site, marked.summary)
            return marked, held
        raise WorkerStarting("the parse workers are starting")

    async def _until_started(self) -> None:
        """Wait for the workers to start (at most :data:`_START_WAIT` for the crawl)."""
        assert self.workers is not None
        try:
            await asyncio.wait_for(self.workers.until_ready(), _START_WAIT)
        except asyncio.TimeoutError:
            if not self._start_waited_out:
                self._start_waited_out = True
                logger.warning(
                    "scrapy-templates: the parse worker did not start in %gs; pages are "
                    "marked in the crawl's thread until it does",
                    _START_WAIT,
                )
            raise WorkerStarting("the parse workers did not start") from None

    async def _held_marks(
        self, site: str, pages: int, held: asyncio.Future[PageMarks]
    ) -> PageMarks:
        """The marks of a page the worker holds: after the site's cold start (the store
        knows ``pages`` of its pages), once the worker decided it with the other held ones."""
        if self.bootstrap.wanted(pages):
            await self.bootstrap.wait(site, held)
        for _ in range(2):
            if held.done():
                return await held
            await self._release(site)
        if not held.done():  # no release reached it: the page is marked here
            raise WorkerUnavailable("the worker's release did not answer the page")
        return await held

    async def _release(self, site: str) -> None:
        """Have the worker decide the site's held pages; one release at a time per site, the
        site's later pages sent to be decided at once."""
        self.view.release(site)
        running = self._releasing.get(site)
        if running is None or running.done():
            running = self._releasing[site] = asyncio.ensure_future(self._send_release(site))
            running.add_done_callback(functools.partial(self._released, site))
        await asyncio.shield(running)

    def _released(self, site: str, task: asyncio.Future[None]) -> None:
        """Forget a site's finished release (its outcome read, whoever waited for it)."""
        if self._releasing.get(site) is task:
            del self._releasing[site]
        if not task.cancelled():
            task.exception()

    async def _send_release(self, site: str) -> None:
        assert self.workers is not None
        news = self.view.news(site)
        try:
            summary = await self.workers.release(
                site, self.config, news, review=self.bootstrap.pages > 0
            )
        except WorkerUnavailable:
            self.view.unsent(site, news)
            raise
        self.view.marked(site, summary)

    async def _parse(
        self, html: str | bytes, url: str, site: str, pid: str, *, here: bool = False
    ) -> Page:
        """The page, parsed by a worker when one has started (with the answers the marking
        will ask of its elements: the text below the site's main path, the title blocks when
        the page has anchor text), else (or ``here``) here. ``pid``: the page id."""
        if self.workers is not None and not here:
            main_path = self.evidence.main_path(site) if self.marking.main_share > 0 else None
            blocks = bool(self.evidence.anchors(site).get(pid))
            page: Page | None = None
            try:
                page = await self._parse_there(html, url, main_path, blocks)
            except WorkerStarting:
                page = await self._after_start(html, url, main_path, blocks)
                if page is None:
                    self._count("templates/parse_workers/before_start")
            except WorkerUnavailable as exc:
                self._inc("templates/parse_workers/fallbacks")
                logger.debug("scrapy-templates: parsing %s here: %s", url, exc)
            if page is not None:
                self._count("templates/parse_workers/pages")
                return page
        return parse_page(html, url, k=self.k, max_bytes=self.max_bytes, max_tags=self.max_tags)

    async def _after_start(
        self, html: str | bytes, url: str, main_path: str | None, blocks: bool
    ) -> Page | None:
        """The page parsed by a worker once it has started (``None``: it did not start in
        :data:`_START_WAIT`, nor ever will for this crawl, or failed): a new site's first
        pages wait for its next ones anyway, so waiting for the worker costs them nothing,
        and parsing them here costs the crawl's thread at its busiest."""
        if self._start_waited_out:
            return None
        try:
            await self._until_started()
            return await self._parse_there(html, url, main_path, blocks)
        except WorkerUnavailable:  # WorkerStarting too: it did not start in time
            return None

    async def _parse_there(
        self, html: str | bytes, url: str, main_path: str | None, blocks: bool
    ) -> Page:
        """The page as a worker parsed and detached it for ``main_path`` and ``blocks``; it
        parses here for another question, or has the worker detach it anew for those of a
        cold start's review (:meth:`_refetch`)."""
        assert self.workers is not None
        options = ParseOptions(self.k, self.max_bytes, self.max_tags, main_path, blocks)
        page = await self.workers.parse(html, url, options)
        page.reload = functools.partial(self._elements_here, html)
        page.refetch = functools.partial(self._refetch, html, url)
        return page

    async def _refetch(
        self, html: str | bytes, url: str, main_path: str | None, blocks: bool
    ) -> Page | None:
        """The page parsed again by a worker, detached for other questions (``None`` when no
        worker can)."""
        try:
            page = await self._parse_there(html, url, main_path, blocks)
        except (WorkerUnavailable, PageError):
            return None
        self._count("templates/parse_workers/refetched")
        return page

    def _elements_here(self, html: str | bytes) -> list[lxml.etree._Element]:
        """The pagelet elements of a page a worker parsed (for a question it could not
        answer): the parse and the walk, without fingerprints."""
        self._inc("templates/parse_workers/reparses")
        return parse_elements(html, k=self.k, max_bytes=self.max_bytes, max_tags=self.max_tags)

    def _note_main_path(self, site: str, main_path: str | None) -> None:
        if main_path != self._main_paths.get(site):
            logger.info(
                "scrapy-templates: main region of %s is now %s (after %d pages)",
                site,
                main_path or "the whole page",
                self.view.region(site)[1],
            )
            self._main_paths[site] = main_path

    def _write(self, adapter: ItemAdapter, marks: PageMarks) -> str | None:
        """Set the marks on the item; returns the hash of its content text."""
        for key, count in marks.tallies().items():
            self._count(f"templates/{key}", count)
        self._tallied += 1
        now = time.monotonic()
        if self._tallied >= _TALLY_ITEMS or now - self._tally_time >= _TALLY_SECONDS:
            self._tally_time = now
            self._publish_tally()
        info = marks.info
        if self.store.down:
            info["store"] = "local-fallback"
        content_hash = text_hash(marks.content)
        if content_hash:
            info["content_hash"] = content_hash
        self._set(adapter, self.pagelets_field, marks.marks)
        self._set(adapter, self.content_field, marks.content)
        self._set(adapter, self.info_field, info)
        if not self.keep_html:
            del adapter[self.html_field]
        return content_hash


__all__: Sequence[str] = ["TemplatePipeline"]
