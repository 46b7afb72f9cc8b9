"""The URL guards of a crawler's hosts: the rules in force and what they answer.

Each host has a :class:`~scrapy_templates.urlnorm.guard.HostGuard` (pure: rules, and what was
fetched and requested); this module keeps them per host, installs rule sets after checking
them, and sends the requests the guards ask for — again after an install or a retraction,
or as checks of a rule (see :mod:`~scrapy_templates.urlnorm.checks`) — the one thing here
that touches the engine.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scrapy import Request, signals
from scrapy.crawler import Crawler

from scrapy_templates.sites import host_site
from scrapy_templates.urlnorm.checks import Check, RuleChecks
from scrapy_templates.urlnorm.guard import KEEP, Form, HostGuard, Resend, Verdict
from scrapy_templates.urlnorm.jobs import Keyed
from scrapy_templates.urlnorm.rules import RuleSet, RuleSetError

logger = logging.getLogger(__name__)

ORIGINAL_URL = "templates_original_url"
# on a check request: (the rule's URL, witness URL, rule signature); see urlnorm.checks
CHECK = "templates_check"
# a request with this meta key true is left alone by the URL rules
OPT_OUT = "dont_normalize"
# on a request the URL rules sent to the back of the queue once (see the middlewares)
DEFERRED = "templates_deferred"
# on a request the URL rules sent again after their rules changed
RESENT = "templates_resent"
# on the request for the URL the spider asked for, when the URL a rule rewrote it to failed
FALLBACK = "templates_fallback"
# on a request the scheduler was handed that stands for the links to its page, its URL (see
# stands_for_links); a retry, which Scrapy sends past the dupefilter, carries it over
LINKED = "templates_linked"
# Scrapy's meta key for a request fingerprinted by its URL as it is, fragment and all
VERBATIM = "verbatim_url"
# the verdict on a request the rules do not judge (see UrlGuards.decide)
NOT_JUDGED = Verdict(KEEP, "")
# what a request the rules make from another (a check, a fallback to the URL the spider
# asked for) does not carry over: a rewrite, and the retries and redirects of another URL
NOT_CARRIED = frozenset(
    (ORIGINAL_URL, "retry_times", "redirect_urls", "redirect_times", "redirect_reasons")
)


def _problem(ruleset: RuleSet) -> str:
    """Why ``ruleset`` may not be put in force ('' when it may)."""
    try:
        ruleset.validate()
    except RuleSetError as exc:
        return str(exc)
    return ""


def load_rules_file(path: str | Path) -> list[RuleSet]:
    """Rule sets from a JSON file holding one rule set or a list of them."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    items = data if isinstance(data, list) else [data]
    return [RuleSet.from_json(item) for item in items]


