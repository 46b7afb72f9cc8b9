"""The crawl's URL guards: rule sets installed per host, and what they report."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace
from typing import Any

import pytest
from scrapy import Request, signals
from scrapy.dupefilters import RFPDupeFilter
from scrapy.utils.spider import DefaultSpider

from scrapy_templates.crawl.urlguards import (
    DEFERRED,
    OPT_OUT,
    RESENT,
    UrlGuards,
    stands_for_links,
)
from scrapy_templates.urlnorm.checks import RuleChecks
from scrapy_templates.urlnorm.guard import DROP, KEEP, url_key
from scrapy_templates.urlnorm.rules import Op, RuleSet
from tests.crawl.conftest import runtime, templates_crawler
from tests.urlnorm.test_guard import SID_URL, SITE, _ruleset
from tests.urlnorm.test_rules import _one_rule_doc


async def test_results_a_rule_set_refused_are_counted_across_its_replacements() -> None:
    crawler = templates_crawler()
    owner = runtime(crawler)
    guards = owner.urls.guards
    safe = RuleSet.from_json(_one_rule_doc("path_0", "b"))
    rule = dataclasses.replace(safe.rules[0], steps=((Op("keep", "path", "@evil.test"),),))
    unsafe = RuleSet(safe.site, safe.version, safe.nodes, {0: rule})
    guards.host("c.example").install(unsafe, resend=False)  # as one that passed validation could
    for i in range(3):
        url = f"http://c.example/{i}"
        assert guards.host("c.example").decide(url, None, queued=False).url == url
    assert guards.results_refused() == 3
    assert guards.install(dataclasses.replace(safe, version=6), source="test")
    assert guards.results_refused() == 3  # the replaced rule set's count stays
    await owner.open()
    await owner.spider_closed()
    assert crawler.stats.get_value("templates/urls/results_refused") == 3


def test_a_url_checked_is_a_repeat_later_and_requests_not_plain_gets_are_left_alone() -> None:
    """A check goes past the dupefilter: once no rule turns its URL away, a later GET for it
    is dropped as the dupefilter would drop it. A POST, or a request with ``dont_filter``, is
    never turned away: it asks for more than its URL, or to be fetched whatever was."""
    crawler = templates_crawler()
    owner = runtime(crawler)
    guards = owner.urls.guards
    sent: list[Request] = []
    crawler.engine = SimpleNamespace(spider=object(), crawl=sent.append)  # type: ignore[assignment]
    host = guards.host(SITE)
    host.checks = RuleChecks(first=2, share=0.0)
    host.install(_ruleset(), resend=False)
    canonical = host.canonical(SID_URL)
    host.note_download([canonical], 100, page=True, page_hash="00000000000000aa")
    get, post = SID_URL.replace("abc", "g1"), SID_URL.replace("abc", "p1")
    assert guards.decide(Request(get), queued=False).action == DROP
    assert guards.decide(Request(post, method="POST", body=b"q=1"), queued=False).action == KEEP
    assert guards.decide(Request(post, dont_filter=True), queued=True).action == KEEP
    assert [r.url for r in sent] == [get]
    host.install(RuleSet(site=SITE, version=9, nodes={}, rules={}), resend=False)
    assert guards.decide(Request(get), queued=False).action == DROP
    assert guards.decide(Request(post), queued=False).action == KEEP


def test_the_rule_count_follows_installs_and_retractions_on_every_host() -> None:
    crawler = templates_crawler()
    guards = runtime(crawler).urls.guards
    learned = _ruleset()
    one = RuleSet.from_json(_one_rule_doc("path_0", "b"))
    assert guards.install(learned, source="test")
    assert guards.install(dataclasses.replace(one, version=7), source="test")

    def in_force() -> int:
        return sum(ruleset.rule_count for ruleset in guards.rulesets())

    assert guards.rule_count() == in_force() == learned.rule_count + one.rule_count
    assert guards.max_version() == 7
    assert guards.retract(SITE, SID_URL, SID_URL.replace("abc", "other"))
    assert guards.rule_count() == in_force() < learned.rule_count + one.rule_count
    assert crawler.stats.get_value("templates/urls/rules") == in_force()
    assert crawler.stats.get_value("templates/urls/rules_version") == 7


def test_a_page_is_requested_once_its_request_reaches_the_scheduler() -> None:
    """The spider middleware's verdict notes nothing; Scrapy's ``request_scheduled`` does,
    for every request but one the user exempted."""
    crawler = templates_crawler()
    guards = runtime(crawler).urls.guards
    host = guards.host(SITE)
    host.install(_ruleset(), resend=False)
    verdict = guards.decide(Request(SID_URL), queued=False)
    key = url_key(verdict.url)
    assert verdict.url != SID_URL and not host.is_pending(key)
    exempt = Request(verdict.url, meta={OPT_OUT: True})
    crawler.signals.send_catch_log(signals.request_scheduled, request=exempt, spider=None)
    assert not host.is_pending(key)
    rewritten = Request(verdict.url)
    crawler.signals.send_catch_log(signals.request_scheduled, request=rewritten, spider=None)
    assert host.is_pending(key)
    assert guards.decide(Request(SID_URL.replace("abc", "x2")), queued=False).action == DROP


def test_a_dont_filter_request_the_rules_sent_themselves_is_judged_like_any_other() -> None:
    """Requests sent again after a rules change, or sent to the back of the queue, carry
    ``dont_filter`` because the rules chose so: a page downloaded since still drops them."""
    crawler = templates_crawler()
    guards = runtime(crawler).urls.guards
    host = guards.host(SITE)
    host.install(_ruleset(), resend=False)
    host.note_download([host.canonical(SID_URL)], 100, page=True)
    for meta in ({RESENT: True}, {DEFERRED: True}):
        request = Request(SID_URL, dont_filter=True, meta=meta)
        assert guards.decide(request, queued=True).action == DROP
    assert guards.decide(Request(SID_URL, dont_filter=True), queued=True).action == KEEP


def test_repeats_are_dropped_early_only_where_scrapys_dupefilter_would_drop_them() -> None:
    from scrapy.core.scheduler import Scheduler
    from scrapy.dupefilters import BaseDupeFilter, RFPDupeFilter

    from scrapy_templates.crawl.urlguards import scrapy_dupefilter

    class OwnScheduler(Scheduler):
        pass

    class OwnDupeFilter(RFPDupeFilter):
        pass

    class OwnFingerprinter:
        def fingerprint(self, request: Request) -> bytes:
            return request.url.encode()

    def scheduler(df: object) -> Scheduler:
        return Scheduler(dupefilter=df)  # type: ignore[arg-type]

    assert scrapy_dupefilter(scheduler(RFPDupeFilter()), RFPDupeFilter())
    df = RFPDupeFilter()
    assert not scrapy_dupefilter(OwnScheduler(dupefilter=df), df)
    for other in (
        OwnDupeFilter(),
        BaseDupeFilter(),
        RFPDupeFilter(debug=True),
        RFPDupeFilter(fingerprinter=OwnFingerprinter()),
    ):
        assert not scrapy_dupefilter(scheduler(other), other), other


def _opened(**settings: object) -> tuple[UrlGuards, RFPDupeFilter]:
    """The URL guards of a crawler whose spider opened on a scheduler built from its
    settings, and that scheduler's dupefilter."""
    from scrapy.core.scheduler import Scheduler

    crawler = templates_crawler(**settings)
    guards = runtime(crawler).urls.guards
    scheduler = Scheduler.from_crawler(crawler)
    crawler.engine = SimpleNamespace(scheduler=scheduler)  # type: ignore[assignment]
    guards.watch_dupefilter()
    return guards, scheduler.df


