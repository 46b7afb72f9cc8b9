"""The two middlewares that apply learned URL rules to requests.

:class:`UrlRulesSpiderMiddleware` sits on the spider's output (and on start requests), so a
request is rewritten to its canonical URL — or dropped when that page was already downloaded,
or requested and not turned away since — *before* it reaches the scheduler and its dupefilter.
:class:`UrlRulesDownloaderMiddleware` covers what never passes the spider middlewares:
redirects and requests that were queued before their host had a rule (a retry, which Scrapy
marks ``dont_filter``, goes as it is). It drops a
request whose canonical page was downloaded or requested already and sends a rewritten one
back to the scheduler (whose dupefilter then sees the canonical URL).
Rules judge plain GETs only (a POST, or a request with ``dont_filter``, passes as it is), and
``request.meta["dont_normalize"] = True`` opts a request out of both. Each drop and rewrite is
logged at DEBUG on this module's logger (``Dropped ‹url›: the page of ‹canonical›``), so that a
crawl's turned-away URLs can be listed and checked.

The spider middleware also drops a request for a URL the scheduler's dupefilter has recorded
(fragment aside), which it would drop after the later middlewares and the ``request_scheduled``
signal: ``templates/urls/repeats``, with Scrapy's own dupefilter only (see
:meth:`~scrapy_templates.crawl.urlguards.UrlGuards.watch_dupefilter`).

Stats: ``templates/urls/rewritten`` (requests rewritten before enqueue),
``templates/urls/rescheduled`` (rewritten in the downloader), ``templates/urls/dropped``
(all drops), split into ``…/dropped/fetched`` (the page was downloaded already),
``…/dropped/requested`` (it is requested and on its way) and ``…/dropped/repeats`` (a URL
dropped or rewritten before, which Scrapy's dupefilter would have dropped by itself),
``templates/urls/bytes_saved`` (the host's mean response size, per ``dropped/fetched``) and
``templates/urls/deferred`` (requests of a duplicate-prone form with no rule yet, sent to the
back of the queue so that their rule can be learned first: by the spider middleware as they
are enqueued, and once by the downloader middleware for those queued before the host's rules
said so) and ``templates/urls/held``
(requests that waited in the downloader middleware while another URL of their form was in
flight: a URL carrying a query parameter that the host's rules drop elsewhere, on a form no
rule covers yet, goes one at a time, with a relearn after each, so that the first download
teaches the rule that spares the rest). A rewritten request whose canonical URL fails (an
HTTP error status, a download error, or another middleware's ``IgnoreRequest``) is fetched
again as the spider asked for it, with retries of its own (``templates/urls/fallbacks``), and
only successful downloads count as downloaded pages.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from typing import Any

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.downloadermiddlewares.stats import DownloaderStats
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import HtmlResponse, Response
from scrapy.spidermiddlewares.base import BaseSpiderMiddleware
from scrapy.statscollectors import StatsCollector
from scrapy.utils.conf import build_component_list
from scrapy.utils.misc import load_object
from scrapy.utils.python import global_object_name

from scrapy_templates.crawl.runtime import TemplatesRuntime
from scrapy_templates.crawl.urlguards import (
    CHECK,
    DEFERRED,
    FALLBACK,
    NOT_CARRIED,
    NOT_JUDGED,
    OPT_OUT,
    ORIGINAL_URL,
    stands_for_links,
)
from scrapy_templates.crawl.urlrules import UrlRules
from scrapy_templates.sites import host_site
from scrapy_templates.urlnorm.checks import HELD, Check
from scrapy_templates.urlnorm.guard import DROP, KEEP, Verdict
from scrapy_templates.urlnorm.url import url_key

logger = logging.getLogger(__name__)


class CheckHeld(IgnoreRequest):
    """A check of a URL rule found the page it took the URL for: the download ends here."""


class DuplicateDropped(IgnoreRequest):
    """A queued request whose page a URL rule says is downloaded or requested already."""


class DuplicateResponse(IgnoreRequest):
    """A download that a URL rule takes for a page downloaded before, whose text is that
    page's: it ends here, so that the page makes one item, not two."""