class UrlGuards:
    """Per-host guards of one crawler. ``enabled`` false: every request is kept as it is (the
    bookkeeping of downloads still runs, for the stats); ``defer``: the deferral of a
    duplicate-prone form with no rule yet (priority step, duplicate rate); ``checks``: the
    first requests of each rule, and the share of the later ones, to check;
    ``drop_repeats``: drop a request the dupefilter would drop for a repeat of a URL it
    recorded, when the crawl's dupefilter is Scrapy's own (:meth:`watch_dupefilter`)."""

    def __init__(
        self,
        crawler: Crawler,
        *,
        enabled: bool,
        defer: tuple[int, float],
        checks: tuple[int, float] = (0, 0.0),
        drop_repeats: bool = False,
    ) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.enabled = enabled
        # asked for; in force once the spider opens on Scrapy's own dupefilter (watch_dupefilter)
        self._repeats_asked = drop_repeats and enabled
        self.drop_repeats = False
        self.defer = defer
        self.checks = checks
        self._hosts: dict[str, HostGuard[Request]] = {}
        self._refused_before = 0  # results refused by rule sets since replaced
        # rules in force per host as last counted, their sum, and the highest version put in
        # force: kept as rule sets change, so an install costs nothing per other host
        self._counted: dict[str, int] = {}
        self._rule_total = 0
        self._top_version = 0
        # the final statuses after which a page may well come under another URL (Scrapy's
        # retried ones): a 404 is a dead page under any of its URLs
        self.transient = frozenset(crawler.settings.getlist("RETRY_HTTP_CODES"))
        # whether the running scheduler's enqueue_request notes what it is handed (watch_scheduler)
        self._enqueue_watched = False
        if enabled:
            crawler.signals.connect(self.scheduled, signal=signals.request_scheduled)
            crawler.signals.connect(self.dropped, signal=signals.request_dropped)
            crawler.signals.connect(self.watch_scheduler, signal=signals.spider_opened)
        if self._repeats_asked:
            crawler.signals.connect(self.watch_dupefilter, signal=signals.spider_opened)

    def host(self, site: str) -> HostGuard[Request]:
        """The guard of ``site``, created on first use."""
        found = self._hosts.get(site)
        if found is None:
            found = self._hosts[site] = HostGuard(checks=RuleChecks(*self.checks))
        return found

    def guard(self, url: str) -> HostGuard[Request] | None:
        """The guard of ``url``'s host (``None`` for a URL without one)."""
        try:
            return self.host(host_site(url))
        except ValueError:
            return None

    def decide(self, request: Request, *, queued: bool, defer: bool = True) -> Verdict:
        """The verdict of its host's rules on ``request`` (see
        :meth:`~scrapy_templates.urlnorm.guard.HostGuard.decide`); ``defer``: whether a
        request no rule rewrites may be deferred.

        Rules judge plain GETs only: a request with a body (a form's POST) asks for more than
        its URL says, and one with ``dont_filter`` was meant to be fetched whatever was
        fetched before (save one the rules themselves sent to the queue again)."""
        host = self.guard(request.url) if self.enabled else None
        if host is None or not _plain_get(request):
            return NOT_JUDGED
        if request.dont_filter and not (request.meta.get(DEFERRED) or request.meta.get(RESENT)):
            return NOT_JUDGED
        verdict = host.decide(
            request.url,
            request,
            queued=queued,
            defer=self.defer if defer else None,
            filtered=not request.dont_filter,
            seen=self.drop_repeats and not request.meta.get(VERBATIM),
        )
        if verdict.action != KEEP:
            self.send_checks(host)
        return verdict

    def scheduled(self, request: Request) -> None:
        """``request`` reached the ``request_scheduled`` signal, past every spider
        middleware: its page is requested (the spider middleware's verdict notes nothing, as
        a middleware after it may still drop the request) — unless the scheduler's own
        ``enqueue_request`` is watched (:meth:`watch_scheduler`), which notes it instead:
        another ``request_scheduled`` handler may still veto it (``OffsiteMiddleware``)."""
        if not self._enqueue_watched:
            self._enqueued(request)

    def watch_scheduler(self, spider: object = None) -> None:
        """The spider opened: the running scheduler's ``enqueue_request``, which the engine
        calls once every ``request_scheduled`` handler let a request go, notes each request
        it is handed as requested before it goes on (its dupefilter may still drop it as a
        repeat, which :meth:`dropped` hears of). Without a running scheduler (a crawler
        driven outside a crawl), :meth:`scheduled` notes."""
        scheduler: Any = _scheduler(self.crawler)
        enqueue = getattr(scheduler, "enqueue_request", None)
        if self._enqueue_watched or not callable(enqueue):
            return

        def enqueue_request(request: Request) -> Any:
            _never_raising(self._enqueued, request)
            return enqueue(request)

        scheduler.enqueue_request = enqueue_request
        self._enqueue_watched = True

    def _enqueued(self, request: Request) -> None:
        """``request`` goes to the scheduler's queue (or its dupefilter drops it): its page
        is requested, unless the request does not stand for the links to it
        (:func:`stands_for_links`: a start request)."""
        if request.meta.get(OPT_OUT) or not stands_for_links(request):
            return
        request.meta[LINKED] = request.url
        host = self.guard(request.url)
        if host is not None:
            host.note_requested(request.url)

    def watch_dupefilter(self, spider: object = None) -> None:
        """The spider opened: when its scheduler is Scrapy's own, with Scrapy's own dupefilter
        and request fingerprinter and ``DUPEFILTER_DEBUG`` off (:func:`scrapy_dupefilter`,
        on the objects the crawl really uses), every request the dupefilter records from now
        on is noted, and a later request for its URL is dropped before the scheduler
        (``drop_repeats``). What the dupefilter records has passed every ``request_scheduled``
        handler: a request one of them vetoed (``OffsiteMiddleware``) leaves no trace, and a
        later request for its URL goes on to the scheduler, as without the add-on."""
        if not self._repeats_asked or self.drop_repeats:
            return
        scheduler = _scheduler(self.crawler)
        df = getattr(scheduler, "df", None)
        if df is None or not scrapy_dupefilter(scheduler, df):
            logger.info("scrapy-templates: repeated links go to the crawl's own dupefilter")
            return
        record = df.request_seen

        def request_seen(request: Request) -> bool:
            known: bool = record(request)
            if not known:
                _never_raising(self._recorded, request)
            return known

        df.request_seen = request_seen
        self.drop_repeats = True

    def _recorded(self, request: Request) -> None:
        """The dupefilter recorded ``request``: a later GET for its URL, fragment aside, is
        one it would drop, when this one is a GET without a body fingerprinted by its URL."""
        if _plain_get(request) and not request.meta.get(VERBATIM):
            host = self.guard(request.url)
            if host is not None:
                host.note_seen(request.url)

    def dropped(self, request: Request) -> None:
        """The scheduler's dupefilter dropped ``request``: see
        :meth:`~scrapy_templates.urlnorm.guard.HostGuard.note_dropped`."""
        host = self.guard(request.url)
        if host is not None:
            host.note_dropped(request.url)

    def failed(self, request: Request, status: int | None = None) -> None:
        """``request`` ended without its page for good (its retries spent): a download
        error, another middleware's ``IgnoreRequest``, or (``status``) a final HTTP status
        Scrapy retries. The page is no longer on its way (nor the pages of the URLs that
        redirected to it): its other URLs go as they are, and one request the rules turned
        away for it is sent again."""
        if status is not None and status not in self.transient:
            return
        opted_out = request.meta.get(OPT_OUT) and not request.meta.get(FALLBACK)
        if opted_out or not _plain_get(request) or not self.enabled:
            return
        host = self.guard(request.url)
        if host is None:
            return
        fallback = request.meta.get(ORIGINAL_URL, "")
        pages = set()
        for url in (*request.meta.get("redirect_urls", ()), request.url):
            if self.guard(url) is not host or (page := host.canonical(url)) in pages:
                continue
            pages.add(page)
            again = host.note_failed(url, resend=self._crawling(), fallback=fallback)
            self._send_again(again)

    def send_checks(self, host: HostGuard[Request]) -> None:
        """Send the checks ``host`` chose: each request as the spider asked for it, past the
        dupefilter and the rules (see :mod:`~scrapy_templates.urlnorm.checks`)."""
        checks = host.take_checks()
        if not checks or not self._crawling():
            return
        for check in checks:
            request = _check_request(check)
            self.crawler.engine.crawl(request)
            host.note_checked(check.url)  # a plain GET: the rules turn no other away
            logger.debug(
                "Checking %s: the page of %s? (rule %s)", check.url, check.witness, check.rule
            )
        self._inc("templates/urls/checks", len(checks))

    def release(self, site: str, rule: str) -> int:
        """Send again the requests that ``rule``, no longer in force on ``site``, held turned
        away (a check of it failed); how many."""
        again = self.host(site).release(rule)
        self._send_again(again)
        return len(again)

    def retract(self, site: str, first: str, second: str) -> bool:
        """Retract the rules of ``site`` that merge the distinct pages ``first`` and
        ``second``, and send again the requests they turned away; whether one was."""
        again = self.host(site).retract(first, second)
        if again is None:
            return False
        self._send_again(again)
        self._recount(site)
        return True

    def canonical(self, url: str) -> str:
        """``url`` rewritten by its host's rules (``url`` when there are none)."""
        host = self.guard(url) if self.enabled else None
        return url if host is None else host.canonical(url)

    def met(self, canonical: str, url: str) -> bool:
        """Whether the crawl met the page of ``url``, whose canonical URL is ``canonical``
        (see :meth:`~scrapy_templates.urlnorm.guard.HostGuard.met`)."""
        host = self.guard(canonical)
        return host is not None and host.met(canonical, url)

    def was_fetched(self, url: str) -> bool:
        """Whether a page whose canonical URL is ``url`` has been downloaded."""
        host = self.guard(url)
        return host is not None and host.was_fetched(url)

    def suspect_form(self, url: str) -> Form | None:
        """See :meth:`~scrapy_templates.urlnorm.guard.HostGuard.suspect_form`."""
        host = self.guard(url) if self.enabled else None
        return None if host is None else host.suspect_form(url)

    def version(self, site: str) -> int:
        """The version of ``site``'s rules in force (0: none)."""
        host = self._hosts.get(site)
        return host.ruleset.version if host is not None and host.ruleset is not None else 0

    def install(
        self, ruleset: RuleSet, *, source: str, keyed: tuple[Keyed, int] | None = None
    ) -> bool:
        """Put a validated rule set in force for its host (returns whether it was); the
        host's downloaded pages are keyed under the new rules so that requests for them are
        recognised — by the keyring's answer ``keyed`` (with the mark of its job), else here —
        and remembered requests the new rules map to another page are sent again (see
        :meth:`~scrapy_templates.urlnorm.guard.HostGuard.install`)."""
        error = keyed[0].error if keyed is not None else _problem(ruleset)
        if error:
            self._inc("templates/urls/rules_refused")
            logger.error(
                "scrapy-templates: rule set for %s from %s refused (%s); previous rules stay",
                ruleset.site,
                source,
                error,
            )
            return False
        host = self.host(ruleset.site)
        if host.ruleset is not None:
            self._refused_before += host.ruleset.refused_results
        if keyed is None:
            again = host.install(ruleset, resend=self._crawling())
        else:
            again = host.install_keyed(ruleset, keyed[0], keyed[1], resend=self._crawling())
        self._send_again(again)
        self._recount(ruleset.site)
        return True

    def _recount(self, site: str) -> None:
        """The rules of ``site`` changed: update the totals and their stats."""
        ruleset = self.host(site).ruleset
        count = ruleset.rule_count if ruleset is not None else 0
        self._rule_total += count - self._counted.get(site, 0)
        self._counted[site] = count
        if ruleset is not None:
            self._top_version = max(self._top_version, ruleset.version)
        if self.stats is not None:
            self.stats.set_value("templates/urls/rules", self._rule_total)
            self.stats.set_value("templates/urls/rules_version", self._top_version)

    def _crawling(self) -> bool:
        try:
            engine = self.crawler.engine
        except RuntimeError:  # not crawling (yet): nothing was sent anywhere
            return False
        return engine is not None and engine.spider is not None

    def _send_again(self, again: list[Resend[Request]]) -> None:
        for resend in again:
            self._resend(resend.token, resend.url)

    def _resend(self, request: Request, url: str) -> None:
        """Send ``request`` again for ``url``, past the dupefilter: this process may have
        requested the URL and turned it away since, and with a shared dupefilter
        (scrapy-redis) another process may have, and that process does not know it was
        turned away here."""
        meta = {k: v for k, v in request.meta.items() if k != ORIGINAL_URL}
        if url != request.url:
            meta[ORIGINAL_URL] = request.url
        meta[RESENT] = True
        self.crawler.engine.crawl(request.replace(url=url, meta=meta, dont_filter=True))
        self._inc("templates/urls/revisited")
        logger.debug("Sent again %s (asked for as %s): the rules changed", url, request.url)

    def check_counts(self, site: str) -> dict[str, tuple[int, int]]:
        """Each rule's ``(checked, held)`` in this crawl, by signature."""
        return self.host(site).checks.counts()

    def max_version(self) -> int:
        """The highest version of the rule sets put in force."""
        return self._top_version

    def rule_count(self) -> int:
        """The rules in force over all hosts."""
        return self._rule_total

    def rulesets(self) -> list[RuleSet]:
        return [h.ruleset for h in self._hosts.values() if h.ruleset is not None]

    def results_refused(self) -> int:
        """URLs that rules left as they were because a result was unsafe (see
        :attr:`RuleSet.refused_results`), in this crawl."""
        return self._refused_before + sum(r.refused_results for r in self.rulesets())

    def _inc(self, key: str, count: int = 1) -> None:
        if self.stats is not None:
            self.stats.inc_value(key, count)


