"""Exported items read back, summarised per site, and looked up by URL."""

from __future__ import annotations

from pathlib import Path

import pytest

from scrapy_templates.report.items import (
    Fields,
    ItemsError,
    find_page,
    read_items,
    record_from_item,
    summarise,
)
from tests.report.sample_items import marked, shop_items, write_items


def test_a_marked_item_becomes_a_record() -> None:
    record = record_from_item(marked("http://shop.test/a", "Apples.", share=0.4), 7)
    assert record.marked and record.site == "shop.test" and record.line == 7
    assert [p.template for p in record.pagelets] == [True, False, True]
    assert (record.template_share, record.pages_seen, record.content_text) == (0.4, 3, "Apples.")
    assert record.why_flagged() is None


def test_items_not_marked_say_why() -> None:
    skipped = record_from_item(
        {"url": "http://x.test/f.pdf", "templates": {"reason": "not-html", "detail": "pdf"}}, 1
    )
    assert not skipped.marked and skipped.why_flagged() == "not marked: not-html (pdf)"
    assert skipped.site == "x.test"
    bare = record_from_item({"url": "http://x.test/"}, 2)
    assert bare.reason == "no-marks" and "'templates'" in (bare.why_flagged() or "")


def test_notes_and_local_fallback_are_reasons_to_look() -> None:
    record = record_from_item(
        marked(
            "http://shop.test/a",
            "A",
            info={"notes": ["cut at 1000 tags"], "store": "local-fallback"},
        ),
        1,
    )
    why = record.why_flagged() or ""
    assert record.marked and "cut at 1000 tags" in why and "shared store was down" in why


def test_field_names_follow_the_crawl_settings() -> None:
    item = {"link": "http://shop.test/a", "marks": {"site": "s", "template_share": 0.1}}
    record = record_from_item(item, 1, Fields(url="link", info="marks"))
    assert record.url == "http://shop.test/a" and record.site == "s" and record.marked
    with pytest.raises(ValueError, match="no URL in field 'url'"):
        record_from_item(item, 1)


def test_odd_values_in_an_item_do_not_break_the_record() -> None:
    item = {
        "url": "http://shop.test/a",
        "pagelets": [None, {"path": 3, "text": "t", "pages": True, "template": "yes"}],
        "templates": {"template_share": "high", "notes": "one"},
    }
    record = record_from_item(item, 1)
    [pagelet] = record.pagelets
    assert (pagelet.path, pagelet.pages, pagelet.template) == ("", 0, False)
    assert record.template_share == 0.0 and record.notes == []


def test_read_items_keeps_going_past_bad_lines(tmp_path: Path) -> None:
    path = write_items(tmp_path / "items.jsonl", shop_items(), "not json", "[1, 2]", "")
    records, problems = read_items(path)
    assert len(records) == 6
    assert len(problems) == 2 and problems[0].startswith(f"{path}:7:")


def test_read_items_refuses_files_with_nothing_to_read(tmp_path: Path) -> None:
    with pytest.raises(ItemsError, match="cannot read"):
        read_items(tmp_path / "missing.jsonl")
    with pytest.raises(ItemsError, match="no item with a URL"):
        read_items(write_items(tmp_path / "empty.jsonl", [], '{"title": "no url"}'))


def test_summary_per_site_ranks_template_pagelets(tmp_path: Path) -> None:
    records, _ = read_items(write_items(tmp_path / "i.jsonl", shop_items()))
    shop, blog = summarise(records)
    assert (shop.site, shop.pages, len(shop.marked), blog.site) == ("shop.test", 5, 3, "blog.test")
    assert shop.reasons == {"not-html": 1, "no-marks": 1}
    assert shop.template_share == pytest.approx(0.5)
    header, footer = shop.templates
    assert (header.text, header.pages, header.items) == ("Shop Home Cart", 3, 3)
    assert (footer.text, footer.pages) == ("© 2026 Shop", 2)
    assert [r.url.rsplit("/", 1)[1] for r, _ in shop.flagged] == ["c", "big.pdf", "raw"]
    data = shop.to_json(top=1)
    assert len(data["templates"]) == 1 and data["not_marked"] == {"not-html": 1, "no-marks": 1}
    assert blog.templates == [] and blog.template_share == 0.0


def test_find_page_exact_then_unique_part(tmp_path: Path) -> None:
    records, _ = read_items(write_items(tmp_path / "i.jsonl", shop_items()))
    found = find_page(records, "http://shop.test/b")
    assert not isinstance(found, list) and found.url == "http://shop.test/b"
    found = find_page(records, "big.pdf")
    assert not isinstance(found, list) and found.reason == "not-html"
    assert len(find_page(records, "shop.test")) == 5  # type: ignore[arg-type]
    assert find_page(records, "nowhere") == []
    found = find_page(records, "/b")  # inside three URLs, at the end of one
    assert not isinstance(found, list) and found.url == "http://shop.test/b"
