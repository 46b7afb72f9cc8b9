"""Batch template detection over a set of pages, as in ``000_…`` §3.2.

Pages are given as plain data: page id → pagelet fingerprints, and page id → linked page ids.
These functions are the reference the incremental store counters are tested against, and what
an offline or periodic relearn runs.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping


def _groups(pages: Mapping[str, Iterable[int]]) -> dict[int, set[str]]:
    groups: dict[int, set[str]] = defaultdict(set)
    for page, fingerprints in pages.items():
        for fp in fingerprints:
            if fp:
                groups[fp].add(page)
    return groups


def local_templates(pages: Mapping[str, Iterable[int]], min_pages: int = 2) -> dict[int, set[str]]:
    """Local algorithm (Fig. 4): group pagelets by fingerprint; every group spanning at least
    ``min_pages`` distinct pages is a template. Returns fingerprint → owner pages."""
    return {fp: owners for fp, owners in _groups(pages).items() if len(owners) >= min_pages}


def global_templates(
    pages: Mapping[str, Iterable[int]],
    links: Mapping[str, Iterable[str]],
    min_pages: int = 2,
) -> dict[int, list[set[str]]]:
    """Global algorithm (Fig. 5): each fingerprint group is split into the connected components
    of its owner pages under hyperlinks taken as undirected edges; a component of at least
    ``min_pages`` pages is a template. Returns fingerprint → its template components."""
    neighbours: dict[str, set[str]] = defaultdict(set)
    for src, targets in links.items():
        for dst in targets:
            if dst != src:
                neighbours[src].add(dst)
                neighbours[dst].add(src)
    result: dict[int, list[set[str]]] = {}
    for fp, owners in _groups(pages).items():
        if len(owners) < min_pages:
            continue
        unseen = set(owners)
        found = []
        while unseen:
            start = unseen.pop()
            component = {start}
            frontier = [start]
            while frontier:
                page = frontier.pop()
                for other in neighbours.get(page, ()):
                    if other in unseen:
                        unseen.discard(other)
                        component.add(other)
                        frontier.append(other)
            if len(component) >= min_pages:
                found.append(component)
        if found:
            result[fp] = found
    return result
