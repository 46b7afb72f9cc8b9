"""URL rules during a crawl: samples in, learned rule sets out, one object per crawler.

What each request becomes is its host's guard's answer
(:mod:`~scrapy_templates.crawl.urlguards`); this module keeps the asynchronous parts around
the guards. The middlewares tell it what was downloaded; the template pipeline hands it a
sample of every page it marks. Samples are kept in the store (bounded, per host;
:mod:`~scrapy_templates.crawl.urlsampling` says when a host is learned) so that every process
learns from the same evidence. Whichever process holds the host's lock in the store learns
and publishes the rule set with the next version; the others install it when the relearning
syncs. Until a host has rules, its requests pass untouched.

Learning, and keying the host's downloaded pages under new rules, run in a child process (a
URL-rule worker, see :mod:`scrapy_templates.workers` and :mod:`scrapy_templates.urlnorm.jobs`)
so that neither holds the crawl's thread: an install costs the crawl only the keys that
changed. Without a worker (one CPU, ``TEMPLATES_PARSE_WORKERS = 0``, or one that is starting
or died) the same work runs in a thread.

Rules are checked as they work (see :mod:`~scrapy_templates.urlnorm.checks`): a check whose
page differs from the one its rule took it for retracts the rule at once — the requests it
turned away are sent again, the pages are keyed anew in the background, and the pair of
pages travels with every later rule set of the host so that no relearn merges them again.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Iterable, Sequence

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.http import HtmlResponse, Response

from scrapy_templates.config import TemplatesConfig
from scrapy_templates.crawl.forms import FormHolds
from scrapy_templates.crawl.publisher import Publisher
from scrapy_templates.crawl.urlguards import UrlGuards, load_rules_file
from scrapy_templates.crawl.urlsampling import UrlSampling
from scrapy_templates.sites import host_site
from scrapy_templates.store.base import StoreError, TemplateStore
from scrapy_templates.urlnorm.checks import FAILED, OPEN, Check, Outcome
from scrapy_templates.urlnorm.clusters import Sample
from scrapy_templates.urlnorm.guard import Form
from scrapy_templates.urlnorm.jobs import Keyed, Keyring, UrlJob
from scrapy_templates.urlnorm.learn import LearnConfig
from scrapy_templates.urlnorm.rules import RuleSet
from scrapy_templates.urlnorm.samples import head_canonical, page_hash
from scrapy_templates.urlnorm.url import url_key
from scrapy_templates.workers import WorkerPool, WorkerUnavailable, worker_count

logger = logging.getLogger(__name__)

_POLL = 0.2
# a URL-rule worker still busy with one job after this long is replaced (its job then runs in
# a thread)
_JOB_DEADLINE = 300.0


def learn_config(config: TemplatesConfig) -> LearnConfig:
    """The learner's thresholds."""
    return LearnConfig(
        min_share=config.url_min_share,
        o_min=config.url_o_min,
        dup_rate_min=config.url_dup_rate_min,
        sigma_min=config.url_sigma_min,
        fake_max=config.url_fake_max,
        fpr_max=config.url_fpr_max,
        min_support=config.url_min_support,
    )


