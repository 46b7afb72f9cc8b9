"""What a host's URL rules make of each request, with the bookkeeping that answers it.

A :class:`HostGuard` holds the rule set in force for one host and what the crawl did with
the host's URLs: which pages were downloaded (under their own URL and their canonical one),
which URLs were sent towards the scheduler and which of those a rule turned away since, and
the requests it rewrote or dropped (so that a corrected rule set can send them again). One
:meth:`HostGuard.decide` per request answers with a small :class:`Verdict`. Plain data: no
Scrapy, no store; the requests it remembers are opaque tokens of the caller's.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Generic, TypeVar
from urllib.parse import urlsplit

from scrapy_templates.urlnorm.checks import Check, RuleChecks
from scrapy_templates.urlnorm.jobs import Keyed
from scrapy_templates.urlnorm.rules import RuleSet
from scrapy_templates.urlnorm.url import query_keys, url_key

T = TypeVar("T")

KEEP = "keep"
REWRITE = "rewrite"
DROP = "drop"

# requests rewritten or dropped, kept per host so that a corrected rule set can send again
# the ones it maps elsewhere
REMEMBERED = 5_000

Form = tuple[str, str, tuple[str, ...]]


@dataclass(frozen=True, slots=True)
class Verdict:
    """What to do with a request: ``keep`` it (lowering its priority by ``defer``),
    ``rewrite`` it to ``url``, or ``drop`` it as a duplicate of the page at ``url``. A drop
    says whether that page was ``fetched`` already (else it is requested and on its way) and
    whether the dropped URL is a ``repeat``: a URL this guard had turned away before, which
    Scrapy's dupefilter would have dropped anyway; ``seen``: a URL whose request the
    scheduler's dupefilter recorded, fragment aside (:meth:`HostGuard.note_seen`)."""

    action: str
    url: str
    defer: int = 0
    fetched: bool = False
    repeat: bool = False
    seen: bool = False


@dataclass(frozen=True, slots=True)
class Resend(Generic[T]):
    """A remembered request that a new rule set maps to another page than before: send
    ``token`` again for ``url``."""

    token: T
    url: str


