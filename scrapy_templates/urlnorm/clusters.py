"""Duplicate clusters, the training data of the URL learner (``003_…`` §3).

Two URLs are in one cluster when their pages have the same content (the hash of the text
without its template pagelets) or the same text (markup aside), a ``rel=canonical`` link
between them on the same host (unless the site's claims are not to be trusted: a crawl found
one wrong), or a redirect from one to the other on the same host. Page
simhashes join pages only when asked (``distance``): a whole-page near-duplicate is often a
distinct page under a large shared template (two entries of a reference that differ in a few
words under the same section menu), and a rule learned from such a pair loses pages. A URL
seen without any of these is a cluster of its own: unique pages are what the
false-positive test of the learner measures rules against.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

_BLOCKS = 4
_BLOCK_BITS = 64 // _BLOCKS


@dataclass(frozen=True, slots=True)
class Sample:
    """What the crawl saw of one URL; every field but ``url`` is optional."""

    url: str
    simhash: int | None = None
    text_hash: str | None = None
    page_hash: str | None = None
    canonical: str | None = None
    redirects: tuple[str, ...] = ()
    cluster: str | None = None

    def merged(self, other: Sample) -> Sample:
        """This sample with the fields it lacks taken from ``other`` (of the same URL): the
        download's body hash and the item's simhash make one sample, not two."""
        return Sample(
            self.url,
            self.simhash if self.simhash is not None else other.simhash,
            self.text_hash or other.text_hash,
            self.page_hash or other.page_hash,
            self.canonical or other.canonical,
            self.redirects or other.redirects,
            self.cluster or other.cluster,
        )

    def to_json(self) -> str:
        data: dict[str, Any] = {"url": self.url}
        if self.simhash is not None:
            data["simhash"] = f"{self.simhash:016x}"
        for name in ("text_hash", "page_hash", "canonical", "cluster"):
            if (value := getattr(self, name)) is not None:
                data[name] = value
        if self.redirects:
            data["redirects"] = list(self.redirects)
        return json.dumps(data, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes) -> Sample:
        """Parse one sample; raises ``ValueError`` with the reason for a bad line."""
        return cls.from_record(json.loads(text))

    @classmethod
    def from_record(cls, data: Any, info_field: str = "templates") -> Sample:
        """A sample from a decoded JSON object: either a sample (``url`` plus any of the
        fields) or an item exported by a crawl with scrapy-templates (``url`` plus the
        ``info_field`` dict with ``simhash``, ``content_hash`` and ``canonical``)."""
        if not isinstance(data, dict) or not isinstance(data.get("url"), str):
            raise ValueError("a sample needs a 'url' string")
        info = data.get(info_field)
        if isinstance(info, dict) and "simhash" in info:
            data = {
                "url": data["url"],
                "simhash": info.get("simhash"),
                "text_hash": info.get("content_hash"),
                "canonical": info.get("canonical"),
            }
        simhash = data.get("simhash")
        if isinstance(simhash, str):
            simhash = int(simhash[:17], 16)
        elif simhash is not None and (isinstance(simhash, bool) or not isinstance(simhash, int)):
            raise ValueError("'simhash' must be a hex string or an integer")
        if simhash is not None and not 0 <= simhash < 2**64:
            raise ValueError("'simhash' must hold 64 bits")
        redirects = data.get("redirects", [])
        if not isinstance(redirects, list) or not all(isinstance(r, str) for r in redirects):
            raise ValueError("'redirects' must be a list of URLs")
        fields = {}
        for name in ("text_hash", "page_hash", "canonical", "cluster"):
            # samples written before the page hash was taken from the text carry a body hash
            value = data.get("body_hash") if name == "page_hash" else None
            value = data.get(name, value)
            if value is not None and not isinstance(value, (str, int)):
                raise ValueError(f"{name!r} must be a string")
            fields[name] = None if value is None else str(value)
        return cls(data["url"], simhash, redirects=tuple(redirects), **fields)


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def add(self, item: str) -> None:
        self.parent.setdefault(item, item)

    def find(self, item: str) -> str:
        root = item
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[item] != root:
            self.parent[item], item = root, self.parent[item]
        return root

    def union(self, a: str, b: str) -> None:
        self.add(a)
        self.add(b)
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def _host(url: str) -> str:
    try:
        return urlsplit(url).netloc.lower()
    except ValueError:
        return ""


def near_duplicate_pairs(hashes: Sequence[int], distance: int) -> Iterable[tuple[int, int]]:
    """Index pairs of distinct hash values within ``distance`` bits (``distance`` < 4)."""
    if distance >= _BLOCKS:
        raise ValueError(f"simhash distance must be below {_BLOCKS}")
    seen: set[tuple[int, int]] = set()
    for block in range(_BLOCKS):
        shift = block * _BLOCK_BITS
        buckets: dict[int, list[int]] = defaultdict(list)
        for i, value in enumerate(hashes):
            buckets[(value >> shift) & 0xFFFF].append(i)
        for members in buckets.values():
            for a_pos, a in enumerate(members):
                for b in members[a_pos + 1 :]:
                    if (a, b) not in seen and (hashes[a] ^ hashes[b]).bit_count() <= distance:
                        seen.add((a, b))
                        yield a, b


def named_urls(sample: Sample, *, canonical: bool = True, host: str | None = None) -> list[str]:
    """The other URLs of ``sample``'s host that the site names for its page: its
    ``rel=canonical`` (unless ``canonical`` is false) and the URLs that redirected to it.
    ``host``: the sample's own, when known."""
    own = _host(sample.url) if host is None else host
    return [
        other
        for other in (sample.canonical if canonical else None, *sample.redirects)
        if other and other != sample.url and _host(other) == own
    ]