def _enabled(crawler: Crawler, component: str) -> UrlRules:
    rules = TemplatesRuntime.of(crawler, component).urls
    if not rules.enabled:
        raise NotConfigured("TEMPLATES_URL_RULES is false")
    return rules


def _rewritten(request: Request, verdict: Verdict) -> Request:
    logger.debug("Rewrote %s: the page of %s", request.url, verdict.url)
    return request.replace(url=verdict.url, meta={**request.meta, ORIGINAL_URL: request.url})


def _count_drop(
    stats: StatsCollector | None, rules: UrlRules, request: Request, verdict: Verdict
) -> None:
    """Count a dropped request by why it was dropped; bytes are saved only by a request for a
    page already downloaded that Scrapy's dupefilter would not have dropped by itself."""
    logger.debug("Dropped %s: the page of %s", request.url, verdict.url)
    if stats is None:
        return
    stats.inc_value("templates/urls/dropped")
    if verdict.repeat:
        stats.inc_value("templates/urls/dropped/repeats")
        return
    if not verdict.fetched:
        stats.inc_value("templates/urls/dropped/requested")
        return
    stats.inc_value("templates/urls/dropped/fetched")
    host = rules.guards.guard(verdict.url)
    stats.inc_value("templates/urls/bytes_saved", int(host.mean_size) if host else 0)


@dataclass
class _Output:
    """What the spider made of a check's page: items, and the pages its requests are for
    (canonical keys), those the crawl never met among them."""

    items: int = 0
    pages: set[int] = field(default_factory=set)
    new: set[int] = field(default_factory=set)


class UrlRulesSpiderMiddleware(BaseSpiderMiddleware):
    """Rewrites or drops requests before they are enqueued; tells the URL rules what the
    spider made of a check's page (a page it makes no item of is judged by where it leads)."""

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self.rules = _enabled(crawler, "UrlRulesSpiderMiddleware")
        self.stats = crawler.stats
        self.depth_limit = crawler.settings.getint("DEPTH_LIMIT")
        # id of a check's response -> the response and what the spider made of it so far
        self._checks: dict[int, tuple[Response, _Output]] = {}

    def process_spider_output(
        self, response: Response | None, result: Iterable[Any], spider: Any = None
    ) -> Iterable[Any]:
        self._start(response)
        complete = False
        try:
            yield from super().process_spider_output(response, result)
            complete = True
        finally:
            self._finish(response, complete)

    async def process_spider_output_async(
        self, response: Response | None, result: AsyncIterator[Any], spider: Any = None
    ) -> AsyncIterator[Any]:
        self._start(response)
        complete = False
        try:
            async for o in super().process_spider_output_async(response, result):
                yield o
            complete = True
        finally:
            self._finish(response, complete)

    def _start(self, response: Response | None) -> None:
        if response is not None and response.meta.get(CHECK) is not None:
            self._checks[id(response)] = (response, _Output())

    def _output(self, response: Response | None) -> _Output | None:
        # most responses are no checks: one truth test per request spares the lookup
        entry = self._checks.get(id(response)) if self._checks and response is not None else None
        return entry[1] if entry is not None and entry[0] is response else None

    def _finish(self, response: Response | None, complete: bool) -> None:
        """The spider is done with ``response`` (``complete``: its callback ran to the
        end, not into an error)."""
        output = self._output(response)
        if output is None or response is None:
            return
        del self._checks[id(response)]
        if complete and not output.items:
            self.rules.check_output(response.url, len(output.pages), len(output.new))

    def _count(self, output: _Output, response: Response, url: str, verdict: Verdict) -> None:
        """A request the spider made from a check's page: the page it is for, on the
        page's host, and whether the crawl never met it."""
        try:
            if verdict is NOT_JUDGED or host_site(verdict.url) != host_site(response.url):
                return
        except ValueError:  # a URL without a host
            return
        key = url_key(verdict.url)
        output.pages.add(key)
        if verdict.action != DROP and not self.rules.guards.met(verdict.url, url):
            output.new.add(key)

    def get_processed_item(self, item: Any, response: Response | None) -> Any:
        if (output := self._output(response)) is not None:
            output.items += 1
        return item

    def get_processed_request(self, request: Request, response: Response | None) -> Request | None:
        if request.meta.get(OPT_OUT):
            return request
        if self.depth_limit > 0 and response is not None:
            # a link DepthMiddleware (after this one) drops is not judged: remembered, it
            # could be sent again or checked past the limit (those go straight to the engine)
            depth = 0 if request.meta.get("depth_reset") else response.meta.get("depth", 0) + 1
            if depth > self.depth_limit:
                return request
            request.meta["depth"] = depth  # as DepthMiddleware will: kept if it is sent again
        verdict = self.rules.guards.decide(request, queued=False)
        if response is not None and (output := self._output(response)) is not None:
            if verdict.seen:  # a repeat counts for the page the rules take it for
                verdict = dataclasses.replace(verdict, url=self.rules.guards.canonical(request.url))
            self._count(output, response, request.url, verdict)
        if verdict.action == KEEP:
            if not verdict.defer:
                return request
            self._inc("templates/urls/deferred")
            return request.replace(
                priority=request.priority - verdict.defer, meta={**request.meta, DEFERRED: True}
            )
        if verdict.action == DROP:
            if verdict.seen:  # as the dupefilter would, silently
                self._inc("templates/urls/repeats")
            else:
                _count_drop(self.stats, self.rules, request, verdict)
            return None
        self._inc("templates/urls/rewritten")
        return _rewritten(request, verdict)

    def _inc(self, key: str, count: int = 1) -> None:
        if self.stats is not None:
            self.stats.inc_value(key, count)


