"""The store protocol: what the pipeline asks of shared state, in one call per page."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol


class StoreError(RuntimeError):
    """The store could not answer: a value under its keys is not what it wrote, or (as
    :class:`StoreUnavailable`) the backend is unreachable."""


class StoreUnavailable(StoreError):
    """The backend is unreachable or timed out: worth retrying later, with local state meanwhile."""


@dataclass(frozen=True, slots=True)
class Observation:
    """What the store knows about a page's pagelets after recording the page.

    ``counts[i]`` is the number of distinct pages of the site holding ``fingerprints[i]``.
    ``components[i]`` (global algorithm only) is the size of the page's connected component in
    the graph of pages holding that fingerprint, linked by hyperlinks in either direction
    (``000_…`` §3.2, Fig. 5). ``new`` is false when the page had been recorded before, in which
    case nothing was counted again (a re-fetch or a duplicate).
    """

    pages: int
    counts: list[int]
    components: list[int] = field(default_factory=list)
    new: bool = True


class CountSource(Protocol):
    """Where a :class:`~scrapy_templates.marker.Marker` counts pages: the shared store, or a
    process's own copy of its sites' counts (:mod:`scrapy_templates.store.copy`)."""

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
        """Record a page and return the counts of its fingerprints.

        A page is counted once: not again when its ``page_id`` (a re-fetched URL) or its
        ``content_key`` (the same text under another URL: ``000_…`` §3.2 removes duplicate
        pages before grouping) was recorded before. ``fingerprints`` are distinct and non-zero.
        ``links`` are the page ids this page links to; they are only kept when ``components``
        is true, which also returns component sizes.
        """
        ...

    async def lookup(
        self,
        site: str,
        page_id: str,
        fingerprints: Sequence[int],
        *,
        components: bool = False,
    ) -> Observation:
        """Counts as :meth:`observe` would return them, without recording anything."""
        ...


class TemplateStore(CountSource, Protocol):
    """Counters shared by every crawler process. All methods are coroutines; a backend that
    cannot answer raises :class:`StoreError`."""

    async def open(self) -> None:
        """Connect; called once when the spider opens."""

    async def close(self) -> None:
        """Release connections; called once when the spider closes."""

    async def add_url_samples(
        self, site: str, samples: Sequence[str], cap: int, draws: Sequence[float]
    ) -> int:
        """Add encoded URL samples to the site's bounded sample (reservoir sampling,
        algorithm R: the first ``cap`` are kept, then sample number ``n`` replaces slot
        ``int(draws[i] * n)`` when that is below ``cap``). ``draws`` are uniform numbers in
        [0, 1), one per sample. Returns how many samples the site has been offered in all."""
        ...

    async def url_samples(self, site: str, most: int | None = None) -> list[str]:
        """The site's kept URL samples (the first ``most`` of them: a list longer than the
        sample's cap was not made by this store)."""
        ...

    async def ping(self) -> None:
        """Raise :class:`StoreError` unless the backend answers."""
        ...

    async def sites(self) -> list[str]:
        """Every site the store has recorded a page, a sample or a publication of."""
        ...

    async def counts(self, site: str) -> tuple[int, dict[int, int]]:
        """The site's pages counted and every fingerprint counter it holds."""
        ...

    async def prune(self, site: str, below: int = 2) -> int:
        """Delete the site's fingerprint counters that stand below ``below`` (by default those
        at 1: a pagelet seen on one page only is no template); returns how many went. Keeps
        the footprint bounded by what repeats, not by how many pages were crawled."""
        ...

    async def publish(self, site: str, kind: str, version: int, document: str) -> bool:
        """Store ``document`` (JSON text) as the site's ``kind`` (``"rules"``, ``"model"``) at
        ``version``, unless a version at least as high is stored already; returns whether it
        was stored. Each publication raises :meth:`epoch`."""
        ...

    async def published(self, site: str, kind: str) -> tuple[int, str] | None:
        """The site's latest ``kind`` document and its version, if any."""
        ...

    async def epoch(self) -> int:
        """A number that grows with every publication: one cheap read tells a process whether
        anything new was published since it last looked."""
        ...

    async def acquire(self, name: str, owner: str, ttl: float) -> bool:
        """Take (or, for its holder, extend) the lock ``name`` for ``ttl`` seconds. A holder
        that dies loses the lock when ``ttl`` runs out."""
        ...

    async def release(self, name: str, owner: str) -> None:
        """Give the lock up if ``owner`` holds it."""
        ...
