"""Rules proven in the crawl: some of the URLs each rule rewrites or drops are fetched anyway
and compared with the page the rule took them for.

A rule learned from a sample can be wrong where the sample was thin: query pages whose short
result lists read alike in training, a section whose pages the rule never saw. So the first
:attr:`RuleChecks.first` URLs each rule turns away, and then a :attr:`RuleChecks.share` of
them, are checked (a :class:`Check`): the URL is fetched as the spider asked for it, and its page is
compared with a downloaded page of the URL the rule gave (the *witness*). At download, a
redirect to the rule's URL or the witness decides, then the page's text
(:func:`~scrapy_templates.urlnorm.samples.page_hash`). When the texts differ, the contents
decide once both pages are items: the two pages are one when they share
:data:`SAME_CONTENT` of their content text, pagelet by pagelet (:func:`content_sketch`), and
two when they do not. A
rotating banner, or a breadcrumb counted as content on the page marked first and as template
on the one marked later, changes the text without making two pages; a short result list that
shares some of its entries with another is another page. A page that names the rule's URL or
the witness as its ``rel=canonical`` is one with it also when :data:`SAME_TEXT` of its
content's word pairs are the witness's, whatever the layout (:func:`text_sketch`): a print
view laid out as one block is its article, while page 7 of a listing that names page 1
canonical (an old search-engine habit) is another page, which the claim alone would have
merged. A page the spider makes no item of has no content to compare: what it is worth to the
crawl is where it leads, so it is the page the rule took it for when at most
:data:`NEW_LINKS` of the requests the spider made from it are for pages the crawl never met
(page 7 of a listing leads to products no other page links). Contents that never come (an
item dropped by another pipeline) leave the check waiting until the caller says none is left
to come: it ends unknown. A check that fails names two
distinct pages: the caller retracts the rule that merged them
(:meth:`~scrapy_templates.urlnorm.rules.RuleSet.keeping_apart`).

A rule is known by its signature (:meth:`~scrapy_templates.urlnorm.rules.RuleSet.signature`),
so its tally survives relearning. A rule right in one section of a site can be wrong in
another, so the first ones are counted per directory too: the first ``first`` URLs a rule
turns away in each directory are checked, those past the rule's first few as the host's
downloads allow (they wait while checks in new directories would pass
:data:`DIRECTORY_BUDGET` of them). Random checks past those are held to ``share`` of the
host's downloads: on a site where every page links to many copies of others, a share of the
requests turned away would be more downloads than the rules save. Plain data: no Scrapy, no
store; ``T`` is the caller's request.
"""

from __future__ import annotations

import random
from array import array
from collections import OrderedDict, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar
from urllib.parse import urlsplit

import numpy as np

from .url import url_key

T = TypeVar("T")

HELD = "held"
FAILED = "failed"
OPEN = "open"
UNKNOWN = "unknown"

# why a check was chosen (see RuleChecks._wanted)
FREE = "free"
BUDGETED = "budgeted"
RANDOM = "random"

# checks waiting for their witness to be downloaded, or for their page's content, per host
MAX_WAITING = 1_000
# the share of its content text, pagelet by pagelet, that a page shares with another that it
# is a copy of
SAME_CONTENT = 0.9
# the largest content pagelets a page is compared by
SKETCH_PARTS = 32
# the share of its content's word pairs that a page naming another canonical shares with it
# when it is that page laid out another way
SAME_TEXT = 0.9
# the word pairs of a page's content that its text sketch keeps (those of lowest hash)
TEXT_SKETCH = 128
# the fewest word pairs of a page a containment is estimated on, when the other page's sketch
# leaves fewer of them to compare (a page much larger than the one it is compared with)
MIN_COMPARED = 32
# pages whose content sketch is kept, per host (the oldest are forgotten: a check waiting
# for one of them expires)
MAX_SKETCHES = 100_000
# pages whose text sketch is kept, per host (512 bytes each)
MAX_TEXTS = 20_000
# the share of the requests a checked page the spider makes no item of yields that may be
# for pages the crawl never met, for it to be the page the rule took it for
NEW_LINKS = 0.1
# the share of a host's downloads that may go to checking rules in directories past the first
# one each rule was checked in
DIRECTORY_BUDGET = 0.1


