"""URL rules during a crawl: samples in, learned rule sets out, one object per crawler.

What each request becomes is a host's :class:`~scrapy_templates.urlnorm.guard.HostGuard`'s
answer; this module keeps the asynchronous parts around it. The middlewares ask it for a
verdict on each request and tell it what was downloaded; the template pipeline hands it a
sample of every page it marks. Samples are kept in the store (bounded, per host) so that every
process learns from the same evidence. A host's rules are learned once
``TEMPLATES_URL_MIN_SAMPLES`` of its pages are sampled and again every
``TEMPLATES_URL_LEARN_EVERY`` new samples — twice as many after each relearn that changed
nothing — and by the relearning extension; learning runs in a worker thread, and the crawl
goes on while it runs. Whichever process holds the host's lock in the store learns and
publishes the rule set with the next version; the others install it when the extension
syncs. Until a host has rules, its requests pass untouched.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import json
import logging
import random
import time
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.settings import BaseSettings

from scrapy_templates.crawl.forms import FormHolds
from scrapy_templates.crawl.publisher import Publisher
from scrapy_templates.sites import host_site
from scrapy_templates.store.base import StoreError, TemplateStore
from scrapy_templates.urlnorm.clusters import Sample
from scrapy_templates.urlnorm.guard import KEEP, Form, HostGuard, Verdict
from scrapy_templates.urlnorm.learn import LearnConfig, learn_from_samples
from scrapy_templates.urlnorm.rules import RuleSet, RuleSetError
from scrapy_templates.urlnorm.samples import decode_sample, encode_sample, head_canonical

logger = logging.getLogger(__name__)

# samples go to the store at once while a host has no rules (they decide when its first rules
# come), then in batches: one round trip per this many pages and responses
_FLUSH_EVERY = 10
_POLL = 0.2
ORIGINAL_URL = "templates_original_url"
_HOLD = 2 * _FLUSH_EVERY
# a relearn that leaves a host's rules behaving as before doubles the samples to the next
# one, up to this many times TEMPLATES_URL_LEARN_EVERY; one that changes them starts over
_MAX_BACKOFF = 64
_KEEP_AS_IS = Verdict(KEEP, "")


def learn_config(settings: BaseSettings) -> LearnConfig:
    """The learner's thresholds from ``TEMPLATES_URL_*`` settings."""
    return LearnConfig(
        min_share=settings.getfloat("TEMPLATES_URL_MIN_SHARE"),
        o_min=settings.getfloat("TEMPLATES_URL_O_MIN"),
        dup_rate_min=settings.getfloat("TEMPLATES_URL_DUP_RATE_MIN"),
        sigma_min=settings.getfloat("TEMPLATES_URL_SIGMA_MIN"),
        fake_max=settings.getfloat("TEMPLATES_URL_FAKE_MAX"),
        fpr_max=settings.getfloat("TEMPLATES_URL_FPR_MAX"),
        min_support=settings.getint("TEMPLATES_URL_MIN_SUPPORT"),
    )


def load_rules_file(path: str | Path) -> list[RuleSet]:
    """Rule sets from a JSON file holding one rule set or a list of them."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    items = data if isinstance(data, list) else [data]
    return [RuleSet.from_json(item) for item in items]


@dataclass
class _Samples:
    """A host's samples on their way to the store, and when it is next learned."""

    pending: dict[str, Sample] = field(default_factory=dict)
    # once the host has rules: download samples of pages that went to the spider, held while
    # _HOLD more responses arrive so that the page's item sample can join them (one sample
    # per page in the store, not two)
    held: dict[str, tuple[Sample, int]] = field(default_factory=dict)
    offered: int = 0
    learned_at: int = 0
    # a sample naming another URL for its page waits: flush without waiting for a batch
    urgent: bool = False
    # the step between relearns, in TEMPLATES_URL_LEARN_EVERY (see _MAX_BACKOFF)
    backoff: int = 1