@dataclass
class HostGuard(Generic[T]):
    """One host's rules in force and the bookkeeping of its URLs (see the module docstring).

    Downloaded pages are known by three sets of keys: ``raw``, the URLs themselves (in this
    process and, from the store's samples, in any); ``canonical_keys``, their canonical forms
    under the rules in force, kept up to date by a :class:`~.jobs.Keyring` (which holds the
    URLs) through :meth:`job_input` and :meth:`install_keyed`; and ``fresh``, the canonical
    forms of the pages downloaded since the keyring last heard of them. An install so costs
    O(keys that changed + pages downloaded while the rules were learned). The last two map
    each key to a downloaded URL of it, the witness a :class:`~.checks.Check` compares with.

    ``checks`` chooses the requests that rules turn away to fetch anyway; a failed check
    retracts the rule (:meth:`retract`). Until the keyring has keyed the pages under the retracted
    rule set, ``stale`` is set and only ``raw`` and ``fresh`` say that a page was
    downloaded: a key the retracted rule made must not drop a request."""

    ruleset: RuleSet | None = None
    fetched: list[str] = field(default_factory=list)
    shared: list[str] = field(default_factory=list)
    raw: set[int] = field(default_factory=set)
    canonical_keys: dict[int, str] = field(default_factory=dict)
    fresh: dict[int, str] = field(default_factory=dict)
    stale: bool = False
    checks: RuleChecks[T] = field(default_factory=RuleChecks)
    # how many of ``fetched`` the keyring was sent, and how many URLs it said it holds
    sent: int = 0
    held: int = 0
    # (request, URL, canonical URL, signature of the rule that turned it away)
    decided: deque[tuple[T, str, str, str]] = field(
        default_factory=lambda: deque(maxlen=REMEMBERED)
    )
    # URLs sent towards the scheduler, and those of them a downloader-side rule turned away:
    # a URL requested and not turned away is pending (or done) and needs no second request
    requested: set[int] = field(default_factory=set)
    withdrawn: set[int] = field(default_factory=set)
    # the URLs, fragment aside, whose requests the dupefilter recorded (note_seen)
    seen: set[int] = field(default_factory=set)
    # the keys of the URLs rewritten or dropped so far, as the spider asked for them, and of
    # those sent again or checked past the dupefilter (which so never recorded them)
    turned: set[int] = field(default_factory=set)
    resent: set[int] = field(default_factory=set)
    # canonical keys of pages whose request ended without the page (an HTTP error, a
    # download error): their other URLs are fetched as they are, one at a time, as plain
    # Scrapy would; and of those, the key of the URL each is tried under now
    failed: set[int] = field(default_factory=set)
    retrying: dict[int, int] = field(default_factory=dict)
    # URLs let through as a failed page's try, not yet scheduled: URL key -> page key
    tries: dict[int, int] = field(default_factory=dict)
    responses: int = 0
    bytes: int = 0

    @property
    def has_rules(self) -> bool:
        """Whether a rule set with at least one rule is in force (an empty one, learned from
        the first few samples, changes nothing)."""
        return self.ruleset is not None and bool(self.ruleset.rules)

    @property
    def mean_size(self) -> float:
        """The host's mean response size: what a dropped request is taken to save."""
        return self.bytes / self.responses if self.responses else 0.0

    def canonical(self, url: str) -> str:
        """``url`` rewritten by the rules in force (``url`` when there are none)."""
        return url if self.ruleset is None else self.ruleset.apply(url)

    def same_page(self, first: str, second: str) -> bool:
        """Whether the rules in force take ``first`` and ``second`` for one page."""
        return url_key(self.canonical(first)) == url_key(self.canonical(second))

    def is_pending(self, key: int) -> bool:
        if key not in self.requested or key in self.withdrawn:
            return False
        return key not in self.failed or key in self.retrying

    def note_requested(self, url: str) -> None:
        """A request for ``url`` was sent towards the scheduler: when it is a failed page's
        try (:meth:`_tried_here`, :meth:`note_failed`), the page is tried again under
        ``url`` and its other URLs wait for this one."""
        key = url_key(url)
        self.requested.add(key)
        page = self.tries.pop(key, None) if self.tries else None
        if page is not None and page in self.failed:
            self.retrying[page] = key

    def note_seen(self, url: str) -> None:
        """The scheduler's dupefilter recorded a request for ``url``, and would drop any later
        request for it but for its fragment (a request whose fingerprint is its URL's,
        fragment aside): :meth:`decide` drops those at once."""
        self.seen.add(_seen_key(url))

    def note_dropped(self, url: str) -> None:
        """The scheduler dropped a request for ``url`` (a redirect to a URL requested
        before): a failed page tried under it is not on its way after all."""
        if not self.retrying:  # the dupefilter's every drop comes here: most find nothing
            return
        key = url_key(url)
        for page in [p for p, tried in self.retrying.items() if tried == key]:
            del self.retrying[page]

    def note_failed(self, url: str, *, resend: bool, fallback: str = "") -> list[Resend[T]]:
        """A request for ``url`` ended without its page (a download error, a server error
        after the retries): the page is not on its way, and — the dupefilter knowing its
        canonical URL — a later request for another URL of it goes as it is (see
        :meth:`decide`). Returns, when ``resend``, the first remembered request turned away
        for that page, to send again as it is (the next goes if that one fails too).
        ``fallback``: the URL a rewrite of the failed request was made from, which the
        caller fetches now as the page's try (nothing else goes)."""
        canonical = self.canonical(url)
        key = url_key(canonical)
        self.failed.add(key)
        tried = url_key(url)
        for page in [p for p, k in self.retrying.items() if k == tried or p == key]:
            del self.retrying[page]  # its key may be another rule set's
        if fallback:
            self.retrying[key] = url_key(fallback)
            return []
        if not resend or self._downloaded(key):
            return []
        for n, (token, other, turned_for, _) in enumerate(self.decided):
            if other != url and url_key(turned_for) == key:
                del self.decided[n]
                again: list[Resend[T]] = []
                self._send(again, self.decided, token, other, other)
                self.tries[url_key(other)] = key
                return again
        return []

    def note_withdrawn(self, url: str) -> None:
        """A queued request for ``url`` was dropped or sent elsewhere before its download."""
        self.withdrawn.add(url_key(url))

    def was_fetched(self, url: str) -> bool:
        """Whether a page whose canonical URL is ``url`` has been downloaded."""
        return self._downloaded(url_key(url))

    def repeated_page(self, url: str, page_hash: str | None) -> str | None:
        """The URL a download of ``url`` whose text hashes to ``page_hash`` repeats: the rules
        in force take ``url`` for a page downloaded from another URL, and that download's
        text hashed the same (``None`` otherwise). Such a download is the same page twice
        by the rules and by what it says; its item would repeat the other's."""
        if page_hash is None or self.ruleset is None:
            return None
        canonical = self.ruleset.apply(url)
        if canonical == url:
            return None
        key = url_key(canonical)
        witness = self._witness(canonical, key) if self._downloaded(key) else None
        if witness is None or witness == url:
            return None
        return witness if self.checks.same_page(witness, page_hash) else None

    def _downloaded(self, key: int) -> bool:
        if key in self.raw or key in self.fresh:
            return True
        return not self.stale and key in self.canonical_keys

    def met(self, canonical: str, url: str) -> bool:
        """Whether the crawl met the page of ``url``, whose canonical URL is
        ``canonical``: downloaded, or requested under either URL (a request queued before
        the rule that rewrites its URL is noted under that URL)."""
        key = url_key(canonical)
        return self._downloaded(key) or key in self.requested or url_key(url) in self.requested

    def _tried_here(self, canonical: str, url: str, queued: bool, filtered: bool) -> bool:
        """Whether ``url`` is to be fetched as it is for the page of ``canonical``: that
        page's last request failed, it was not downloaded since, and no other URL of it is
        on its way. A link to a URL requested before is no try (the dupefilter drops it); a
        queued request that is one is the page's try from here on, a link once it reaches
        the scheduler (:meth:`note_requested`)."""
        page, key = url_key(canonical), url_key(url)
        if page not in self.failed or self._downloaded(page):
            return False
        tried = self.retrying.get(page)
        if tried is not None:
            return tried == key
        if queued:
            self.retrying[page] = key
            return True
        if filtered and key in self.requested:
            return False
        self.tries[key] = page
        return True

    def _witness(self, canonical: str, key: int) -> str | None:
        """A downloaded URL of the page ``canonical`` (of key ``key``) stands for."""
        if key in self.raw:
            return canonical
        return self.fresh.get(key) or (None if self.stale else self.canonical_keys.get(key))

    def decide(
        self,
        url: str,
        token: T,
        *,
        queued: bool,
        defer: tuple[int, float] | None = None,
        filtered: bool = True,
        seen: bool = False,
    ) -> Verdict:
        """The verdict on a request for ``url`` (``token``: the request, remembered when
        rewritten or dropped). ``queued``: the request was enqueued already (a downloader
        sees it), so a rewrite withdraws ``url`` and its rewritten request is noted as
        requested; otherwise it is on its way to the scheduler, and the caller notes it
        (:meth:`note_requested`) once it gets there: another middleware may drop it before
        (``DEPTH_LIMIT``), and a page never requested must not turn away its other URLs.
        ``defer``: ``(priority, rate)`` — a URL no rule rewrites whose form
        showed at least ``rate`` duplicates in training is deferred by ``priority``.
        ``filtered``: the dupefilter would drop a second request for ``url`` (a plain GET
        without ``dont_filter``); only such a request for a URL sent again is dropped here.

        A rewritten URL whose page was downloaded, or requested and not turned away since,
        is dropped: its request would fetch the same page again. One whose page's request
        failed (:meth:`note_failed`), and was not downloaded since, is kept as it is. A
        request turned away may be chosen for a check (:meth:`take_checks`).

        ``seen``: the request's fingerprint is its URL's, fragment aside (see
        :meth:`note_seen`); such a URL whose request the dupefilter recorded is dropped as
        ``seen`` before anything else, as the dupefilter would drop it, unless its page
        failed: then the rules may give the page another try under another URL, as below."""
        if (
            seen
            and self.seen
            and filtered
            and not queued
            and _seen_key(url) in self.seen
            and not (self.failed and url_key(self.canonical(url)) in self.failed)
        ):
            return Verdict(DROP, url, seen=True)
        ruleset = self.ruleset
        defer_by, defer_rate = defer if defer is not None else (0, 0.0)
        if ruleset is None or not (self.has_rules or defer_by > 0):
            # no rules: nothing is rewritten, and the tree is walked only to defer
            canonical, rate, nid = url, None, None
        else:
            canonical, rate, nid = ruleset.resolve(url)
        if canonical != url and self.failed and self._tried_here(canonical, url, queued, filtered):
            canonical = url  # its page failed under the rules' URL: this one is tried
        if canonical == url:
            if not queued and filtered and url_key(url) in self.resent:  # as the dupefilter
                return Verdict(DROP, url, repeat=True)
            deferral = 0
            if defer_by > 0 and rate is not None and rate >= defer_rate:
                deferral = defer_by
            return Verdict(KEEP, url, deferral)
        rule = "" if ruleset is None or nid is None else ruleset.signature(nid)
        self.decided.append((token, url, canonical, rule))
        asked = url_key(url)
        if queued:
            self.withdrawn.add(asked)  # see note_withdrawn
        # sent towards the scheduler before, or turned away before: the dupefilter would drop
        # it (a queued request is in ``requested`` by having been sent)
        repeat = asked in self.turned or (not queued and asked in self.requested)
        self.turned.add(asked)
        key = url_key(canonical)
        fetched = self._downloaded(key)
        if not repeat and rule:
            witness = self._witness(canonical, key) if fetched else None
            self.checks.turned(token, url, canonical, rule, witness)
        if fetched:
            return Verdict(DROP, canonical, fetched=True, repeat=repeat)
        if self.is_pending(key):
            return Verdict(DROP, canonical, repeat=repeat)
        if queued:
            self.requested.add(key)
        return Verdict(REWRITE, canonical)

    def take_checks(self) -> list[Check[T]]:
        """The requests turned away that are to be fetched anyway and compared (see
        :mod:`~scrapy_templates.urlnorm.checks`). Each is a download of its URL under way:
        a retraction does not send it again."""
        checks = self.checks.take()
        for check in checks:
            key = url_key(check.url)
            self.requested.add(key)
            self.withdrawn.discard(key)
        return checks

    def note_checked(self, url: str) -> None:
        """A check of ``url`` was sent as a plain GET, past the dupefilter, which so never
        records it: a later request for the URL that no rule turns away is dropped as the
        dupefilter would drop it, rather than downloaded a second time."""
        self.resent.add(url_key(url))

    def suspect_form(self, url: str) -> Form | None:
        """The form of a URL that no rule rewrites but that carries a query parameter the
        rules drop on other forms (a session id on a page type not yet seen with one): host,
        path and sorted query keys. ``None`` for any other URL."""
        if self.ruleset is None:
            return None
        parts = urlsplit(url)
        dropped = self.ruleset.dropped_query_keys
        if not parts.query or not dropped:
            return None
        keys = query_keys(url)
        if not any(k in dropped for k in keys) or self.ruleset.apply(url) != url:
            return None
        return parts.netloc, parts.path, keys

    def note_download(
        self, urls: Iterable[str], size: int, *, page: bool, page_hash: str | None = None
    ) -> None:
        """A response of ``size`` bytes for ``urls`` (the requested and the final URL) whose
        text hashes to ``page_hash``; ``page``: its page counts as downloaded — it reaches the
        spider and stands for the links to it (a download the spider never sees, or one of a
        start request a ``CrawlSpider`` makes no item of, is no reason to drop a request for
        that page)."""
        self.responses += 1
        self.bytes += size
        if page:
            for url in urls:
                self.fetched.append(url)
                self.raw.add(url_key(url))
                key = url_key(self.canonical(url))
                self.fresh.setdefault(key, url)
                self.checks.downloaded(url, key, page_hash)

    def job_input(self) -> tuple[list[str], int, int]:
        """What a :class:`~.jobs.UrlJob` for this host carries: the URLs downloaded that the
        keyring has not had, how many URLs it holds, and the mark to give
        :meth:`install_keyed` back."""
        return self.fetched[self.sent :], self.held, len(self.fetched)

    def install_keyed(
        self, ruleset: RuleSet, keyed: Keyed, mark: int, *, resend: bool
    ) -> list[Resend[T]]:
        """Put ``ruleset`` in force with the keyring's answer to the job made at ``mark`` (see
        :meth:`job_input`); returns the remembered requests to send again, as
        :meth:`install` does. A keyring that started afresh without being sent every URL
        (its process was replaced) is sent them all with the next job."""
        if keyed.full:
            self.canonical_keys = dict(keyed.added)
            self.sent = mark if self.held == 0 and self.sent == 0 else 0
        else:
            for key in keyed.removed:
                self.canonical_keys.pop(key, None)
            self.canonical_keys.update(keyed.added)
            self.sent = mark
        self.held = keyed.held
        # keys made with every pair known apart here: no retracted rule made them
        if self.stale and self.ruleset is not None:
            self.stale = not set(self.ruleset.apart) <= set(ruleset.apart)
        return self._put_in_force(ruleset, resend, held=keyed.previous_held)

    def install(self, ruleset: RuleSet, *, resend: bool) -> list[Resend[T]]:
        """Put ``ruleset`` in force, keying every downloaded page here (O(pages): for rule
        sets known before the crawl, and tests; a crawl keys through :meth:`install_keyed`).
        Returns the remembered requests that ``ruleset`` maps to another page than before and
        whose page is neither downloaded nor pending, when ``resend`` (the crawl runs)."""
        self.canonical_keys = {}
        for url in (*self.fetched, *self.shared):
            self.canonical_keys.setdefault(url_key(ruleset.apply(url)), url)
        self.raw.update(url_key(u) for u in self.shared)
        self.sent = self.held = 0
        self.stale = False
        return self._put_in_force(ruleset, resend)

    def retract(self, first: str, second: str) -> list[Resend[T]] | None:
        """``first``, just downloaded, and ``second`` are distinct pages: retract the rules in
        force that merge them (see :meth:`~.rules.RuleSet.keeping_apart`) and return the
        remembered requests to send again; ``None`` when no rule in force merges them."""
        if self.ruleset is None:
            return None
        kept = self.ruleset.keeping_apart([(first, second)])
        if kept.retracted == self.ruleset.retracted:
            self.ruleset = kept
            return None
        # checks still waiting for the retracted rules: their requests are sent again below
        self.checks.cancel(
            {self.ruleset.signature(n) for n in kept.retracted - self.ruleset.retracted}
        )
        self.stale = True
        # its download is under way: not to be sent again
        self.requested.add(url_key(first))
        self.withdrawn.discard(url_key(first))
        return self._put_in_force(kept, resend=True)

    def _put_in_force(
        self, ruleset: RuleSet, resend: bool, *, held: bool = False
    ) -> list[Resend[T]]:
        """The rules change: the pages downloaded since the keyring's job are keyed under
        them, and remembered requests they map elsewhere come back (``held``: the rules
        they replace merged no two distinct pages of the sample the new ones came from)."""
        old = self.ruleset
        same = old is not None and old.behaves_like(ruleset)
        holding = frozenset(old.signature(n) for n in old.rules) if held and old else frozenset()
        self.ruleset = ruleset
        self.checks.proven(ruleset.check_counts())
        self.fresh = {}
        for url in self.fetched[self.sent :]:
            self.fresh.setdefault(url_key(ruleset.apply(url)), url)
        return [] if same else self._revisit(ruleset, resend, holding=holding)

    def _revisit(
        self,
        ruleset: RuleSet,
        resend: bool,
        only: str | None = None,
        *,
        holding: frozenset[str] = frozenset(),
    ) -> list[Resend[T]]:
        """The remembered requests that ``ruleset`` maps to another page than before and
        whose page is neither downloaded nor pending; those stay remembered under their new
        canonical URL (a later rule set may still disagree), the others as they were.

        A request turned away by a rule whose checks all held (:meth:`_proven`), for a page
        downloaded or pending, stays turned away: that rule was shown right on the crawl's
        own pages, and a relearn that learns another form of it, or none, says nothing
        against it (a failed check of it sends them again, :meth:`release`). On gitweb, 56
        of 58 requests sent again were rewrites to a page downloaded since. ``only``: the
        requests of that rule alone, whose checks no longer vouch for them.

        ``holding``: the rules replaced, when they merged no two distinct pages of the new
        rules' sample. A request one of them turned away that the new rules leave as it is,
        for a page downloaded or on its way, stays turned away: the new rules say nothing of it
        (a relearn that splits a key's values into two nodes leaves the URLs with neither
        value under no rule), and the sample says nothing against the rule that turned it
        away. On the session-id test site, 23 requests per crawl came back that way."""
        kept: deque[tuple[T, str, str, str]] = deque(maxlen=REMEMBERED)
        again: list[Resend[T]] = []
        for entry in self.decided:
            token, url, canonical, rule = entry
            if only is not None and rule != only:
                kept.append(entry)
                continue
            now, _, nid = ruleset.resolve(url)
            if now == canonical or (
                rule in holding and now == url and self._taken_for(canonical, ruleset)
            ):
                kept.append(entry)
                continue
            key = url_key(now)
            if self._downloaded(key) or self.is_pending(key) or not resend:
                # turned away by the rule that now rewrites it, which vouches for it alone
                by = "" if nid is None or now == url else ruleset.signature(nid)
                kept.append((token, url, now, by))
            elif only is None and self._proven(rule) and self._in_hand(canonical):
                kept.append(entry)
            else:
                self._send(again, kept, token, url, now)
        self.decided = kept
        return again

    def _proven(self, rule: str) -> bool:
        """Whether ``rule`` had its first checks and every check of it held."""
        tally = self.checks.tallies.get(rule) if rule else None
        return (
            tally is not None
            and tally.checked >= self.checks.first > 0
            and tally.held == tally.checked
        )

    def _in_hand(self, canonical: str) -> bool:
        """Whether the page of ``canonical`` (under the rules it was turned away by) was
        downloaded under that URL or is on its way."""
        key = url_key(canonical)
        return key in self.raw or self.is_pending(key)

    def _taken_for(self, canonical: str, ruleset: RuleSet) -> bool:
        """Whether the page a request was turned away for (``canonical``, under the rules
        that turned it away) is downloaded or on its way under ``ruleset``."""
        if self._in_hand(canonical):
            return True
        key = url_key(ruleset.apply(canonical))
        return self._downloaded(key) or self.is_pending(key)

    def release(self, rule: str) -> list[Resend[T]]:
        """The remembered requests that ``rule``, no longer in force, still holds turned
        away (see :meth:`_revisit`), to send again now that a check of it failed."""
        if not rule or self.ruleset is None:
            return []
        return self._revisit(self.ruleset, resend=True, only=rule)

    def _send(
        self,
        again: list[Resend[T]],
        kept: deque[tuple[T, str, str, str]],
        token: T,
        url: str,
        now: str,
    ) -> None:
        """Send ``token`` again for ``now``; a request a rule still rewrites stays remembered
        under its new canonical URL."""
        if now != url:
            kept.append((token, url, now, ""))
        key = url_key(now)
        self.requested.add(key)
        self.withdrawn.discard(key)
        self.resent.add(key)
        again.append(Resend(token, now))


def _seen_key(url: str) -> int:
    """The key of ``url`` without its fragment, which the dupefilter's request fingerprint
    ignores."""
    return url_key(url.partition("#")[0] if "#" in url else url)
