"""In-process store: the embedded default. Exact, fast, and private to one crawler process.

Given a ``path`` (the add-on uses ``JOBDIR``), it loads its state from that JSON file when
opened and writes it back when closed, so a second crawl on the same machine starts with the
counts, samples and publications of the first.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scrapy_templates.store.base import Observation, StoreError

_FORMAT = "scrapy-templates/memory-store/1"


@dataclass
class _Components:
    """Union-find over the owner pages of one fingerprint (000_… §3.2, Fig. 5 steps 3–5, kept
    incrementally: each hyperlink between two owners is a union)."""

    parent: dict[str, str] = field(default_factory=dict)
    size: dict[str, int] = field(default_factory=dict)
    largest: str = ""

    def find(self, page: str) -> str:
        root = page
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[page] != root:  # path compression
            self.parent[page], page = root, self.parent[page]
        return root

    def add(self, page: str) -> None:
        self.parent[page] = page
        self.size[page] = 1
        if not self.largest:
            self.largest = page

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return
        if self.size[ra] < self.size[rb]:
            ra, rb = rb, ra
        self.parent[rb] = ra
        self.size[ra] += self.size.pop(rb)
        if self.size[ra] >= self.size.get(self.find(self.largest), 0):
            self.largest = ra

    def component_size(self, page: str) -> int:
        return self.size[self.find(page)] if page in self.parent else 1


@dataclass
class _Site:
    pages: set[str] = field(default_factory=set)
    contents: set[str] = field(default_factory=set)
    counted: int = 0
    counts: dict[int, int] = field(default_factory=dict)
    out_links: dict[str, set[str]] = field(default_factory=dict)
    in_links: dict[str, set[str]] = field(default_factory=dict)
    components: dict[int, _Components] = field(default_factory=dict)
    url_samples: list[str] = field(default_factory=list)
    url_offered: int = 0
    published: dict[str, tuple[int, str]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """Plain JSON data (fingerprints as 16 hex digits). The global algorithm's links and
        components are not kept: they are rebuilt from the pages of the next crawl."""
        return {
            "pages": sorted(self.pages),
            "contents": sorted(self.contents),
            "counted": self.counted,
            "counts": {f"{fp:016x}": n for fp, n in self.counts.items()},
            "url_samples": self.url_samples,
            "url_offered": self.url_offered,
            "published": {kind: list(pair) for kind, pair in self.published.items()},
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> _Site:
        return cls(
            pages=set(map(str, data["pages"])),
            contents=set(map(str, data["contents"])),
            counted=int(data["counted"]),
            counts={int(fp, 16): int(n) for fp, n in data["counts"].items()},
            url_samples=[str(x) for x in data["url_samples"]],
            url_offered=int(data["url_offered"]),
            published={k: (int(v), str(d)) for k, (v, d) in data["published"].items()},
        )


class MemoryStore:
    """Counters in a dict per site; the default store when no Redis is configured.

    ``max_links`` bounds the links kept per page (in each direction) and ``max_owners`` the
    owner pages tracked per fingerprint for the global algorithm; a fingerprint past that bound
    adds new owners to its largest component (a template that large is connected in practice).
    """

    builtin_name = "memory"  # its dotted path stands for TEMPLATES_STORE = "memory"

    def __init__(
        self, *, max_links: int = 200, max_owners: int = 256, path: str | Path | None = None
    ) -> None:
        self.max_links = max_links
        self.max_owners = max_owners
        self.path = Path(path) if path else None
        self._sites: dict[str, _Site] = {}
        self._epoch = 0
        self._locks: dict[str, tuple[str, float]] = {}

    async def open(self) -> None:
        if self.path is None or not self.path.exists():
            return
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            if data.get("format") != _FORMAT:
                raise ValueError(f"format is {data.get('format')!r}, not {_FORMAT!r}")
            self._sites = {site: _Site.from_json(d) for site, d in data["sites"].items()}
            self._epoch = int(data["epoch"])
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise StoreError(f"cannot load the store saved in {self.path}: {exc}") from exc

    async def close(self) -> None:
        if self.path is None:
            return
        data = {
            "format": _FORMAT,
            "epoch": self._epoch,
            "sites": {site: state.to_json() for site, state in self._sites.items()},
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_suffix(".partial")
        partial.write_text(json.dumps(data), encoding="utf-8")
        os.replace(partial, self.path)  # a crash while writing leaves the previous file

    async def ping(self) -> None:
        return None

    async def sites(self) -> list[str]:
        return sorted(self._sites)

    async def counts(self, site: str) -> tuple[int, dict[int, int]]:
        state = self._sites.get(site)
        return (state.counted, dict(state.counts)) if state else (0, {})

    async def prune(self, site: str, below: int = 2) -> int:
        state = self._sites.get(site)
        if state is None:
            return 0
        ones = [fp for fp, n in state.counts.items() if n < below]
        for fp in ones:
            del state.counts[fp]
        return len(ones)

    async def publish(self, site: str, kind: str, version: int, document: str) -> bool:
        state = self._sites.setdefault(site, _Site())
        current = state.published.get(kind)
        if current is not None and current[0] >= version:
            return False
        state.published[kind] = (version, document)
        self._epoch += 1
        return True

    async def published(self, site: str, kind: str) -> tuple[int, str] | None:
        state = self._sites.get(site)
        return state.published.get(kind) if state else None

    async def epoch(self) -> int:
        return self._epoch

    async def acquire(self, name: str, owner: str, ttl: float) -> bool:
        now = time.monotonic()
        holder = self._locks.get(name)
        if holder is not None and holder[0] != owner and holder[1] > now:
            return False
        self._locks[name] = (owner, now + ttl)
        return True

    async def release(self, name: str, owner: str) -> None:
        holder = self._locks.get(name)
        if holder is not None and holder[0] == owner:
            del self._locks[name]

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
        state = self._sites.setdefault(site, _Site())
        new = page_id not in state.pages and content_key not in state.contents
        state.pages.add(page_id)
        if content_key:
            state.contents.add(content_key)
        if new:
            state.counted += 1
            counts = state.counts
            for fp in fingerprints:
                counts[fp] = counts.get(fp, 0) + 1
            if components:
                self._link(state, page_id, links)
                for fp in fingerprints:
                    self._join(state, fp, page_id)
        return self._answer(state, page_id, fingerprints, components, new)

    async def lookup(
        self,
        site: str,
        page_id: str,
        fingerprints: Sequence[int],
        *,
        components: bool = False,
    ) -> Observation:
        state = self._sites.get(site) or _Site()
        return self._answer(state, page_id, fingerprints, components, False)

    async def add_url_samples(
        self, site: str, samples: Sequence[str], cap: int, draws: Sequence[float]
    ) -> int:
        state = self._sites.setdefault(site, _Site())
        for sample, draw in zip(samples, draws, strict=True):
            state.url_offered += 1
            if len(state.url_samples) < cap:
                state.url_samples.append(sample)
            elif (slot := int(draw * state.url_offered)) < cap:
                state.url_samples[slot] = sample
        return state.url_offered

    async def url_samples(self, site: str, most: int | None = None) -> list[str]:
        state = self._sites.get(site)
        return list(state.url_samples[:most]) if state else []

    def _answer(
        self, state: _Site, page_id: str, fingerprints: Sequence[int], components: bool, new: bool
    ) -> Observation:
        counts = [state.counts.get(fp, 0) for fp in fingerprints]
        sizes = []
        if components:
            for fp in fingerprints:
                comp = state.components.get(fp)
                sizes.append(comp.component_size(page_id) if comp else 1)
        return Observation(state.counted, counts, sizes, new)

    def _link(self, state: _Site, page_id: str, links: Iterable[str]) -> None:
        out = state.out_links.setdefault(page_id, set())
        for target in links:
            if target == page_id or len(out) >= self.max_links:
                continue
            out.add(target)
            incoming = state.in_links.setdefault(target, set())
            if len(incoming) < self.max_links:
                incoming.add(page_id)

    def _join(self, state: _Site, fp: int, page_id: str) -> None:
        comp = state.components.setdefault(fp, _Components())
        if len(comp.parent) >= self.max_owners:
            comp.add(page_id)
            comp.union(comp.largest, page_id)
            return
        comp.add(page_id)
        neighbours = state.out_links.get(page_id, set()) | state.in_links.get(page_id, set())
        owners = comp.parent
        if len(neighbours) > len(owners):
            linked = [q for q in owners if q in neighbours]
        else:
            linked = [q for q in neighbours if q in owners]
        for other in linked:
            comp.union(page_id, other)