class UrlRules:
    """Per-crawler URL-rule state (see the module docstring): the hosts' guards, their
    samples, the suspect-form holds and the publication of rule sets."""

    def __init__(self, crawler: Crawler, config: TemplatesConfig) -> None:
        self.stats = crawler.stats
        self.enabled = config.url_rules
        self.config = learn_config(config)
        self.distance = config.url_simhash_distance
        self.max_bytes = config.max_html_bytes
        self.guards = UrlGuards(
            crawler,
            enabled=self.enabled,
            defer=(config.url_defer_priority, config.url_defer_rate),
            checks=(config.url_check_first, config.url_check_share),
            drop_repeats=config.url_drop_repeats,
        )
        self.sampling = UrlSampling(
            cap=config.url_sample_size,
            min_samples=config.url_min_samples,
            learn_every=config.url_learn_every,
            guard=self.guards.host,
            relearn=self.relearn,
            count=self._inc,
            near=config.url_simhash_distance is not None,
        )
        self._store: TemplateStore | None = None
        self._owner = ""
        self.keyring = Keyring()
        self.pool = (
            WorkerPool(1, deadline=_JOB_DEADLINE, role="URL-rule", work="urls")
            if worker_count(config.parse_workers) > 0 and self.enabled
            else None
        )
        self._jobs: dict[str, asyncio.Lock] = {}
        self._learning: dict[str, asyncio.Task[bool]] = {}
        self._waiting: dict[str, asyncio.Future[None]] = {}
        self._closed = False
        # hosts with a check waiting for a content
        self._checking: set[str] = set()
        self.forms = FormHolds(self, self._inc)
        self.publisher: Publisher[RuleSet] = Publisher(
            "rules",
            label="URL rules",
            lock="urls",
            # a tree learned from the store's samples has fewer than two nodes per sample
            load=functools.partial(RuleSet.loads, max_nodes=2 * config.url_sample_size),
            current=self.guards.version,
            refused=functools.partial(self._inc, "templates/urls/rules_refused"),
            lock_ttl=config.lock_ttl,
        )
        path = config.url_rules_file
        if path and self.enabled:
            for ruleset in load_rules_file(path):
                if self.guards.install(ruleset, source=str(path)) and ruleset.claims_refuted:
                    self._distrust_claims(ruleset.site, f"its rules from {path} say so")
        if self.enabled:
            crawler.signals.connect(self.idle, signal=signals.spider_idle)

    def _inc(self, key: str, count: int = 1) -> None:
        if self.stats is not None:
            self.stats.inc_value(key, count)

    def suspect_form(self, url: str) -> Form | None:
        """See :meth:`~scrapy_templates.urlnorm.guard.HostGuard.suspect_form`."""
        return self.guards.suspect_form(url)

    async def hold(self, url: str) -> None:
        """Wait while another URL of ``url``'s suspect form is in flight (see
        :mod:`~scrapy_templates.crawl.forms`)."""
        await self.forms.hold(url)

    def release(self, url: str) -> None:
        """The download of ``url`` is sampled (or failed): the next URL of its form may go."""
        self.forms.release(url)

    async def learn_now(self, site: str, timeout: float) -> None:
        """Store the samples waiting and relearn ``site`` if its sample grew; returns when
        the learning under way has ended, or after ``timeout`` seconds (the learning goes
        on): a request waiting here holds one of Scrapy's ``CONCURRENT_REQUESTS``, and a
        large host's learning may take minutes."""
        await self.flush(force=True)
        if self.sampling.grown(site):
            self.relearn(site)
        task = self._learning.get(site)
        if task is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(task), timeout)

    def note_response(
        self,
        url: str,
        final_url: str,
        body: bytes,
        redirects: tuple[str, ...],
        html: bool,
        *,
        to_spider: bool = True,
        for_links: bool = True,
        may_repeat: bool = False,
    ) -> str | None:
        """Record a download: for the was-fetched test, the size estimate, and (for HTML) a
        sample with what the download alone tells — the hash of its text, the ``rel=canonical`` of
        the head and the redirects that led here — so that this evidence reaches the learner
        at once, not after the page has waited its turn in the spider and the pipeline.
        A download the spider never sees (``to_spider`` false: a check the downloader
        ended), or that does not stand for the links to its page (``for_links`` false: a
        start request, see :func:`~scrapy_templates.crawl.urlguards.stands_for_links`), is
        evidence but does not make its page "downloaded": dropping a request for that page
        would lose its item. One the spider sees is a page for the sampling all the same
        (its text repeated under another URL is a duplicate the rules missed).

        Returns, when ``may_repeat``, the URL of the page this download repeats: the rules
        in force take it for a page downloaded before and its text is that page's (a request
        queued before the rule, already on its way); the caller ends it here, so that it
        makes no second item (see
        :meth:`~scrapy_templates.urlnorm.guard.HostGuard.repeated_page`)."""
        site = host_site(final_url)
        host = self.guards.host(site)
        digest = page_hash(body, self.max_bytes) if html and self.enabled else None
        repeated = host.repeated_page(final_url, digest) if to_spider and may_repeat else None
        page = to_spider and repeated is None
        downloaded = page and for_links
        host.note_download({url, final_url}, len(body), page=downloaded, page_hash=digest)
        self.sampling.touch(site)
        if not (html and self.enabled):
            return repeated
        for outcome in host.checks.expired():
            self._ended(site, outcome)
        self.guards.send_checks(host)
        same_host = tuple(r for r in redirects if host_site(r) == site)
        sample = Sample(
            final_url,
            page_hash=digest,
            canonical=head_canonical(body, final_url),
            redirects=same_host,
        )
        declared = sample.canonical
        if (
            declared is not None
            and host_site(declared) == site
            and url_key(declared) != url_key(final_url)
        ):
            host.checks.names_canonical()
        named = sample.canonical not in (None, final_url) or bool(same_host)
        self.sampling.add_download(
            site, sample, hold=page and host.has_rules and not named, named=named, page=page
        )
        return repeated

    def check_fetched(self, check: Check[Request], response: Response) -> str:
        """A check's download (see :mod:`~scrapy_templates.urlnorm.checks`): how it ended —
        ``held`` (the caller ends the request here), ``failed`` (the rule is retracted),
        ``open`` or ``unknown`` (the page goes on to the spider)."""
        site = host_site(check.url)
        html = isinstance(response, HtmlResponse)
        digest = page_hash(response.body, self.max_bytes) if html else None
        declared = head_canonical(response.body, response.url) if html else None
        outcome = self.guards.host(site).checks.fetched(check, digest, response.url, declared)
        self._ended(site, outcome)
        if outcome.status == OPEN:
            self._checking.add(site)
        return outcome.status

    def check_output(self, url: str, requests: int, new: int) -> None:
        """The spider made no item of a check's page downloaded from ``url``, and
        ``requests`` requests, ``new`` of them for pages the crawl never met: that decides
        the check (see :meth:`~scrapy_templates.urlnorm.checks.RuleChecks.no_item`)."""
        site = host_site(url)
        outcome = self.guards.host(site).checks.no_item(url, requests, new)
        if outcome is not None:
            self._ended(site, outcome)

    def idle(self) -> None:
        """The crawl has nothing in flight: every download has been through the spider and
        the pipeline, so a check still waiting for a page's content never gets it, and ends
        now (:meth:`~scrapy_templates.urlnorm.checks.RuleChecks.expired`). The requests of
        a rule it retracts are sent again at once, and the crawl goes on with them."""
        checking, self._checking = self._checking, set()
        for site in checking:
            for outcome in self.guards.host(site).checks.expired(everything=True):
                self._ended(site, outcome)

    def _ended(self, site: str, outcome: Outcome) -> None:
        """Count a check's outcome; retract the rule of a failed one."""
        self._inc(f"templates/urls/checks/{outcome.status}")
        if outcome.expired:
            self._inc("templates/urls/checks/expired")
        if outcome.status != FAILED:
            return
        if outcome.links:
            refuted = " (no item, and it leads to pages the crawl never met)"
        elif outcome.claimed:  # a page naming the witness canonical, its words not the witness's
            refuted = " (its rel=canonical names that page, its words do not)"
        else:
            refuted = ""
        checks = self.guards.host(site).checks
        if outcome.claimed:
            self._inc("templates/urls/checks/canonical_refuted")
        if outcome.claimed and not checks.claims_refuted:
            # the site's word proved wrong: its rel=canonical links no longer teach rules,
            # and a relearn judges the rules they taught on the pages' contents alone (the
            # rule set it publishes says so to every process)
            self._distrust_claims(
                site, f"it names a canonical URL that is another page ({outcome.url})"
            )
            self.relearn(site)
        if not self.guards.retract(site, outcome.url, outcome.witness):
            released = self.guards.release(site, outcome.rule)
            if released:
                self._inc("templates/urls/released", released)
                logger.info(
                    "scrapy-templates: a check of a URL rule of %s no longer in force failed "
                    "(%s): %s is not the page of %s%s; the %d requests it turned away are sent "
                    "again",
                    site,
                    outcome.rule,
                    outcome.url,
                    outcome.witness,
                    refuted,
                    released,
                )
            return
        self._inc("templates/urls/rules_retracted")
        logger.warning(
            "scrapy-templates: URL rule of %s retracted (%s): %s is not the page of %s%s; "
            "the requests it turned away are sent again",
            site,
            outcome.rule,
            outcome.url,
            outcome.witness,
            refuted,
        )
        if self._store is not None:
            task = asyncio.ensure_future(self._rekey(site))
            task.add_done_callback(_log_failure)

    def _distrust_claims(self, site: str, why: str) -> None:
        """Take the ``rel=canonical`` links of ``site`` no longer as duplicate evidence (once:
        a host's claims are refuted for good)."""
        checks = self.guards.host(site).checks
        if checks.claims_refuted:
            return
        checks.claims_refuted = True
        logger.info(
            "scrapy-templates: %s: %s; its rel=canonical links are no longer evidence for its "
            "URL rules",
            site,
            why,
        )

    async def _rekey(self, site: str) -> None:
        """Key the host's pages under the rule set in force after a retraction."""
        ruleset = self.guards.host(site).ruleset
        if ruleset is not None:
            await self._install_published(ruleset, source="retraction")

    # -- learning ------------------------------------------------------------------------

    def add_page(
        self, url: str, simhash: int, text_hash: str | None, content: Sequence[str] = ()
    ) -> None:
        """A marked page's sample: its page simhash and content hash; ``content``, the texts
        of its content pagelets, ends an open check of ``url``."""
        if self.enabled:
            self.release(url)
            try:
                site = host_site(url)
            except ValueError:  # an item's URL the spider wrote: no host, no sample
                return
            self.sampling.add(Sample(url, simhash=simhash, text_hash=text_hash))
            for outcome in self.guards.host(site).checks.content(url, content):
                self._ended(site, outcome)

    def attach(self, store: TemplateStore, owner: str) -> None:
        """Lend the store that keeps samples and publications, and the lock holder id of this
        process."""
        self._store = store
        self._owner = owner
        self.forms.store, self.forms.owner = store, owner
        self.sampling.store = store
        self.publisher.attach(store, owner)

    async def flush(self, *, force: bool = False) -> None:
        """Move queued samples to the store; start learning for hosts that are due."""
        await self.sampling.flush(force=force)

    def relearn(self, site: str) -> None:
        """Start learning the host's rules in the background, unless that is under way."""
        if self._store is None or site in self._learning or not self.enabled or self._closed:
            return
        self.sampling.learning(site)
        task = asyncio.ensure_future(self._learn(site))
        self._learning[site] = task
        refuted = self.guards.host(site).checks.claims_refuted
        task.add_done_callback(functools.partial(self._learned, site, refuted))

    def _learned(self, site: str, refuted: bool, task: asyncio.Task[bool]) -> None:
        """A learning task of ``site`` ended (``refuted``: whether a claim of the site was
        refuted when it started): when a claim was refuted while it learned here, and what
        it published does not say so, learn once more, so that the store says so (once: a
        host's claims are refuted once)."""
        self._learning.pop(site, None)
        if not refuted and not task.cancelled() and task.exception() is None and task.result():
            self._publish_refutation(site)

    def _publish_refutation(self, site: str) -> None:
        """Learn ``site`` again when this process knows its canonical claims refuted and the
        rules in force (published by it before the refutation, or by a process that never
        saw it) do not say so: other processes and later crawls learn it from the store."""
        host = self.guards.host(site)
        if host.checks.claims_refuted and not (
            host.ruleset is not None and host.ruleset.claims_refuted
        ):
            self.relearn(site)

    def stale(self) -> list[str]:
        """Hosts whose sample grew since their rules were last learned."""
        return self.sampling.stale()

    async def sync(self, sites: Iterable[str]) -> None:
        """Install rule sets that other processes published with a higher version."""
        if self._store is None or not self.enabled:
            return
        for site in sites:
            ruleset = await self.publisher.newer(site)
            if ruleset is not None:
                await self._install_published(ruleset)

    async def _install_published(
        self, ruleset: RuleSet, lines: list[str] | None = None, *, source: str = "store"
    ) -> None:
        """Install a published rule set (or, ``source`` "retraction", the one in force again,
        keyed anew); pages that other processes downloaded (item samples in the store,
        ``lines``) count as downloaded here."""
        site = ruleset.site
        async with self._job_lock(site):
            if lines is None:
                lines = await self._lines(site)
            keyed, mark = await self._run_job(site, ruleset.version, lines, ruleset)
            # the keyring's rule set keeps apart the pages known distinct here
            ruleset = keyed.ruleset or ruleset
            installed = self.guards.install(ruleset, source=source, keyed=(keyed, mark))
        if installed and ruleset.claims_refuted:
            self._distrust_claims(site, f"its rules v{ruleset.version} say a check refuted them")
        self.sampling.touch(site)
        if installed and source == "store":
            logger.info(
                "scrapy-templates: URL rules of %s v%d (%d rules) from the store",
                site,
                ruleset.version,
                ruleset.rule_count,
            )
            self._publish_refutation(site)

    def _job_lock(self, site: str) -> asyncio.Lock:
        """One job at a time per host: each starts from what the previous one installed."""
        lock = self._jobs.get(site)
        if lock is None:
            lock = self._jobs[site] = asyncio.Lock()
        return lock

    async def _lines(self, site: str) -> list[str]:
        assert self._store is not None
        return await self._store.url_samples(site, self.sampling.cap)

    async def _run_job(
        self, site: str, version: int, lines: list[str], published: RuleSet | None
    ) -> tuple[Keyed, int]:
        """Learn (or take ``published``) and key the host's pages, in the URL-rule worker or,
        without one, in a thread; the answer with the mark of the job."""
        host = self.guards.host(site)
        fetched, held, mark = host.job_input()
        apart = host.ruleset.apart if host.ruleset is not None else ()
        job = UrlJob(
            site,
            version,
            lines,
            fetched,
            held,
            self.config,
            self.distance,
            published,
            apart,
            in_force=host.ruleset,
            canonical=not host.checks.claims_refuted,
        )
        keyed: Keyed | None = None
        if self.pool is not None:
            try:
                await self.pool.start()
                keyed = await self.pool.run_url_job(job)
            except WorkerUnavailable:
                self._inc("templates/urls/jobs_in_thread")
        if keyed is None:
            keyed = await asyncio.to_thread(self.keyring.run, job)
        if keyed.bad_samples:
            self._inc("templates/urls/bad_samples", keyed.bad_samples)
        return keyed, mark

    async def close(self) -> None:
        """Stop the URL-rule worker (after :meth:`wait_learning`); nothing is learned after."""
        self._closed = True
        if self.pool is not None:
            await self.pool.close()
            if self.pool.lost:
                self._inc("templates/urls/workers_lost", self.pool.lost)

    async def wait_learning(self) -> None:
        """Wait for learning that is under way (at spider close), and for the learning it
        starts (one more, to publish a refutation: see :meth:`_learned`); stop waiting for
        other processes' publications, those a learning starts meanwhile included."""
        while self._learning or self._waiting:
            for waiting in list(self._waiting.values()):
                waiting.cancel()
            await asyncio.gather(
                *self._learning.values(), *self._waiting.values(), return_exceptions=True
            )

    async def _learn(self, site: str) -> bool:
        """Learn the host's rules under its lock and publish them; without the lock (another
        process is learning the host, or the store is down), wait for its publication.
        Whether this process learned them."""
        try:
            took = await self.publisher.learn(site, functools.partial(self._learn_locked, site))
        except Exception:  # learning must never stop the crawl; the old rules stay
            self._inc("templates/urls/learn_errors")
            logger.exception("scrapy-templates: learning URL rules of %s failed", site)
            return False
        if not took:
            self._inc("templates/urls/learn_skipped")
            if site not in self._waiting:
                waiting = asyncio.ensure_future(self._await_publication(site))
                self._waiting[site] = waiting
                waiting.add_done_callback(lambda _: self._waiting.pop(site, None))
        return bool(took)

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
                    self._publish_refutation(site)
                    return
        except StoreError as exc:
            logger.warning("scrapy-templates: waiting for URL rules of %s: %s", site, exc)

    async def _learn_locked(self, site: str, version: int, newer: RuleSet | None) -> RuleSet | None:
        """Learn rule set ``version`` of ``site`` from the store's samples (``newer``: a
        publication to install first); the rule set to publish, if it was installed."""
        t0 = time.perf_counter()
        lines = await self._lines(site)
        if newer is not None:
            await self._install_published(newer, lines)
        host = self.guards.host(site)
        async with self._job_lock(site):
            before = host.ruleset
            trusted = not host.checks.claims_refuted
            keyed, mark = await self._run_job(site, version, lines, None)
            # a retraction during the job: learn again, keeping its pages apart too; a claim
            # refuted during it: learn again without the site's canonical links
            while keyed.ruleset is not None and (
                not _knows_apart(keyed.ruleset, host.ruleset)
                or (trusted and host.checks.claims_refuted)
            ):
                trusted = not host.checks.claims_refuted
                keyed, mark = await self._run_job(site, version, lines, None)
            learned = keyed.ruleset
            if learned is None:
                self._inc("templates/urls/rules_refused")
                logger.error(
                    "scrapy-templates: rule set learned for %s refused (%s); previous rules stay",
                    site,
                    keyed.error,
                )
                return None
            learned = learned.with_checks(self.guards.check_counts(site))
            if not trusted:
                learned = learned.refuting_claims()
            if not self.guards.install(learned, source="crawl", keyed=(keyed, mark)):
                return None
        self.sampling.touch(site)
        same = before.behaves_like(learned) if before is not None else not learned.rules
        self.sampling.learned(site, unchanged=before is not None and same, same_page=host.same_page)
        self._inc("templates/urls/learn_count")
        # a relearn that maps every URL as before is routine: logged at DEBUG
        logger.log(
            logging.DEBUG if same else logging.INFO,
            "scrapy-templates: URL rules of %s v%d: %d rules from %d samples after %d "
            "downloads (%d tree nodes, %d candidates) in %.2fs%s",
            site,
            version,
            learned.rule_count,
            keyed.samples,
            host.responses,
            keyed.nodes,
            keyed.candidates,
            time.perf_counter() - t0,
            "; the rules in force still hold and stay" if keyed.kept else "",
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


def _knows_apart(learned: RuleSet, current: RuleSet | None) -> bool:
    """Whether ``learned`` keeps apart every pair of pages the rules in force do."""
    return current is None or set(current.apart) <= set(learned.apart)


def _log_failure(task: asyncio.Task[None]) -> None:
    """The crawl goes on when keying after a retraction fails (the guard stays wary)."""
    if not task.cancelled() and task.exception() is not None:
        logger.error("scrapy-templates: keying after a retraction failed: %r", task.exception())
