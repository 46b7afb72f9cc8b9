"""Real crawls of the demo site: learned URL rules cut duplicate downloads and lose no page."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.crawl.conftest import CrawlResult, run_crawl


def _paths(result: CrawlResult) -> list[str]:
    """The URLs of a crawl's items without their scheme and host."""
    return [urlsplit(i["url"])._replace(scheme="", netloc="").geturl() for i in result.items]


def _pages(result: CrawlResult) -> list[tuple[str, ...]]:
    from demo.site import page_key

    return [page_key(path) for path in _paths(result)]


@pytest.fixture(scope="module")
def crawls(tmp_path_factory: pytest.TempPathFactory) -> tuple[CrawlResult, CrawlResult]:
    """The demo crawl without and with the add-on, one request at a time, so that which
    rules exist when each link is followed does not depend on timing. With concurrent
    requests the outcome varies from crawl to crawl; benchmarks/urlrules.py measures it over
    several crawls (docs/url-rules.md), including pages lost."""
    from demo.site import DemoSite

    with DemoSite() as site:
        plain = run_crawl(
            tmp_path_factory.mktemp("plain"), start=site.url, ADDONS={}, CONCURRENT_REQUESTS=1
        )
        with_rules = run_crawl(
            tmp_path_factory.mktemp("rules"), start=site.url, CONCURRENT_REQUESTS=1
        )
    return plain, with_rules


def test_no_distinct_page_is_lost(crawls: tuple[CrawlResult, CrawlResult]) -> None:
    plain, with_rules = crawls
    assert set(_pages(plain)) == set(_pages(with_rules))


def test_duplicate_downloads_are_cut(crawls: tuple[CrawlResult, CrawlResult]) -> None:
    plain, with_rules = crawls
    dup_plain = len(_pages(plain)) - len(set(_pages(plain)))
    dup_rules = len(_pages(with_rules)) - len(set(_pages(with_rules)))
    assert dup_plain > 100  # the demo site is full of duplicate URLs
    # the benchmark measures the cut over several concurrent crawls; this one must at least
    # halve the duplicates
    assert dup_rules < dup_plain / 2


def test_requests_are_rewritten_before_enqueue(crawls: tuple[CrawlResult, CrawlResult]) -> None:
    plain, with_rules = crawls
    stats = with_rules.stats
    assert stats["templates/urls/rewritten"] > 0
    assert stats["templates/urls/learn_count"] >= 1
    assert stats["templates/urls/rules"] >= 1
    # fewer requests reach the scheduler at all, not only fewer downloads
    assert stats["scheduler/enqueued"] < plain.stats["scheduler/enqueued"]
    assert "URL rules of" in with_rules.log


def test_the_demos_rules_hold_where_they_are_checked(
    crawls: tuple[CrawlResult, CrawlResult],
) -> None:
    """Every rule the demo teaches is right: its print views, which name their article
    canonical and set its words in one block, hold by their words."""
    stats = crawls[1].stats
    assert stats["templates/urls/checks/held"] > 0
    assert stats.get("templates/urls/checks/failed", 0) == 0
    assert "templates/urls/rules_retracted" not in stats


def test_url_rules_off_is_plain_scrapy(tmp_path_factory: pytest.TempPathFactory) -> None:
    from demo.site import DemoSite

    with DemoSite() as site:
        off = run_crawl(tmp_path_factory.mktemp("off"), start=site.url, TEMPLATES_URL_RULES=False)
    assert not any(k.startswith("templates/urls/") for k in off.stats)
    assert len(_pages(off)) - len(set(_pages(off))) > 100


def test_repeated_links_dropped_early_change_no_download(
    tmp_path_factory: pytest.TempPathFactory, crawls: tuple[CrawlResult, CrawlResult]
) -> None:
    """With no rule learned, the URL guards drop only repeats of URLs scheduled before, each
    one a request the dupefilter would have dropped: the crawl downloads what plain Scrapy
    downloads, and every repeat is counted by one of the two."""
    from demo.site import DemoSite

    plain = crawls[0]
    with DemoSite() as site:
        early = run_crawl(
            tmp_path_factory.mktemp("repeats"),
            start=site.url,
            CONCURRENT_REQUESTS=1,
            TEMPLATES_URL_MIN_SAMPLES=10_000,
        )

    assert sorted(_paths(early)) == sorted(_paths(plain))
    stats = early.stats
    assert stats["downloader/request_count"] == plain.stats["downloader/request_count"]
    assert stats["templates/urls/repeats"] > 100
    assert (
        stats["templates/urls/repeats"] + stats.get("dupefilter/filtered", 0)
        == plain.stats["dupefilter/filtered"]
    )
    assert "templates/urls/dropped" not in stats