def scrapy_dupefilter(scheduler: object, dupefilter: object) -> bool:
    """Whether the crawl drops a repeated request as Scrapy's own scheduler does: that
    scheduler, with Scrapy's own dupefilter and request fingerprinter (by which a GET without
    a body is known by its URL, fragment aside, ``verbatim_url`` aside), and not logging every
    repeat (``DUPEFILTER_DEBUG``: a crawl that logs them wants them all to reach it)."""
    from scrapy.core.scheduler import Scheduler
    from scrapy.dupefilters import RFPDupeFilter
    from scrapy.utils.request import RequestFingerprinter

    return (
        type(scheduler) is Scheduler
        and type(dupefilter) is RFPDupeFilter
        and type(dupefilter.fingerprinter) is RequestFingerprinter
        and not dupefilter.debug
    )


def _scheduler(crawler: Crawler) -> object:
    """The running crawl's scheduler (``None`` before the spider opens)."""
    try:
        engine = crawler.engine
    except RuntimeError:  # a crawler that never started
        return None
    scheduler = getattr(engine, "scheduler", None)  # Scrapy 2.19
    if scheduler is None:
        scheduler = getattr(getattr(engine, "_slot", None), "scheduler", None)
    return scheduler


def _never_raising(note: Callable[[Request], None], request: Request) -> None:
    """``note(request)`` from inside the scheduler, where an error would lose the request:
    logged instead."""
    try:
        note(request)
    except Exception:
        logger.exception("scrapy-templates: noting %s for the URL rules failed", request.url)


