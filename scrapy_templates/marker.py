"""Marking a site's pages one after another, over a store, without Scrapy.

:class:`Marker` is the flow the item pipeline runs for every item — count the parsed page in
the store, add it to its site's layout evidence, decide its marks, learn from the decision —
and :func:`replay` runs the same flow over a stored crawl (pages in crawl order), with the
crawl's cold start and its periodic relearning of layouts and pruning, so that settings and
algorithm changes can be judged on whole sites in seconds.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Awaitable, Iterable, Sequence
from dataclasses import dataclass

from scrapy_templates.config import TemplatesConfig
from scrapy_templates.page import Page, PageError, parse_page
from scrapy_templates.sites import page_id
from scrapy_templates.store.base import CountSource, Observation, TemplateStore
from scrapy_templates.templates.decide import Thresholds
from scrapy_templates.templates.evidence import Evidence
from scrapy_templates.templates.layout import SiteLayouts
from scrapy_templates.templates.marking import (
    MarkSettings,
    PageCounts,
    PageFlags,
    PageMarks,
    PageNavigation,
    decide_page,
    page_flags,
)
from scrapy_templates.templates.sections import section_of, section_templates
from scrapy_templates.templates.variability import SHIFTS, LayoutBlocks, link_label


def thresholds(config: TemplatesConfig) -> Thresholds:
    """The template decision's thresholds."""
    return Thresholds(
        config.min_pages, config.min_share, config.pattern_share, config.region_min_share
    )


def mark_settings(config: TemplatesConfig) -> MarkSettings:
    """The decision's settings."""
    return MarkSettings(
        thresholds(config),
        config.main_region_share,
        config.snippet_chars,
        config.algorithm,
        config.section_share,
    )


def build_evidence(config: TemplatesConfig) -> Evidence:
    """Empty evidence for the sites of one process, shaped by the layout settings."""
    return Evidence(
        main_share=config.main_region_share,
        layouts=functools.partial(
            SiteLayouts, config.layout_similarity, config.layout_max_clusters
        ),
        blocks=functools.partial(
            LayoutBlocks,
            samples=config.block_samples,
            min_pages=config.block_min_pages,
            min_share=config.block_min_share,
            max_diff=config.block_diff_max,
            shift_diff=config.block_shift_diff_max,
            comparison=config.block_compare,
        ),
        max_sites=config.layout_max_sites,
    )


def prune_below(config: TemplatesConfig, pages: int) -> int:
    """Counters below this many pages are pruned: those at 1, and — while the share test is
    on — those under ``TEMPLATES_PRUNE_SHARE`` of the site's ``pages`` (capped at half the
    template share, so a pruned pagelet is far from any decision)."""
    share = min(config.prune_share, config.min_share / 2)
    return max(2, int(share * pages))


def parse_configured(html: str | bytes, url: str, config: TemplatesConfig) -> Page:
    """The page parsed as a crawl with ``config`` parses it (raises
    :class:`~scrapy_templates.page.PageError` as :func:`parse_page` does)."""
    return parse_page(
        html,
        url,
        k=config.link_threshold,
        max_bytes=config.max_html_bytes,
        max_tags=config.max_tags,
    )


def page_fingerprints(page: Page) -> list[int]:
    """The distinct non-zero fingerprints and patterns of a page, with those of the blocks
    hidden in its unsplit pagelets (:attr:`Page.hidden`): what the store counts."""
    found: dict[int, None] = {}
    for pagelet in page.pagelets:
        if pagelet.fingerprint:
            found[pagelet.fingerprint] = None
        if pagelet.pattern:
            found[pagelet.pattern] = None
    found.update(dict.fromkeys(page.hidden))
    return list(found)


