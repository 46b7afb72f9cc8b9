"""Per-crawler state: the layout evidence is kept for the most recently seen sites only."""

from __future__ import annotations

from scrapy.utils.test import get_crawler

from scrapy_templates.crawl.state import CrawlState
from scrapy_templates.settings import DEFAULTS


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
