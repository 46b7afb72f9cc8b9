"""Layout clusters: TF-IDF signatures of pagelet paths, incremental assignment, k-means."""

from __future__ import annotations

import math
from collections import Counter

import pytest

from scrapy_templates.templates.layout import Cluster, SiteLayouts

SHARED = ["body/header", "body/nav/ul", "body/footer/p", "body/footer/ul"]
ARTICLE = [*SHARED, "body/main/h1", "body/main/article", "body/main/article", "body/aside/ol"]
LISTING = [*SHARED, "body/main/h1", "body/main/ul.results", "body/main/div.pager"]
NO_RESULTS = [*SHARED, "body/main/h1", "body/main/p.empty", "body/main/form"]


def test_cluster_cosine_uses_the_length_kept_as_members_join() -> None:
    cluster = Cluster(0)
    members = [{"a": 0.6, "b": 0.8}, {"a": 1.0}, {"b": 0.6, "c": 0.8}]
    for vector in members:
        cluster.add(vector)
    length = math.sqrt(sum(w * w for w in cluster.total.values()))
    assert math.sqrt(cluster.square) == pytest.approx(length)
    assert cluster.cosine({"a": 2.0}, 2.0) == pytest.approx(cluster.total["a"] / length)
    assert cluster.cosine({"d": 1.0}, 1.0) == 0.0
    assert Cluster(1).cosine({"a": 1.0}, 1.0) == 0.0


def test_page_types_sharing_header_and_footer_fall_into_their_own_clusters() -> None:
    layouts = SiteLayouts()
    kinds = [ARTICLE, LISTING, ARTICLE, NO_RESULTS, ARTICLE, LISTING, NO_RESULTS] * 5
    ids = [layouts.assign(paths) for paths in kinds]
    later = [
        set(ids[i] for i in range(10, len(kinds)) if kinds[i] is kind)
        for kind in (ARTICLE, LISTING, NO_RESULTS)
    ]
    assert all(len(s) == 1 for s in later), "each type keeps one cluster once the IDF settles"
    assert len(set.union(*later)) == 3, "and the three types are apart"


def test_shared_paths_weigh_little() -> None:
    layouts = SiteLayouts()
    for paths in [ARTICLE, LISTING, NO_RESULTS] * 3:
        layouts.assign(paths)
    vector = layouts.vector(Counter(ARTICLE))
    assert vector["body/main/article"] > 10 * vector["body/header"]


def test_cluster_count_is_bounded() -> None:
    layouts = SiteLayouts(max_clusters=3)
    for n in range(10):
        layouts.assign([f"body/kind{n}/p"])
    assert len(layouts.clusters) == 3


def test_recompute_settles_clusters_formed_early_and_drops_empty_ones() -> None:
    layouts = SiteLayouts(similarity=0.99)  # strict: the young IDF splits one type in many
    for paths in [ARTICLE, [*ARTICLE, "body/main/figure"], LISTING] * 6:
        layouts.assign(paths)
    before = len(layouts.clusters)
    sizes = layouts.recompute()
    assert sum(sizes.values()) == len(layouts.recent) == 18
    assert len(layouts.clusters) <= before
    assert set(sizes) == {c.ident for c in layouts.clusters}
    listing = layouts.nearest(layouts.vector(Counter(LISTING)))[0]
    article = layouts.nearest(layouts.vector(Counter(ARTICLE)))[0]
    assert listing is not None and article is not None and listing is not article


def test_reservoir_is_bounded() -> None:
    layouts = SiteLayouts(reservoir=5)
    for _ in range(50):
        layouts.assign(ARTICLE)
    assert len(layouts.recent) == 5 and layouts.pages == 50
