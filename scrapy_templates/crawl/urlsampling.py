"""A crawler's URL samples on their way to the store, and when each host is learned next.

Samples go to the store at once while a host has no rules (they decide when its first rules
come) or is young (see :meth:`UrlSampling._young`), then in batches of ``_FLUSH_EVERY``. A host
is learned once ``TEMPLATES_URL_MIN_SAMPLES`` of its pages are sampled (a quarter of that once
three of its downloads repeated a page's text), then as its sample
grows by a tenth, and later every ``TEMPLATES_URL_LEARN_EVERY`` new samples — twice as many
after each relearn that changed nothing (see ``_MAX_BACKOFF``); after the least step alone once
a download repeated a page downloaded under another URL, unless relearns have twice left
that form of URL's repeats unexplained (see :data:`_QUIET_AFTER`). A host whose samples show
no two URLs of one page is not learned at all (see :meth:`UrlSampling._worth`).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from scrapy_templates.sites import host_site
from scrapy_templates.store.base import StoreError, TemplateStore
from scrapy_templates.urlnorm.clusters import Sample, named_urls
from scrapy_templates.urlnorm.guard import HostGuard
from scrapy_templates.urlnorm.samples import MAX_SAMPLE_CHARS, encode_sample, sample_chars
from scrapy_templates.urlnorm.url import query_keys

logger = logging.getLogger(__name__)

# one store round trip per this many samples once a host has rules
_FLUSH_EVERY = 10
# a download sample waits for this many more responses of its host so that its page's item
# sample can join it (one sample per page in the store, not two)
_HOLD = 2 * _FLUSH_EVERY
# a host is young while its sample is under this many times TEMPLATES_URL_MIN_SAMPLES
_YOUNG = 5
# downloads repeating a page already sampled that make a young host ready for learning
_EARLY_REPEATS = 3
# the text hashes of a host's downloads remembered, in times the sample cap
_REMEMBERED = 4
# a relearn that leaves a host's rules behaving as before doubles the samples to the next
# one, up to this many times TEMPLATES_URL_LEARN_EVERY; one that changes them starts over
_MAX_BACKOFF = 64
# a form of URL (path and query keys) whose repeats this many relearns left unexplained (the
# rules they put in force still tell the two URLs apart) makes its host due no sooner: its
# duplicates come from the site's data (a short list in every sort order), and relearning
# at each one costs a learning run per few downloads
_QUIET_AFTER = 2
# the repeats remembered per host for judging after the next relearn
_JUDGED = 100


def _form(url: str) -> tuple[str, tuple[str, ...]]:
    """The path and the query keys of ``url``."""
    try:
        path = urlsplit(url).path
    except ValueError:
        path = ""
    return path, query_keys(url)


@dataclass
class _HostSamples:
    """A host's samples on their way to the store, and when it is next learned."""

    pending: dict[str, Sample] = field(default_factory=dict)
    # download samples held for _HOLD responses, with the host's response count then
    held: dict[str, tuple[Sample, int]] = field(default_factory=dict)
    offered: int = 0
    learned_at: int = 0
    # a sample naming another URL for its page waits: flush without waiting for a batch
    urgent: bool = False
    # the step between relearns, in TEMPLATES_URL_LEARN_EVERY
    backoff: int = 1
    # the text hashes of its pages (the first _REMEMBERED times the sample cap) with the URL
    # of each, and how many downloads repeated one under another URL
    hashes: dict[str, str] = field(default_factory=dict)
    repeats: int = 0
    # repeats that make the host due at the least step (of forms not quiet), and how many
    # had when it was last learned; the repeats since then (URL, first URL of its page), and
    # those the relearn under way was started after
    urgent_repeats: int = 0
    urgent_learned: int = 0
    recent: list[tuple[str, str]] = field(default_factory=list)
    judged: list[tuple[str, str]] = field(default_factory=list)
    # forms of URL -> relearns in a row that left their repeats unexplained
    unexplained: dict[tuple[str, tuple[str, ...]], int] = field(default_factory=dict)
    # whether learning could give the host a rule (UrlSampling._worth); until it could, the
    # first URL of each text and cluster its samples showed, and how many samples this
    # process stored (the store's count beyond them came from elsewhere)
    evidence: bool = False
    firsts: dict[tuple[str, str], str] = field(default_factory=dict)
    own: int = 0