def test_only_requests_the_dupefilter_records_make_their_repeats_dropped() -> None:
    """A repeat is dropped only once the dupefilter itself recorded its URL: a request that
    a ``request_scheduled`` handler vetoed (the offsite filter), one with ``dont_filter``
    (which the scheduler never shows it) or with ``verbatim_url`` leaves later requests for
    its URL to go on."""
    guards, df = _opened()
    assert guards.drop_repeats
    plain, vetoed, verbatim = (f"http://{SITE}/{n}" for n in ("plain", "vetoed", "verbatim"))
    for url in (plain, vetoed, verbatim):
        guards.scheduled(Request(url))  # request_scheduled: every handler, vetoes included
    assert not df.request_seen(Request(plain))
    assert not df.request_seen(Request(verbatim, meta={"verbatim_url": True}))
    verdict = guards.decide(Request(f"{plain}#part"), queued=False)
    assert (verdict.action, verdict.seen) == (DROP, True)
    assert guards.decide(Request(vetoed), queued=False).action == KEEP
    assert guards.decide(Request(verbatim), queued=False).action == KEEP
    # fingerprinted by its URL as it is, a request is no repeat of another's fragment
    assert guards.decide(Request(plain, meta={"verbatim_url": True}), queued=False).action == KEEP
    assert df.request_seen(Request(plain))  # the dupefilter itself is unchanged