@dataclass(frozen=True, slots=True)
class Check(Generic[T]):
    """Fetch ``url`` (the request ``token`` as the spider asked for it) and compare its page
    with the downloaded page of ``witness``, which the rule ``rule`` took it for (rewriting
    ``url`` to ``target``)."""

    token: T
    url: str
    target: str
    witness: str
    rule: str


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a check ended: ``held`` (the same page), ``failed`` (``url`` and ``witness`` are
    distinct pages), ``open`` (the page texts differ; the content will decide) or ``unknown``
    (a page too short to compare, or contents that never came); ``claimed``: the checked
    page named the rule's URL or the witness as its ``rel=canonical`` (a failed check then
    refutes the site's word); ``expired``: the contents never came; ``links``: the page
    was no item and the requests made from it decided."""

    status: str
    url: str
    witness: str
    rule: str
    claimed: bool = False
    expired: bool = False
    links: bool = False


@dataclass
class Tally:
    """A rule's checks: chosen (sent or waiting), ended ``checked`` and of those ``held``;
    the checks chosen per directory."""

    chosen: int = 0
    checked: int = 0
    held: int = 0
    directories: dict[str, int] = field(default_factory=dict)


def _directory(url: str) -> str:
    path = urlsplit(url).path
    return path[: path.rfind("/") + 1]


def _digest(value: str | None) -> int | None:
    """A stored hash as an int (a third of the memory of its hex string)."""
    return None if value is None else int(value, 16)


def content_sketch(parts: Iterable[str]) -> bytes:
    """What a page's content is compared by: a 32-bit hash and the length of each of its
    :data:`SKETCH_PARTS` largest content pagelet texts, white space collapsed, packed (a
    few hundred bytes).

    Texts are hashed with Python's own string hash, which is seeded per process: sketches
    are compared in the process that made them, as :class:`RuleChecks` does. A pagelet's
    text comes with its white space collapsed already: a printable text (its only white
    space the ASCII space) without two spaces in a row or at its ends is taken as it is."""
    sizes: dict[int, int] = {}
    for part in parts:
        text = part
        if not text.isprintable() or "  " in text or text[:1] == " " or text[-1:] == " ":
            text = " ".join(text.split())
        if text:
            key = hash(text) & 0xFFFFFFFF
            sizes[key] = sizes.get(key, 0) + len(text)
    largest = sorted(sizes.items(), key=lambda kv: kv[1], reverse=True)[:SKETCH_PARTS]
    return array("I", [n for pair in largest for n in pair]).tobytes()


def _sizes(sketch: bytes) -> dict[int, int]:
    values = array("I", sketch)
    return dict(zip(values[::2], values[1::2], strict=True))


def resemblance(first: bytes, second: bytes) -> float:
    """The share of the larger content that two sketched pages have in common, pagelet by
    pagelet (1.0 for two empty contents)."""
    a, b = _sizes(first), _sizes(second)
    total = max(sum(a.values()), sum(b.values()))
    if not total:
        return 1.0
    return sum(min(a[k], b[k]) for k in a.keys() & b.keys()) / total


_MIX_FIRST = np.uint64(0x9E3779B97F4A7C15)
_MIX_SECOND = np.uint64(0xC2B2AE3D27D4EB4F)
_HIGH = np.uint64(32)


def text_sketch(parts: Iterable[str]) -> bytes:
    """What a page's words are compared by, whatever pagelets hold them: the
    :data:`TEXT_SKETCH` lowest 32-bit hashes of its content's word pairs, sorted and packed
    (all of them when there are fewer; ``b""`` for fewer than two words).

    Words are hashed with Python's own string hash, which is seeded per process: sketches are
    compared in the process that made them, as :class:`RuleChecks` does."""
    words = " ".join(parts).split()
    if len(words) < 2:
        return b""
    hashes = np.fromiter(map(hash, words), dtype=np.int64, count=len(words)).view(np.uint64)
    pairs = ((hashes[:-1] * _MIX_FIRST + hashes[1:] * _MIX_SECOND) >> _HIGH).astype(np.uint32)
    kept = None
    if len(pairs) > 2 * TEXT_SKETCH:
        kept = np.unique(pairs[pairs <= np.partition(pairs, 2 * TEXT_SKETCH)[2 * TEXT_SKETCH]])
    if kept is None or len(kept) < TEXT_SKETCH:  # few pairs, or a few repeated over and over
        kept = np.unique(pairs)
    return kept[:TEXT_SKETCH].tobytes()


def contained(part: bytes, whole: bytes) -> float | None:
    """The share of the word pairs sketched by ``part`` that the page sketched by ``whole``
    has too (0.0 when ``part`` has none), estimated on the pairs of ``part`` low enough to
    be in ``whole``'s sketch if ``whole`` had them; ``None`` when ``whole``'s sketch leaves
    fewer than :data:`MIN_COMPARED` of them (a ``whole`` many times larger than ``part``):
    too few to tell."""
    mine = np.frombuffer(part, dtype=np.uint32)
    theirs = np.frombuffer(whole, dtype=np.uint32)
    if not len(mine):
        return 0.0
    if len(theirs) == TEXT_SKETCH:
        comparable = mine[mine <= theirs[-1]]
        if len(comparable) < min(MIN_COMPARED, len(mine)):
            return None
        mine = comparable
    return float(np.isin(mine, theirs, assume_unique=True).mean())


V = TypeVar("V")


def _keep(kept: OrderedDict[int, V], key: int, value: V, most: int) -> None:
    kept[key] = value
    kept.move_to_end(key)
    while len(kept) > most:
        kept.popitem(last=False)


@dataclass(frozen=True, slots=True)
class _Waiting:
    """A check whose page is an item, waiting for its witness's content."""

    url: str
    witness: str
    rule: str
    sketch: bytes
    text: bytes | None  # its words, when it named the witness canonical


