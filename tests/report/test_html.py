"""The HTML report: its content, its chart, its bounds, and the escaping of page text."""

from __future__ import annotations

from pathlib import Path

import lxml.html
import pytest

from scrapy_templates.report.html import render_report, share_chart, write_report
from scrapy_templates.report.items import record_from_item, summarise
from scrapy_templates.templates.model import TemplateModel
from scrapy_templates.urlnorm.learn import learn_rules
from scrapy_templates.urlnorm.rules import RuleSet
from tests.report.sample_items import HOSTILE, marked, shop_items
from tests.urlnorm.url_sets import mirror_site


def _summaries(items: list[dict]) -> list:  # type: ignore[type-arg]
    return summarise([record_from_item(item, n) for n, item in enumerate(items, 1)])


@pytest.fixture(scope="module")
def ruleset() -> RuleSet:
    urls, clusters = mirror_site()
    return learn_rules(urls, clusters, site="www.example.com").ruleset


def test_chart_has_one_bar_per_page_while_pages_are_few() -> None:
    chart = share_chart([0.0, 0.5, 1.0], width=300, height=100)
    assert [b.height for b in chart.bars] == [0.0, 50.0, 100.0]
    assert [b.x for b in chart.bars] == [0.0, 100.0, 200.0]
    assert chart.mean_y == 50.0 and chart.bars[1].label == "page 2: 50% template text"


def test_chart_averages_long_crawls_into_a_bounded_number_of_bars() -> None:
    chart = share_chart([0.2] * 500 + [0.8] * 500, columns=100)
    assert len(chart.bars) == 100
    assert chart.bars[0].label == "pages 1–10: 20% template text"
    assert chart.bars[-1].label == "pages 991–1000: 80% template text"
    assert share_chart([]).bars == ()


def test_report_shows_sites_rules_templates_and_pages(ruleset: RuleSet) -> None:
    items = shop_items() + [
        marked(f"http://www.example.com/archive1/show.php?pageid=1&sid={i}", "x") for i in range(2)
    ]
    for item in items[-2:]:
        item["templates"]["site"] = "www.example.com"
    model = TemplateModel("shop.test", 4, 3, "body/main", 3, ((1, 3),), layout_clusters=2)
    items[2]["pagelets"][0]["static"] = True
    html = render_report(
        _summaries(items),
        source="items.jsonl",
        rulesets={"www.example.com": ruleset},
        models={"shop.test": model},
    )
    doc = lxml.html.fromstring(html)
    index = doc.get_element_by_id("index")
    rows = [[c.text_content() for c in tr] for tr in index.iter("tr")][1:]
    assert [r[0] for r in rows] == ["shop.test", "www.example.com", "blog.test"]
    assert rows[0][1:4] == ["5", "3", "50.0%"] and rows[1][5] == str(len(ruleset.rules))
    shop = doc.get_element_by_id("site-0")
    assert "main content region: body/main; 2 layout clusters" in " ".join(
        shop.text_content().split()
    )
    templates = [[c.text_content() for c in tr] for tr in shop.find_class("templates")[0]][1:]
    assert templates[0] == ["3", "3", "body/header", "Shop Home Cart"]
    assert len(shop.find_class("chart")[0].findall(".//rect")) == 3
    links = [a.get("href") for a in shop.find_class("pages")[0].iter("a")]
    assert links == ["#site-0-page-1", "#site-0-page-2", "#site-0-page-0"]  # flagged c first
    view = doc.get_element_by_id("site-0-page-0")
    shaded = [d.get("class") for d in view.find_class("pagelet")]
    assert shaded == ["pagelet template", "pagelet", "pagelet template"]
    assert "shared store was down" in view.text_content()
    assert "varies little across its layout" in view.find_class("pagelet")[0].text_content()
    rules = doc.get_element_by_id("site-1").find_class("rules")[0]
    described = ruleset.describe_rules()
    first = [c.text_content() for c in rules.findall("tr")[1]]
    assert first[0] == described[0]["source"] and "drop ?sid" in rules.text_content()
    assert "No URL rules given" in shop.text_content()
    # every number a reader meets is explained where it is shown
    site_text = " ".join(doc.get_element_by_id("site-1").text_content().split())
    assert (
        "support: pairs of duplicate pages" in site_text and "fpr: share of the URLs" in site_text
    )
    assert "pages: how many pages of the site held this pagelet" in " ".join(
        shop.text_content().split()
    )


def test_page_views_are_bounded_and_flagged_pages_come_first() -> None:
    items = [marked(f"http://shop.test/{i}", f"page {i}") for i in range(6)]
    items[4]["templates"]["notes"] = ["cut at 100000 tags"]
    html = render_report(_summaries(items), source="i.jsonl", page_views=2)
    doc = lxml.html.fromstring(html)
    views = {v.get("id"): v.find_class("path")[0].text_content() for v in doc.find_class("page")}
    assert views == {"site-0-page-0": "http://shop.test/4", "site-0-page-1": "http://shop.test/0"}
    assert "Page views are included for 2 of 6 marked pages" in html


def test_page_text_is_escaped_everywhere(tmp_path: Path) -> None:
    item = marked(
        "javascript:alert(1)",
        HOSTILE,
        title=HOSTILE,
        extra=[
            {"path": '"><script>alert(2)</script>', "text": HOSTILE, "pages": 1, "template": False}
        ],
    )
    item["templates"]["site"] = HOSTILE
    item["templates"]["notes"] = [HOSTILE]
    html = render_report(_summaries([item]), source=HOSTILE)
    assert "<script" not in html and "<img" not in html
    assert 'href="javascript:' not in html
    assert "&lt;script&gt;document.title=&#34;pwned&#34;&lt;/script&gt;" in html
    assert "default-src 'none'" in html
    path = tmp_path / "out" / "report.html"
    write_report(path, html)
    assert path.read_text(encoding="utf-8") == html


def test_what_one_page_adds_to_the_report_is_bounded() -> None:
    # items with long strings in a URL, a title, a path, pagelet texts, content text and a
    # note (each page view held 3 MB of them)
    huge = "x" * 200_000
    items = []
    for i in range(20):
        item = marked(
            f"http://shop.test/{i}?q={huge}",
            huge,
            title=huge,
            extra=[{"path": f"body/{huge}", "text": huge, "pages": 2, "template": True}]
            + [{"path": "body/p", "text": f"{i} {huge}", "pages": 1, "template": False}] * 12,
        )
        item["templates"]["notes"] = [huge]
        items.append(item)
    html = render_report(_summaries(items), source="big.jsonl", page_views=200)
    assert len(html) < 20 * 70_000
    doc = lxml.html.fromstring(html)
    view = doc.get_element_by_id("site-0-page-0")
    assert "more characters]" in view.find_class("content")[0].text_content()
    assert "more pagelets not shown" in view.text_content()