def duplicate_clusters(
    samples: Iterable[Sample], *, distance: int | None = None, canonical: bool = True
) -> tuple[list[str], list[int]]:
    """Distinct URLs of ``samples`` and the duplicate-cluster number of each; ``distance``:
    pages whose simhashes differ in at most this many bits are joined too (``None``: page
    simhashes are not duplicate evidence); ``canonical``: whether a ``rel=canonical`` link
    joins two pages."""
    uf = _UnionFind()
    by_key: dict[tuple[str, str], str] = {}
    simhashes: dict[int, str] = {}
    for s in samples:
        uf.add(s.url)
        host = _host(s.url)
        for kind, key in (
            ("text", s.text_hash),
            ("page", s.page_hash),
            ("cluster", s.cluster),
        ):
            if key is not None:
                first = by_key.setdefault((kind, key), s.url)
                uf.union(first, s.url)
        if s.simhash is not None and distance is not None:
            uf.union(simhashes.setdefault(s.simhash, s.url), s.url)
        for other in named_urls(s, canonical=canonical, host=host):
            uf.union(other, s.url)
    values = list(simhashes)
    if distance:
        for a, b in near_duplicate_pairs(values, distance):
            uf.union(simhashes[values[a]], simhashes[values[b]])
    urls = sorted(uf.parent)
    roots: dict[str, int] = {}
    clusters = [roots.setdefault(uf.find(u), len(roots)) for u in urls]
    return urls, clusters


def canonical_votes(
    samples: Iterable[Sample], urls: Sequence[str], *, canonical: bool = True
) -> list[int]:
    """For each of ``urls``: how often the site named it the address of a page — a sample
    whose ``rel=canonical`` it is (unless ``canonical`` is false), and a redirect of the
    same host that ended on it."""
    index = {u: i for i, u in enumerate(urls)}
    votes = [0] * len(urls)
    for s in samples:
        if canonical and s.canonical and (i := index.get(s.canonical)) is not None:
            votes[i] += 1
        if (i := index.get(s.url)) is not None:
            host = _host(s.url)
            votes[i] += sum(1 for r in s.redirects if r != s.url and _host(r) == host)
    return votes