class RuleChecks(Generic[T]):
    """One host's checks (see the module docstring): which requests to check, the page and
    content hashes of its downloads to compare them with, and each rule's tally."""

    def __init__(self, first: int = 3, share: float = 0.02, seed: int | None = None) -> None:
        self.first = first
        self.share = share
        self.tallies: dict[str, Tally] = {}
        self._pages: dict[int, int] = {}
        self._contents: OrderedDict[int, bytes] = OrderedDict()
        # the words of the host's pages, sketched once one of them named another canonical
        # (canonical_site)
        self._texts: OrderedDict[int, bytes] = OrderedDict()
        self.canonical_site = False
        # a check found a page that names another canonical to be another page
        self.claims_refuted = False
        # canonical key of a page not downloaded yet -> the checks waiting for it
        self._parked: OrderedDict[int, list[tuple[T, str, str, str, str]]] = OrderedDict()
        # item key -> a check waiting for its page's content: URL, witness, rule, claimed
        self._open: OrderedDict[int, tuple[str, str, str, bool]] = OrderedDict()
        # the item key of a witness not yet an item -> the checks waiting for it
        self._awaiting: OrderedDict[int, list[_Waiting]] = OrderedDict()
        # checks ended unknown when the waiting lists overflowed, until expired() hands them
        self._lapsed: list[Outcome] = []
        self._ready: list[Check[T]] = []
        # checks of a rule in new directories, waiting for the directory budget
        self._budgeted: deque[Check[T]] = deque()
        # made at the first random draw: a host that never has a rule needs none (2.5 KB)
        self._seed = seed
        self._rng: random.Random | None = None
        # pages downloaded; checks sent past the first ones of each rule, per directory and
        # at random
        self._downloads = 0
        self._in_directories = 0
        self._extra = 0

    def _draw(self) -> float:
        if self._rng is None:
            self._rng = random.Random(self._seed)
        return self._rng.random()

    @property
    def enabled(self) -> bool:
        return self.first > 0 or self.share > 0

    def proven(self, counts: dict[str, tuple[int, int]]) -> None:
        """Rules arrive with ``(checked, held)`` counts from other crawls or processes, by
        signature: a rule checked there needs no first checks here."""
        for rule, (checked, held) in counts.items():
            tally = self.tallies.setdefault(rule, Tally())
            if checked > tally.checked:
                tally.chosen += checked - tally.checked
                tally.checked, tally.held = checked, held

    def _wanted(self, rule: str, url: str) -> str | None:
        """Whether to check ``url``, turned away by ``rule``: :data:`FREE` (one of the rule's
        first), :data:`BUDGETED` (one of its first in a directory: it waits for the
        directory budget), :data:`RANDOM`, or ``None``."""
        tally = self.tallies.setdefault(rule, Tally())
        directory = _directory(url)
        seen = tally.directories.get(directory, 0)
        if tally.chosen < self.first:
            kind = FREE
        elif seen < self.first:
            kind = BUDGETED
        elif self._extra < self.share * self._downloads and self._draw() < self.share:
            self._extra += 1
            kind = RANDOM
        else:
            return None
        tally.chosen += 1
        if seen or len(tally.directories) < MAX_WAITING:
            tally.directories[directory] = seen + 1
        return kind

    def turned(self, token: T, url: str, canonical: str, rule: str, witness: str | None) -> None:
        """A rule turned ``url`` away for the page of ``canonical``; ``witness``: a downloaded
        URL of that page (``None``: not downloaded yet — the check waits for it). Chosen
        checks come out of :meth:`take`."""
        if not self.enabled:
            return
        if witness is not None:
            if url_key(witness) in self._pages:
                kind = self._wanted(rule, url)
                if kind is not None:
                    self._ready_check(Check(token, url, canonical, witness, rule), kind)
            return
        kind = self._wanted(rule, url)
        if kind is not None:
            waiting = (token, url, canonical, rule, kind)
            self._parked.setdefault(url_key(canonical), []).append(waiting)
            while len(self._parked) > MAX_WAITING:
                self._parked.popitem(last=False)

    def _ready_check(self, check: Check[T], kind: str) -> None:
        if kind != BUDGETED:
            self._ready.append(check)
        elif len(self._budgeted) < MAX_WAITING:
            self._budgeted.append(check)

    def downloaded(self, url: str, canonical_key: int, page_hash: str | None) -> None:
        """A page reached the spider from ``url`` (``canonical_key``: the key of its canonical
        URL under the rules in force); checks waiting for that page are ready."""
        self._downloads += 1
        if page_hash is None or not self.enabled:
            return
        self._pages[url_key(url)] = int(page_hash, 16)
        for token, turned, target, rule, kind in self._parked.pop(canonical_key, ()):
            if turned != url:
                self._ready_check(Check(token, turned, target, url, rule), kind)

    def same_page(self, url: str, page_hash: str) -> bool:
        """Whether the page downloaded from ``url`` had the text hash ``page_hash`` (false
        when its hash is not known)."""
        return self._pages.get(url_key(url)) == _digest(page_hash)

    def cancel(self, rules: set[str]) -> None:
        """Forget the checks not yet sent of ``rules`` (retracted: their requests go again)."""
        self._ready = [c for c in self._ready if c.rule not in rules]
        self._budgeted = deque(c for c in self._budgeted if c.rule not in rules)
        for key, waiting in list(self._parked.items()):
            kept = [w for w in waiting if w[3] not in rules]
            if kept:
                self._parked[key] = kept
            else:
                del self._parked[key]

    def take(self) -> list[Check[T]]:
        """The checks to send now: those ready, and those of new directories that the
        directory budget allows."""
        ready, self._ready = self._ready, []
        while self._budgeted and self._in_directories < DIRECTORY_BUDGET * self._downloads:
            self._in_directories += 1
            ready.append(self._budgeted.popleft())
        return ready

    def names_canonical(self) -> None:
        """A page of the host named another URL of the host as its ``rel=canonical``: from
        now on the words of its pages are sketched too, to bear out such a claim in a check."""
        self.canonical_site = True

    def fetched(
        self, check: Check[T], page_hash: str | None, final_url: str, canonical: str | None
    ) -> Outcome:
        """The page of ``check`` was downloaded from ``final_url`` (where its redirects
        led): its text hashes to ``page_hash`` and it names ``canonical`` as its
        ``rel=canonical``."""
        url, witness, rule = check.url, check.witness, check.rule
        named = {url_key(check.target), url_key(witness)}
        if url_key(final_url) in named:
            return self._end(HELD, url, witness, rule)
        theirs = self._pages.get(url_key(witness))
        mine = _digest(page_hash)
        if mine is None or theirs is None:
            return self._end(UNKNOWN, url, witness, rule)
        if mine == theirs:
            return self._end(HELD, url, witness, rule)
        # the contents decide, once both pages are items
        claimed = canonical is not None and url_key(canonical.partition("#")[0]) in named
        self.canonical_site |= claimed
        key = url_key(final_url)
        self._open[key] = (url, witness, rule, claimed)
        self._open.move_to_end(key)
        while len(self._open) > MAX_WAITING:
            self._lapse(*self._open.popitem(last=False)[1])
        return Outcome(OPEN, url, witness, rule, claimed)

    def no_item(self, url: str, requests: int, new: int) -> Outcome | None:
        """The spider made no item of the page downloaded from ``url``, and requests for
        ``requests`` pages of its host, ``new`` of them pages the crawl never met: the
        outcome of the check of ``url`` waiting for its content, if there is one (see the
        module docstring; unknown for a page with no such request)."""
        waiting = self._open.pop(url_key(url), None)
        if waiting is None:
            return None
        checked, witness, rule, claimed = waiting
        if not requests:  # a page that leads nowhere the rules judge tells nothing
            return self._end(UNKNOWN, checked, witness, rule, claimed, links=True)
        held = new <= NEW_LINKS * requests
        return self._end(HELD if held else FAILED, checked, witness, rule, claimed, links=True)

    def content(self, url: str, parts: Sequence[str]) -> list[Outcome]:
        """``url``'s page became an item whose content pagelets have the texts ``parts``:
        the outcomes of the checks this decides — that of ``url``, unless its witness is not
        an item yet, and those that waited for ``url`` as their witness."""
        if not self.enabled:
            return []
        key = url_key(url)
        sketch = content_sketch(parts)
        _keep(self._contents, key, sketch, MAX_SKETCHES)
        waiting = self._open.pop(key, None)
        claimed = waiting is not None and waiting[3]
        text = text_sketch(parts) if self.canonical_site or claimed else None
        if text is not None:
            _keep(self._texts, key, text, MAX_TEXTS)
        outcomes = [self._compare(check) for check in self._awaiting.pop(key, ())]
        if waiting is not None:
            checked, witness, rule, _ = waiting
            check = _Waiting(checked, witness, rule, sketch, text if claimed else None)
            witness_key = url_key(witness)
            if witness_key in self._contents:
                outcomes.append(self._compare(check))
            else:  # the witness's item is still on its way
                self._awaiting.setdefault(witness_key, []).append(check)
                while len(self._awaiting) > MAX_WAITING:
                    for lapsed in self._awaiting.popitem(last=False)[1]:
                        self._lapse(
                            lapsed.url, lapsed.witness, lapsed.rule, lapsed.text is not None
                        )
        return outcomes

    def _compare(self, check: _Waiting) -> Outcome:
        """How a check whose page and witness are items ends, by their contents."""
        url, witness, rule, claimed = check.url, check.witness, check.rule, check.text is not None
        witness_key = url_key(witness)
        theirs = self._contents.get(witness_key)
        if theirs is not None and resemblance(check.sketch, theirs) >= SAME_CONTENT:
            return self._end(HELD, url, witness, rule, claimed)
        if check.text is None:  # texts that differ, and contents that differ: two pages
            return self._end(FAILED, url, witness, rule)
        their_text = self._texts.get(witness_key)
        if their_text is None:
            # the witness became an item before the host named a canonical elsewhere: the
            # claim can be neither borne out nor refuted
            return self._end(UNKNOWN, url, witness, rule, claimed)
        # a print view's words are within its article's, and an article's within a print
        # view that was downloaded first: one page's words within the other's
        shares = [contained(check.text, their_text), contained(their_text, check.text)]
        known = [share for share in shares if share is not None]
        if not known:  # pages so unlike in size that their sketches cannot tell
            return self._end(UNKNOWN, url, witness, rule, claimed)
        held = max(known) >= SAME_TEXT
        return self._end(HELD if held else FAILED, url, witness, rule, claimed)

    def _lapse(self, url: str, witness: str, rule: str, claimed: bool) -> None:
        """A check whose contents never come ends unknown: neither borne out nor refuted."""
        self._lapsed.append(self._end(UNKNOWN, url, witness, rule, claimed, expired=True))

    def expired(self, *, everything: bool = False) -> list[Outcome]:
        """The checks ended unknown since the last call: those the waiting lists had no room
        for, and with ``everything`` (the crawl has no content left to come: every download
        has been through the spider and the pipeline) all those still waiting."""
        if everything:
            for url, witness, rule, claimed in self._open.values():
                self._lapse(url, witness, rule, claimed)
            for checks in self._awaiting.values():
                for check in checks:
                    self._lapse(check.url, check.witness, check.rule, check.text is not None)
            self._open.clear()
            self._awaiting.clear()
        lapsed, self._lapsed = self._lapsed, []
        return lapsed

    def _end(
        self,
        status: str,
        url: str,
        witness: str,
        rule: str,
        claimed: bool = False,
        *,
        expired: bool = False,
        links: bool = False,
    ) -> Outcome:
        tally = self.tallies.setdefault(rule, Tally())
        if status != UNKNOWN:
            tally.checked += 1
            tally.held += status == HELD
        return Outcome(status, url, witness, rule, claimed, expired, links)

    def counts(self) -> dict[str, tuple[int, int]]:
        """Each rule's ``(checked, held)``, by signature."""
        return {rule: (t.checked, t.held) for rule, t in self.tallies.items() if t.checked}
