"""The URL-rule middlewares and their shared state, without a crawl."""

from __future__ import annotations

import dataclasses
import json
import logging
import random
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from scrapy import Request
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import HtmlResponse, Response

from scrapy_templates.crawl import urlsampling
from scrapy_templates.crawl.middlewares import (
    CHECK,
    DEFERRED,
    ORIGINAL_URL,
    DuplicateResponse,
    UrlRulesDownloaderMiddleware,
    UrlRulesSpiderMiddleware,
)
from scrapy_templates.crawl.urlrules import UrlRules
from scrapy_templates.store.memory import MemoryStore
from scrapy_templates.urlnorm.checks import Check
from scrapy_templates.urlnorm.clusters import Sample
from scrapy_templates.urlnorm.guard import HostGuard, url_key
from scrapy_templates.urlnorm.learn import learn_rules
from scrapy_templates.urlnorm.rules import RuleSet
from scrapy_templates.urlnorm.samples import decode_sample, encode_sample, page_hash
from tests.crawl.conftest import runtime, templates_crawler
from tests.urlnorm.url_sets import mirror_site

SITE = "www.example.com"
SID_URL = "http://www.example.com/archive2/17/display?sid=abc"


def _guard(rules: UrlRules, url: str) -> HostGuard[Request]:
    guard = rules.guards.guard(url)
    assert guard is not None
    return guard


def _crawler(**settings: Any) -> Any:
    return templates_crawler(**settings)


def _ruleset() -> RuleSet:
    urls, clusters = mirror_site()
    return learn_rules(urls, clusters, site=SITE).ruleset


@pytest.fixture
def crawler() -> Any:
    crawler = _crawler(TEMPLATES_URL_DEFER_PRIORITY=100)
    runtime(crawler).urls.guards.install(_ruleset(), source="test")
    return crawler


def test_spider_middleware_rewrites_before_enqueue(crawler: Any) -> None:
    mw = UrlRulesSpiderMiddleware.from_crawler(crawler)
    out = mw.get_processed_request(Request(SID_URL), None)
    assert out is not None and out.url != SID_URL
    assert out.url == runtime(crawler).urls.guards.canonical(SID_URL)
    assert out.meta[ORIGINAL_URL] == SID_URL
    assert crawler.stats.get_value("templates/urls/rewritten") == 1


def test_spider_middleware_drops_what_was_downloaded(crawler: Any) -> None:
    rules = runtime(crawler).urls
    canonical = rules.guards.canonical(SID_URL)
    rules.note_response(canonical, canonical, b"<html>" + b"x" * 1000, (), html=True)
    mw = UrlRulesSpiderMiddleware.from_crawler(crawler)
    assert mw.get_processed_request(Request(SID_URL), None) is None
    assert crawler.stats.get_value("templates/urls/dropped") == 1
    assert crawler.stats.get_value("templates/urls/dropped/fetched") == 1
    assert crawler.stats.get_value("templates/urls/bytes_saved") == 1006
    # the same link again: Scrapy's dupefilter would have dropped it, so nothing is saved
    assert mw.get_processed_request(Request(SID_URL), None) is None
    assert crawler.stats.get_value("templates/urls/dropped") == 2
    assert crawler.stats.get_value("templates/urls/dropped/repeats") == 1
    assert crawler.stats.get_value("templates/urls/bytes_saved") == 1006


def test_opt_out_and_unknown_urls_pass_untouched(crawler: Any) -> None:
    mw = UrlRulesSpiderMiddleware.from_crawler(crawler)
    kept = Request(SID_URL, meta={"dont_normalize": True})
    assert mw.get_processed_request(kept, None) is kept
    other = Request("http://other.example/a?sid=1")
    assert mw.get_processed_request(other, None) is other


async def test_downloader_middleware_drops_or_reschedules(crawler: Any) -> None:
    mw = UrlRulesDownloaderMiddleware.from_crawler(crawler)
    rescheduled = await mw.process_request(Request(SID_URL))
    assert isinstance(rescheduled, Request) and rescheduled.url != SID_URL
    assert await mw.process_request(rescheduled) is None  # the canonical URL itself passes
    rules = runtime(crawler).urls
    rules.note_response(rescheduled.url, rescheduled.url, b"<html></html>", (), html=True)
    with pytest.raises(IgnoreRequest):
        await mw.process_request(Request(SID_URL.replace("abc", "zzz")))
    assert crawler.stats.get_value("templates/urls/rescheduled") == 1
    assert crawler.stats.get_value("templates/urls/dropped") == 1


async def test_downloader_middleware_records_html_responses() -> None:
    crawler = _crawler()
    rules = runtime(crawler).urls
    store = MemoryStore()
    rules.attach(store, "test")
    mw = UrlRulesDownloaderMiddleware.from_crawler(crawler)
    body = b'<html><head><link rel="canonical" href="/a"></head><body>x</body></html>'
    request = Request("http://h.example/a?sid=2", meta={"redirect_urls": ["http://h.example/old"]})
    response = HtmlResponse(request.url, body=body, request=request)
    assert await mw.process_response(request, response) is response
    [sample] = [decode_sample("h.example", s) for s in await store.url_samples("h.example")]
    assert sample.canonical == "http://h.example/a"
    assert sample.redirects == ("http://h.example/old",)
    assert rules.guards.was_fetched("http://h.example/a?sid=2")