def _plain_get(request: Request) -> bool:
    """A GET without a body: the dupefilter knows such a request by its URL alone."""
    return request.method == "GET" and not request.body


def stands_for_links(request: Request) -> bool:
    """Whether a download of ``request`` makes its page downloaded for the URL rules, so
    that they drop later links to it: a plain GET the spider sent through the dupefilter (or
    its retry, which Scrapy sends past it: the :data:`LINKED` mark, naming the URL, stays on
    the copy), or one the rules sent in its stead (a check, a deferral, a request sent again,
    a fall-back). Not a request the spider sent past the dupefilter (``dont_filter``: its
    start requests) or opted out of the rules, nor a POST, whatever it was made from: such
    a request may carry another callback than the links, and a ``CrawlSpider`` makes no item
    of its start response (``parse_start_url``) — its rule's callback makes the start page's
    item from a link."""
    meta = request.meta
    if any(meta.get(key) for key in (CHECK, DEFERRED, RESENT, FALLBACK)):
        return True
    if not _plain_get(request) or meta.get(OPT_OUT):
        return False
    return not request.dont_filter or meta.get(LINKED) == request.url


def _check_request(check: Check[Request]) -> Request:
    """The request of a check: the one a rule turned away, for the URL the spider asked for,
    marked so that neither the rules nor the dupefilter turn it away again. Its errback is
    left out: the spider asked for a request that a rule answered, and a check held is
    ended in the downloader (see the middlewares), not by the spider's errback."""
    request = check.token
    meta = {k: v for k, v in request.meta.items() if k not in NOT_CARRIED}
    meta[CHECK] = (check.target, check.witness, check.rule)
    meta[OPT_OUT] = True
    return request.replace(url=check.url, meta=meta, dont_filter=True, errback=None)
