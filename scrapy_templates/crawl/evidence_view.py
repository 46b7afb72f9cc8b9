"""The sites' evidence as the crawl's thread sees it, wherever pages are decided.

Pages are decided on the crawl's thread (the evidence is here) or in a parse worker that
holds its sites' counts and evidence (:mod:`scrapy_templates.worker_marking`); a crawl whose
worker is lost decides some pages here. :class:`EvidenceView` gives the relearner one view of
both: the evidence here, the worker's summaries of its own, and what is to be sent to the
worker with a site's next page (the store's answers, newer models, a pruning, a settling of
the layout clusters, the store's counters for a worker that starts a site late).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from scrapy_templates.store.base import Observation
from scrapy_templates.templates.evidence import Evidence
from scrapy_templates.worker_marking import SiteNews, SiteSummary


class EvidenceView:
    """See the module docstring. ``merges``: whether the store's answers go to the worker
    (a store shared with other processes; a store of this process alone counts what the
    worker's copy counts)."""

    def __init__(self, evidence: Evidence, *, merges: bool = True) -> None:
        self.evidence = evidence
        self.merges = merges
        self.summaries: dict[str, SiteSummary] = {}
        self._news: dict[str, SiteNews] = {}
        self._models_sent: dict[str, int] = {}

    # -- the pipeline's side ---------------------------------------------------------------

    def news(self, site: str) -> SiteNews | None:
        """What is to go with ``site``'s next request to its worker (``None``: nothing),
        taken: the caller sends it, or gives it back (:meth:`unsent`)."""
        news = self._news.pop(site, None)
        model = self.evidence.models.get(site)
        if model is not None and model.version != self._models_sent.get(site):
            news = news or SiteNews()
            news.model = model
            self._models_sent[site] = model.version
        return news

    def unsent(self, site: str, news: SiteNews | None) -> None:
        """``news`` did not reach the worker (it was lost): its orders go again with the
        next request, its model too (the worker that takes the site knows none)."""
        self._models_sent.pop(site, None)
        if news is None:
            return
        kept = self._site_news(site)
        kept.merges[:0] = news.merges
        kept.prune_below = max(kept.prune_below, news.prune_below)
        kept.recompute = kept.recompute or news.recompute

    def answered(self, site: str, fingerprints: Sequence[int], shared: Observation) -> None:
        """The store counted a page the worker marked: its answer goes to the worker."""
        if self.merges:
            self._site_news(site).merges.append((list(fingerprints), shared))

    def seed(self, site: str, pages: int, counts: Mapping[int, int]) -> None:
        """The store's counters, for a worker that knew nothing of a site the store knows
        (its copy would count from one). The answers before them are in them."""
        news = self._site_news(site)
        news.merges.clear()
        news.seed = (pages, dict(counts))

    # -- the relearner's side --------------------------------------------------------------

    def settle(self, site: str) -> None:
        """Settle the site's layout clusters: here, and in its worker with its next page."""
        blocks = self.evidence.site_blocks.get(site)
        if blocks is not None:
            blocks.recompute()
        if site in self.summaries:
            self._site_news(site).recompute = True

    def pruned(self, site: str, below: int) -> None:
        """The store pruned the site's counters below ``below``: so does its worker's copy."""
        if site in self.summaries:
            news = self._site_news(site)
            news.prune_below = max(news.prune_below, below)

    def region(self, site: str) -> tuple[str | None, int]:
        """The site's main path and the pages that taught it, from wherever more pages did."""
        here = self.evidence.regions.get(site)
        main_path, pages = (here.main_path(), here.pages) if here is not None else (None, 0)
        there = self.summaries.get(site)
        if there is not None and there.region_pages > pages:
            return there.main_path, there.region_pages
        return main_path, pages

    def clusters(self, site: str) -> int:
        """The site's layout clusters (the larger count, here or in its worker)."""
        blocks = self.evidence.site_blocks.get(site)
        here = len(blocks.layouts.clusters) if blocks is not None else 0
        there = self.summaries.get(site)
        return max(here, there.clusters if there is not None else 0)

    def all_clusters(self) -> int:
        sites = set(self.evidence.site_blocks) | set(self.summaries)
        return sum(self.clusters(site) for site in sites)

    def _site_news(self, site: str) -> SiteNews:
        found = self._news.get(site)
        if found is None:
            found = self._news[site] = SiteNews()
        return found