async def test_a_download_that_repeats_a_page_by_rule_and_text_makes_no_item(
    crawler: Any,
) -> None:
    """A request queued before the rule reaches the downloader and comes back: the rule
    takes it for a page downloaded already, and its text is that page's, so it ends before
    the spider; one whose text differs goes on (the rule may be wrong there)."""
    rules = runtime(crawler).urls
    rules.attach(MemoryStore(), "test")
    mw = UrlRulesDownloaderMiddleware.from_crawler(crawler)
    canonical = rules.guards.canonical(SID_URL)
    body = b"<html><body>" + b"Display of item 17. " * 10 + b"</body></html>"
    first = Request(canonical)
    assert await mw.process_response(first, HtmlResponse(canonical, body=body)) is not None
    other = b"<html><body>" + b"Display of item 18. " * 10 + b"</body></html>"
    for sid, text, repeated in [("s1", body, True), ("s2", other, False)]:
        url = SID_URL.replace("abc", sid)
        request = Request(url)
        response = HtmlResponse(url, body=text, request=request)
        if repeated:
            with pytest.raises(DuplicateResponse):
                await mw.process_response(request, response)
        else:
            assert await mw.process_response(request, response) is response
    assert crawler.stats.get_value("templates/urls/repeated_downloads") == 1
    # the same text under a URL no rule rewrites is another page: it goes on
    plain = Request("http://www.example.com/about")
    assert await mw.process_response(plain, HtmlResponse(plain.url, body=body)) is not None


@pytest.mark.parametrize(
    "exempt",
    [
        {"meta": {"dont_normalize": True}},
        {"dont_filter": True},
        {"method": "POST", "body": b"q=17"},
    ],
)
async def test_a_request_the_rules_never_turn_away_never_ends_as_a_repeat(
    crawler: Any, exempt: dict[str, Any]
) -> None:
    rules = runtime(crawler).urls
    rules.attach(MemoryStore(), "test")
    mw = UrlRulesDownloaderMiddleware.from_crawler(crawler)
    canonical = rules.guards.canonical(SID_URL)
    body = b"<html><body>" + b"Display of item 17. " * 10 + b"</body></html>"
    await mw.process_response(Request(canonical), HtmlResponse(canonical, body=body))
    request = Request(SID_URL.replace("abc", "s1"), **exempt)
    response = HtmlResponse(request.url, body=body, request=request)
    assert await mw.process_response(request, response) is response
    assert not crawler.stats.get_value("templates/urls/repeated_downloads")


async def test_an_error_page_is_no_sample() -> None:
    """Error pages read alike: a hundred URLs answering "Unknown commit" are not one page.
    Only the successful download is sampled."""
    crawler = _crawler()
    rules = runtime(crawler).urls
    store = MemoryStore()
    rules.attach(store, "test")
    mw = UrlRulesDownloaderMiddleware.from_crawler(crawler)
    error = b"<html><body>404 - Unknown commit object" + b" " * 100 + b"</body></html>"
    page = b"<html><body>" + b"Change 17: touch mod1. " * 10 + b"</body></html>"
    for url, body, status in [
        ("http://h.example/commit?h=dead", error, 404),
        ("http://h.example/commit?h=beef", error, 404),
        ("http://h.example/commit?h=c17", page, 200),
    ]:
        request = Request(url)
        response = HtmlResponse(url, body=body, request=request, status=status)
        assert await mw.process_response(request, response) is response
    [sample] = [decode_sample("h.example", s) for s in await store.url_samples("h.example")]
    assert sample.url == "http://h.example/commit?h=c17"
    assert sample.page_hash == page_hash(page, 5_000_000)


@pytest.mark.parametrize("start", [False, True])
async def test_a_page_a_retry_downloaded_stands_for_its_links(start: bool) -> None:
    """Scrapy's retry of a link is a copy sent past the dupefilter (``dont_filter``): its
    page is downloaded for the rules as the link's would be, and a rule learned afterwards
    drops a link to another URL of it. A start request, sent past the dupefilter from the
    first, makes its page downloaded for no link: a ``CrawlSpider`` makes no item of it."""
    crawler = _crawler()
    rules = runtime(crawler).urls
    downloader = UrlRulesDownloaderMiddleware.from_crawler(crawler)
    spider_side = UrlRulesSpiderMiddleware.from_crawler(crawler)
    request = Request(SID_URL, dont_filter=start)
    rules.guards.scheduled(request)  # it reaches the scheduler
    retry = request.copy()  # after a 503, as RetryMiddleware makes it
    retry.dont_filter = True
    body = b"<html><body>" + b"The display of archive 17, in words of its own. " * 4 + b"</body>"
    response = HtmlResponse(SID_URL, body=body + b"</html>", request=retry)
    assert await downloader.process_response(retry, response) is response
    rules.guards.install(_ruleset(), source="test")
    other = spider_side.get_processed_request(Request(SID_URL.replace("abc", "x9")), None)
    if start:
        assert other is not None and other.url == rules.guards.canonical(SID_URL)
    else:
        assert other is None
        assert crawler.stats.get_value("templates/urls/dropped/fetched") == 1