class UrlSampling:
    """Samples per host (see the module docstring). ``guard``: a host's guard (whether it
    has rules, how many responses it had); ``relearn``: start learning a host that is due;
    ``count``: add to a stat."""

    def __init__(
        self,
        *,
        cap: int,
        min_samples: int,
        learn_every: int,
        guard: Callable[[str], HostGuard[Any]],
        relearn: Callable[[str], None],
        count: Callable[[str, int], None],
        near: bool = False,
    ) -> None:
        self.cap = cap
        self.near = near
        self.min_samples = min_samples
        self.learn_every = max(1, learn_every)
        self.guard = guard
        self.relearn = relearn
        self.count = count
        self.store: TemplateStore | None = None
        self._hosts: dict[str, _HostSamples] = {}
        # hosts with samples not yet in the store, and those of them whose batch may have
        # become ready since the last flush (a sample came, or a response that ripens held
        # ones): a flush visits the second only, a forced one the first
        self._unflushed: set[str] = set()
        self._touched: set[str] = set()
        self._rng = random.Random()

    def _of(self, site: str) -> _HostSamples:
        found = self._hosts.get(site)
        if found is None:
            found = self._hosts[site] = _HostSamples(evidence=self.near)
        return found

    def add(self, sample: Sample) -> None:
        """Queue ``sample``, merged with what is queued or held for its URL."""
        site = host_site(sample.url)
        self._unflushed.add(site)
        self._touched.add(site)
        host = self._of(site)
        held = host.held.pop(sample.url, None)
        if held is not None:
            sample = held[0].merged(sample)
        queued = host.pending.get(sample.url)
        if queued is not None:
            sample = queued.merged(sample)
        if sample_chars(sample) > MAX_SAMPLE_CHARS:
            # a store refuses it when read: kept, it would only fill memory and each job
            # (a chain of long redirects and a long canonical reach hundreds of KB)
            host.pending.pop(sample.url, None)
            self.count("templates/urls/samples_too_large", 1)
            return
        host.pending[sample.url] = sample

    def add_download(
        self, site: str, sample: Sample, *, hold: bool, named: bool, page: bool = True
    ) -> None:
        """Queue a download's sample; ``hold``: keep it for its page's item sample to join
        (unless the host is young: its evidence is wanted now, and the store's copy for the
        item's sample joins it by URL); ``named``: the site names another URL for the page
        (store it now: duplicate evidence the learner wants before the item's sample);
        ``page``: the download reaches the spider as a page of its own. Such a download that
        repeats the text of a page downloaded under another URL is a duplicate the rules in
        force missed: it is stored now and makes the host due soon (see :meth:`_due`). A check
        the downloader ended, a download ended as a repeat, or one URL downloaded twice (a
        start URL) is not."""
        host = self._of(site)
        young = self._young(host)
        repeat = False
        if sample.page_hash is not None and page:
            first = host.hashes.get(sample.page_hash)
            if first is not None and first != sample.url:
                repeat = True
                self._found(host)
                host.repeats += 1
                if host.unexplained.get(_form(sample.url), 0) < _QUIET_AFTER:
                    host.urgent_repeats += 1
                if len(host.recent) < _JUDGED:
                    host.recent.append((sample.url, first))
            elif first is None and len(host.hashes) < _REMEMBERED * self.cap:
                host.hashes[sample.page_hash] = sample.url
            elif first is None:
                self._found(host)  # past the hashes remembered, a repeat would go unseen
        if hold and not young and not repeat:
            host.held[sample.url] = (sample, self.guard(site).responses)
            self._unflushed.add(site)
            return
        self.add(sample)
        host.urgent = host.urgent or named or repeat

    def touch(self, site: str) -> None:
        """``site``'s samples may be ready to go: it had a response (held samples ripen),
        or its rules changed (a host without rules stores its samples one at a time)."""
        if site in self._unflushed:
            self._touched.add(site)

    async def flush(self, *, force: bool = False) -> None:
        """Move queued samples to the store; start learning for hosts that are due. Only
        hosts touched since the last flush are visited (all, when ``force``): a crawl of
        many hosts holds samples on each of the quiet ones."""
        if self.store is None:
            return
        sites = list(self._unflushed if force else self._touched & self._unflushed)
        self._touched.clear()
        for site in sites:
            batch = self._batch(site, force)
            if not batch:
                continue
            draws = [self._rng.random() for _ in batch]
            host = self._of(site)
            try:
                host.offered = await self.store.add_url_samples(site, batch, self.cap, draws)
            except StoreError as exc:
                logger.warning("scrapy-templates: URL samples of %s not stored (%s)", site, exc)
                continue
            host.own += len(batch)
            if host.offered > host.own:
                self._found(host)  # samples of other processes or crawls: unseen here
            self.count("templates/urls/samples", len(batch))
            if self._due(site):
                self.relearn(site)

    def _batch(self, site: str, force: bool) -> list[str]:
        """The samples of ``site`` to store now, in their stored form (none while a batch
        is filling)."""
        guard, host = self.guard(site), self._of(site)
        batch_size = _FLUSH_EVERY if guard.has_rules and not self._young(host) else 1
        held = host.held
        ready = [url for url, (_, at) in held.items() if force or guard.responses - at >= _HOLD]
        waiting = len(host.pending) + len(ready)
        if not waiting or (waiting < batch_size and not force and not host.urgent):
            return []
        host.urgent = False
        samples = [*host.pending.values(), *(held.pop(url)[0] for url in ready)]
        host.pending = {}
        if not held:
            self._unflushed.discard(site)
        if not host.evidence:
            self._look(host, samples)
        return [encode_sample(site, sample) for sample in samples]

    def _look(self, host: _HostSamples, samples: list[Sample]) -> None:
        """Look for two URLs of one page among ``samples`` and those before, as
        :func:`~scrapy_templates.urlnorm.clusters.duplicate_clusters` joins them: the same
        text or cluster, or another URL the site names for the page (the same page hash is
        a repeat, seen at download: :meth:`add_download`). Past :data:`_REMEMBERED` times the
        sample cap of first URLs, any host may have some."""
        firsts = host.firsts
        for sample in samples:
            if named_urls(sample):
                self._found(host)
                return
            for kind, key in (("text", sample.text_hash), ("cluster", sample.cluster)):
                if key is None:
                    continue
                first = firsts.setdefault((kind, key), sample.url)
                if first != sample.url or len(firsts) > _REMEMBERED * self.cap:
                    self._found(host)
                    return

    @staticmethod
    def _found(host: _HostSamples) -> None:
        host.evidence = True
        host.firsts = {}

    def _worth(self, site: str, host: _HostSamples) -> bool:
        """Whether learning could give ``site`` a rule: some sample showed two URLs of one
        page, the store holds samples from elsewhere (another process, an earlier crawl),
        page simhashes are evidence (``TEMPLATES_URL_SIMHASH_DISTANCE``), or rules are in
        force. Learning from distinct pages only gives no rule, and a site without duplicate
        URLs (most documentation) would pay for each relearn, and for the URL-rule worker's
        start, for nothing."""
        return host.evidence or self.guard(site).has_rules

    def _due(self, site: str) -> bool:
        """Whether ``site`` is due a relearn: early on as the sample grows by a tenth (at
        least 5 samples, or 1 while it has no rules or is young), later every
        ``learn_every`` times its backoff; after that floor alone once a download repeated a
        page since the last learning (a new kind of duplicate: each sample of it the learner
        waits for is another duplicate download). A host that never gets rules is not
        relearned on every page."""
        host = self._of(site)
        floor = 5 if self.guard(site).has_rules and not self._young(host) else 1
        step = min(self.learn_every * host.backoff, max(floor, host.learned_at // 10))
        if host.urgent_repeats > host.urgent_learned:
            step = floor
        grown = host.offered - host.learned_at
        return self._enough(host) and grown >= step and self._worth(site, host)

    def _enough(self, host: _HostSamples) -> bool:
        """Whether a host has the samples for learning: ``TEMPLATES_URL_MIN_SAMPLES`` of
        them, or a quarter of that once :data:`_EARLY_REPEATS` downloads repeated a page
        already sampled (a crawl caught between two pages whose links carry a fresh session
        id has its evidence long before it has twenty pages; a larger setting still says
        "wait")."""
        if host.offered >= self.min_samples:
            return True
        return host.repeats >= _EARLY_REPEATS and host.offered >= self.min_samples // 4

    def _young(self, host: _HostSamples) -> bool:
        """Whether a host's sample is still small (under ``_YOUNG`` times the first
        learning's): its first rules cover the first kinds of duplicates seen, and each
        sample may bring another kind's evidence, so each is stored and learned from at
        once (a learning of a few dozen samples takes milliseconds)."""
        return host.offered < _YOUNG * self.min_samples

    def grown(self, site: str) -> bool:
        """Whether ``site``'s stored sample grew since it was last learned."""
        host = self._of(site)
        return host.offered > host.learned_at

    def stale(self) -> list[str]:
        """Hosts whose sample grew since their rules were last learned."""
        return [
            site
            for site, host in self._hosts.items()
            if self._enough(host) and host.offered > host.learned_at and self._worth(site, host)
        ]

    def learning(self, site: str) -> None:
        """``site`` is being learned from its sample as it is now."""
        host = self._of(site)
        host.learned_at = host.offered
        host.urgent_learned = host.urgent_repeats
        host.judged, host.recent = host.recent, []

    def learned(self, site: str, *, unchanged: bool, same_page: Callable[[str, str], bool]) -> None:
        """A relearn ended; ``unchanged``: its rules behave as the previous ones did;
        ``same_page``: whether the rules now in force take two URLs for one page, which
        judges the repeats the relearn was started after."""
        host = self._of(site)
        host.backoff = min(host.backoff * 2, _MAX_BACKOFF) if unchanged else 1
        for url, first in host.judged:
            form = _form(url)
            if same_page(url, first):
                host.unexplained.pop(form, None)
            else:
                host.unexplained[form] = host.unexplained.get(form, 0) + 1
        host.judged = []
