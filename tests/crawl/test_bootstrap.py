"""The cold-start sample: which sites are sampled and which links are fetched."""

from __future__ import annotations

from typing import Any

from scrapy_templates.crawl.bootstrap import Bootstrap
from scrapy_templates.page import Page, parse_page
from scrapy_templates.sites import BUILTIN_SITES
from tests.crawl.conftest import templates_crawler


def _bootstrap(pages: int) -> Bootstrap:
    async def never(*args: Any) -> Any:
        raise AssertionError("nothing is fetched here")

    return Bootstrap(
        templates_crawler(),
        pages=pages,
        timeout=1,
        site_of=BUILTIN_SITES["host"],
        take=never,
        learn=never,
        count=lambda key: None,
    )


def _page(links: list[str]) -> Page:
    anchors = "".join(f'<li><a href="{href}">link {n}</a></li>' for n, href in enumerate(links))
    return parse_page(f"<html><body><ul>{anchors}</ul></body></html>", "http://s.test/home")


def test_a_site_is_sampled_while_the_store_knows_no_more_pages_than_the_sample() -> None:
    assert _bootstrap(8).wanted(1) and _bootstrap(8).wanted(8)
    assert not _bootstrap(8).wanted(9)
    assert not _bootstrap(0).wanted(1)


def test_sampled_links_are_same_site_pages_spread_over_the_page() -> None:
    links = [f"/nav{n}" for n in range(20)] + [f"/story{n}" for n in range(20)]
    links += ["http://other.test/x", "/file.pdf", "mailto:a@s.test", "/home#top", "/nav0"]
    urls = _bootstrap(4).urls(_page(links))
    assert len(urls) == 4 and len(set(urls)) == 4
    assert all(u.startswith("http://s.test/") and not u.endswith(".pdf") for u in urls)
    assert any("/nav" in u for u in urls) and any("/story" in u for u in urls)
    assert "http://s.test/home" not in urls
