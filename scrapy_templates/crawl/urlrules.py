"""URL rules during a crawl: samples in, learned rule sets out, one object per crawler.

The middlewares ask it for the canonical form of a URL and tell it what was downloaded; the
template pipeline hands it a sample of every page it parses and lends it the store, where
samples are kept (bounded, per host) so that every process learns from the same evidence.
A host's rules are learned once ``TEMPLATES_URL_MIN_SAMPLES`` of its pages are sampled and
again every ``TEMPLATES_URL_LEARN_EVERY`` new samples — twice as many after each relearn that
changed nothing — and by the relearning extension; learning runs in a worker thread, and the
crawl goes on while it runs. Whichever process
holds the host's lock in the store learns and publishes the rule set with the next version;
the others install it when the extension syncs. Until a host has rules, its requests pass
untouched.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import html
import json
import logging
import random
import re
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import parse_qsl, urljoin, urlsplit

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.settings import BaseSettings

from scrapy_templates.sites import host_site
from scrapy_templates.store.base import StoreError, TemplateStore
from scrapy_templates.urlnorm.clusters import Sample
from scrapy_templates.urlnorm.learn import LearnConfig, learn_from_samples
from scrapy_templates.urlnorm.rules import RuleSet, RuleSetError

logger = logging.getLogger(__name__)

# samples go to the store at once while a host has no rules (they decide when its first rules
# come), then in batches: one round trip per this many pages and responses
_FLUSH_EVERY = 10
_MIN_CONTENT_CHARS = 40
_POLL = 0.2
# requests rewritten or dropped, kept per host so that a corrected rule set can send again
# the ones it maps elsewhere
_REMEMBERED = 5_000
ORIGINAL_URL = "templates_original_url"
_HOLD = 2 * _FLUSH_EVERY
# how long a request of a suspect URL form waits for the one of its form in flight to be
# sampled before it goes anyway (a page that gives no item is never sampled)
_FORM_WAIT = 3.0
# how often a request waiting on another process's URL of its form asks the store again
_FORM_POLL = 0.05
# a relearn that leaves a host's rules behaving as before doubles the samples to the next
# one, up to this many times TEMPLATES_URL_LEARN_EVERY; one that changes them starts over
_MAX_BACKOFF = 64

Form = tuple[str, str, tuple[str, ...]]


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


_CANONICAL = re.compile(
    rb"""<link\b[^>]*\brel\s*=\s*["']?[^"'>]*\bcanonical\b[^>]*>""", re.IGNORECASE
)
_HREF = re.compile(rb"""\bhref\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""", re.IGNORECASE)


def head_canonical(body: bytes, url: str) -> str | None:
    """The ``rel=canonical`` URL of a page, found in its first 32 KB without parsing."""
    match = _CANONICAL.search(body, 0, 32768)
    if match is None:
        return None
    href = _HREF.search(match.group(0))
    if href is None:
        return None
    raw = next(g for g in href.groups() if g is not None).strip()
    try:
        return urljoin(url, html.unescape(raw.decode("utf-8", "replace"))) if raw else None
    except ValueError:
        return None


def encode_sample(site: str, sample: Sample) -> str:
    """The compact form a sample is stored in: a JSON array ``[url, simhash, text_hash,
    body_hash, canonical, redirects]`` without trailing empty fields, where a URL on the site
    itself loses its origin (``/path`` for ``http://site/path``, ``s/path`` for https) —
    about half the size of the sample's JSON object, which matters when thousands are kept
    per site."""
    url = sample.url
    for prefix, short in ((f"http://{site}/", "/"), (f"https://{site}/", "s/")):
        if url.startswith(prefix):
            url = short + url[len(prefix) :]
            break
    fields: list[Any] = [
        url,
        None if sample.simhash is None else f"{sample.simhash:016x}",
        sample.text_hash,
        sample.body_hash,
        sample.canonical,
        list(sample.redirects) or None,
    ]
    while fields[-1] is None:
        fields.pop()
    return json.dumps(fields, separators=(",", ":"))


