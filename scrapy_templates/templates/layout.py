"""Layout clusters: a site's pages grouped by the shape of their markup (``004_…`` §V).

Thor represents a page by its tag-tree signature — its tags weighted by TF-IDF,
``w = log(tf + 1) · log((n + 1) / n_k)`` over the ``n`` pages seen, ``n_k`` of them holding
the tag — and clusters the signatures by cosine similarity with k-means. Here the terms are
the pages' pagelet tag paths (``body/div#page/aside#sidebar/ol``), the layout blocks of
Webstemmer (``001_…`` step 1): finer than bare tags, and already at hand from the partition.
Paths on every page weigh almost nothing, so an article and a "no results" page that share
header, menu and footer still fall apart on the blocks only one of them has.

Clustering is incremental, as a crawl needs: a new page joins the nearest cluster when its
cosine to the centroid reaches ``similarity``, or starts a cluster (at most ``max_clusters``).
:meth:`SiteLayouts.recompute` reruns k-means over a bounded reservoir of recent pages with the
current centroids as seeds, so clusters formed while the IDF was young settle; the relearning
extension calls it.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from operator import mul

Vector = dict[str, float]


def _norm(vector: Mapping[str, float]) -> float:
    return math.sqrt(sum(v * v for v in vector.values()))


@dataclass
class Cluster:
    """A layout cluster: the sum of its members' unit vectors (the centroid's direction), its
    squared length (kept as members join, so a comparison walks the page's terms only) and its
    size."""

    ident: int
    total: Vector = field(default_factory=dict)
    pages: int = 0
    square: float = 0.0

    def add(self, vector: Mapping[str, float]) -> None:
        self.pages += 1
        total = self.total
        for term, weight in vector.items():
            old = total.get(term, 0.0)
            total[term] = new = old + weight
            self.square += new * new - old * old

    def cosine(self, vector: Mapping[str, float], norm: float) -> float:
        """Cosine of the centroid and ``vector`` (whose length is ``norm``)."""
        dot = sum(map(mul, vector.values(), map(self.total.get, vector, repeat(0.0))))
        norms = norm * math.sqrt(max(self.square, 0.0))
        return dot / norms if norms else 0.0


@dataclass
class SiteLayouts:
    """The layout clusters of one site."""

    similarity: float = 0.5
    max_clusters: int = 12
    reservoir: int = 300
    max_terms: int = 5_000
    pages: int = 0
    df: Counter[str] = field(default_factory=Counter)
    clusters: list[Cluster] = field(default_factory=list)
    recent: list[Counter[str]] = field(default_factory=list)
    rng: random.Random = field(default_factory=lambda: random.Random(0))
    _next_ident: int = 0

    def vector(self, terms: Counter[str]) -> Vector:
        """The TF-IDF signature of a page's term counts, as a unit vector."""
        n = max(self.pages, 1)
        vector = {
            t: math.log(tf + 1) * math.log((n + 1) / max(self.df.get(t, 0), 1))
            for t, tf in terms.items()
        }
        norm = _norm(vector)
        return {t: w / norm for t, w in vector.items()} if norm else vector

    def nearest(self, vector: Mapping[str, float]) -> tuple[Cluster | None, float]:
        best, best_sim = None, -1.0
        norm = _norm(vector)
        for cluster in self.clusters:
            sim = cluster.cosine(vector, norm)
            if sim > best_sim:
                best, best_sim = cluster, sim
        return best, best_sim

    def cluster_of(self, paths: Sequence[str]) -> int | None:
        """The id of the layout cluster a page of these pagelet paths is nearest, recording
        nothing (``None`` while there is none)."""
        cluster, _ = self.nearest(self.vector(Counter(paths)))
        return None if cluster is None else cluster.ident

    def assign(self, paths: Sequence[str]) -> int:
        """Record a page by its pagelet paths; the id of the layout cluster it joins."""
        terms = Counter(paths)
        self.pages += 1
        for term in terms:
            if term in self.df or len(self.df) < self.max_terms:
                self.df[term] += 1
        if len(self.recent) < self.reservoir:
            self.recent.append(terms)
        else:
            slot = self.rng.randrange(self.pages)
            if slot < self.reservoir:
                self.recent[slot] = terms
        vector = self.vector(terms)
        cluster, sim = self.nearest(vector)
        if cluster is None or (sim < self.similarity and len(self.clusters) < self.max_clusters):
            cluster = Cluster(self._next_ident)
            self._next_ident += 1
            self.clusters.append(cluster)
        cluster.add(vector)
        return cluster.ident

    def recompute(self, rounds: int = 5) -> dict[int, int]:
        """k-means over the recent pages, seeded with the current centroids, until no page
        changes cluster (at most ``rounds`` times); clusters left empty are dropped. Returns
        how many recent pages each remaining cluster holds."""
        vectors = [self.vector(terms) for terms in self.recent]
        previous: list[int] = []
        for _ in range(rounds):
            chosen = []
            for vector in vectors:
                cluster, _ = self.nearest(vector)
                chosen.append(cluster.ident if cluster is not None else -1)
            if chosen == previous:
                break
            previous = chosen
            fresh = {c.ident: Cluster(c.ident) for c in self.clusters}
            for vector, ident in zip(vectors, chosen, strict=True):
                fresh[ident].add(vector)
            self.clusters = [c for c in fresh.values() if c.pages]
        return {c.ident: c.pages for c in self.clusters}