class UrlRules:
    """Per-crawler URL-rule state (see the module docstring)."""

    _instances: ClassVar[weakref.WeakKeyDictionary[Crawler, UrlRules]] = weakref.WeakKeyDictionary()

    @classmethod
    def of(cls, crawler: Crawler) -> UrlRules:
        """The crawler's instance, created on first use."""
        found = cls._instances.get(crawler)
        if found is None:
            found = cls._instances[crawler] = cls(crawler)
        return found

    def __init__(self, crawler: Crawler) -> None:
        s = crawler.settings
        self.crawler = crawler
        self.stats = crawler.stats
        self.enabled = s.getbool("TEMPLATES_ENABLED") and s.getbool("TEMPLATES_URL_RULES")
        self.config = learn_config(s)
        self.cap = s.getint("TEMPLATES_URL_SAMPLE_SIZE")
        self.min_samples = s.getint("TEMPLATES_URL_MIN_SAMPLES")
        self.learn_every = max(1, s.getint("TEMPLATES_URL_LEARN_EVERY"))
        self.distance = s.getint("TEMPLATES_URL_SIMHASH_DISTANCE")
        self.defer = (
            s.getint("TEMPLATES_URL_DEFER_PRIORITY"),
            s.getfloat("TEMPLATES_URL_DEFER_RATE"),
        )
        self.lock_ttl = s.getfloat("TEMPLATES_LOCK_TTL")
        self._hosts: dict[str, HostGuard[Request]] = {}
        self._samples_of: dict[str, _Samples] = {}
        # hosts with samples not yet in the store: flush (per response and item) visits these
        # only, not every host the crawl has met
        self._unflushed: set[str] = set()
        self._store: TemplateStore | None = None
        self._owner = ""
        self._learning: dict[str, asyncio.Task[None]] = {}
        self._waiting: dict[str, asyncio.Future[None]] = {}
        self.forms = FormHolds(self, self._inc)
        self.publisher: Publisher[RuleSet] = Publisher(
            "rules",
            label="URL rules",
            lock="urls",
            load=RuleSet.loads,
            current=self._version,
            refused=functools.partial(self._inc, "templates/urls/rules_refused"),
            lock_ttl=self.lock_ttl,
        )
        self._rng = random.Random()
        path = s.get("TEMPLATES_URL_RULES_FILE")
        if path and self.enabled:
            for ruleset in load_rules_file(path):
                self.install(ruleset, source=str(path))

    def _host(self, site: str) -> HostGuard[Request]:
        host = self._hosts.get(site)
        if host is None:
            host = self._hosts[site] = HostGuard()
        return host

    def _sampling(self, site: str) -> _Samples:
        found = self._samples_of.get(site)
        if found is None:
            found = self._samples_of[site] = _Samples()
        return found

    def _inc(self, key: str, count: int = 1) -> None:
        if self.stats is not None:
            self.stats.inc_value(key, count)

    # -- applying ------------------------------------------------------------------------

    def guard(self, url: str) -> HostGuard[Request] | None:
        """The guard of ``url``'s host (``None`` for a URL without one)."""
        try:
            return self._host(host_site(url))
        except ValueError:
            return None

    def decide(self, request: Request, *, queued: bool, defer: bool = True) -> Verdict:
        """The verdict of its host's rules on ``request`` (see
        :meth:`~scrapy_templates.urlnorm.guard.HostGuard.decide`); ``defer``: whether a
        request no rule rewrites may be deferred."""
        host = self.guard(request.url) if self.enabled else None
        if host is None:
            return _KEEP_AS_IS
        return host.decide(request.url, request, queued=queued, defer=self.defer if defer else None)

    def canonical(self, url: str) -> str:
        """``url`` rewritten by its host's rules (``url`` when there are none)."""
        host = self.guard(url) if self.enabled else None
        return url if host is None else host.canonical(url)

    def was_fetched(self, url: str) -> bool:
        """Whether a page whose canonical URL is ``url`` has been downloaded."""
        host = self.guard(url)
        return host is not None and host.was_fetched(url)

    def suspect_form(self, url: str) -> Form | None:
        """See :meth:`~scrapy_templates.urlnorm.guard.HostGuard.suspect_form`."""
        host = self.guard(url) if self.enabled else None
        return None if host is None else host.suspect_form(url)

    async def hold(self, url: str) -> None:
        """Wait while another URL of ``url``'s suspect form is in flight (see
        :mod:`~scrapy_templates.crawl.forms`)."""
        await self.forms.hold(url)

    def release(self, url: str) -> None:
        """The download of ``url`` is sampled (or failed): the next URL of its form may go."""
        self.forms.release(url)

    async def learn_now(self, site: str) -> None:
        """Store the samples waiting and relearn ``site`` if its sample grew; returns when
        the learning under way has ended."""
        await self.flush(force=True)
        sampling = self._sampling(site)
        if sampling.offered > sampling.learned_at:
            self.relearn(site)
        task = self._learning.get(site)
        if task is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(task)

    def note_response(
        self,
        url: str,
        final_url: str,
        body: bytes,
        redirects: tuple[str, ...],
        html: bool,
        *,
        to_spider: bool = True,
    ) -> None:
        """Record a download: for the was-fetched test, the size estimate, and (for HTML) a
        sample with what the download alone tells — the body hash, the ``rel=canonical`` of
        the head and the redirects that led here — so that this evidence reaches the learner
        at once, not after the page has waited its turn in the spider and the pipeline.
        A download the spider never sees (``to_spider`` false: the template bootstrap's) is
        evidence but does not make its page "downloaded": dropping a request for that page
        would lose its item."""
        site = host_site(final_url)
        host = self._host(site)
        host.note_download({url, final_url}, len(body), page=to_spider)
        if not (html and self.enabled):
            return
        same_host = tuple(r for r in redirects if host_site(r) == site)
        sample = Sample(
            final_url,
            body_hash=hashlib.blake2b(body, digest_size=8).hexdigest(),
            canonical=head_canonical(body, final_url),
            redirects=same_host,
        )
        named = sample.canonical not in (None, final_url) or bool(same_host)
        if to_spider and host.has_rules and not named:
            self._sampling(site).held[final_url] = (sample, host.responses)
            self._unflushed.add(site)
        else:
            # the site names another URL for this page: duplicate evidence the learner
            # wants now, not after the item's sample joins it
            self._queue(sample)
            sampling = self._sampling(site)
            sampling.urgent = sampling.urgent or named

    # -- learning ------------------------------------------------------------------------

    def add_page(self, url: str, simhash: int, text_hash: str | None) -> None:
        """A marked page's sample: its page simhash and content hash."""
        if self.enabled:
            self._queue(Sample(url, simhash=simhash, text_hash=text_hash))
            self.release(url)

    def _queue(self, sample: Sample) -> None:
        site = host_site(sample.url)
        self._unflushed.add(site)
        sampling = self._sampling(site)
        held = sampling.held.pop(sample.url, None)
        if held is not None:
            sample = held[0].merged(sample)
        queued = sampling.pending.get(sample.url)
        sampling.pending[sample.url] = sample if queued is None else queued.merged(sample)

    def attach(self, store: TemplateStore, owner: str) -> None:
        """Lend the store that keeps samples and publications, and the lock holder id of this
        process."""
        self._store = store
        self._owner = owner
        self.forms.store, self.forms.owner = store, owner
        self.publisher.attach(store, owner)

    def _version(self, site: str) -> int:
        host = self._hosts.get(site)
        return host.ruleset.version if host is not None and host.ruleset is not None else 0

    async def flush(self, *, force: bool = False) -> None:
        """Move queued samples to the store; start learning for hosts that are due."""
        store = self._store
        if store is None:
            return
        for site in list(self._unflushed):
            host, sampling = self._host(site), self._sampling(site)
            batch_size = _FLUSH_EVERY if host.has_rules else 1
            held = sampling.held
            ready = [url for url, (_, at) in held.items() if force or host.responses - at >= _HOLD]
            waiting = len(sampling.pending) + len(ready)
            if not waiting or (waiting < batch_size and not force and not sampling.urgent):
                continue
            sampling.urgent = False
            samples = [*sampling.pending.values(), *(held.pop(url)[0] for url in ready)]
            batch = [encode_sample(site, sample) for sample in samples]
            sampling.pending = {}
            if not held:
                self._unflushed.discard(site)
            draws = [self._rng.random() for _ in batch]
            try:
                sampling.offered = await store.add_url_samples(site, batch, self.cap, draws)
            except StoreError as exc:
                logger.warning("scrapy-templates: URL samples of %s not stored (%s)", site, exc)
                continue
            self._inc("templates/urls/samples", len(batch))
            # early on, relearn as the sample grows by a tenth (at least 5 samples, or 1 while
            # the host has no rules: its first rules end the learning window); later every
            # learn_every, times the host's backoff (doubled by each relearn that changed
            # nothing). A host that never gets rules is not relearned on every page.
            floor = 5 if host.has_rules else 1
            step = min(self.learn_every * sampling.backoff, max(floor, sampling.learned_at // 10))
            grown = sampling.offered - sampling.learned_at
            if sampling.offered >= self.min_samples and grown >= step:
                self.relearn(site)

    def relearn(self, site: str) -> None:
        """Start learning the host's rules in the background, unless that is under way."""
        if self._store is None or site in self._learning or not self.enabled:
            return
        sampling = self._sampling(site)
        sampling.learned_at = sampling.offered
        task = asyncio.ensure_future(self._learn(site))
        self._learning[site] = task
        task.add_done_callback(self._learned_callback(site))

    def stale(self) -> list[str]:
        """Hosts whose sample grew since their rules were last learned."""
        return [
            site
            for site, sampling in self._samples_of.items()
            if sampling.offered >= self.min_samples and sampling.offered > sampling.learned_at
        ]

    async def sync(self, sites: Iterable[str]) -> None:
        """Install rule sets that other processes published with a higher version."""
        if self._store is None or not self.enabled:
            return
        for site in sites:
            ruleset = await self.publisher.newer(site)
            if ruleset is not None:
                await self._install_published(ruleset)

    async def _install_published(
        self, ruleset: RuleSet, samples: list[Sample] | None = None
    ) -> None:
        """Install a published rule set; pages that other processes downloaded (item samples
        in the store) count as downloaded here."""
        if samples is None:
            samples = await self._samples(ruleset.site)
        self._host(ruleset.site).shared = [x.url for x in samples if x.simhash is not None]
        if self.install(ruleset, source="store"):
            logger.info(
                "scrapy-templates: URL rules of %s v%d (%d rules) from the store",
                ruleset.site,
                ruleset.version,
                len(ruleset.rules),
            )

    async def _samples(self, site: str) -> list[Sample]:
        samples = []
        assert self._store is not None
        for line in await self._store.url_samples(site):
            try:
                samples.append(decode_sample(site, line))
            except ValueError:
                self._inc("templates/urls/bad_samples")
        return samples

    def _learned_callback(self, site: str) -> Callable[[asyncio.Task[None]], None]:
        def done(_: asyncio.Task[None]) -> None:
            self._learning.pop(site, None)

        return done

    async def wait_learning(self) -> None:
        """Wait for learning that is under way (at spider close); stop waiting for other
        processes' publications."""
        for waiting in list(self._waiting.values()):
            waiting.cancel()
        if self._learning:
            await asyncio.gather(*self._learning.values(), return_exceptions=True)

    async def _learn(self, site: str) -> None:
        """Learn the host's rules under its lock and publish them; without the lock (another
        process is learning the host, or the store is down), wait for its publication."""
        try:
            took = await self.publisher.learn(site, functools.partial(self._learn_locked, site))
        except Exception:  # learning must never stop the crawl; the old rules stay
            self._inc("templates/urls/learn_errors")
            logger.exception("scrapy-templates: learning URL rules of %s failed", site)
            return
        if not took:
            self._inc("templates/urls/learn_skipped")
            if site not in self._waiting:
                waiting = asyncio.ensure_future(self._await_publication(site))
                self._waiting[site] = waiting
                waiting.add_done_callback(lambda _: self._waiting.pop(site, None))

    async def _await_publication(self, site: str) -> None:
        """Poll (one read every ``_POLL`` seconds) for the rule set the lock holder is
        learning, so that it is in force here as soon as it is published rather than at the
        next sync. Stops when it is, or when the lock is free again (the holder finished
        without news, or died and its lock expired)."""
        store = self._store
        assert store is not None
        lock = f"{self.publisher.lock}:{site}"
        try:
            while True:
                await asyncio.sleep(_POLL)
                ruleset = await self.publisher.newer(site)
                if ruleset is not None:
                    await self._install_published(ruleset)
                    return
                if await store.acquire(lock, self._owner, _POLL):
                    await store.release(lock, self._owner)
                    return
        except StoreError as exc:
            logger.warning("scrapy-templates: waiting for URL rules of %s: %s", site, exc)

    async def _learn_locked(self, site: str, version: int, newer: RuleSet | None) -> RuleSet | None:
        """Learn rule set ``version`` of ``site`` from the store's samples (``newer``: a
        publication to install first); the rule set to publish, if it was installed."""
        t0 = time.perf_counter()
        samples = await self._samples(site)
        if newer is not None:
            await self._install_published(newer, samples)
        host = self._host(site)
        # pages that became items in any process: downloaded, whoever downloaded them
        host.shared = [x.url for x in samples if x.simhash is not None]
        report = await asyncio.to_thread(
            learn_from_samples,
            samples,
            site=site,
            version=version,
            distance=self.distance,
            config=self.config,
        )
        before = host.ruleset
        learned = report.ruleset
        if not self.install(learned, source="crawl"):
            return None
        unchanged = before is not None and before.behaves_like(learned)
        sampling = self._sampling(site)
        sampling.backoff = min(sampling.backoff * 2, _MAX_BACKOFF) if unchanged else 1
        self._inc("templates/urls/learn_count")
        logger.info(
            "scrapy-templates: URL rules of %s v%d: %d rules from %d samples after %d "
            "downloads (%d tree nodes, %d candidates) in %.2fs",
            site,
            version,
            len(learned.rules),
            len(samples),
            host.responses,
            len(report.tree.nodes),
            len(report.candidates),
            time.perf_counter() - t0,
        )
        for rule in learned.rules.values():
            logger.debug(
                "scrapy-templates: rule %s -> %s: %s (support %d, fpr %.4f)",
                learned.nodes[rule.source].glob,
                learned.nodes[rule.target].glob,
                "; ".join(op.describe() for op in rule.steps[0]),
                rule.support,
                rule.fpr,
            )
        return learned

    def install(self, ruleset: RuleSet, *, source: str) -> bool:
        """Put a validated rule set in force for its host (returns whether it was); fetched
        URLs are re-keyed under the new rules so that requests for pages already downloaded
        are recognised, and remembered requests the new rules map to another page are sent
        again (see :meth:`~scrapy_templates.urlnorm.guard.HostGuard.install`)."""
        try:
            ruleset.validate()
        except RuleSetError as exc:
            self._inc("templates/urls/rules_refused")
            logger.error(
                "scrapy-templates: rule set for %s from %s refused (%s); previous rules stay",
                ruleset.site,
                source,
                exc,
            )
            return False
        for again in self._host(ruleset.site).install(ruleset, resend=self._crawling()):
            self._resend(again.token, again.url)
        if self.stats is not None:
            self.stats.set_value("templates/urls/rules", self.rule_count())
            self.stats.set_value("templates/urls/rules_version", self.max_version())
        return True

    def _crawling(self) -> bool:
        try:
            engine = self.crawler.engine
        except RuntimeError:  # not crawling (yet): nothing was sent anywhere
            return False
        return engine is not None and engine.spider is not None

    def _resend(self, request: Request, url: str) -> None:
        """Send ``request`` again for ``url``, past the dupefilter: this process may have
        requested the URL and turned it away since, and with a shared dupefilter
        (scrapy-redis) another process may have, and that process does not know it was
        turned away here."""
        meta = {k: v for k, v in request.meta.items() if k != ORIGINAL_URL}
        if url != request.url:
            meta[ORIGINAL_URL] = request.url
        self.crawler.engine.crawl(request.replace(url=url, meta=meta, dont_filter=True))
        self._inc("templates/urls/revisited")

    def max_version(self) -> int:
        return max((h.ruleset.version for h in self._hosts.values() if h.ruleset), default=0)

    def rule_count(self) -> int:
        return sum(len(h.ruleset.rules) for h in self._hosts.values() if h.ruleset)

    def rulesets(self) -> list[RuleSet]:
        return [h.ruleset for h in self._hosts.values() if h.ruleset is not None]