async def test_a_drop_in_the_downloader_is_no_download_error() -> None:
    """Scrapy's ``DownloaderStats`` counts every exception a downloader middleware raises; a
    request dropped as a duplicate is counted as a drop, not as a failed download."""
    from scrapy.core.downloader.middleware import DownloaderMiddlewareManager

    stats_only = {"scrapy.downloadermiddlewares.stats.DownloaderStats": 850}
    crawler = _crawler(DOWNLOADER_MIDDLEWARES_BASE=stats_only)
    rules = runtime(crawler).urls
    rules.guards.install(_ruleset(), source="test")
    canonical = rules.guards.canonical(SID_URL)
    rules.note_response(canonical, canonical, b"<html>" + b"x" * 1000, (), html=True)
    manager = DownloaderMiddlewareManager.from_crawler(crawler)
    assert any(isinstance(m, UrlRulesDownloaderMiddleware) for m in manager.middlewares)

    async def download(request: Request) -> Response:
        raise AssertionError("a dropped request was downloaded")

    with pytest.raises(IgnoreRequest):
        await manager.download_async(download, Request(SID_URL, meta={DEFERRED: True}))
    stats = crawler.stats.get_stats()
    assert stats["templates/urls/dropped"] == 1
    assert not [k for k in stats if k.startswith("downloader/exception")]


def test_disabled_by_setting() -> None:
    crawler = _crawler(TEMPLATES_URL_RULES=False)
    with pytest.raises(NotConfigured):
        UrlRulesSpiderMiddleware.from_crawler(crawler)
    with pytest.raises(NotConfigured):
        UrlRulesDownloaderMiddleware.from_crawler(crawler)


def test_a_refused_rule_set_leaves_the_previous_one(crawler: Any, caplog: Any) -> None:
    rules = runtime(crawler).urls
    before = rules.guards.canonical(SID_URL)
    bad = RuleSet(SITE, 9, _ruleset().nodes, {})
    bad.nodes[0] = bad.nodes[0].__class__(5, {}, None, {}, None, frozenset(), frozenset())
    rules.guards.install(bad, source="test")
    assert rules.guards.canonical(SID_URL) == before
    assert crawler.stats.get_value("templates/urls/rules_refused") == 1
    assert "refused" in caplog.text


def test_rules_file_is_loaded_at_start(tmp_path: Path) -> None:
    path = tmp_path / "rules.json"
    path.write_text(json.dumps([_ruleset().to_json()]))
    crawler = _crawler(TEMPLATES_URL_RULES_FILE=str(path))
    assert runtime(crawler).urls.guards.canonical(SID_URL) != SID_URL


async def test_learning_starts_after_enough_samples() -> None:
    crawler = _crawler(TEMPLATES_URL_MIN_SAMPLES=20)
    rules = runtime(crawler).urls
    store = MemoryStore()
    rules.attach(store, "test")
    urls, clusters = mirror_site()
    for url, cluster in zip(urls, clusters, strict=True):
        simhash = random.Random(cluster).getrandbits(64)  # far apart for distinct pages
        rules.add_page(url, simhash, f"{cluster:016x}")
        await rules.flush()
    await rules.wait_learning()
    assert crawler.stats.get_value("templates/urls/learn_count") >= 1
    assert rules.guards.canonical(SID_URL) != SID_URL
    assert crawler.stats.get_value("templates/urls/rules") >= 1


