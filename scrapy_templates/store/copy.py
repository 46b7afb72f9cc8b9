"""A process's own copy of the counts of its sites, kept where pages are decided.

The store holds the counts every crawler process shares (``000_…`` §3.1); a process that
decides its pages away from the store (a parse worker) keeps a copy of the counts of the
pages it sees, counted as the store counts them: a page id or a content key seen before is not
counted again. The store's answers for the same pages, which include other processes' pages,
are merged in as they come back: the copy takes the larger of its count and the store's, so
it lags the shared counts by the pages in flight and never runs ahead of them for long.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from scrapy_templates.store.base import Observation


@dataclass
class SiteCounts:
    """One site's counts: pages counted, the page ids and content keys seen, and how many
    counted pages hold each fingerprint."""

    counted: int = 0
    pages: set[str] = field(default_factory=set)
    contents: set[str] = field(default_factory=set)
    counts: dict[int, int] = field(default_factory=dict)

    def observe(
        self, page_id: str, fingerprints: Sequence[int], content_key: str = ""
    ) -> Observation:
        """Count a page, as :meth:`MemoryStore.observe` would (the local algorithm's
        counts: no components)."""
        new = page_id not in self.pages and content_key not in self.contents
        self.pages.add(page_id)
        if content_key:
            self.contents.add(content_key)
        counts = self.counts
        if new:
            self.counted += 1
            for fp in fingerprints:
                counts[fp] = counts.get(fp, 0) + 1
        return Observation(self.counted, [counts.get(fp, 0) for fp in fingerprints], [], new)

    def merge(self, fingerprints: Sequence[int], shared: Observation) -> None:
        """Take in the store's answer for a page: each count, and the pages counted, become
        the larger of the copy's and the store's."""
        self.counted = max(self.counted, shared.pages)
        counts = self.counts
        for fp, n in zip(fingerprints, shared.counts, strict=True):
            if n > counts.get(fp, 0):
                counts[fp] = n

    def prune(self, below: int) -> int:
        """Forget counters under ``below``, as the store's pruning does; how many went."""
        low = [fp for fp, n in self.counts.items() if n < below]
        for fp in low:
            del self.counts[fp]
        return len(low)


@dataclass
class CountCopy:
    """The counts of every site a process decides pages of."""

    sites: dict[str, SiteCounts] = field(default_factory=dict)

    def site(self, site: str) -> SiteCounts:
        found = self.sites.get(site)
        if found is None:
            found = self.sites[site] = SiteCounts()
        return found
