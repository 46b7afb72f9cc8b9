"""Marking where pages are parsed: one step per page for the process that parses them.

The crawl's thread pays for every exchange with a worker (pickling, the event loop's turns),
and a decision taken on the thread after a parse in a worker costs it both the exchange and the
decision. :class:`WorkerMarking` does all of a page's marking where the page is parsed: parse,
count in the process's own copy of its sites' counts (:mod:`scrapy_templates.store.copy`),
decide on the evidence it holds, learn. The crawl's thread gets the fingerprints (to count the
page in the shared store, whose answer comes back with the site's next page) and the marks.

A site's first pages are held, not decided (the cold start, :mod:`~scrapy_templates.crawl.
bootstrap`): the thread says when, and :meth:`WorkerMarking.release` decides them all as
:meth:`~scrapy_templates.marker.Marker.decide_held` does. So is the first page of a site the
worker knows nothing of (a new site, a worker started anew, a site whose evidence was
evicted): the thread sends the store's counters for it with the release when the store knows
the site.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from scrapy_templates.config import TemplatesConfig
from scrapy_templates.marker import Marker, page_fingerprints, parse_configured
from scrapy_templates.page import Page
from scrapy_templates.sites import page_id
from scrapy_templates.store.base import Observation
from scrapy_templates.store.copy import CountCopy
from scrapy_templates.templates.marking import PageMarks
from scrapy_templates.templates.model import TemplateModel


@dataclass(frozen=True, slots=True)
class SiteSummary:
    """What the crawl's thread needs to know of a site's evidence held in a worker: its main
    path and the pages that taught it (``None``: the whole page), and its layout clusters."""

    main_path: str | None = None
    region_pages: int = 0
    clusters: int = 0


@dataclass(slots=True)
class SiteNews:
    """What the crawl's thread has for a site's worker, sent with the site's next request:
    the store's answers for pages marked before (fingerprints, observation), a newer template
    model, a pruning of the counters (below this count; 0: none), whether the layout clusters
    are to be settled, and the store's counters (pages, counts) for a copy that starts late."""

    merges: list[tuple[list[int], Observation]] = field(default_factory=list)
    model: TemplateModel | None = None
    prune_below: int = 0
    recompute: bool = False
    seed: tuple[int, dict[int, int]] | None = None

    def __bool__(self) -> bool:
        return bool(self.merges or self.model or self.prune_below or self.recompute or self.seed)


@dataclass(frozen=True, slots=True)
class Marked:
    """A page of ``site`` marked where it was parsed: what the crawl's thread counts in the
    shared store (``fingerprints``, ``text_hash``), what URL rules sample (``simhash``), the
    marks (``None``: the page is held until its site's release), whether the worker knew the
    site before this page, and the site's evidence as it stands."""

    site: str
    fingerprints: list[int]
    text_hash: str
    simhash: int
    marks: PageMarks | None
    known: bool
    summary: SiteSummary


# a held page: its request's ident, the page, its fingerprints, its counts when it was counted
_Held = tuple[int, Page, list[int], Observation]


@dataclass
class WorkerMarking:
    """The marking state of the process that parses: its sites' counts and evidence."""

    config: TemplatesConfig
    copy: CountCopy = field(init=False)
    marker: Marker = field(init=False)
    held: dict[str, list[_Held]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.copy = CountCopy(self.config.layout_max_sites)
        self.marker = Marker.from_config(self.config, self.copy)

    def mark(
        self,
        html: str | bytes,
        url: str,
        site: str,
        *,
        hold: bool = False,
        ident: int = 0,
        news: SiteNews | None = None,
    ) -> Marked:
        """Parse, count and decide one page of ``site`` after taking in ``news``; with
        ``hold`` (or a site this worker knows nothing of, or one with pages held) the page is
        kept undecided, under ``ident``, for :meth:`release`. Raises
        :class:`~scrapy_templates.page.PageError` as the parse does."""
        known = site in self.copy.sites
        if news:
            self.take(site, news)
        page = parse_configured(html, url, self.config)
        fingerprints = page_fingerprints(page)
        obs = self.copy.site(site).observe(page_id(url), fingerprints, page.text_hash)
        marks = None
        if hold or not known or site in self.held:
            self.held.setdefault(site, []).append((ident, page, fingerprints, obs))
        else:
            marks = self.marker.decide(site, page, fingerprints, obs, new=obs.new)
        return Marked(
            site, fingerprints, page.text_hash, page.simhash, marks, known, self.summary(site)
        )

    def release(
        self, site: str, news: SiteNews | None = None, *, review: bool = True
    ) -> tuple[list[tuple[int, PageMarks | Exception]], SiteSummary]:
        """Decide the site's held pages (after taking in ``news``), each with its ident, and
        the site's evidence after them: with ``review``, as a cold start decides them
        (:meth:`~scrapy_templates.marker.Marker.decide_held`), else each in turn on its counts
        when it was counted, as if it had not been held (on the copy as it stands when
        ``news`` brings the store's counters). A page whose decision fails gets its
        exception."""
        seeded = news is not None and news.seed is not None
        if news:
            self.take(site, news)
        held = self.held.pop(site, [])
        decided: list[PageMarks | Exception]
        try:
            if review:
                pages = [(page, fingerprints, obs.new) for _, page, fingerprints, obs in held]
                decided = asyncio.run(self.marker.decide_held(site, pages)) if pages else []
            else:
                decided = [self._decide_now(site, *h[1:], seeded) for h in held]
        except Exception as exc:  # the batch's failure is each of its pages'
            decided = [exc] * len(held)
        return [(h[0], d) for h, d in zip(held, decided, strict=True)], self.summary(site)

    def _decide_now(
        self, site: str, page: Page, fingerprints: list[int], counted: Observation, seeded: bool
    ) -> PageMarks | Exception:
        try:
            obs = self.copy.site(site).lookup(fingerprints) if seeded else counted
            return self.marker.decide(site, page, fingerprints, obs, new=counted.new)
        except Exception as exc:
            return exc

    def take(self, site: str, news: SiteNews) -> None:
        """What the crawl's thread sent for ``site``."""
        counts = self.copy.site(site)
        if news.seed is not None:
            counts.seed(*news.seed)
        for fingerprints, shared in news.merges:
            counts.merge(fingerprints, shared)
        if news.prune_below:
            counts.prune(news.prune_below)
        if news.model is not None:
            self.marker.evidence.models[site] = news.model
        evidence = self.marker.evidence
        if news.recompute and (blocks := evidence.site_blocks.get(site)) is not None:
            blocks.recompute()

    def summary(self, site: str) -> SiteSummary:
        evidence = self.marker.evidence
        region = evidence.regions.get(site)
        blocks = evidence.site_blocks.get(site)
        return SiteSummary(
            region.main_path() if region is not None else None,
            region.pages if region is not None else 0,
            len(blocks.layouts.clusters) if blocks is not None else 0,
        )