@dataclass
class Marker:
    """The marking of one process: its store, its sites' evidence and the decision's
    settings. ``layout``: whether pages join layout clusters (``TEMPLATES_LAYOUT``)."""

    store: CountSource
    evidence: Evidence
    settings: MarkSettings
    layout: bool = True

    @classmethod
    def from_config(cls, config: TemplatesConfig, store: CountSource) -> Marker:
        """A marker with empty evidence, as a new crawl process starts."""
        return cls(store, build_evidence(config), mark_settings(config), config.layout)

    @property
    def components(self) -> bool:
        """Whether counts are by link-connected component (the global algorithm)."""
        return self.settings.algorithm == "global"

    async def count(self, site: str, page: Page, fingerprints: list[int]) -> Observation:
        """Count ``page`` in the store (once per page id and per content text)."""
        links = []
        if self.components:
            target = self.evidence.links.resolver(page.url)
            links = [target(h) for h in page.hrefs()]
        return await self.store.observe(
            site,
            page_id(page.url),
            fingerprints,
            links,
            content_key=page.text_hash,
            components=self.components,
        )

    async def recount(self, site: str, page: Page, fingerprints: list[int]) -> Observation:
        """The counts of a page counted before, as they stand now."""
        return await self.store.lookup(
            site, page_id(page.url), fingerprints, components=self.components
        )

    def decide(
        self,
        site: str,
        page: Page,
        fingerprints: list[int],
        obs: Observation,
        *,
        new: bool | None = None,
    ) -> PageMarks:
        """The page's marks from its counts (``000_…``), with the page added to its site's
        layout evidence (``001_…``) and its link blocks to its section's counts first; the
        site then learns from the decision. ``new``: whether counting the page counted it
        (``obs.new`` unless ``obs`` is a later recount)."""
        counts, navigation = self._observe(site, page, fingerprints, obs, new)
        evidence = self.evidence.site(site)
        flags = page_flags(page, counts, evidence, self.settings, navigation)
        marks = decide_page(page, counts, evidence, self.settings, navigation, flags)
        self._learn(site, page, counts, flags)
        return marks

    def learn(
        self, site: str, page: Page, fingerprints: list[int], obs: Observation, *, new: bool
    ) -> None:
        """What :meth:`decide` teaches the site, without the marks: the page's flags only,
        which ask nothing of its elements."""
        counts, navigation = self._observe(site, page, fingerprints, obs, new)
        flags = page_flags(page, counts, self.evidence.site(site), self.settings, navigation)
        self._learn(site, page, counts, flags)

    def _observe(
        self, site: str, page: Page, fingerprints: list[int], obs: Observation, new: bool | None
    ) -> tuple[PageCounts, PageNavigation]:
        """The page added to its site's layout evidence and its section's counts: its counts
        for the decision, and its navigation (asked once)."""
        cluster = levels = None
        navigation = PageNavigation(page)
        if self.layout:
            cluster, levels = self.evidence.blocks(site).observe(
                [p.path for p in page.pagelets],
                [p.text for p in page.pagelets],
                [link_label(p.hrefs, p.anchors, navigation.host) for p in page.pagelets],
            )
        section = self._section(site, page, navigation, obs.new if new is None else new)
        return self._counts(fingerprints, obs, cluster, levels, section), navigation

    def _learn(self, site: str, page: Page, counts: PageCounts, flags: PageFlags) -> None:
        """The site learns from a decided page: the layout's frame positions, then its main
        region, inner templates and anchor texts."""
        levels = counts.levels
        if counts.layout is not None and levels and not SHIFTS.isdisjoint(levels):
            paths = [p.path for p in page.pagelets]
            self.evidence.blocks(site).frame(counts.layout, paths, levels, flags.framed)
        self.evidence.site(site).learn(page, flags.flags, self.settings.main_share)

    def review(self, site: str, page: Page, fingerprints: list[int], obs: Observation) -> PageMarks:
        """The marks of a page decided before, on the site's evidence as it stands now,
        changing none of it."""
        cluster = levels = None
        if self.layout and (blocks := self.evidence.site_blocks.get(site)) is not None:
            cluster, levels = blocks.levels([p.path for p in page.pagelets])
        navigation = PageNavigation(page)
        section = self._section(site, page, navigation, False)
        counts = self._counts(fingerprints, obs, cluster, levels, section)
        return decide_page(page, counts, self.evidence.site(site), self.settings, navigation)

    async def decide_held(
        self, site: str, held: Sequence[tuple[Page, list[int], bool]]
    ) -> list[PageMarks | Exception]:
        """Mark a site's first pages, held at its cold start (page, fingerprints, whether
        counting it counted it): each is decided in turn, the site learning from it as from any
        page, and then all are marked again on what all of them taught (:meth:`review`): the
        first items of a site are as clean as the later ones. A page whose marking fails gets
        its exception, and the others their marks."""
        counted: list[Observation | Exception] = []
        for page, fingerprints, new in held:
            try:
                obs = await self.recount(site, page, fingerprints)
                self.learn(site, page, fingerprints, obs, new=new)
            except Exception as exc:  # one page's failure is its item's, not the others'
                counted.append(exc)
            else:
                counted.append(obs)
        if len(held) > 1:
            self.evidence.site(site).region.refresh()
        pages = [page for page, _, _ in held]
        counted_ok = [i for i, found in enumerate(counted) if not isinstance(found, Exception)]
        answering = await self.answering(site, [pages[i] for i in counted_ok])
        for i, page in zip(counted_ok, answering, strict=True):
            pages[i] = page
        marked: list[PageMarks | Exception] = []
        for page, (_, fingerprints, _), found in zip(pages, held, counted, strict=True):
            if isinstance(found, Exception):
                marked.append(found)
                continue
            try:
                marked.append(self.review(site, page, fingerprints, found))
            except Exception as exc:
                marked.append(exc)
        return marked

    async def answering(self, site: str, pages: list[Page]) -> list[Page]:
        """``pages``, where one parsed elsewhere cannot answer what deciding it will ask of
        it on the site's evidence as it stands (the text below the main path, the title
        blocks of a page that anchor text names), detached anew where it was parsed
        (:attr:`~scrapy_templates.page.Page.refetch`), all at once; a page that cannot be
        had again, or comes back parsed otherwise, stays as it is (it parses here if asked).
        Pages sent while their site had no evidence yet, or another main path, ask again."""
        evidence = self.evidence.site(site)
        main_path = evidence.main_path() if self.settings.main_share > 0 else None
        asks: dict[int, Awaitable[Page | None]] = {}
        for i, page in enumerate(pages):
            blocks = bool(evidence.anchors.get(page_id(page.url)))
            if page.refetch is not None and not page.answers(main_path, blocks):
                try:
                    asks[i] = page.refetch(main_path, blocks)
                except Exception:  # a page that cannot be had again is asked here
                    continue
        if not asks:
            return pages
        found = await asyncio.gather(*asks.values(), return_exceptions=True)
        out = list(pages)
        for i, again in zip(asks, found, strict=True):
            if isinstance(again, Page) and again.pagelets == pages[i].pagelets:
                out[i] = again
        return out

    def _counts(
        self,
        fingerprints: list[int],
        obs: Observation,
        cluster: int | None,
        levels: list[int] | None,
        section: list[bool] | None,
    ) -> PageCounts:
        counts = dict(zip(fingerprints, obs.counts, strict=True))
        support = (
            dict(zip(fingerprints, obs.components, strict=True)) if self.components else counts
        )
        return PageCounts(obs.pages, counts, support, cluster, levels, section)

    def _section(
        self, site: str, page: Page, navigation: PageNavigation, new: bool
    ) -> list[bool] | None:
        """Which of the page's link blocks its section makes template (``None``: off): its
        pagelets with links are counted, and one held on enough of the section's pages is
        template when it is navigation (``navigation``; one menu entry counts), which is
        asked of those few only."""
        share = self.settings.section_share
        if share <= 0:
            return None
        pagelets = page.pagelets
        links = [i for i, p in enumerate(pagelets) if p.hrefs and p.fingerprint]
        pages, held = self.evidence.sections(site).observe(
            section_of(page.url), [pagelets[i].fingerprint for i in links], new
        )
        flags = [False] * len(pagelets)
        templates = section_templates(held, pages, share, self.settings.thresholds.min_pages)
        for i, flag in zip(links, templates, strict=True):
            flags[i] = flag and navigation.links(i) >= 1
        return flags