def decode_sample(site: str, text: str) -> Sample:
    """A sample from :func:`encode_sample`'s form (or a sample's JSON object); raises
    ``ValueError`` for anything else."""
    data = json.loads(text)
    if isinstance(data, dict):
        return Sample.from_record(data)
    if not isinstance(data, list) or not data or not isinstance(data[0], str):
        raise ValueError("a stored sample is a JSON array starting with its URL")
    url = data[0]
    if url.startswith("/"):
        url = f"http://{site}{url}"
    elif url.startswith("s/"):
        url = f"https://{site}{url[1:]}"
    names = ("simhash", "text_hash", "body_hash", "canonical", "redirects")
    if len(data) > len(names) + 1:
        raise ValueError(f"a stored sample has at most {len(names) + 1} fields")
    record: dict[str, Any] = {"url": url}
    for name, value in zip(names, data[1:], strict=False):
        if value is not None:
            record[name] = value
    return Sample.from_record(record)


def _key(url: str) -> int:
    return int.from_bytes(hashlib.blake2b(url.encode("utf-8"), digest_size=8).digest(), "big")


@dataclass
class _Host:
    ruleset: RuleSet | None = None
    pending: dict[str, Sample] = field(default_factory=dict)
    # once the host has rules: download samples of pages that went to the spider, held while
    # _HOLD more responses arrive so that the page's item sample can join them (one sample
    # per page in the store, not two)
    held: dict[str, tuple[Sample, int]] = field(default_factory=dict)
    offered: int = 0
    learned_at: int = 0
    # a sample naming another URL for its page waits: flush without waiting for a batch
    urgent: bool = False
    fetched: list[str] = field(default_factory=list)
    shared: list[str] = field(default_factory=list)
    canonical_fetched: set[int] = field(default_factory=set)
    # the shared URLs whose keys canonical_fetched holds
    keyed_shared: set[str] = field(default_factory=set)
    # the step between relearns, in TEMPLATES_URL_LEARN_EVERY (see _MAX_BACKOFF)
    backoff: int = 1
    responses: int = 0
    bytes: int = 0
    decided: deque[tuple[Request, str]] = field(default_factory=lambda: deque(maxlen=_REMEMBERED))
    # URLs sent towards the scheduler, and those of them a downloader-side rule turned away:
    # a URL requested and not turned away is pending (or done) and needs no second request
    requested: set[int] = field(default_factory=set)
    withdrawn: set[int] = field(default_factory=set)

    def is_pending(self, key: int) -> bool:
        return key in self.requested and key not in self.withdrawn

    @property
    def has_rules(self) -> bool:
        """Whether a rule set with at least one rule is in force (an empty one, learned
        from the first few samples, changes nothing and must not slow the evidence down)."""
        return self.ruleset is not None and bool(self.ruleset.rules)

    @property
    def mean_size(self) -> float:
        return self.bytes / self.responses if self.responses else 0.0


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
        self.defer_priority = s.getint("TEMPLATES_URL_DEFER_PRIORITY")
        self.defer_rate = s.getfloat("TEMPLATES_URL_DEFER_RATE")
        self.lock_ttl = s.getfloat("TEMPLATES_LOCK_TTL")
        self._hosts: dict[str, _Host] = {}
        # hosts with samples not yet in the store: flush (per response and item) visits these
        # only, not every host the crawl has met
        self._unflushed: set[str] = set()
        self._store: TemplateStore | None = None
        self._owner = ""
        self._refused: set[tuple[str, int]] = set()
        self._learning: dict[str, asyncio.Task[None]] = {}
        self._waiting: dict[str, asyncio.Future[None]] = {}
        # suspect URL forms with a download in flight: the URL and what its sample resolves
        self._in_flight: dict[Form, tuple[str, asyncio.Future[None]]] = {}
        self._form_of: dict[str, Form] = {}
        # the store locks taken for them (name, owner), so other processes wait too
        self._form_locks: dict[str, tuple[str, str]] = {}
        self._unlocking: set[asyncio.Task[None]] = set()
        self._rng = random.Random()
        path = s.get("TEMPLATES_URL_RULES_FILE")
        if path and self.enabled:
            for ruleset in load_rules_file(path):
                self.install(ruleset, source=str(path))

    def _host(self, site: str) -> _Host:
        host = self._hosts.get(site)
        if host is None:
            host = self._hosts[site] = _Host()
        return host

    def _inc(self, key: str, count: int = 1) -> None:
        if self.stats is not None:
            self.stats.inc_value(key, count)

    # -- applying ------------------------------------------------------------------------

    def canonical(self, url: str) -> str:
        """``url`` rewritten by its host's rules (``url`` when there are none)."""
        if not self.enabled:
            return url
        try:
            host = self._hosts.get(host_site(url))
        except ValueError:
            return url
        if host is None or host.ruleset is None:
            return url
        return host.ruleset.apply(url)

    def deferral(self, url: str) -> int:
        """How much to lower the priority of a request for ``url`` that no rule rewrites:
        ``TEMPLATES_URL_DEFER_PRIORITY`` when its host has rules and the URL's form has shown
        at least ``TEMPLATES_URL_DEFER_RATE`` duplicates in training, so that other pages are
        downloaded first and a rule for this form can be learned before it is fetched."""
        if not self.enabled or self.defer_priority <= 0:
            return 0
        try:
            host = self._hosts.get(host_site(url))
        except ValueError:
            return 0
        if host is None or host.ruleset is None:
            return 0
        if host.ruleset.duplicate_rate(url) < self.defer_rate:
            return 0
        return self.defer_priority

    def suspect_form(self, url: str) -> Form | None:
        """The form of a URL that no rule rewrites but that carries a query parameter its
        host's rules drop on other forms (a session id on a page type not yet seen with one):
        host, path and sorted query keys. ``None`` for any other URL."""
        if not self.enabled:
            return None
        try:
            parts = urlsplit(url)
            host = self._hosts.get(host_site(url))
        except ValueError:
            return None
        if host is None or host.ruleset is None or not parts.query:
            return None
        dropped = host.ruleset.dropped_query_keys
        keys = tuple(sorted({k for k, _ in parse_qsl(parts.query, keep_blank_values=True)}))
        if not dropped or not any(f"?{k}" in dropped for k in keys):
            return None
        if host.ruleset.apply(url) != url:
            return None
        return parts.netloc, parts.path, keys

    async def hold(self, url: str) -> None:
        """Let one URL of a suspect form (:meth:`suspect_form`) be downloaded at a time: wait
        while another of its form is in flight, then relearn from that one's sample before
        going on — a relearnt rule may now rewrite ``url`` (the caller asks again). The wait
        per round is bounded by ``_FORM_WAIT`` seconds."""
        form = self.suspect_form(url)
        if form is None:
            return
        waited = False
        while (flight := self._in_flight.get(form)) is not None:
            waited = True
            done = flight[1]
            try:
                await asyncio.wait_for(asyncio.shield(done), _FORM_WAIT)
            except asyncio.TimeoutError:
                if self._in_flight.get(form) is flight:
                    self.release(flight[0])
        if waited:
            self._inc("templates/urls/held")
            await self.learn_now(host_site(url))
            if self.suspect_form(url) != form:
                return  # a rule rewrites it now
        self._in_flight[form] = (url, asyncio.get_running_loop().create_future())
        self._form_of[url] = form
        if await self._hold_shared(url, form):
            if not waited:  # a request that waited here too is counted once
                self._inc("templates/urls/held")
            await self.sync([host_site(url)])
            if self.suspect_form(url) != form:
                self.release(url)  # a rule another process published rewrites it now

    async def _hold_shared(self, url: str, form: Form) -> bool:
        """Take the store's lock on ``url``'s form, so that crawler processes sharing the
        store download one URL of it at a time too; waits (at most ``_FORM_WAIT`` seconds)
        while another process holds it. Returns whether it waited. Without a store, or with
        the store down, nothing waits."""
        store = self._store
        if store is None:
            return False
        name = "form:" + hashlib.blake2b(repr(form).encode(), digest_size=8).hexdigest()
        owner = f"{self._owner}|{url}"
        deadline = asyncio.get_running_loop().time() + _FORM_WAIT
        waited = False
        while True:
            try:
                if await store.acquire(name, owner, _FORM_WAIT):
                    self._form_locks[url] = (name, owner)
                    return waited
            except StoreError:
                return waited
            if getattr(store, "down", False) or asyncio.get_running_loop().time() >= deadline:
                return waited
            waited = True
            await asyncio.sleep(_FORM_POLL)

    def release(self, url: str) -> None:
        """The download of ``url`` is sampled (or failed): the next URL of its form may go,
        here and in the processes sharing the store."""
        form = self._form_of.pop(url, None)
        flight = None if form is None else self._in_flight.pop(form, None)
        done = None if flight is None else flight[1]
        lock = self._form_locks.pop(url, None)
        if lock is None or self._store is None:
            if done is not None and not done.done():
                done.set_result(None)
            return
        # the URL waiting here goes once the store's lock is free, not before
        task = asyncio.ensure_future(self._unlock(self._store, *lock, done))
        self._unlocking.add(task)
        task.add_done_callback(self._unlocking.discard)

    @staticmethod
    async def _unlock(
        store: TemplateStore, name: str, owner: str, done: asyncio.Future[None] | None
    ) -> None:
        try:
            with contextlib.suppress(StoreError):  # the lock expires by itself
                await store.release(name, owner)
        finally:
            if done is not None and not done.done():
                done.set_result(None)

    async def learn_now(self, site: str) -> None:
        """Store the samples waiting and relearn ``site`` if its sample grew; returns when
        the learning under way has ended."""
        await self.flush(force=True)
        host = self._host(site)
        if host.offered > host.learned_at:
            self.relearn(site)
        task = self._learning.get(site)
        if task is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(task)

    def remember(self, request: Request, canonical: str) -> None:
        """Note that ``request`` was sent to ``canonical`` (rewritten, or dropped as its
        duplicate), so that a later rule set that disagrees can send it again."""
        self._host(host_site(request.url)).decided.append((request, canonical))

    def note_requested(self, url: str) -> None:
        """``url`` left the spider middleware for the scheduler."""
        self._host(host_site(url)).requested.add(_key(url))

    def note_withdrawn(self, url: str) -> None:
        """A request for ``url`` was dropped or rescheduled elsewhere before its download."""
        self._host(host_site(url)).withdrawn.add(_key(url))

    def _revisit(self, host: _Host, ruleset: RuleSet) -> None:
        """Send again, under ``ruleset``, the remembered requests it no longer maps to the
        page they were sent to: a rule that a relearn corrected must not cost its pages."""
        try:
            engine = self.crawler.engine
        except RuntimeError:  # not crawling (yet): nothing was sent anywhere
            return
        kept: deque[tuple[Request, str]] = deque(maxlen=_REMEMBERED)
        for request, canonical in host.decided:
            now = ruleset.apply(request.url)
            if now == canonical:
                kept.append((request, canonical))
                continue
            key = _key(now)
            done = key in host.canonical_fetched or host.is_pending(key)
            if done or engine is None or engine.spider is None:
                kept.append((request, now))  # a later rule set may still disagree
                continue
            meta = {k: v for k, v in request.meta.items() if k != ORIGINAL_URL}
            if now != request.url:
                meta[ORIGINAL_URL] = request.url
                kept.append((request, now))
            # Past the dupefilter: this process may have requested the URL and turned it away
            # since, and with a shared dupefilter (scrapy-redis) another process may have, and
            # that process does not know it was turned away here.
            again = request.replace(url=now, meta=meta, dont_filter=True)
            host.requested.add(key)
            host.withdrawn.discard(key)
            engine.crawl(again)
            self._inc("templates/urls/revisited")
        host.decided = kept

    def is_pending(self, url: str) -> bool:
        """Whether this process sent a request for ``url`` towards the scheduler that no rule
        has turned away since: it is queued, under way or done. A request sent again past
        the dupefilter (see :meth:`_revisit`) is not in the dupefilter's memory, so a
        middleware asks this before it sends another request for the same URL."""
        host = self._hosts.get(host_site(url))
        return host is not None and host.is_pending(_key(url))

    def was_fetched(self, url: str) -> bool:
        """Whether a page whose canonical URL is ``url`` has been downloaded."""
        host = self._hosts.get(host_site(url))
        return host is not None and _key(url) in host.canonical_fetched

    def saved_bytes(self, url: str) -> float:
        """Estimated size of the page at ``url``: the mean response size of its host."""
        host = self._hosts.get(host_site(url))
        return host.mean_size if host else 0.0

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
        host.responses += 1
        host.bytes += len(body)
        for fetched in {url, final_url} if to_spider else ():
            host.fetched.append(fetched)
            host.canonical_fetched.add(_key(fetched))
            if host.ruleset is not None:
                host.canonical_fetched.add(_key(host.ruleset.apply(fetched)))
        if html and self.enabled:
            digest = hashlib.blake2b(body, digest_size=8).hexdigest()
            same_host = tuple(r for r in redirects if host_site(r) == site)
            sample = Sample(
                final_url,
                body_hash=digest,
                canonical=head_canonical(body, final_url),
                redirects=same_host,
            )
            named = sample.canonical not in (None, final_url) or bool(same_host)
            if to_spider and host.has_rules and not named:
                host.held[final_url] = (sample, host.responses)
                self._unflushed.add(site)
            else:
                # the site names another URL for this page: duplicate evidence the learner
                # wants now, not after the item's sample joins it
                self._queue(sample)
                host.urgent = host.urgent or named

    # -- learning ------------------------------------------------------------------------

    @staticmethod
    def content_hash(content: str) -> str | None:
        """Hash of a page's content text (template pagelets removed), the duplicate test of
        the learner: a rotating ad or a session id in the links does not hide a duplicate.
        Very short content gives ``None`` (every "empty" page would look alike)."""
        if len(content) < _MIN_CONTENT_CHARS:
            return None
        return hashlib.blake2b(content.encode("utf-8"), digest_size=8).hexdigest()

    def add_page(self, url: str, simhash: int, text_hash: str | None) -> None:
        """A marked page's sample: its page simhash and content hash."""
        if self.enabled:
            self._queue(Sample(url, simhash=simhash, text_hash=text_hash))
            self.release(url)

    def _queue(self, sample: Sample) -> None:
        site = host_site(sample.url)
        self._unflushed.add(site)
        host = self._host(site)
        held = host.held.pop(sample.url, None)
        if held is not None:
            sample = held[0].merged(sample)
        queued = host.pending.get(sample.url)
        host.pending[sample.url] = sample if queued is None else queued.merged(sample)

    def attach(self, store: TemplateStore, owner: str) -> None:
        """Lend the store that keeps samples and publications, and the lock holder id of this
        process."""
        self._store = store
        self._owner = owner

    async def flush(self, *, force: bool = False) -> None:
        """Move queued samples to the store; start learning for hosts that are due."""
        store = self._store
        if store is None:
            return
        for site in list(self._unflushed):
            host = self._host(site)
            batch_size = _FLUSH_EVERY if host.has_rules else 1
            ready = [
                url for url, (_, at) in host.held.items() if force or host.responses - at >= _HOLD
            ]
            waiting = len(host.pending) + len(ready)
            if not waiting or (waiting < batch_size and not force and not host.urgent):
                continue
            host.urgent = False
            samples = [*host.pending.values(), *(host.held.pop(url)[0] for url in ready)]
            batch = [encode_sample(site, sample) for sample in samples]
            host.pending = {}
            if not host.held:
                self._unflushed.discard(site)
            draws = [self._rng.random() for _ in batch]
            try:
                host.offered = await store.add_url_samples(site, batch, self.cap, draws)
            except StoreError as exc:
                logger.warning("scrapy-templates: URL samples of %s not stored (%s)", site, exc)
                continue
            self._inc("templates/urls/samples", len(batch))
            # early on, relearn as the sample grows by a tenth (at least 5 samples, or 1 while
            # the host has no rules: its first rules end the learning window); later every
            # learn_every, times the host's backoff (doubled by each relearn that changed
            # nothing). A host that never gets rules is not relearned on every page.
            floor = 5 if host.has_rules else 1
            step = min(self.learn_every * host.backoff, max(floor, host.learned_at // 10))
            due = host.offered >= self.min_samples and host.offered - host.learned_at >= step
            if due:
                self.relearn(site)

    def relearn(self, site: str) -> None:
        """Start learning the host's rules in the background, unless that is under way."""
        if self._store is None or site in self._learning or not self.enabled:
            return
        host = self._host(site)
        host.learned_at = host.offered
        task = asyncio.ensure_future(self._learn(site, self._store))
        self._learning[site] = task
        task.add_done_callback(self._learned_callback(site))

    def stale(self) -> list[str]:
        """Hosts whose sample grew since their rules were last learned."""
        return [
            site
            for site, host in self._hosts.items()
            if host.offered >= self.min_samples and host.offered > host.learned_at
        ]

    def sites(self) -> list[str]:
        return list(self._hosts)

    async def sync(self, sites: Iterable[str]) -> None:
        """Install rule sets that other processes published with a higher version."""
        if self._store is None or not self.enabled:
            return
        for site in sites:
            found = await self._store.published(site, "rules")
            if found is not None:
                await self._adopt(site, *found, store=self._store)

    async def _adopt(
        self,
        site: str,
        version: int,
        document: str,
        *,
        store: TemplateStore,
        samples: list[Sample] | None = None,
    ) -> None:
        """Install a published rule set if it is newer than the one in force; pages that
        other processes downloaded (item samples in the store) count as downloaded here."""
        current = self._hosts.get(site)
        if current is not None and current.ruleset and current.ruleset.version >= version:
            return
        if (site, version) in self._refused:
            return
        try:
            ruleset = RuleSet.loads(document)
            if ruleset.site != site:
                raise RuleSetError(f"it is the rule set of {ruleset.site!r}")
        except (RuleSetError, ValueError) as exc:
            self._refused.add((site, version))
            self._inc("templates/urls/rules_refused")
            logger.error(
                "scrapy-templates: published URL rules v%d of %s refused (%s); previous rules stay",
                version,
                site,
                exc,
            )
            return
        if samples is None:
            samples = await self._samples(site, store)
        self._host(site).shared = [x.url for x in samples if x.simhash is not None]
        if self.install(ruleset, source="store"):
            logger.info(
                "scrapy-templates: URL rules of %s v%d (%d rules) from the store",
                site,
                ruleset.version,
                len(ruleset.rules),
            )

    async def _samples(self, site: str, store: TemplateStore) -> list[Sample]:
        samples = []
        for line in await store.url_samples(site):
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

    async def _learn(self, site: str, store: TemplateStore) -> None:
        lock = f"urls:{site}"
        try:
            if not await store.acquire(lock, self._owner, self.lock_ttl):
                # another process is learning this host, or the store is down
                self._inc("templates/urls/learn_skipped")
                if site not in self._waiting:
                    waiting = asyncio.ensure_future(self._await_publication(site, store))
                    self._waiting[site] = waiting
                    waiting.add_done_callback(lambda _: self._waiting.pop(site, None))
                return
        except StoreError as exc:
            self._inc("templates/urls/learn_errors")
            logger.error("scrapy-templates: no URL-rule lock for %s (%s)", site, exc)
            return
        try:
            await self._learn_locked(site, store)
        finally:
            with contextlib.suppress(StoreError):  # the lock expires by itself
                await store.release(lock, self._owner)

    async def _await_publication(self, site: str, store: TemplateStore) -> None:
        """Poll (one read every ``_POLL`` seconds) for the rule set the lock holder is
        learning, so that it is in force here as soon as it is published rather than at the
        next sync. Stops when it is, or when the lock is free again (the holder finished
        without news, or died and its lock expired)."""
        host = self._host(site)
        start = host.ruleset.version if host.ruleset else 0
        lock = f"urls:{site}"
        try:
            while True:
                await asyncio.sleep(_POLL)
                found = await store.published(site, "rules")
                if found is not None and found[0] > start:
                    await self._adopt(site, *found, store=store)
                    return
                if await store.acquire(lock, self._owner, _POLL):
                    await store.release(lock, self._owner)
                    return
        except StoreError as exc:
            logger.warning("scrapy-templates: waiting for URL rules of %s: %s", site, exc)

    async def _learn_locked(self, site: str, store: TemplateStore) -> None:
        t0 = time.perf_counter()
        try:
            found = await store.published(site, "rules")
            samples = await self._samples(site, store)
            if found is not None:
                await self._adopt(site, *found, store=store, samples=samples)
            host = self._host(site)
            # pages that became items in any process: downloaded, whoever downloaded them
            host.shared = [x.url for x in samples if x.simhash is not None]
            version = max(found[0] if found else 0, host.ruleset.version if host.ruleset else 0)
            version += 1
            report = await asyncio.to_thread(
                learn_from_samples,
                samples,
                site=site,
                version=version,
                distance=self.distance,
                config=self.config,
            )
            document = report.ruleset.dumps()
            before = host.ruleset
            learned = RuleSet.loads(document)
            if self.install(learned, source="crawl"):
                unchanged = before is not None and before.behaves_like(learned)
                host.backoff = min(host.backoff * 2, _MAX_BACKOFF) if unchanged else 1
                await store.publish(site, "rules", version, document)
        except Exception:  # learning must never stop the crawl; the old rules stay
            self._inc("templates/urls/learn_errors")
            logger.exception("scrapy-templates: learning URL rules of %s failed", site)
            return
        self._inc("templates/urls/learn_count")
        logger.info(
            "scrapy-templates: URL rules of %s v%d: %d rules from %d samples after %d "
            "downloads (%d tree nodes, %d candidates) in %.2fs",
            site,
            report.ruleset.version,
            len(report.ruleset.rules),
            len(samples),
            self._host(site).responses,
            len(report.tree.nodes),
            len(report.candidates),
            time.perf_counter() - t0,
        )
        for rule in report.ruleset.rules.values():
            logger.debug(
                "scrapy-templates: rule %s -> %s: %s (support %d, fpr %.4f)",
                report.ruleset.nodes[rule.source].glob,
                report.ruleset.nodes[rule.target].glob,
                "; ".join(op.describe() for op in rule.steps[0]),
                rule.support,
                rule.fpr,
            )

    def install(self, ruleset: RuleSet, *, source: str) -> bool:
        """Put a validated rule set in force for its host (returns whether it was); fetched
        URLs are re-keyed under the new rules (and only those) so that requests for pages
        already downloaded are recognised."""
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
        host = self._host(ruleset.site)
        same = host.ruleset is not None and host.ruleset.behaves_like(ruleset)
        host.ruleset = ruleset
        if same:
            # every URL maps as before: only the pages other processes fetched since need keys
            fresh = [url for url in host.shared if url not in host.keyed_shared]
            self._key_fetched(host, ruleset, fresh)
        else:
            # rebuilt, not extended: a key that an earlier, worse rule set produced must not
            # keep a page "downloaded" that never was
            host.canonical_fetched = set()
            self._key_fetched(host, ruleset, [*host.fetched, *host.shared])
            self._revisit(host, ruleset)
        host.keyed_shared = set(host.shared)
        if self.stats is not None:
            self.stats.set_value("templates/urls/rules", self.rule_count())
            self.stats.set_value("templates/urls/rules_version", self.max_version())
        return True

    @staticmethod
    def _key_fetched(host: _Host, ruleset: RuleSet, urls: list[str]) -> None:
        """Count ``urls`` as downloaded, as themselves and as their canonical form."""
        keys = host.canonical_fetched
        for url in urls:
            keys.add(_key(url))
            keys.add(_key(ruleset.apply(url)))

    def max_version(self) -> int:
        return max((h.ruleset.version for h in self._hosts.values() if h.ruleset), default=0)

    def rule_count(self) -> int:
        return sum(len(h.ruleset.rules) for h in self._hosts.values() if h.ruleset)

    def rulesets(self) -> list[RuleSet]:
        return [h.ruleset for h in self._hosts.values() if h.ruleset is not None]
