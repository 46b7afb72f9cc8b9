"""Marking where pages are parsed: one step per page for the process that parses them.

The crawl's thread pays for every exchange with a worker (pickling, the event loop's turns),
and a decision taken on the thread after a parse in a worker costs it both the exchange and the
decision. :class:`WorkerMarking` does all of a page's marking where the page is parsed: parse,
count in the process's own copy of its sites' counts (:mod:`scrapy_templates.store.copy`),
decide on the evidence it holds, learn. The crawl's thread gets the fingerprints (to count the
page in the shared store, whose answer is merged back) and the marks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from scrapy_templates.config import TemplatesConfig
from scrapy_templates.marker import Marker, build_evidence, mark_settings, page_fingerprints
from scrapy_templates.page import parse_page
from scrapy_templates.sites import page_id
from scrapy_templates.store.base import Observation
from scrapy_templates.store.copy import CountCopy
from scrapy_templates.templates.marking import PageMarks


@dataclass(frozen=True, slots=True)
class Marked:
    """A page marked where it was parsed: what the crawl's thread counts in the shared store
    (``fingerprints``, ``text_hash``), what URL rules sample (``simhash``), and the marks."""

    fingerprints: list[int]
    text_hash: str
    simhash: int
    marks: PageMarks


@dataclass
class WorkerMarking:
    """The marking state of the process that parses: its sites' counts and evidence."""

    config: TemplatesConfig
    copy: CountCopy = field(default_factory=CountCopy)
    marker: Marker = field(init=False)

    def __post_init__(self) -> None:
        # the marker never reaches a store: counts come from the copy
        self.marker = Marker(
            None,  # type: ignore[arg-type]
            build_evidence(self.config),
            mark_settings(self.config),
            self.config.layout,
        )

    def mark(self, html: str | bytes, url: str, site: str) -> Marked:
        """Parse, count and decide one page of ``site``; raises
        :class:`~scrapy_templates.page.PageError` as the parse does."""
        config = self.config
        page = parse_page(
            html,
            url,
            k=config.link_threshold,
            max_bytes=config.max_html_bytes,
            max_tags=config.max_tags,
        )
        fingerprints = page_fingerprints(page)
        obs = self.copy.site(site).observe(page_id(url), fingerprints, page.text_hash)
        marks = self.marker.decide(site, page, fingerprints, obs, new=obs.new)
        return Marked(fingerprints, page.text_hash, page.simhash, marks)

    def merge(self, site: str, fingerprints: list[int], shared: Observation) -> None:
        """Take in the shared store's answer for a page this process marked."""
        self.copy.site(site).merge(fingerprints, shared)