@pytest.mark.parametrize("young", [False, True])
async def test_evidence_is_batched_only_with_rules_and_past_a_young_sample(
    young: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Until a host has a rule, each sample goes to the store at once (it decides when the
    first rules come); a rule set learned with no rule in it changes nothing of that. A host
    with rules batches its samples once its sample is no longer young."""
    if not young:
        monkeypatch.setattr(urlsampling, "_YOUNG", 0)
    crawler = _crawler(TEMPLATES_URL_MIN_SAMPLES=1000)
    rules = runtime(crawler).urls
    rules.attach(MemoryStore(), "test")
    rules.guards.install(RuleSet(site=SITE, version=1, nodes={}, rules={}), source="test")
    for i in range(3):
        rules.note_response(f"http://{SITE}/p{i}", f"http://{SITE}/p{i}", b"<html>", (), True)
        await rules.flush()
        assert crawler.stats.get_value("templates/urls/samples") == i + 1
    rules.guards.install(_ruleset(), source="test")  # a rule: samples now go in batches
    rules.note_response(f"http://{SITE}/q", f"http://{SITE}/q", b"<html>", (), True)
    await rules.flush()
    assert crawler.stats.get_value("templates/urls/samples") == (4 if young else 3)


def test_duplicate_prone_forms_without_a_rule_are_deferred(crawler: Any) -> None:
    mw = UrlRulesSpiderMiddleware.from_crawler(crawler)
    # the display form has shown duplicates, but no rule takes an extra ?page key
    odd = Request("http://www.example.com/archive1/17/display?sid=1&page=2", priority=5)
    out = mw.get_processed_request(odd, None)
    assert out is not None and out.url == odd.url and out.priority == 5 - 100
    assert crawler.stats.get_value("templates/urls/deferred") == 1
    plain = Request("http://www.example.com/about")
    assert mw.get_processed_request(plain, None) is plain


async def test_requests_queued_before_the_rules_are_deferred_once_at_download(
    crawler: Any,
) -> None:
    mw = UrlRulesDownloaderMiddleware.from_crawler(crawler)
    odd = Request("http://www.example.com/archive1/17/display?sid=1&page=2", priority=5)
    back = await mw.process_request(odd)
    assert isinstance(back, Request) and back.url == odd.url
    assert back.priority == 5 - 100 and back.dont_filter
    assert await mw.process_request(back) is None  # deferred once, then downloaded
    spider_side = UrlRulesSpiderMiddleware.from_crawler(crawler).get_processed_request(odd, None)
    assert spider_side is not None and await mw.process_request(spider_side) is None
    assert crawler.stats.get_value("templates/urls/deferred") == 2
    # a request that a rule rewrote is for the canonical URL: it goes at once
    rewritten = await mw.process_request(Request(SID_URL))
    assert isinstance(rewritten, Request) and await mw.process_request(rewritten) is None


def test_deferral_can_be_switched_off() -> None:
    crawler = _crawler(TEMPLATES_URL_DEFER_PRIORITY=0)
    runtime(crawler).urls.guards.install(_ruleset(), source="test")
    mw = UrlRulesSpiderMiddleware.from_crawler(crawler)
    odd = Request("http://www.example.com/archive1/17/display?sid=1&page=2")
    assert mw.get_processed_request(odd, None) is odd


def test_new_rules_forget_what_old_rules_called_downloaded(crawler: Any) -> None:
    rules = runtime(crawler).urls
    canonical = rules.guards.canonical(SID_URL)
    rules.note_response(SID_URL.replace("abc", "x1"), SID_URL.replace("abc", "x1"), b"", (), True)
    assert rules.guards.was_fetched(canonical)  # under the rules in force, the page is downloaded
    rules.guards.install(RuleSet(SITE, 2, _ruleset().nodes, {}), source="test")  # rules withdrawn
    assert not rules.guards.was_fetched(canonical)


async def test_a_failing_rewrite_falls_back_to_the_original_url(crawler: Any) -> None:
    mw = UrlRulesDownloaderMiddleware.from_crawler(crawler)
    rewritten = await mw.process_request(Request(SID_URL))
    assert isinstance(rewritten, Request)
    missing = HtmlResponse(rewritten.url, status=404, body=b"<html></html>")
    again = await mw.process_response(rewritten, missing)
    assert isinstance(again, Request) and again.url == SID_URL and again.dont_filter
    assert await mw.process_request(again) is None  # opted out: fetched as asked
    assert not runtime(crawler).urls.guards.was_fetched(rewritten.url)
    assert crawler.stats.get_value("templates/urls/fallbacks") == 1
    retry = mw.process_exception(rewritten, TimeoutError())
    assert retry is not None and retry.url == SID_URL
    # another middleware's IgnoreRequest (robots.txt on the canonical URL) falls back too
    robots = mw.process_exception(rewritten, IgnoreRequest())
    assert robots is not None and robots.url == SID_URL
    # the retries and redirects of the canonical URL's request are not the fallback's
    tried = rewritten.replace(meta={**rewritten.meta, "retry_times": 2, "redirect_times": 1})
    fresh = mw.process_exception(tried, TimeoutError())
    assert fresh is not None and not {"retry_times", "redirect_times"} & set(fresh.meta)


class _Engine:
    """Stands in for Scrapy's engine: records the requests it is asked to crawl."""

    spider = object()

    def __init__(self) -> None:
        self.crawled: list[Request] = []

    def crawl(self, request: Request) -> None:
        self.crawled.append(request)


@pytest.fixture
def engine(crawler: Any) -> _Engine:
    """A crawl whose engine is the stand-in, where the canonical page of SID_URL is
    downloaded (so a request for SID_URL is dropped)."""
    crawler.engine = _Engine()
    rules = runtime(crawler).urls
    canonical = rules.guards.canonical(SID_URL)
    rules.note_response(canonical, canonical, b"<html></html>", (), html=False)
    return crawler.engine


def test_a_corrected_rule_set_sends_again_what_the_old_one_sent_elsewhere(
    crawler: Any, engine: _Engine
) -> None:
    rules = runtime(crawler).urls
    mw = UrlRulesSpiderMiddleware.from_crawler(crawler)
    assert mw.get_processed_request(Request(SID_URL, meta={"k": 1}), None) is None  # dropped
    other = SID_URL.replace("abc", "zzz")
    assert mw.get_processed_request(Request(other), None) is None

    same = RuleSet.loads(rules.guards.rulesets()[0].dumps())
    rules.guards.install(same, source="test")  # the same mapping: nothing to send again
    assert engine.crawled == []

    _guard(rules, other).note_requested(
        other
    )  # requested once, then turned away before its download
    _guard(rules, other).note_withdrawn(other)
    empty = RuleSet(site=SITE, version=same.version + 1, nodes={}, rules={})
    rules.guards.install(
        empty, source="test"
    )  # the rule is gone: both pages are pages of their own
    assert sorted(r.url for r in engine.crawled) == sorted([SID_URL, other])
    assert all("templates_original_url" not in r.meta for r in engine.crawled)
    # both get past the dupefilter: with a shared one (scrapy-redis), another process may have
    # requested SID_URL and had it turned away, which this process cannot know
    assert all(r.dont_filter for r in engine.crawled)
    assert [r.meta.get("k") for r in engine.crawled if r.url == SID_URL] == [1]
    assert crawler.stats.get_value("templates/urls/revisited") == 2
    rules.guards.install(
        RuleSet(site=SITE, version=same.version + 2, nodes={}, rules={}), source="t"
    )
    assert len(engine.crawled) == 2  # sent once


def test_a_pending_request_is_not_sent_twice(crawler: Any, engine: _Engine) -> None:
    rules = runtime(crawler).urls
    mw = UrlRulesSpiderMiddleware.from_crawler(crawler)
    assert mw.get_processed_request(Request(SID_URL), None) is None
    _guard(rules, SID_URL).note_requested(
        SID_URL
    )  # the same URL is also queued, under its own name
    rules.guards.install(RuleSet(site=SITE, version=99, nodes={}, rules={}), source="test")
    assert engine.crawled == []


async def test_a_request_for_a_url_queued_past_the_dupefilter_is_dropped(crawler: Any) -> None:
    """A request sent again past the dupefilter (a corrected rule's revisit) is not in the
    dupefilter's memory: the middlewares themselves keep a second request for it out."""
    rules = runtime(crawler).urls
    spider_mw = UrlRulesSpiderMiddleware.from_crawler(crawler)
    downloader_mw = UrlRulesDownloaderMiddleware.from_crawler(crawler)
    url = SID_URL.replace("17", "18")
    canonical = rules.guards.canonical(url)
    assert canonical != url and not rules.guards.was_fetched(canonical)
    _guard(rules, canonical).note_requested(canonical)  # queued with dont_filter
    assert spider_mw.get_processed_request(Request(url), None) is None
    with pytest.raises(IgnoreRequest):
        await downloader_mw.process_request(Request(url))
    assert crawler.stats.get_value("templates/urls/dropped") == 2
    _guard(rules, canonical).note_withdrawn(
        canonical
    )  # turned away before its download: no longer queued
    rewritten = spider_mw.get_processed_request(Request(url), None)
    assert rewritten is not None and rewritten.url == canonical


async def test_a_suspect_form_is_downloaded_one_url_at_a_time(crawler: Any) -> None:
    """``?sid`` is dropped on one form; on a form no rule covers, a second URL waits until
    the first is sampled (or fails), then asks the rules again."""
    import asyncio

    mw = UrlRulesDownloaderMiddleware.from_crawler(crawler)
    rules = runtime(crawler).urls
    first, second, third = (f"http://www.example.com/other/page?sid={i}" for i in (1, 2, 3))
    assert rules.suspect_form(first) is not None
    assert rules.suspect_form("http://www.example.com/other/page?id=1") is None
    assert await mw.process_request(Request(first)) is None
    waiting = asyncio.ensure_future(mw.process_request(Request(second)))
    await asyncio.sleep(0.05)
    assert not waiting.done()
    rules.add_page(first, 0, None)  # its item's sample arrived
    assert await asyncio.wait_for(waiting, 1) is None
    assert crawler.stats.get_value("templates/urls/held") == 1
    waiting = asyncio.ensure_future(mw.process_request(Request(third)))
    await asyncio.sleep(0.05)
    assert not waiting.done()
    mw.process_exception(Request(second), TimeoutError())
    assert await asyncio.wait_for(waiting, 1) is None
    assert crawler.stats.get_value("templates/urls/held") == 2


async def test_a_request_waits_for_a_hosts_learning_a_bounded_time(crawler: Any) -> None:
    """A held request waits for its host's relearn at most the given time (it holds one of
    Scrapy's concurrent requests meanwhile); the learning itself goes on."""
    import asyncio

    rules = runtime(crawler).urls
    learning = asyncio.ensure_future(asyncio.sleep(60))
    rules._learning[SITE] = learning  # a learning that takes longer than any wait
    await asyncio.wait_for(rules.learn_now(SITE, 0.05), 5)
    assert not learning.done()
    learning.cancel()


async def test_processes_sharing_a_store_download_one_url_of_a_suspect_form_at_a_time() -> None:
    """Two crawlers (as two processes) share one store: the second URL of a suspect form waits
    on the other crawler's download, then adopts the rules that crawler published."""
    import asyncio

    store = MemoryStore()
    crawlers = [_crawler() for _ in range(2)]
    rules = []
    for n, crawler in enumerate(crawlers):
        found = runtime(crawler).urls
        found.guards.install(_ruleset(), source="test")
        found.attach(store, f"process-{n}")
        rules.append(found)
    mws = [UrlRulesDownloaderMiddleware.from_crawler(c) for c in crawlers]
    first, second = (f"http://www.example.com/other/page?sid={i}" for i in (1, 2))
    assert await mws[0].process_request(Request(first)) is None
    waiting = asyncio.ensure_future(mws[1].process_request(Request(second)))
    await asyncio.sleep(0.2)
    assert not waiting.done(), "the other process's URL of the form is in flight"
    newer = dataclasses.replace(_ruleset(), version=_ruleset().version + 1)
    await store.publish(SITE, "rules", newer.version, newer.dumps())
    mws[0].process_exception(Request(first), TimeoutError())  # its download ended
    assert await asyncio.wait_for(waiting, 1) is None
    assert crawlers[1].stats.get_value("templates/urls/held") == 1
    assert rules[1].guards.max_version() == newer.version, "the published rules were adopted"
    third = "http://www.example.com/other/page?sid=3"
    alone = asyncio.ensure_future(mws[0].process_request(Request(third)))
    await asyncio.sleep(0.2)
    assert not alone.done(), "now the second process holds the form"
    rules[1].add_page(second, 0, None)
    assert await asyncio.wait_for(alone, 1) is None


async def test_only_a_relearn_that_changes_the_rules_is_logged_at_info(caplog: Any) -> None:
    crawler = _crawler(TEMPLATES_URL_MIN_SAMPLES=5)
    rules = runtime(crawler).urls
    store = MemoryStore()
    # another process's sample: this one cannot tell whether the host has duplicates
    await store.add_url_samples(SITE, [encode_sample(SITE, Sample(f"http://{SITE}/x"))], 9, [0])
    rules.attach(store, "test")
    with caplog.at_level(logging.DEBUG, logger="scrapy_templates.crawl.urlrules"):
        for i in range(60):  # distinct pages, no duplicates: every rule set is empty
            rules.add_page(f"http://{SITE}/page/{i}", random.Random(i).getrandbits(64), f"c{i}")
            await rules.flush()
        await rules.wait_learning()
    learned = [r for r in caplog.records if "URL rules of" in r.getMessage()]
    assert crawler.stats.get_value("templates/urls/learn_count") == len(learned) >= 1
    assert {r.levelno for r in learned} == {logging.DEBUG}


def test_a_link_past_the_depth_limit_is_not_judged_so_never_sent_again_nor_checked() -> None:
    """``DepthMiddleware`` (after the rules) drops a link found beyond ``DEPTH_LIMIT``; the
    rules leave it alone, so it is never remembered, sent again or checked (those requests
    go straight to the engine, past the depth limit)."""
    crawler = _crawler(DEPTH_LIMIT=1)
    rules = runtime(crawler).urls
    rules.guards.install(_ruleset(), source="test")
    canonical = rules.guards.canonical(SID_URL)
    rules.note_response(canonical, canonical, b"<html></html>", (), html=True)
    engine = crawler.engine = _Engine()
    mw = UrlRulesSpiderMiddleware.from_crawler(crawler)

    def found_on(depth: int) -> HtmlResponse:
        response = HtmlResponse("http://www.example.com/", request=Request("http://x/"))
        response.meta["depth"] = depth
        return response

    deep = Request(SID_URL.replace("abc", "d2"))
    assert mw.get_processed_request(deep, found_on(1)) is deep  # for DepthMiddleware to drop
    reset = Request(SID_URL.replace("abc", "r0"), meta={"depth_reset": True})
    assert mw.get_processed_request(reset, found_on(1)) is None  # depth 0: judged, dropped
    assert mw.get_processed_request(Request(SID_URL), found_on(0)) is None
    rules.guards.install(RuleSet(site=SITE, version=99, nodes={}, rules={}), source="test")
    assert engine.crawled and deep.url not in {r.url for r in engine.crawled}
    # sent again with the depth DepthMiddleware gave them: their links keep counting
    assert {r.url: r.meta["depth"] for r in engine.crawled} == {SID_URL: 1, reset.url: 0}


async def test_a_page_whose_request_failed_is_no_longer_on_its_way(crawler: Any) -> None:
    """A download error, or a final status Scrapy retries, ends a page's request: the page
    is not pending, a request turned away for it is sent again, and the next URL of it goes
    as it is. A 404 says the page is dead under any URL; a POST says nothing of the page."""
    rules = runtime(crawler).urls
    engine = crawler.engine = _Engine()
    guard = _guard(rules, SID_URL)
    canonical = guard.canonical(SID_URL)
    spider_mw = UrlRulesSpiderMiddleware.from_crawler(crawler)
    mw = UrlRulesDownloaderMiddleware.from_crawler(crawler)
    guard.note_requested(canonical)
    variant = SID_URL.replace("abc", "v1")
    assert spider_mw.get_processed_request(Request(variant), None) is None  # on its way
    dead = HtmlResponse(canonical, status=404, body=b"<html></html>")
    await mw.process_response(Request(canonical), dead)
    post = Request(canonical, method="POST", body=b"q=1")
    await mw.process_response(post, dead.replace(status=503))
    assert guard.is_pending(url_key(canonical)) and engine.crawled == []
    # redirected from the URL the page was asked under, then out of retries
    moved = Request(canonical + "&moved=1", meta={"redirect_urls": [canonical]})
    assert mw.process_exception(moved, TimeoutError()) is None
    assert not guard.is_pending(url_key(canonical))
    assert [r.url for r in engine.crawled] == [variant]
    later = SID_URL.replace("abc", "v2")
    kept = spider_mw.get_processed_request(Request(later), None)
    assert kept is not None and kept.url == later  # while nothing is on its way
    rules.guards.scheduled(engine.crawled[0])  # the page is on its way again
    last = SID_URL.replace("abc", "v3")
    assert spider_mw.get_processed_request(Request(last), None) is None
    busy = HtmlResponse(variant, status=503, body=b"")
    await mw.process_response(engine.crawled[0], busy)  # that one fails too: the next goes
    assert [r.url for r in engine.crawled] == [variant, last]


async def test_a_fallback_that_fails_too_lets_the_next_url_of_its_page_go(crawler: Any) -> None:
    rules = runtime(crawler).urls
    engine = crawler.engine = _Engine()
    spider_mw = UrlRulesSpiderMiddleware.from_crawler(crawler)
    mw = UrlRulesDownloaderMiddleware.from_crawler(crawler)
    rewritten = spider_mw.get_processed_request(Request(SID_URL), None)
    assert rewritten is not None and rewritten.url != SID_URL
    rules.guards.scheduled(rewritten)
    variant = SID_URL.replace("abc", "v1")
    assert spider_mw.get_processed_request(Request(variant), None) is None  # pending
    busy = HtmlResponse(rewritten.url, status=503, body=b"")
    fallback = await mw.process_response(rewritten, busy)
    assert isinstance(fallback, Request) and fallback.url == SID_URL
    assert engine.crawled == []  # the fallback is the page's try: nothing else goes
    await mw.process_response(fallback, busy.replace(url=SID_URL))
    assert [r.url for r in engine.crawled] == [variant]


def _html(canonical: str, body: str) -> bytes:
    head = f'<head><link rel="canonical" href="{canonical}"></head>'
    return f"<html>{head}<body>{body}</body></html>".encode()


async def test_a_check_naming_the_rules_url_canonical_is_judged_by_its_words() -> None:
    """A page of the host named another URL canonical, so the article's words are sketched
    when it becomes an item: its print view, one block of the same words, holds; page 2 of
    a listing naming page 1 canonical does not."""
    crawler = _crawler()
    rules = runtime(crawler).urls
    rules.attach(MemoryStore(), "test")
    host = "http://h.example"
    home = _html(f"{host}/", "Welcome")
    rules.note_response(f"{host}/", f"{host}/", home, (), True)
    assert not rules.guards.host("h.example").checks.canonical_site  # its own URL
    rules.note_response(f"{host}/?from=ad", f"{host}/?from=ad", home, (), True)
    assert rules.guards.host("h.example").checks.canonical_site
    words = [f"{host}/article", f"{host}/list"]
    texts = {
        words[0]: ["Title of the story", "Published today", "The story itself, " * 30],
        words[1]: [f"Entry {n}: a lamp of brass and glass" for n in range(10)],
    }
    for url in words:
        page = _html(url, "<nav>Home News Shop</nav>" + " ".join(texts[url]))
        rules.note_response(url, url, page, (), True)
        rules.add_page(url, 1, None, texts[url])
    views = {
        f"{host}/article?print=1": (words[0], " ".join(texts[words[0]])),
        f"{host}/list?page=2": (
            words[1],
            " ".join(f"Entry {n}: a rug of wool" for n in range(10, 20)),
        ),
    }
    for url, (witness, text) in views.items():
        check = Check(Request(url), url, witness, witness, "rule")
        response = HtmlResponse(url, body=_html(witness, text))
        assert rules.check_fetched(check, response) == "open"
        rules.add_page(url, 2, None, [text])
    assert crawler.stats.get_value("templates/urls/checks/held") == 1
    assert crawler.stats.get_value("templates/urls/checks/failed") == 1
    # the refuted claim started a relearn without the site's canonical links
    await rules.wait_learning()
    await rules.close()


def _open_check(rules: UrlRules, url: str, witness: str) -> HtmlResponse:
    """A check of ``url`` whose page differs from its witness's: the response the spider
    gets, its check waiting for a content."""
    first = _html(witness, "Page one of the list: " + "an entry of page one, " * 20)
    rules.note_response(witness, witness, first, (), True)
    request = Request(url, meta={CHECK: (witness, witness, "rule")})
    body = _html(witness, "Page seven of the list: " + "an entry of page seven, " * 20)
    response = HtmlResponse(url, body=body, request=request)
    check = Check(request, url, witness, witness, "rule")
    assert rules.check_fetched(check, response) == "open"
    return response


async def test_a_check_page_the_spider_makes_no_item_of_is_judged_by_where_it_leads() -> None:
    """Requests to pages downloaded or requested before are no news; one to a page the
    crawl never met is (other hosts do not count); an item leaves the content to decide."""
    crawler = _crawler()
    rules = runtime(crawler).urls
    rules.attach(MemoryStore(), "test")
    host = "http://h.example"
    for n in (1, 2, 3):
        url = f"{host}/p/{n}"
        rules.note_response(url, url, _html(url, f"Product {n}"), (), True)
    rules.guards.scheduled(Request(f"{host}/p/4"))  # queued, not downloaded yet
    mw = UrlRulesSpiderMiddleware.from_crawler(crawler)
    met = [Request(f"{host}/p/{n}") for n in (1, 2, 3, 4)]
    elsewhere = Request("http://other.example/news")

    async def output(*results: Any) -> Any:
        for result in results:
            yield result

    # the same links as pages met before, and one link off the host: held
    sorted_view = _open_check(rules, f"{host}/list?sort=price", f"{host}/list")
    assert list(mw.process_spider_output(sorted_view, iter([*met, elsewhere]))) == [
        *met,
        elsewhere,
    ]
    assert crawler.stats.get_value("templates/urls/checks/held") == 1
    # a product no page linked before: failed (an async callback this time)
    page_seven = _open_check(rules, f"{host}/list?page=7", f"{host}/list")
    new = Request(f"{host}/p/9")
    got = [o async for o in mw.process_spider_output_async(page_seven, output(*met, new))]
    assert got == [*met, new]
    assert crawler.stats.get_value("templates/urls/checks/failed") == 1
    # an item: the content decides later; no request at all: nothing to tell
    with_item = _open_check(rules, f"{host}/list?view=grid", f"{host}/list")
    list(mw.process_spider_output(with_item, iter([{"url": with_item.url}, *met])))
    bare = _open_check(rules, f"{host}/list?view=bare", f"{host}/list")
    list(mw.process_spider_output(bare, iter([])))
    assert crawler.stats.get_value("templates/urls/checks/held") == 1
    assert crawler.stats.get_value("templates/urls/checks/failed") == 1
    assert crawler.stats.get_value("templates/urls/checks/unknown") == 1
    assert not mw._checks
    await rules.wait_learning()
    await rules.close()


@pytest.mark.parametrize("drop_repeats", [False, True])
async def test_repeats_on_a_check_page_count_for_the_page_the_rules_take_them_for(
    drop_repeats: bool,
) -> None:
    """Ten links on a check page to session-id variants of one page, all recorded by the
    dupefilter before the rule existed, and one to a page never met: two pages, one of them
    new, so the check fails, whether the repeats end here or at the dupefilter."""
    from scrapy.core.scheduler import Scheduler

    crawler = templates_crawler(TEMPLATES_URL_DROP_REPEATS=drop_repeats)
    rules = runtime(crawler).urls
    scheduler = Scheduler.from_crawler(crawler)
    crawler.engine = SimpleNamespace(scheduler=scheduler, spider=None)  # not crawling
    rules.guards.watch_dupefilter()
    variants = [SID_URL.replace("abc", f"v{n}") for n in range(10)]
    for url in variants:  # scheduled before the host had rules
        rules.guards.scheduled(Request(url))
        scheduler.df.request_seen(Request(url))
    rules.guards.install(_ruleset(), source="test")
    mw = UrlRulesSpiderMiddleware.from_crawler(crawler)
    check = _open_check(rules, f"http://{SITE}/archive2/5/display?sid=chk", f"http://{SITE}/list")
    new = Request(f"http://{SITE}/archive2/99/display?sid=q")
    list(mw.process_spider_output(check, iter([*(Request(u) for u in variants), new])))
    assert crawler.stats.get_value("templates/urls/checks/failed") == 1
    assert crawler.stats.get_value("templates/urls/checks/held", 0) == 0
    assert (crawler.stats.get_value("templates/urls/repeats", 0) > 0) == drop_repeats
    await rules.wait_learning()
    await rules.close()