def test_url_rules_work_with_the_template_pipeline_disabled(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """The runtime, not the pipeline, opens the store: with the pipeline off, the rules are
    learned from what downloads alone tell (rel=canonical, redirects, identical bodies)."""
    from demo.site import DemoSite

    with DemoSite() as site:
        result = run_crawl(
            tmp_path_factory.mktemp("no-pipeline"),
            start=site.url,
            CONCURRENT_REQUESTS=1,
            ITEM_PIPELINES={"scrapy_templates.crawl.pipeline.TemplatePipeline": None},
        )
    assert result.items and not any("pagelets" in item for item in result.items)
    assert result.stats["templates/urls/samples"] > 0
    assert result.stats["templates/urls/learn_count"] >= 1
    assert result.stats["templates/urls/rules"] >= 1
    assert (
        result.stats.get("templates/urls/rewritten", 0)
        + result.stats.get("templates/urls/dropped", 0)
        > 0
    )


def test_a_session_id_site_is_crawled_once_and_no_page_is_lost(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Every link carries a fresh ``?sid=``: without rules the crawl never ends (the page
    limit stops it). Articles read alike under a large section menu, and none may merge."""
    from tests.sites.sessions import ARTICLES, SECTIONS, SessionSite, page_key

    with SessionSite() as site:
        result = run_crawl(
            tmp_path_factory.mktemp("sessions"),
            start=site.url,
            CONCURRENT_REQUESTS=1,
            CLOSESPIDER_PAGECOUNT=1000,
        )
    pages = {page_key(item["url"]) for item in result.items}
    assert len(pages) == ARTICLES + len(SECTIONS) + 1
    assert result.stats["downloader/response_count"] <= 120
    assert len(result.items) <= 90


def _catalog_rules(site_url: str) -> str:
    """A rule set "drop ``view``" on ``/*/item``, learned from a sample where every view of
    an item was the same page: true of the shop, wrong for the docs."""
    from scrapy_templates.sites import host_site
    from scrapy_templates.urlnorm.learn import learn_rules
    from tests.sites.catalog import ITEMS, SECTIONS, VIEWS

    urls, clusters = [], []
    for s, section in enumerate(SECTIONS):
        for n in range(ITEMS):
            for view in VIEWS:
                urls.append(f"{site_url}{section}/item?id={n}&view={view}")
                clusters.append(s * ITEMS + n)
    ruleset = learn_rules(urls, clusters, site=host_site(site_url)).ruleset
    assert ruleset.apply(f"{site_url}docs/item?id=1&view=grid") == f"{site_url}docs/item?id=1"
    return ruleset.dumps()


def test_a_rule_wrong_in_one_section_is_retracted_and_its_pages_fetched(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """The rule is right in the shop and wrong in the docs. The first request it turns away
    in the docs directory is checked, its page differs from the one the rule took it for, the
    rule is retracted and the requests it dropped are sent again: every docs page is
    reached."""
    from tests.sites.catalog import ITEMS, VIEWS, CatalogSite, page_key

    out = tmp_path_factory.mktemp("catalog")
    rules = out / "rules.json"
    with CatalogSite() as site:
        rules.write_text(_catalog_rules(site.url))
        result = run_crawl(
            out,
            start=site.url,
            CONCURRENT_REQUESTS=1,
            TEMPLATES_URL_RULES_FILE=str(rules),
            TEMPLATES_URL_MIN_SAMPLES=10_000,
        )
    pages = {page_key(item["url"]) for item in result.items} - {None}
    assert {p for p in pages if p[0] == "docs"} == {
        ("docs", n, v) for n in range(ITEMS) for v in VIEWS
    }
    assert len({p for p in pages if p[0] == "shop"}) == ITEMS
    stats = result.stats
    assert stats["templates/urls/rules_retracted"] == 1
    assert stats["templates/urls/checks/failed"] >= 1
    assert "templates/urls/checks/canonical_refuted" not in stats
    assert stats["templates/urls/revisited"] >= 2 * ITEMS - 1
    assert stats["templates/urls/rules"] == 0
    assert "retracted" in result.log


# Two requests at a time: ``/c`` answers a second late, so ``/b`` and ``/d`` are parsed first,
# and the page ``/target`` is first linked beyond the depth limit (from ``/d``, depth 3),
# then within it (from ``/c``, depth 2).
_CHAIN = {
    "/": ["/c", "/b"],
    "/b": ["/d"],
    "/d": ["/target?sid=x8d"],
    "/c": ["/target?sid=x8c"],
}


def _target_rules(site_url: str, path: Path) -> None:
    """Write a rule set "drop ``sid``" on ``/target``, learned from a sample where every
    session id of ``/target`` was one page and each article another."""
    from scrapy_templates.sites import host_site
    from scrapy_templates.urlnorm.learn import learn_rules

    urls = [f"{site_url}target?sid=x{n}" for n in range(20)]
    urls += [f"{site_url}article{n}?sid=y{n}" for n in range(10)]
    clusters = [0] * 20 + list(range(1, 11))
    ruleset = learn_rules(urls, clusters, site=host_site(site_url)).ruleset
    assert ruleset.apply(f"{site_url}target?sid=x8c") == f"{site_url}target"
    path.write_text(ruleset.dumps())


def _crawl_with_target_rules(out: Path, site_url: str, **settings: Any) -> CrawlResult:
    """A crawl of ``site_url`` with the rule set of :func:`_target_rules` in force, and no
    learning that could replace it."""
    _target_rules(site_url, out / "rules.json")
    return run_crawl(
        out / "rules",
        start=site_url,
        TEMPLATES_URL_RULES_FILE=str(out / "rules.json"),
        TEMPLATES_URL_MIN_SAMPLES=10_000,
        **settings,
    )


_NOT_FOUND = (404, "<html><body><h1>Not found</h1></body></html>")


class _Busy:
    """A page that answers 503 to its first ``times`` requests (threads of the server
    share it)."""

    def __init__(self, times: int) -> None:
        self.lock = threading.Lock()
        self.left = times

    def now(self) -> bool:
        with self.lock:
            self.left -= 1
            return self.left >= 0


def _page(route: str, links: list[str]) -> str:
    items = "".join(f'<li><a href="{href}">{href}</a></li>' for href in links)
    return (
        f"<html><head><title>{route}</title></head><body><h1>Page {route}</h1>"
        f"<p>What {route} says, in words of its own.</p><ul>{items}</ul></body></html>"
    )


def _chain_page(path: str) -> tuple[int, str]:
    route = path.split("?")[0]
    if route != "/target" and route not in _CHAIN:
        return _NOT_FOUND
    if route == "/c":
        time.sleep(1.0)
    return 200, _page(route, _CHAIN.get(route, []))


_START = {"/target": ["/a"], "/a": ["/target?sid=x1", "/b"], "/b": ["/target?sid=x2"]}


def _start_page(path: str) -> tuple[int, str]:
    route = path.split("?")[0]
    return (200, _page(route, _START[route])) if route in _START else _NOT_FOUND


def test_a_start_page_is_no_reason_to_drop_a_link_to_it(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """A ``CrawlSpider`` makes no item of its start response (``parse_start_url``): its
    rule's callback makes the start page's item from a link to it, which plain Scrapy
    downloads as a second request. So a start request's download does not make its page
    downloaded for the URL rules: the first link that a rule takes for it fetches it again
    (rewritten), and only later ones are dropped."""
    from demo.site import DemoSite

    out = tmp_path_factory.mktemp("start")
    with DemoSite(render_page=_start_page) as site:
        start = site.url + "target"
        common = {"CONCURRENT_REQUESTS": 1}
        plain = run_crawl(out / "plain", start=start, ADDONS={}, crawl_spider=True, **common)
        _target_rules(site.url, out / "rules.json")
        result = run_crawl(
            out / "rules",
            start=start,
            crawl_spider=True,
            TEMPLATES_URL_RULES_FILE=str(out / "rules.json"),
            TEMPLATES_URL_MIN_SAMPLES=10_000,
            **common,
        )
    assert sorted(_paths(plain)) == ["/a", "/b", "/target?sid=x1", "/target?sid=x2"]
    assert sorted(_paths(result)) == ["/a", "/b", "/target"]
    assert result.stats["templates/urls/rewritten"] == 1
    assert result.stats["templates/urls/dropped"] == 1


def test_a_request_another_middleware_drops_does_not_keep_its_page_out(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Scrapy's ``DepthMiddleware`` drops the link to ``/target`` found beyond
    ``DEPTH_LIMIT``, after the URL rules rewrote it: the page was never requested, and the
    link found within the limit later fetches it, as it does in plain Scrapy."""
    from demo.site import DemoSite

    out = tmp_path_factory.mktemp("depth")
    with DemoSite(render_page=_chain_page) as site:
        common = {"CONCURRENT_REQUESTS": 2, "DEPTH_LIMIT": 2}
        plain = run_crawl(out / "plain", start=site.url, ADDONS={}, **common)
        result = _crawl_with_target_rules(out, site.url, **common)
    assert any(urlsplit(i["url"]).path == "/target" for i in plain.items)
    assert [urlsplit(i["url"]).path for i in result.items if "target" in i["url"]] == ["/target"]
    # the link past the limit is left to DepthMiddleware; the one within it is rewritten
    assert result.stats["templates/urls/rewritten"] == 1


class _FailingCanonical:
    """``/target`` answers 500 without a query; with one, 503 the first time, then the page."""

    def __init__(self) -> None:
        self.busy = _Busy(1)

    def __call__(self, path: str) -> tuple[int, str]:
        route, _, query = path.partition("?")
        if route == "/":
            return 200, _page("/", ["/target?sid=x1"])
        if route != "/target":
            return _NOT_FOUND
        if not query:
            return 500, "<html><body>error</body></html>"
        if self.busy.now():
            return 503, "<html><body>busy</body></html>"
        return 200, _page("/target", [])


def test_a_rewrite_that_fails_falls_back_to_a_request_with_retries_of_its_own(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """The canonical URL used up its retries; the URL the spider asked for gets its own, as
    in plain Scrapy, and its page is reached."""
    from demo.site import DemoSite

    out = tmp_path_factory.mktemp("fallback")
    with DemoSite(render_page=_FailingCanonical()) as site:
        result = _crawl_with_target_rules(out, site.url)
    assert [i["url"] for i in result.items if "target" in i["url"]] == [f"{site.url}target?sid=x1"]
    assert result.stats["templates/urls/fallbacks"] == 1


class _BusyCanonical:
    """``/target`` answers 503 to its first three requests (Scrapy's two retries spent),
    then the page; ``/b`` answers a second late and links ``/target?sid=x8b``."""

    def __init__(self) -> None:
        self.busy = _Busy(3)

    def __call__(self, path: str) -> tuple[int, str]:
        route = path.partition("?")[0]
        if route == "/":
            return 200, _page("/", ["/target", "/b"])
        if route == "/b":
            time.sleep(1.0)
            return 200, _page("/b", ["/target?sid=x8b"])
        if route != "/target":
            return _NOT_FOUND
        if self.busy.now():
            return 503, "<html><body>busy</body></html>"
        return 200, _page("/target", [])


def test_a_page_whose_request_failed_is_fetched_under_its_next_url(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """``/target`` fails for good; the rules take ``/target?sid=x8b`` for its page, which is
    not on its way any more: that URL is fetched as it is, as plain Scrapy would."""
    from demo.site import DemoSite

    out = tmp_path_factory.mktemp("failed")
    with DemoSite(render_page=_BusyCanonical()) as site:
        result = _crawl_with_target_rules(out, site.url, CONCURRENT_REQUESTS=2)
    assert [i["url"] for i in result.items if "target" in i["url"]] == [f"{site.url}target?sid=x8b"]


@pytest.mark.parametrize("items_under", ["/", "/p/"])
def test_listing_pages_that_name_their_first_page_canonical_are_all_fetched(
    tmp_path_factory: pytest.TempPathFactory, items_under: str
) -> None:
    """Every page of a listing names page 1 canonical. The rule "drop ``page``" the claim
    teaches is checked: page N's content is not page 1's, whatever its ``rel=canonical``
    says, so the rule is retracted and every product, linked from one listing page only, is
    reached. A spider that makes items of products only never gives the listings' contents:
    page N is judged by where it leads, to products no other page links. Once the site's
    word proved wrong, its canonical links teach no rule: the variants of "drop ``page``"
    learned meanwhile, and the requests they turned away, are judged on the contents."""
    from tests.sites.listings import ListingSite, page_key, products

    with ListingSite() as site:
        result = run_crawl(
            tmp_path_factory.mktemp("listings"),
            start=site.url,
            items_under=items_under,
            CONCURRENT_REQUESTS=1,
        )
    pages = {page_key(item["url"]) for item in result.items}
    assert products() <= pages
    assert result.stats.get("templates/urls/checks/failed", 0) >= 1
    assert "rel=canonical links are no longer evidence" in result.log
    if items_under == "/p/":
        assert "no item, and it leads to pages the crawl never met" in result.log
    else:
        assert result.stats.get("templates/urls/checks/canonical_refuted", 0) >= 1
        assert "its rel=canonical names that page, its words do not" in result.log


class _OffsiteTarget:
    """``/`` links ``/target`` on the other name of the server's host (``localhost``) and
    ``/out/page``, which links that page again with a session id, and ``/out/more``, which
    links it with another while it is still coming (it answers a second late)."""

    def __init__(self) -> None:
        self.port = 0

    def __call__(self, path: str) -> tuple[int, str]:
        other = f"http://localhost:{self.port}"
        links = {
            "/": [f"{other}/target", "/out/page"],
            "/out/page": [f"{other}/target?sid=x1", "/out/more"],
            "/out/more": [f"{other}/target?sid=x2"],
        }
        route = path.split("?")[0]
        if route not in links and route != "/target":
            return _NOT_FOUND
        if route == "/target":
            time.sleep(1.0)
        return 200, _page(route, links.get(route, []))


@pytest.mark.parametrize(
    "settings", [{}, {"TEMPLATES_URL_DROP_REPEATS": False}, {"DUPEFILTER_DEBUG": True}]
)
def test_a_link_the_offsite_filter_turned_away_leaves_its_page_to_a_later_request(
    tmp_path_factory: pytest.TempPathFactory, settings: dict[str, Any]
) -> None:
    """Scrapy's offsite filter vetoes the first link to the other host at
    ``request_scheduled``, whose handlers all see it; the spider follows the second with
    ``allow_offsite``, and a URL rule rewrites it to the first one's URL. That page was never
    requested: it is fetched, as plain Scrapy fetches the second link — whether or not the
    add-on watches the dupefilter. The scheduler was handed that rewrite: the third link,
    found while the page is coming, is dropped as on its way."""
    from demo.site import DemoSite

    out = tmp_path_factory.mktemp("offsite")
    site_map = _OffsiteTarget()
    with DemoSite(render_page=site_map) as site:
        site_map.port = urlsplit(site.url).port or 0
        other = f"http://localhost:{site_map.port}/"
        plain = run_crawl(out / "plain", start=site.url, offsite_from="/out/", ADDONS={})
        _target_rules(other, out / "rules.json")
        result = run_crawl(
            out / "addon",
            start=site.url,
            offsite_from="/out/",
            TEMPLATES_URL_RULES_FILE=str(out / "rules.json"),
            TEMPLATES_URL_MIN_SAMPLES=10_000,
            **settings,
        )
    for crawl in (plain, result):
        assert crawl.stats["offsite/filtered"] == 1
        fetched = {urlsplit(i["url"])[1:3] for i in crawl.items}
        assert (f"localhost:{site_map.port}", "/target") in fetched
    stats = result.stats
    assert stats["templates/urls/rewritten"] == 1
    assert stats["templates/urls/dropped/requested"] == 1
    assert [urlsplit(i["url"]).path for i in result.items].count("/target") == 1
