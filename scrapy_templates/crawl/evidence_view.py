"""The sites' evidence as the crawl's thread sees it, wherever pages are decided.

Pages are decided on the crawl's thread (the evidence is here) or in a parse worker that
holds its sites' counts and evidence (:mod:`scrapy_templates.worker_marking`); a crawl whose
worker is lost decides some pages here. :class:`EvidenceView` gives the relearner one view of
both: the evidence here, the worker's summaries of its own, and what is to be sent to the
worker with a site's next page (the store's answers, newer models, a pruning, a settling of
the layout clusters, the store's counters for a worker that starts a site late). What it keeps
per site is bounded as the evidence is: past ``max_sites`` sites the least recently used one
goes (the store's answers not yet sent for it are lost: the next answer holds them). Which
sites' cold starts were released, and a seed on its way, are kept apart from that bound.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from scrapy_templates.store.base import Observation
from scrapy_templates.templates.evidence import Evidence
from scrapy_templates.worker_marking import SiteNews, SiteSummary


@dataclass(slots=True)
class _SiteView:
    """One site as the thread sees its worker: the worker's last summary, what waits for
    the site's next request, the model version sent, whether pages of the site were counted
    here since (the worker's copy is behind the store)."""

    summary: SiteSummary | None = None
    news: SiteNews | None = None
    model_sent: int | None = None
    behind: bool = False


class EvidenceView:
    """See the module docstring. ``merges``: whether the store's answers go to the worker
    (a store shared with other processes; the answers of a store of this process alone add
    nothing to what the worker's copy counted)."""

    def __init__(self, evidence: Evidence, *, merges: bool = True) -> None:
        self.evidence = evidence
        self.merges = merges
        self.max_sites = evidence.max_sites
        self._sites: OrderedDict[str, _SiteView] = OrderedDict()
        self._released: set[str] = set()
        self._seeds: dict[str, tuple[int, dict[int, int]]] = {}

    # -- the pipeline's side ---------------------------------------------------------------

    def news(self, site: str) -> SiteNews | None:
        """What is to go with ``site``'s next request to its worker (``None``: nothing),
        taken: the caller sends it, or gives it back (:meth:`unsent`)."""
        view = self._site(site)
        news, view.news = view.news, None
        seed = self._seeds.pop(site, None)
        if seed is not None:
            news = news or SiteNews()
            news.seed = seed
        model = self.evidence.models.get(site)
        if model is not None and model.version != view.model_sent:
            news = news or SiteNews()
            news.model = model
            view.model_sent = model.version
        return news

    def unsent(self, site: str, news: SiteNews | None) -> None:
        """``news`` did not reach the worker (it was lost): it goes again with the next
        request, the model too (the worker that takes the site knows none)."""
        view = self._site(site)
        view.model_sent = None
        if news is None:
            return
        kept = self._news(site)
        kept.merges[:0] = news.merges
        kept.prune_below = max(kept.prune_below, news.prune_below)
        kept.recompute = kept.recompute or news.recompute
        if news.seed is not None:
            self._seeds.setdefault(site, news.seed)

    def marked(self, site: str, summary: SiteSummary) -> None:
        """The worker marked or released a page of ``site``: its evidence as it stands."""
        self._site(site).summary = summary

    def answered(self, site: str, fingerprints: Sequence[int], shared: Observation) -> None:
        """The store counted a page of ``site`` that the worker marked: its answer goes to
        the worker."""
        if self.merges:
            self._news(site).merges.append((list(fingerprints), shared))

    def counted_here(self, site: str) -> None:
        """A page of ``site`` was marked on this thread: the worker's copy did not count it
        (:meth:`behind`)."""
        found = self._sites.get(site)
        if found is not None and found.summary is not None:
            found.behind = True

    def behind(self, site: str) -> bool:
        """Whether the worker's copy of the site misses pages marked here since its last
        page (it is then given the store's counters, :meth:`unknown`)."""
        found = self._sites.get(site)
        return found is not None and found.behind

    def unknown(self, site: str, pages: int, counts: Mapping[int, int] | None) -> None:
        """The worker knew nothing of ``site``, or its copy is behind: the model goes again,
        and the store's counters (``pages`` and ``counts``, when the store knows more than
        the page) with it."""
        view = self._site(site)
        view.model_sent = None
        view.behind = False
        if counts is not None:
            self._seeds[site] = (pages, dict(counts))

    def released(self, site: str) -> bool:
        """Whether the site's cold start was released (its pages are decided at once)."""
        return site in self._released

    def release(self, site: str) -> None:
        self._released.add(site)

    # -- the relearner's side --------------------------------------------------------------

    def settle(self, site: str) -> None:
        """Settle the site's layout clusters: here, and in its worker with its next page."""
        blocks = self.evidence.site_blocks.get(site)
        if blocks is not None:
            blocks.recompute()
        if self._summary(site) is not None:
            self._news(site).recompute = True

    def pruned(self, site: str, below: int) -> None:
        """The store pruned the site's counters below ``below``: so does its worker's copy."""
        if self._summary(site) is not None:
            news = self._news(site)
            news.prune_below = max(news.prune_below, below)

    def region(self, site: str) -> tuple[str | None, int]:
        """The site's main path and the pages that taught it, from wherever more pages did."""
        here = self.evidence.regions.get(site)
        main_path, pages = (here.main_path(), here.pages) if here is not None else (None, 0)
        there = self._summary(site)
        if there is not None and there.region_pages > pages:
            return there.main_path, there.region_pages
        return main_path, pages

    def clusters(self, site: str) -> int:
        """The site's layout clusters (the larger count, here or in its worker)."""
        blocks = self.evidence.site_blocks.get(site)
        here = len(blocks.layouts.clusters) if blocks is not None else 0
        there = self._summary(site)
        return max(here, there.clusters if there is not None else 0)

    def all_clusters(self) -> int:
        sites = set(self.evidence.site_blocks) | set(self._sites)
        return sum(self.clusters(site) for site in sites)

    def _summary(self, site: str) -> SiteSummary | None:
        found = self._sites.get(site)
        return found.summary if found is not None else None

    def _news(self, site: str) -> SiteNews:
        view = self._site(site)
        if view.news is None:
            view.news = SiteNews()
        return view.news

    def _site(self, site: str) -> _SiteView:
        sites = self._sites
        found = sites.get(site)
        if found is None:
            found = sites[site] = _SiteView()
            while len(sites) > self.max_sites:
                sites.popitem(last=False)
        else:
            sites.move_to_end(site)
        return found
