"""Per-crawler state: the layout evidence is kept for the most recently seen sites only."""

from __future__ import annotations

from scrapy.utils.test import get_crawler

from scrapy_templates.crawl.state import CrawlState
from scrapy_templates.settings import DEFAULTS
from scrapy_templates.templates.region import SiteRegion


def test_layout_evidence_of_the_least_recently_seen_site_goes() -> None:
    crawler = get_crawler(settings_dict={**DEFAULTS, "TEMPLATES_LAYOUT_MAX_SITES": 2})
    state = CrawlState.of(crawler)
    a, _ = state.blocks("a.test"), state.blocks("b.test")
    state.anchors("a.test").add("page", "Some title")
    assert state.blocks("a.test") is a  # seen again: now the most recent
    state.blocks("c.test")
    assert list(state.site_blocks) == ["a.test", "c.test"]
    state.anchors("b.test")
    state.anchors("c.test")
    assert list(state.site_anchors) == ["b.test", "c.test"]
    assert state.anchors("a.test").get("page") is None, "a.test's anchors were dropped"
    assert crawler.stats is not None
    assert crawler.stats.get_value("templates/layout/sites_evicted") == 3


def _learn(region: SiteRegion, content: str, pages: int) -> None:
    """``pages`` pages whose text is in ``content``, beside a template at each level."""
    paths = [f"{content}/p", f"{content}/ul", "body/div.wrap/nav", "body/footer"]
    for _ in range(pages):
        region.add(paths, [500, 20, 0, 0], [False, False, True, True])


def test_a_layout_cluster_only_narrows_the_sites_main_path() -> None:
    state = CrawlState.of(get_crawler(settings_dict=DEFAULTS))
    site = state.region("a.test")
    _learn(site, "body/div.wrap/main", 10)
    _learn(site, "body/div.wrap/section", 10)
    assert state.main_path("a.test") == "body/div.wrap", "two layouts, one ancestor"
    blocks = state.blocks("a.test")
    _learn(blocks.region(1), "body/div.wrap/main", 10)
    assert state.main_path("a.test", 1) == "body/div.wrap", "too few pages of the cluster yet"
    _learn(blocks.region(1), "body/div.wrap/main", 10)
    assert state.main_path("a.test", 1) == "body/div.wrap/main"
    for _ in range(20):  # text straight in <body>, beside nothing the site repeats
        blocks.region(2).add(["body/p", "body/ul"], [500, 20], [False, False])
    assert blocks.region(2).main_path() == "body"
    assert state.main_path("a.test", 2) == "body/div.wrap", "never widened"
    assert state.main_path("a.test", 3) == "body/div.wrap", "a cluster without a region"