@dataclass(frozen=True)
class Replayed:
    """One page of a replay: its URL and its marks (``None`` when it is no HTML page;
    ``error`` says why)."""

    url: str
    marks: PageMarks | None
    error: str = ""


async def replay(
    pages: Iterable[tuple[str, str | bytes]], config: TemplatesConfig, store: TemplateStore
) -> AsyncIterator[Replayed]:
    """Mark ``pages`` (URL and HTML, in crawl order) as one crawl process with ``config``
    would, yielding each page's marks in the order they are decided.

    What the crawl does besides the pipeline is replayed by page counts, not by the clock: a
    site's first pages wait until ``TEMPLATES_BOOTSTRAP_PAGES`` more are counted (or the pages
    run out); every ``TEMPLATES_RELEARN_PAGES`` pages of a site its layout clusters are settled
    and — once ``TEMPLATES_PRUNE_PAGES`` more pages were counted — its counters pruned, as a
    relearn does. ``store`` is open and empty."""
    marker = Marker.from_config(config, store)
    site_of = config.site_function()
    waiting: dict[str, list[tuple[Page, list[int], bool]]] = {}
    marked: dict[str, int] = {}
    pruned_at: dict[str, int] = {}

    async def relearn(site: str, pages_known: int) -> None:
        if marker.layout and (blocks := marker.evidence.site_blocks.get(site)) is not None:
            blocks.recompute()
        prune = config.prune_pages
        if prune > 0 and pages_known - pruned_at.get(site, 0) >= prune:
            await store.prune(site, prune_below(config, pages_known))
            pruned_at[site] = pages_known

    async def decide(
        site: str, page: Page, fingerprints: list[int], obs: Observation, new: bool
    ) -> Replayed:
        marks = marker.decide(site, page, fingerprints, obs, new=new)
        marked[site] = marked.get(site, 0) + 1
        if config.relearn_pages > 0 and marked[site] % config.relearn_pages == 0:
            await relearn(site, obs.pages)
        return Replayed(page.url, marks)

    async def decide_held(
        site: str, held: list[tuple[Page, list[int], bool]], pages_known: int
    ) -> list[Replayed]:
        before = marked.get(site, 0)
        out = []
        for (page, _, _), marks in zip(held, await marker.decide_held(site, held), strict=True):
            if isinstance(marks, Exception):
                raise marks
            out.append(Replayed(page.url, marks))
        marked[site] = before + len(out)
        every = config.relearn_pages
        if every > 0 and marked[site] // every > before // every:
            await relearn(site, pages_known)
        return out

    wanted = config.bootstrap_pages + 1 if config.bootstrap_pages > 0 else 0
    for url, html in pages:
        try:
            page = parse_configured(html, url, config)
        except PageError as exc:
            yield Replayed(url, None, exc.reason)
            continue
        site = site_of(url)
        fingerprints = page_fingerprints(page)
        obs = await marker.count(site, page, fingerprints)
        if obs.pages < wanted:
            waiting.setdefault(site, []).append((page, fingerprints, obs.new))
            continue
        for replayed in await decide_held(site, waiting.pop(site, []), obs.pages):
            yield replayed
        yield await decide(site, page, fingerprints, obs, obs.new)
    for site, held in waiting.items():
        pages_known = (await marker.recount(site, *held[-1][:2])).pages
        for replayed in await decide_held(site, held, pages_known):
            yield replayed
