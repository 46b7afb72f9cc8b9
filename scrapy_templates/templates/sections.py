"""Template evidence by section: the pages of one URL directory.

Exact counting (``000_…`` §3.1) asks a pagelet to be on a share of the *site's* pages, but
real sites are made of sections, and a section's menu — the chapter a documentation sidebar
expands, the module list of one application, a sub-forum's links — is on every page of its
section and on a small share of the site. The global algorithm of ``000_…`` §3.2 counts a
pagelet within the link-connected pages holding it; here the unit is the URL directory,
which documentation generators, shops and wikis alike give to a section. Pagelets with
links are counted, and only navigation among them is judged this way (content repeated
across a section's pages is rare and is not made of links), so a section's standing
sentence stays content.

Evidence is kept per process, like the layout clusters, and bounded: past ``max_entries``
counters a site's counters at 1 go.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

# A section's pages must number at least this many, and a link block be on at least this many
# of them, before the section alone can make it template.
SECTION_MIN_PAGES = 3
SECTION_MIN_COPIES = 3


def section_of(url: str) -> str:
    """The URL's directory: its path up to the last "/" (``/lib/stdlib/doc/html/``)."""
    path = urlsplit(url).path or "/"
    return path[: path.rfind("/") + 1] or "/"


@dataclass
class SiteSections:
    """Per URL directory of one site: its pages counted, and how many of them hold each link
    block fingerprint."""

    max_entries: int = 200_000
    pages: dict[str, int] = field(default_factory=dict)
    held: dict[tuple[str, int], int] = field(default_factory=dict)

    def observe(
        self, section: str, fingerprints: Sequence[int], new: bool
    ) -> tuple[int, list[int]]:
        """Count a page of ``section`` holding ``fingerprints`` (its link blocks'), unless it
        was counted before (``new`` false); returns the section's pages and each
        fingerprint's count there."""
        held = self.held
        if new:
            self.pages[section] = self.pages.get(section, 0) + 1
            for fp in set(fingerprints):
                key = (section, fp)
                held[key] = held.get(key, 0) + 1
            if len(held) > self.max_entries:
                self._prune()
        return self.pages.get(section, 0), [held.get((section, fp), 0) for fp in fingerprints]

    def _prune(self) -> None:
        """Drop the counters at 1; if that is not enough, the smaller half."""
        self.held = {k: n for k, n in self.held.items() if n > 1}
        if len(self.held) > self.max_entries // 2:
            ranked = sorted(self.held.items(), key=lambda kv: kv[1], reverse=True)
            self.held = dict(ranked[: self.max_entries // 2])


def section_templates(
    counts: Sequence[int], section_pages: int, share: float, min_pages: int
) -> list[bool]:
    """Which link blocks the section makes template: on at least ``share`` of its pages, and on
    at least :data:`SECTION_MIN_COPIES` (and ``min_pages``) of them, once it has
    :data:`SECTION_MIN_PAGES` pages."""
    if share <= 0 or section_pages < SECTION_MIN_PAGES:
        return [False] * len(counts)
    least = max(min_pages, SECTION_MIN_COPIES, share * section_pages)
    return [n >= least for n in counts]
