"""How much a layout block's text varies across the pages of one layout: Webstemmer's DiffScore.

Exact counting (``000_…``) needs byte-identical copies, so a breadcrumb whose last step names
the page, a menu that marks the current section, or a footer with the date is a different
pagelet on every page. Webstemmer (``001_…`` step 4) aligns the layout blocks of pages of one
layout and scores each block by how much its text differs between pages:

    DiffScore(E) = Σ_pairs (w(s1) + w(s2) − 2·|MCS(s1, s2)|) / Σ_pairs (w(s1) + w(s2))

where ``w`` counts letters and ``MCS`` is the maximum common subsequence. A block with a low
score is static (navigation, banners) even when no two copies are identical; article text
scores near 1. Thor's cross-page subtree filtering (``004_…`` §VI) makes the same cut between
static and dynamic subtrees by content similarity.

Evidence stays cheap and bounded: a block is keyed by its tag path and its rank among the
page's blocks of that path — its layout style in the sense of ``002_…``, within one layout
cluster — and keeps a reservoir of a few samples of its first few dozen words. A sample is
compared in one of two ways (:data:`COMPARISONS`): ``words``, the common subsequence over
words weighted by their letters (digits weigh nothing, as in Webstemmer, so dates and counters
never make a block look dynamic); or ``bits`` (the default), the word-offset bit signatures of
``002_…`` (:mod:`~scrapy_templates.templates.offsets`), where the bits two signatures share
stand for the common subsequence: a sample is one integer and a comparison one AND.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

from scrapy_templates.templates.layout import SiteLayouts
from scrapy_templates.templates.offsets import offset_signature, shared_weight, signature_weight
from scrapy_templates.templates.region import in_region, links_size, same_site
from scrapy_templates.templates.repeats import RepeatCache
from scrapy_templates.templates.text import WORD, letters

BlockKey = tuple[str, int]

# How stable a block is in its layout cluster (:meth:`LayoutBlocks.add`): its words vary as
# content does; they shift around a steady part, as a prev/next bar's titles do around its
# labels; or they barely change. A shifting block that framed the content on most pages that
# had it is a FRAME: a bar of the layout, wherever a page puts it. A block whose links keep
# their texts on most pages while its other words change is a BAR, however much they change
# (DocBook's "‹title› Prev ‹chapter› Next": long titles as plain text between steady link
# labels).
DYNAMIC, SHIFTING, STATIC, FRAME, BAR = 0, 1, 2, 3, 4
SHIFTS = frozenset({SHIFTING, FRAME, BAR})  # the levels of a block whose words shift
# The share of a shifting block's pages that makes a habit of it: framing the content (FRAME),
# the same link texts (BAR).
HABIT_SHARE = 0.5
Words = tuple[str, ...]
_TEXT_KEY = itemgetter(3)  # a sample's hash of its words


WORD_CHARS = 24  # characters looked at per word wanted


def excerpt(text: str, limit: int) -> str:
    """The part of ``text`` that :func:`words` reads for its first ``limit`` words: what a
    block keeps of a text it has not read yet."""
    return text[: limit * WORD_CHARS]


def words(text: str, limit: int) -> Words:
    """The first ``limit`` words of ``text``, lowercased (words are looked for in its first
    ``24 · limit`` characters).

    The first ``8 · limit`` characters are tried first: when they hold more than ``limit``
    words, the first ``limit`` of them are whole (another begins after them), and most blocks
    end there."""
    if len(text) > limit * 8:
        found = WORD.findall(text[: limit * 8].lower())
        if len(found) > limit:
            return tuple(found[:limit])
    return tuple(WORD.findall(excerpt(text, limit).lower())[:limit])


def common_weight(a: Words, b: Words) -> int:
    """Letter weight of the heaviest common subsequence of two word sequences."""
    if not a or not b:
        return 0
    if a == b:
        return sum(letters(w) for w in a)
    previous = [0] * (len(b) + 1)
    for word_a in a:
        current = [0]
        w = letters(word_a)
        left = 0
        for j, word_b in enumerate(b):
            if word_a == word_b:
                left = previous[j] + w
            else:
                up = previous[j + 1]
                if up > left:
                    left = up
            current.append(left)
        previous = current
    return previous[-1]


@dataclass(frozen=True)
class Comparison:
    """How block samples are kept and compared: ``evidence`` turns a sample's words into what
    is kept, ``weight`` is its size and ``common`` the size two samples share; a pair's
    DiffScore term is ``weight(a) + weight(b) − 2·common(a, b)``."""

    evidence: Callable[[Words], Any]
    weight: Callable[[Any], float]
    common: Callable[[Any, Any], float]


def _letter_weight(text: Words) -> int:
    return sum(letters(w) for w in text)


COMPARISONS: dict[str, Comparison] = {
    "words": Comparison(tuple, _letter_weight, common_weight),
    "bits": Comparison(offset_signature, signature_weight, shared_weight),
}


def layout_may_flag(level: int, path: str, navigation: bool, main_path: str | None) -> bool:
    """Whether a block of stability ``level`` at ``path`` may be flagged template: a
    :data:`STATIC` one when it lies outside the site's main region, or inside it and is
    ``navigation`` (a menu or a bar, :func:`~scrapy_templates.templates.region.navigation_links`); a
    :data:`SHIFTING` one when it is navigation (and, the caller checks, frames the content),
    a :data:`BAR` or :data:`FRAME` one when it is navigation (the caller counts both as
    navigation: their steady links, or their habit of framing, say so);
    never one that contains the region. Inside the region, static blocks that are not
    navigation are content: a page type's headings (with or without their "¶" permalinks), a
    sentence every release note repeats with a link or two, a signature whose type names
    link to an external reference."""
    if level == DYNAMIC:
        return False
    if main_path is not None and not in_region(path, main_path):
        if main_path.startswith(path + "/"):
            return False
        if level == STATIC:
            return True
    return navigation  # SHIFTING, BAR or FRAME


_ID = re.compile(r"#[^/]*")
# Tag paths without their ids, by tag path: a site's paths come back page after page (8
# million characters, about 16 MB, at most).
_without_ids = RepeatCache[str, str](8_000_000, lambda path: _ID.sub("", path), len, len)


def path_without_ids(path: str) -> str:
    """``path`` without its element ids (``body/div#Threads/p`` → ``body/div/p``), cached."""
    return _without_ids(path)


def block_keys(paths: Sequence[str]) -> list[BlockKey]:
    """Each block's key: its tag path without element ids, and how many blocks of the same
    path came before it. Ids name one page's node or section (texinfo's ``div#Threads``,
    Sphinx's ``section#installation``), so a bar under them would be a new block on every
    page; classes name what an element is, and stay."""
    seen: dict[str, int] = {}
    keys = []
    for path in paths:
        if "#" in path:
            path = _without_ids(path)
        rank = seen.get(path, 0)
        seen[path] = rank + 1
        keys.append((path, rank))
    return keys


Links = tuple[tuple[str, ...], tuple[str, ...], str]


def _label(links: Links) -> int:
    hrefs, anchors, host = links
    texts = tuple(a for h, a in zip(hrefs, anchors, strict=True) if a and same_site(h, host))
    return hash(texts) if texts else 0


# the link blocks of menus and bars come back on every page, with up to hundreds of links
_labels = RepeatCache[Links, int](
    2_000_000, _label, lambda found: 0, lambda links: links_size(*links)
)


def link_label(hrefs: Sequence[str], anchors: Sequence[str], host: str) -> int:
    """A hash of the texts of a block's links to other pages of the site on ``host`` (0: it
    has none). A link to a part of the page itself (a heading's "¶" permalink), one to
    another host (an "edit this on GitHub" link beside every function of a reference page),
    and an icon without text label no way through the site. Remembered for link blocks that
    come back (bounded)."""
    if not hrefs and not anchors:
        return 0
    return _labels((tuple(hrefs), tuple(anchors), host))


@dataclass(slots=True)
class BlockSamples:
    """A bounded reservoir of one block's samples and its DiffScore over them.

    Once full, the reservoir draws how many pages to skip before the next replacement (Li's
    Algorithm L) instead of rolling a die on every page: a page that keeps what the reservoir
    has costs one comparison, and the samples are still a uniform draw of the pages.

    The score sums Webstemmer's terms over the ring of neighbouring samples (each sample
    with the next, the last with the first) rather than over all pairs: as many pairs as
    samples, each sample in two. A pair's term is computed once, when a score is first asked
    for, and kept until one of its samples is replaced; so is the score itself.

    Texts given by :meth:`keep` are read into samples only when the block is first judged
    (:attr:`varies`, :meth:`diff_score`): most content blocks of a site occur on one page and
    never are, so their words and signatures are never computed."""

    size: int
    comparison: Comparison = COMPARISONS["bits"]
    words: int = 24
    pages: int = 0
    samples: list[tuple[int, Any, float, int]] = field(default_factory=list)
    _pairs: dict[tuple[int, int], tuple[float, float]] = field(default_factory=dict)
    _next_id: int = 0
    _score: float | None = None
    _scored: bool = False
    _varies: bool = False
    _w: float = 1.0
    _due: int = 0
    _unread: dict[int, str] = field(default_factory=dict)
    shifting: int = 0
    framed: int = 0
    label: int = 0  # its link texts (a hash) on the second page that had it; 0: no links
    same_label: int = 0  # pages since then whose link texts were the same

    def offer(self, rng: random.Random) -> int | None:
        """Count one more page holding the block; the reservoir slot its text goes to, or
        ``None`` when the reservoir keeps what it has (so the text need not be read)."""
        self.pages += 1
        if len(self.samples) < self.size:
            self.samples.append((-1, None, 0, 0))
            if len(self.samples) == self.size:
                self._draw_due(rng)
            return len(self.samples) - 1
        if self.pages < self._due:
            return None
        self._draw_due(rng)
        return rng.randrange(self.size)

    def _draw_due(self, rng: random.Random) -> None:
        """The page of the next replacement (Algorithm L: the skip is geometric, its rate
        shrinking as the reservoir's pages grow)."""
        self._w *= math.exp(math.log(1.0 - rng.random()) / self.size)
        skip = math.floor(math.log(1.0 - rng.random()) / math.log1p(-self._w)) if self._w < 1 else 0
        self._due = self.pages + skip + 1

    def store(self, slot: int, text: Words) -> None:
        """Keep a sample of the block's words in ``slot``."""
        old = self.samples[slot][0]
        if old >= 0:
            self._pairs = {k: v for k, v in self._pairs.items() if old not in k}
        evidence = self.comparison.evidence(text)
        self.samples[slot] = (self._next_id, evidence, self.comparison.weight(evidence), hash(text))
        self._next_id += 1
        self._scored = False
        self._varies = len(set(map(_TEXT_KEY, self.samples))) > 1

    def keep(self, slot: int, text: str) -> None:
        """Keep ``text`` for ``slot``, to be read into a sample of its first :attr:`words`
        words when the block is judged."""
        self._unread[slot] = excerpt(text, self.words)

    def _read(self) -> None:
        unread, self._unread = self._unread, {}
        for slot, text in unread.items():
            self.store(slot, words(text, self.words))

    @property
    def varies(self) -> bool:
        """Whether the sampled copies differ at all (digits included): identical copies are
        exact counting's to judge, with its site-wide share."""
        if self._unread:
            self._read()
        return self._varies

    def diff_score(self) -> float | None:
        """0 when every sampled copy is the same text, 1 when no two share a word; ``None``
        while fewer than two copies with letters were sampled."""
        if self._unread:
            self._read()
        if self._scored:
            return self._score
        pairs = self._pairs
        samples = self.samples
        common = self.comparison.common
        for i, (id_a, text_a, w_a, _) in enumerate(samples):
            id_b, text_b, w_b, _ = samples[i - 1]
            if i == 0 and len(samples) < 3:
                continue
            key = (id_a, id_b) if id_a < id_b else (id_b, id_a)
            if key not in pairs:
                total = w_a + w_b
                pairs[key] = (total, total - 2 * common(text_a, text_b))
        total = sum(t for t, _ in pairs.values())
        self._score = sum(d for _, d in pairs.values()) / total if total else None
        self._scored = True
        return self._score


@dataclass
class LayoutBlocks:
    """The blocks of one layout (a site, or a layout cluster of it) with their evidence.

    ``min_pages``: pages a block must have been seen on before it can be called static;
    ``min_share``: and at least this share of the layout's pages; ``max_diff``: the DiffScore
    at or below which it is static; ``shift_diff``: the DiffScore at or below which it is
    shifting (a prev/next bar: its labels stay, the titles between them change on every
    page); ``comparison``: a key of :data:`COMPARISONS`. At most
    ``max_blocks`` blocks are tracked.

    A block seen on one page so far (most content blocks) is only its text in :attr:`once`;
    it gets its :class:`BlockSamples` when a second page has it. One copy is never static,
    and a plain string is a few bytes that the garbage collector never has to walk."""

    samples: int = 6
    words: int = 24
    min_pages: int = 5
    min_share: float = 0.0
    max_diff: float = 0.4
    shift_diff: float = 0.75
    max_blocks: int = 500
    comparison: str = "bits"
    pages: int = 0
    blocks: dict[BlockKey, BlockSamples] = field(default_factory=dict)
    once: dict[BlockKey, str] = field(default_factory=dict)
    rng: random.Random = field(default_factory=lambda: random.Random(0))

    @property
    def tracked(self) -> int:
        """How many blocks are tracked (at most ``max_blocks``)."""
        return len(self.blocks) + len(self.once)

    def add(
        self, paths: Sequence[str], texts: Sequence[str], labels: Sequence[int] | None = None
    ) -> list[int]:
        """Record one page's blocks (``labels``: a hash of each one's link texts, 0 for none);
        their stability after it (as :meth:`levels` would answer), found in the same pass."""
        self.pages += 1
        blocks, once = self.blocks, self.once
        flags = []
        for n, (key, text) in enumerate(zip(block_keys(paths), texts, strict=True)):
            block = blocks.get(key)
            if block is None:
                first = once.pop(key, None)
                if first is None:
                    if len(blocks) + len(once) < self.max_blocks:
                        once[key] = excerpt(text, self.words)
                    flags.append(DYNAMIC)
                    continue
                block = blocks[key] = BlockSamples(
                    self.samples, COMPARISONS[self.comparison], self.words
                )
                block.keep(block.offer(self.rng) or 0, first)  # the first page's slot: 0
                if labels is not None:
                    block.label = labels[n]
            if labels is not None and labels[n] and labels[n] == block.label:
                block.same_label += 1
            slot = block.offer(self.rng)
            if slot is not None:
                block.keep(slot, text)
            flags.append(self._level(block))
        return flags

    def levels(self, paths: Sequence[str]) -> list[int]:
        """The stability of each of a page's blocks in this layout: :data:`STATIC` for
        near-constant text that is not the same on every sampled page, :data:`SHIFTING` for
        text whose words change around a steady part (:data:`FRAME` when it framed the
        content on most pages it shifted on, :data:`BAR` when its link texts stay: a bar is
        one however much its other words change),
        :data:`DYNAMIC` otherwise (and for a block on
        too few of the layout's pages)."""
        return [self._level(self.blocks.get(key)) for key in block_keys(paths)]

    def _level(self, block: BlockSamples | None) -> int:
        if (
            block is None
            or block.pages < self.min_pages
            or block.pages < self.min_share * self.pages
            or not block.varies
        ):
            return DYNAMIC
        score = block.diff_score()
        if score is None:
            return DYNAMIC
        if score <= self.max_diff:
            return STATIC
        bar = block.label != 0 and block.same_label >= HABIT_SHARE * block.pages
        if score > self.shift_diff and not bar:
            return DYNAMIC
        if block.framed >= self.min_pages and block.framed >= HABIT_SHARE * block.shifting:
            return FRAME
        if bar:
            return BAR
        return SHIFTING

    def frame(self, paths: Sequence[str], levels: Sequence[int], framed: Sequence[bool]) -> None:
        """Count, for the shifting blocks of a decided page (``levels``: as :meth:`add` gave
        them), whether each framed its content (``framed``: peeled at an edge)."""
        blocks = self.blocks
        for key, level, f in zip(block_keys(paths), levels, framed, strict=True):
            if level in SHIFTS and (block := blocks.get(key)) is not None:
                block.shifting += 1
                block.framed += f


@dataclass
class SiteBlocks:
    """A site's layout clusters and, per cluster, its blocks' evidence: the layout-aware
    counterpart of exact counting, kept in each process."""

    layouts: SiteLayouts
    blocks_of: Callable[[], LayoutBlocks]
    blocks: dict[int, LayoutBlocks] = field(default_factory=dict)

    def observe(
        self, paths: Sequence[str], texts: Sequence[str], labels: Sequence[int] | None = None
    ) -> tuple[int, list[int]]:
        """Record a page; its layout cluster and its blocks' stability there."""
        ident = self.layouts.assign(paths)
        blocks = self.blocks.get(ident)
        if blocks is None:
            blocks = self.blocks[ident] = self.blocks_of()
        return ident, blocks.add(paths, texts, labels)

    def levels(self, paths: Sequence[str]) -> tuple[int | None, list[int] | None]:
        """A page's layout cluster and its blocks' stability there, recording nothing
        (``None, None`` while the site has no cluster)."""
        ident = self.layouts.cluster_of(paths)
        blocks = None if ident is None else self.blocks.get(ident)
        if ident is None or blocks is None:
            return None, None
        return ident, blocks.levels(paths)

    def frame(
        self, ident: int, paths: Sequence[str], levels: Sequence[int], framed: Sequence[bool]
    ) -> None:
        """Count which shifting blocks of a decided page of cluster ``ident`` framed its
        content (:meth:`LayoutBlocks.frame`)."""
        blocks = self.blocks.get(ident)
        if blocks is not None:
            blocks.frame(paths, levels, framed)

    def recompute(self) -> int:
        """Settle the layout clusters (k-means); evidence of clusters that emptied goes.
        Returns the number of clusters."""
        sizes = self.layouts.recompute()
        self.blocks = {ident: b for ident, b in self.blocks.items() if ident in sizes}
        return len(sizes)