def _watched(**settings: object) -> tuple[UrlGuards, Any]:
    """The URL guards of a crawler whose spider opened on Scrapy's own scheduler, opened
    (with a queue that needs no downloader) and watched as in a crawl, and that scheduler."""
    from scrapy.core.scheduler import Scheduler

    queue = "scrapy.pqueues.ScrapyPriorityQueue"
    crawler = templates_crawler(SCHEDULER_PRIORITY_QUEUE=queue, **settings)
    guards = runtime(crawler).urls.guards
    scheduler = Scheduler.from_crawler(crawler)
    scheduler.open(DefaultSpider.from_crawler(crawler))
    crawler.engine = SimpleNamespace(scheduler=scheduler)  # type: ignore[assignment]
    guards.watch_scheduler()
    guards.watch_dupefilter()
    return guards, scheduler


@pytest.mark.parametrize("drop_repeats", [True, False])
def test_a_page_is_requested_once_the_scheduler_is_handed_its_request(drop_repeats: bool) -> None:
    """Another ``request_scheduled`` handler may veto a request (the offsite filter): the
    engine then never hands it to the scheduler, and its page is not requested, so a rewrite
    to its URL is not dropped as on its way. What the scheduler is handed is requested, a
    repeat its dupefilter drops and a request the rules deferred included; a request the
    spider sent past the dupefilter (a start request) is not, as it may carry another
    callback than the links to its page."""
    guards, scheduler = _watched(TEMPLATES_URL_DROP_REPEATS=drop_repeats)
    host = guards.host(SITE)
    host.install(_ruleset(), resend=False)
    canonical = guards.decide(Request(SID_URL), queued=False).url
    key = url_key(canonical)
    guards.scheduled(Request(canonical))  # a later handler vetoes it: never enqueued
    assert not host.is_pending(key)
    assert guards.decide(Request(SID_URL.replace("abc", "x2")), queued=False).action != DROP
    assert scheduler.enqueue_request(Request(canonical))
    assert host.is_pending(key)
    assert guards.decide(Request(SID_URL.replace("abc", "x3")), queued=False).action == DROP
    other, again = canonical.replace("17", "18"), canonical.replace("17", "19")
    scheduler.enqueue_request(Request(other, dont_filter=True))
    assert not host.is_pending(url_key(other))
    scheduler.enqueue_request(Request(other, dont_filter=True, meta={DEFERRED: True}))
    assert host.is_pending(url_key(other))
    scheduler.df.request_seen(Request(again))
    assert not scheduler.enqueue_request(Request(again))  # a repeat, dropped
    assert host.is_pending(url_key(again))


def test_only_a_retry_of_a_link_keeps_standing_for_it() -> None:
    """The scheduler's request of a link is marked; Scrapy's retry, a copy sent past the
    dupefilter, stands for the link too. A request made from the link's copy for another URL,
    as a POST or opted out of the rules does not, nor does a start request or its retry."""
    _, scheduler = _watched()
    link = Request(f"http://{SITE}/page?id=7")
    scheduler.enqueue_request(link)
    retry = link.copy()
    retry.dont_filter = True
    assert stands_for_links(link) and stands_for_links(retry)
    assert not stands_for_links(link.replace(url=f"http://{SITE}/page?id=8", dont_filter=True))
    assert not stands_for_links(link.replace(method="POST", body=b"q=1"))
    assert not stands_for_links(link.replace(meta={**link.meta, OPT_OUT: True}))
    start = Request(f"http://{SITE}/", dont_filter=True)
    scheduler.enqueue_request(start)
    assert not stands_for_links(start) and not stands_for_links(start.copy())


def test_an_error_in_noting_a_request_does_not_lose_it(caplog: pytest.LogCaptureFixture) -> None:
    """The notes are taken inside the scheduler and its dupefilter, where an exception
    would lose the request: it is logged, and the request is queued."""
    guards, scheduler = _watched()
    host = guards.host(SITE)

    def broken(url: str) -> None:
        raise RuntimeError("broken")

    host.note_requested = broken  # type: ignore[method-assign]
    host.note_seen = broken  # type: ignore[method-assign]
    url = f"http://{SITE}/page"
    assert scheduler.enqueue_request(Request(url))
    assert scheduler.next_request().url == url
    assert caplog.text.count(f"noting {url} for the URL rules failed") == 2


def test_repeats_go_to_a_dupefilter_of_the_crawls_own() -> None:
    from scrapy.dupefilters import BaseDupeFilter

    for settings in (
        {"DUPEFILTER_DEBUG": True},
        {"DUPEFILTER_CLASS": BaseDupeFilter},
        {"TEMPLATES_URL_DROP_REPEATS": False},
    ):
        guards, df = _opened(**settings)
        assert not guards.drop_repeats, settings
        url = f"http://{SITE}/plain"
        df.request_seen(Request(url))
        assert guards.decide(Request(url), queued=False).action == KEEP, settings
