"""A process's evidence of its sites: bounded per site, read by the decision, learned after."""

from __future__ import annotations

import functools

from scrapy_templates.page import parse_page
from scrapy_templates.sites import page_id
from scrapy_templates.templates.evidence import Evidence
from scrapy_templates.templates.layout import SiteLayouts
from scrapy_templates.templates.model import TemplateModel
from scrapy_templates.templates.variability import LayoutBlocks


def _evidence(max_sites: int = 100) -> Evidence:
    return Evidence(
        main_share=0.9,
        layouts=SiteLayouts,
        blocks=functools.partial(LayoutBlocks, min_pages=2),
        max_sites=max_sites,
    )


def test_layout_evidence_of_the_least_recently_seen_site_goes() -> None:
    evidence = _evidence(max_sites=2)
    a, _ = evidence.blocks("a.test"), evidence.blocks("b.test")
    evidence.anchors("a.test").add("page", "Some title")
    assert evidence.blocks("a.test") is a  # seen again: now the most recent
    evidence.blocks("c.test")
    assert list(evidence.site_blocks) == ["a.test", "c.test"]
    evidence.anchors("b.test")
    evidence.anchors("c.test")
    assert list(evidence.site_anchors) == ["b.test", "c.test"]
    assert evidence.anchors("a.test").get("page") is None, "a.test's anchors were dropped"
    assert evidence.evicted == 3


def test_a_published_model_learned_from_more_pages_gives_the_main_path() -> None:
    evidence = _evidence()
    site = evidence.site("a.test")
    assert site.main_path() is None
    evidence.models["a.test"] = TemplateModel("a.test", 1, 50, "body/div#main", 50)
    assert evidence.site("a.test").main_path() == "body/div#main"


def test_learning_a_page_adds_its_content_links_as_anchors_and_its_text_to_the_region() -> None:
    evidence = _evidence()
    html = (
        "<html><body><div id=nav><a href=/a>Alpha page</a> <a href=/b>Beta page</a>"
        " <a href=/c>Gamma page</a></div><div id=main><p>Words of the page itself, and a"
        " <a href='/d'>Delta page</a> and a <a href='#top'>Back to top</a>.</p></div>"
        "</body></html>"
    )
    page = parse_page(html, "http://a.test/x")
    nav = [p.path.endswith("div#nav") for p in page.pagelets]
    site = evidence.site("a.test")
    site.learn(page, nav, main_share=0.9)
    assert site.anchors.get(page_id("http://a.test/d")) == "Delta page"
    assert site.anchors.get(page_id("http://a.test/a")) is None, "a template link names no page"
    assert site.anchors.get(page_id("http://a.test/x")) is None, "a link to itself names nothing"
    assert site.region.pages == 1
