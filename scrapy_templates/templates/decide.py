"""The per-page decision: which of a page's pagelets are template, given the shared counts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Thresholds:
    """A pagelet is template when its support (pages holding it, or the size of its
    link-connected component for the global algorithm) is at least ``min_pages`` and at least
    ``min_share`` of the site's pages seen so far.

    ``min_pages = 2`` is the paper's rule (any repeated pagelet). The share test keeps a
    paragraph that two pages of a large site happen to share (an included section, a common
    warning) as content, while navigation and footers, present on most pages, stay template.
    """

    min_pages: int = 2
    min_share: float = 0.0


def is_template(support: int, pages_seen: int, thresholds: Thresholds) -> bool:
    return support >= thresholds.min_pages and support >= thresholds.min_share * pages_seen


def mark_pagelets(
    fingerprints: Sequence[int],
    support: Mapping[int, int],
    pages_seen: int,
    thresholds: Thresholds,
) -> list[bool]:
    """Template flag of each pagelet; fingerprint 0 (no letters) is never template."""
    return [
        bool(fp) and is_template(support.get(fp, 0), pages_seen, thresholds)
        for fp in fingerprints
    ]
