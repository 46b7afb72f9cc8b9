"""What one process learned of its sites from the pages it decided: main regions, layout
clusters with their block evidence, anchor texts, link blocks per section, and the models
other processes published.

Plain data: the crawl layer keeps one :class:`Evidence` per crawler, the decision reads a
site's :class:`SiteEvidence`, and the offline replay builds its own.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from scrapy_templates.page import Page
from scrapy_templates.sites import LinkTargets, page_id
from scrapy_templates.templates.inner import InnerTemplates
from scrapy_templates.templates.layout import SiteLayouts
from scrapy_templates.templates.model import TemplateModel
from scrapy_templates.templates.region import SiteRegion
from scrapy_templates.templates.sections import SiteSections
from scrapy_templates.templates.title import AnchorIndex
from scrapy_templates.templates.variability import LayoutBlocks, SiteBlocks

_T = TypeVar("_T")


@dataclass
class SiteEvidence:
    """What the crawl learned of one site from the pages decided so far: its main region,
    the anchor texts seen for its pages, its template texts by the paths above them and the
    model another process published. ``links`` resolves hrefs to page ids (a cache shared by
    every site)."""

    site: str
    region: SiteRegion
    anchors: AnchorIndex
    links: LinkTargets
    model: TemplateModel | None = None
    inner: InnerTemplates | None = None

    def main_path(self) -> str | None:
        """The site's main content path: this process's own, unless the published model was
        learned from more pages."""
        model = self.model
        if model is not None and model.region_pages > self.region.pages:
            return model.main_path
        return self.region.main_path()

    def learn(self, page: Page, flags: Sequence[bool], main_share: float) -> None:
        """Add a decided page (``flags``: its template flags): its non-template text to the
        main region (unless ``main_share`` is 0: no region), its template texts to
        :attr:`inner`, and the texts of its content links to the anchors of the pages they
        name (a link to a part of the page itself, "#usage", names nothing)."""
        pagelets = page.pagelets
        paths = [p.path for p in pagelets]
        if main_share > 0:
            self.region.add(
                paths,
                [0 if f else len(p.text) for p, f in zip(pagelets, flags, strict=True)],
                flags,
            )
        if self.inner is not None:
            self.inner.learn(paths, [p.text for p in pagelets], flags)
        own = page_id(page.url)
        target = self.links.resolver(page.url)
        anchors = self.anchors
        for pagelet, flag in zip(pagelets, flags, strict=True):
            if not flag:
                for href, text in zip(pagelet.hrefs, pagelet.anchors, strict=True):
                    if " " in text and (linked := target(href)) != own:
                        anchors.add(linked, text)


class Evidence:
    """Every site's evidence in one process. Layout evidence, anchor texts and sections are kept for
    the ``max_sites`` sites most recently seen (a broad crawl touches far more sites than it
    can keep evidence for; a site that returns starts afresh); ``evicted`` counts the sites
    that lost theirs."""

    def __init__(
        self,
        *,
        main_share: float,
        layouts: Callable[[], SiteLayouts],
        blocks: Callable[[], LayoutBlocks],
        max_sites: int,
    ) -> None:
        self.main_share = main_share
        self._layouts = layouts
        self._blocks = blocks
        self.max_sites = max_sites
        self.regions: dict[str, SiteRegion] = {}
        self.site_blocks: OrderedDict[str, SiteBlocks] = OrderedDict()
        self.site_anchors: OrderedDict[str, AnchorIndex] = OrderedDict()
        self.site_sections: OrderedDict[str, SiteSections] = OrderedDict()
        self.site_inner: OrderedDict[str, InnerTemplates] = OrderedDict()
        self.models: dict[str, TemplateModel] = {}
        self.links = LinkTargets()
        self.evicted = 0

    def region(self, site: str) -> SiteRegion:
        found = self.regions.get(site)
        if found is None:
            found = self.regions[site] = SiteRegion(self.main_share)
        return found

    def blocks(self, site: str) -> SiteBlocks:
        """The site's layout clusters and block evidence."""
        found = self.site_blocks.get(site) or SiteBlocks(self._layouts(), self._blocks)
        return self._keep(self.site_blocks, site, found)

    def anchors(self, site: str) -> AnchorIndex:
        """Anchor texts seen for the site's pages."""
        found = self.site_anchors.get(site) or AnchorIndex()
        return self._keep(self.site_anchors, site, found)

    def sections(self, site: str) -> SiteSections:
        """The site's link blocks counted per section."""
        found = self.site_sections.get(site) or SiteSections()
        return self._keep(self.site_sections, site, found)

    def inner(self, site: str) -> InnerTemplates:
        """The site's template texts by the paths above them."""
        found = self.site_inner.get(site) or InnerTemplates()
        return self._keep(self.site_inner, site, found)

    def site(self, site: str) -> SiteEvidence:
        """The evidence the decision of a page of ``site`` reads."""
        return SiteEvidence(
            site,
            self.region(site),
            self.anchors(site),
            self.links,
            self.models.get(site),
            self.inner(site),
        )

    def main_path(self, site: str) -> str | None:
        return self.site(site).main_path()

    def _keep(self, recent: OrderedDict[str, _T], site: str, value: _T) -> _T:
        """Mark ``site`` most recently used; past ``max_sites`` sites, the evidence of the
        least recently used one goes."""
        recent[site] = value
        recent.move_to_end(site)
        while len(recent) > self.max_sites:
            recent.popitem(last=False)
            self.evicted += 1
        return value