class UrlRulesDownloaderMiddleware:
    """Drops or reschedules requests that learned rules make duplicates; records downloads."""

    def __init__(self, crawler: Crawler) -> None:
        self.rules = _enabled(crawler, "UrlRulesDownloaderMiddleware")
        self.stats = crawler.stats
        self._counted = _stats_count_exceptions(crawler)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> UrlRulesDownloaderMiddleware:
        return cls(crawler)

    async def process_request(self, request: Request, spider: Any = None) -> Request | None:
        if request.meta.get(OPT_OUT):
            return None
        await self.rules.hold(request.url)
        # a request deferred once, or one a rule rewrote (for the canonical URL), goes now
        defer = not (request.meta.get(DEFERRED) or request.meta.get(ORIGINAL_URL))
        verdict = self.rules.guards.decide(request, queued=True, defer=defer)
        if verdict.action == KEEP:
            return self._defer(request, verdict.defer)
        if verdict.action == DROP:
            _count_drop(self.stats, self.rules, request, verdict)
            raise DuplicateDropped(f"duplicate of {verdict.url}, downloaded or queued already")
        self._inc("templates/urls/rescheduled")
        return _rewritten(request, verdict)

    def _defer(self, request: Request, deferral: int) -> Request | None:
        """A request of a duplicate-prone form that was queued before its host's rules said
        so goes back to the scheduler, once, with the priority it would have had (the
        shared queue of several processes fills with such requests before a first rule)."""
        if not deferral:
            return None
        self._inc("templates/urls/deferred")
        return request.replace(
            priority=request.priority - deferral,
            meta={**request.meta, DEFERRED: True},
            dont_filter=True,
        )

    async def process_response(
        self, request: Request, response: Response, spider: Any = None
    ) -> Request | Response:
        original = request.meta.get(ORIGINAL_URL)
        to_spider = 200 <= response.status < 300
        # an error page says nothing of which URLs show one page: no sample
        html = to_spider and isinstance(response, HtmlResponse)
        check = request.meta.get(CHECK)
        if check is not None and to_spider:
            target, witness, rule = check
            asked = (*request.meta.get("redirect_urls", ()), request.url)[0]
            ran = Check(request, asked, target, witness, rule)
            if self.rules.check_fetched(ran, response) == HELD:
                self.rules.note_response(
                    request.url, response.url, response.body, (), html, to_spider=False
                )
                self.rules.release(request.url)
                raise CheckHeld(f"the page of {witness}, as its URL rule said")
        if not (to_spider and html):
            self.rules.release(request.url)  # no item, no sample to wait for
        if response.status >= 400:
            self.rules.guards.failed(request, response.status)
            if original:
                return self._fall_back(request, original)
        redirects = tuple(request.meta.get("redirect_urls", ()))
        # only a request the rules could have turned away may end as a repeat: not one the
        # user exempted or asked for again, not a check, not a fall-back from a rewrite
        may_repeat = not (
            request.meta.get(OPT_OUT)
            or request.dont_filter
            or request.method != "GET"
            or check is not None
            or original
        )
        repeated = self.rules.note_response(
            request.url,
            response.url,
            response.body,
            redirects,
            html,
            to_spider=to_spider,
            for_links=stands_for_links(request),
            may_repeat=may_repeat,
        )
        await self.rules.flush()
        if repeated is not None:
            self.rules.release(request.url)
            logger.debug("Dropped the download of %s: the same page as %s", response.url, repeated)
            self._inc("templates/urls/repeated_downloads")
            raise DuplicateResponse(f"the same page as {repeated}, downloaded already")
        return response

    def process_exception(
        self, request: Request, exception: BaseException, spider: Any = None
    ) -> Request | None:
        self.rules.release(request.url)
        if isinstance(exception, DuplicateDropped):
            self._uncount(exception)
            return None
        self.rules.guards.failed(request)
        original = request.meta.get(ORIGINAL_URL)
        if original:
            # a download error, or another middleware's IgnoreRequest (robots.txt may
            # disallow the canonical URL and not the one the spider asked for)
            return self._fall_back(request, original)
        return None

    def _uncount(self, exception: DuplicateDropped) -> None:
        """Take a drop back out of Scrapy's download-error counts: every downloader
        middleware's ``process_exception`` sees the exception, and ``DownloaderStats`` counts
        it as a failed download, which it is not (``templates/urls/dropped`` counts it)."""
        if self.stats is None or not self._counted:
            return
        name = global_object_name(type(exception))
        keys = ("downloader/exception_count", f"downloader/exception_type_count/{name}")
        if not all(self.stats.get_value(key, 0) > 0 for key in keys):
            return  # a middleware between us ended the exception before it was counted
        for key in keys:
            self.stats.inc_value(key, -1)
        if any(self.stats.get_value(key) == 0 for key in keys):
            self.stats.set_stats(
                {k: v for k, v in self.stats.get_stats().items() if v != 0 or k not in keys}
            )

    def _fall_back(self, request: Request, original: str) -> Request:
        """A rewritten URL that fails is not the page: fetch the URL as the spider asked, as
        a request of its own (the canonical URL's retries and redirects are not its)."""
        self._inc("templates/urls/fallbacks")
        meta = {k: v for k, v in request.meta.items() if k not in NOT_CARRIED}
        meta.update({OPT_OUT: True, FALLBACK: True})
        return request.replace(url=original, meta=meta, dont_filter=True)

    def _inc(self, key: str, count: int = 1) -> None:
        if self.stats is not None:
            self.stats.inc_value(key, count)


def _stats_count_exceptions(crawler: Crawler) -> bool:
    """Whether Scrapy's ``DownloaderStats`` (or a subclass) is on and has counted an exception
    by the time this middleware's ``process_exception`` sees it: it must come later in the
    downloader middleware order (exceptions go through that order backwards)."""
    if not crawler.settings.getbool("DOWNLOADER_STATS"):
        return False
    order = [
        load_object(c) if isinstance(c, str) else c
        for c in build_component_list(crawler.settings.getwithbase("DOWNLOADER_MIDDLEWARES"))
    ]
    ours = [i for i, c in enumerate(order) if c is UrlRulesDownloaderMiddleware]
    stats = [
        i for i, c in enumerate(order) if isinstance(c, type) and issubclass(c, DownloaderStats)
    ]
    return bool(ours and stats) and ours[0] < stats[0]
