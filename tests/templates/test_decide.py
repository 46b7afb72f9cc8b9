from __future__ import annotations

from scrapy_templates.templates.decide import Thresholds, is_template, mark_pagelets


def test_papers_rule_is_any_repeat() -> None:
    assert is_template(2, 1000, Thresholds(min_pages=2, min_share=0.0))
    assert not is_template(1, 1000, Thresholds(min_pages=2, min_share=0.0))


def test_share_keeps_rarely_shared_paragraphs_as_content() -> None:
    th = Thresholds(min_pages=2, min_share=0.1)
    assert not is_template(5, 200, th)
    assert is_template(20, 200, th)
    assert is_template(2, 6, th)  # early in a site's crawl, min_pages decides


def test_mark_pagelets_never_flags_empty_fingerprint() -> None:
    flags = mark_pagelets([0, 11, 12], {0: 99, 11: 9, 12: 1}, 10, Thresholds(2, 0.0))
    assert flags == [False, True, False]
