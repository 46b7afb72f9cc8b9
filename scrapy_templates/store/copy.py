"""A process's own copy of the counts of its sites, kept where pages are decided.

The store holds the counts every crawler process shares (``000_…`` §3.1); a process that
decides its pages away from the store (a parse worker) keeps a copy of the counts of the
pages it sees, counted as the store counts them: a page id or a content key seen before is not
counted again. The store's answers for the same pages, which include other processes' pages,
are merged in as they come back: the copy takes the larger of its count and the store's, so
it lags the shared counts by the pages in flight and never runs ahead of them for long.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from scrapy_templates.store.base import Observation, StoreError


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

    def lookup(self, fingerprints: Sequence[int]) -> Observation:
        """The counts as they stand, counting nothing."""
        counts = self.counts
        return Observation(self.counted, [counts.get(fp, 0) for fp in fingerprints], [], False)

    def merge(self, fingerprints: Sequence[int], shared: Observation) -> None:
        """Take in the store's answer for a page: each count, and the pages counted, become
        the larger of the copy's and the store's."""
        self.counted = max(self.counted, shared.pages)
        counts = self.counts
        for fp, n in zip(fingerprints, shared.counts, strict=True):
            if n > counts.get(fp, 0):
                counts[fp] = n

    def seed(self, pages: int, counts: Mapping[int, int]) -> None:
        """Take in every counter of the store (a copy started late: its process lost the
        one it had)."""
        self.counted = max(self.counted, pages)
        own = self.counts
        for fp, n in counts.items():
            if n > own.get(fp, 0):
                own[fp] = n

    def prune(self, below: int) -> int:
        """Forget counters under ``below``, as the store's pruning does; how many went."""
        low = [fp for fp, n in self.counts.items() if n < below]
        for fp in low:
            del self.counts[fp]
        return len(low)


@dataclass
class CountCopy:
    """The counts of the sites a process decides pages of: at most ``max_sites``, the least
    recently used going first (as the sites' evidence does)."""

    max_sites: int = 1_000_000
    sites: OrderedDict[str, SiteCounts] = field(default_factory=OrderedDict)

    def site(self, site: str) -> SiteCounts:
        found = self.sites.get(site)
        if found is None:
            found = self.sites[site] = SiteCounts()
            while len(self.sites) > self.max_sites:
                self.sites.popitem(last=False)
        else:
            self.sites.move_to_end(site)
        return found

    async def observe(
        self,
        site: str,
        page_id: str,
        fingerprints: Sequence[int],
        links: Sequence[str] = (),
        *,
        content_key: str = "",
        components: bool = False,
    ) -> Observation:
        """:meth:`TemplateStore.observe` over the copy (the local algorithm's counts)."""
        if components:
            raise StoreError("a copy of the counts keeps no link components")
        return self.site(site).observe(page_id, fingerprints, content_key)

    async def lookup(
        self, site: str, page_id: str, fingerprints: Sequence[int], *, components: bool = False
    ) -> Observation:
        """:meth:`TemplateStore.lookup` over the copy."""
        if components:
            raise StoreError("a copy of the counts keeps no link components")
        return self.site(site).lookup(fingerprints)
