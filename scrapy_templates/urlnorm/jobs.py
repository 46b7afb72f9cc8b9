"""A host's URL-rule work that runs off the crawl's thread: learning its rules and keying its
downloaded pages under them.

The crawl asks "was this page downloaded?" of every request a rule rewrites, so it keeps the
keys of its downloaded URLs in their canonical form under the rules in force. A new rule set
changes those canonical forms, and computing them again for every page fetched so far costs
O(pages fetched) — on the crawl's thread, a cost that grows with the crawl. A :class:`Keyring`
holds a host's downloaded URLs where the work runs (a learning worker process, or a thread
when there is none), computes their canonical keys there and answers with what changed
(:class:`Keyed`), so that an install costs the crawl O(keys that changed).

A job carries the store's samples as stored (decoded here, not on the crawl's thread) and the
URLs downloaded since the previous job; :func:`run` learns (or takes a published rule set),
checks it, and keys. Plain data in and out: no Scrapy, no store.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from .clusters import Sample
from .learn import LearnConfig, learn_from_samples
from .rules import RuleSet, RuleSetError
from .samples import decode_sample
from .url import url_key


@dataclass(frozen=True, slots=True)
class UrlJob:
    """Learn ``site``'s rule set ``version`` from ``lines`` (stored samples), or install
    ``published`` when it is given. ``fetched``: URLs downloaded since the previous job, which
    the keyring already holds ``held`` URLs before (0: it must start afresh). ``apart``:
    pairs of URLs the crawl found to be distinct pages, which no rule may merge (see
    :meth:`~.rules.RuleSet.keeping_apart`). ``in_force``: the host's rules in force, which
    a relearn keeps while they hold (see :func:`~.learn.learn_from_samples`).
    ``canonical``: whether the site's ``rel=canonical`` links are duplicate evidence (not
    once a check found one wrong)."""

    site: str
    version: int
    lines: list[str]
    fetched: list[str]
    held: int
    config: LearnConfig = field(default_factory=LearnConfig)
    distance: int | None = None
    published: RuleSet | None = None
    apart: tuple[tuple[str, str], ...] = ()
    in_force: RuleSet | None = None
    canonical: bool = True


@dataclass(slots=True)
class Keyed:
    """The answer to a :class:`UrlJob`: the rule set (``None`` with ``error`` when it was
    refused), the canonical keys of the host's downloaded pages that came (with a downloaded
    URL of each, its witness) and went (all of them, in ``added``, when ``full``), how many
    URLs the keyring now holds, and what the learning measured (``kept``: the rules in force
    explain the sample as well and stay; ``previous_held``: they merged no distinct pages of
    it, kept or not; see :func:`~.learn.learn_from_samples`)."""

    ruleset: RuleSet | None
    added: list[tuple[int, str]]
    removed: list[int]
    full: bool
    held: int
    error: str = ""
    samples: int = 0
    bad_samples: int = 0
    nodes: int = 0
    candidates: int = 0
    kept: bool = False
    previous_held: bool = False
    seconds: float = 0.0


@dataclass
class _Host:
    urls: list[str] = field(default_factory=list)
    known: set[str] = field(default_factory=set)
    # canonical key -> the first downloaded URL with that key
    canonical: dict[int, str] = field(default_factory=dict)


class Keyring:
    """The downloaded URLs of each host and their canonical keys under its rules in force."""

    def __init__(self) -> None:
        self._hosts: dict[str, _Host] = {}

    def run(self, job: UrlJob) -> Keyed:
        """Learn (or take the published rule set), validate, and key the host's pages."""
        t0 = time.perf_counter()
        samples: list[Sample] = []
        bad = 0
        for line in job.lines:
            try:
                samples.append(decode_sample(job.site, line))
            except ValueError:
                bad += 1
        host = self._hosts.get(job.site)
        full = host is None or len(host.urls) != job.held
        if full:
            host = self._hosts[job.site] = _Host()
        assert host is not None
        # pages that became items in any process count as downloaded, whoever fetched them
        pages = [s.url for s in samples if s.simhash is not None or s.text_hash is not None]
        for url in (*job.fetched, *pages):
            if url not in host.known:
                host.known.add(url)
                host.urls.append(url)
        nodes = candidates = 0
        kept = previous_held = False
        ruleset = job.published
        if ruleset is None:
            report = learn_from_samples(
                samples,
                site=job.site,
                version=job.version,
                distance=job.distance,
                config=job.config,
                previous=job.in_force,
                canonical=job.canonical,
            )
            ruleset, nodes, candidates, kept, previous_held = (
                report.ruleset,
                len(report.tree.nodes),
                len(report.candidates),
                report.kept,
                report.previous_held,
            )
        if job.apart:
            ruleset = ruleset.keeping_apart(job.apart)
        try:
            ruleset.validate()
        except RuleSetError as exc:
            return Keyed(None, [], [], False, len(host.urls), str(exc), len(samples), bad)
        keys: dict[int, str] = {}
        for url in host.urls:
            keys.setdefault(url_key(ruleset.apply(url)), url)
        before = host.canonical
        host.canonical = keys
        added = [(k, u) for k, u in keys.items() if full or before.get(k) != u]
        removed = [] if full else [k for k in before if k not in keys]
        return Keyed(
            ruleset,
            added,
            removed,
            full,
            len(host.urls),
            samples=len(samples),
            bad_samples=bad,
            nodes=nodes,
            candidates=candidates,
            kept=kept,
            previous_held=previous_held,
            seconds=time.perf_counter() - t0,
        )
