"""A page's title, found as Webstemmer finds it (``001_…`` step 5).

The text of the links that point to a page is usually its title (a news site's headline list,
a documentation index). So the title is the block of the page's content (a heading, paragraph,
list item or link inside its non-template pagelets) most similar to an anchor text seen for
it on earlier pages; without such an anchor, or when no block is close enough, the page's
first ``<h1>`` and then its ``<title>`` stand in.

:class:`AnchorIndex` keeps, per site, the first anchor text seen for each linked page, bounded
(oldest entries go first), so the evidence costs a few bytes per page.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

from scrapy_templates.templates.text import letters
from scrapy_templates.templates.variability import Words, common_weight, words

_WORDS = 24


def similarity(a: str, b: str) -> float:
    """Letter weight of the common word subsequence of ``a`` and ``b`` over their mean
    weight: 1 for the same words, 0 for none in common."""
    wa, wb = words(a, _WORDS), words(b, _WORDS)
    total = _weight(wa) + _weight(wb)
    return 2 * common_weight(wa, wb) / total if total else 0.0


def _weight(ws: Words) -> int:
    return sum(letters(w) for w in ws)


@dataclass
class AnchorIndex:
    """The first anchor text seen for each page id, at most ``limit`` of them."""

    limit: int = 20_000
    texts: OrderedDict[str, str] = field(default_factory=OrderedDict)

    def add(self, page_id: str, text: str) -> None:
        if not text or page_id in self.texts:
            return
        if len(self.texts) >= self.limit:
            self.texts.popitem(last=False)
        self.texts[page_id] = text[:200]

    def get(self, page_id: str) -> str | None:
        return self.texts.get(page_id)


def choose_title(
    anchor: str | None,
    blocks: Sequence[str],
    h1: str,
    html_title: str,
    *,
    min_similarity: float = 0.6,
) -> tuple[str, str]:
    """The page's title and where it came from: ``"anchor"`` (the content block most similar
    to the anchor text, when similar enough), else ``"h1"``, ``"title"`` or ``"none"``."""
    if anchor:
        wa = words(anchor, _WORDS)
        vocabulary = set(wa)
        weight_a = _weight(wa)
        best, best_sim = "", 0.0
        for text in blocks:
            head = text[:300]
            lowered = head.lower()
            # A block holding none of the anchor's words as a substring shares none of them.
            if not any(word in lowered for word in vocabulary):
                continue
            wb = words(head, _WORDS)
            # The words of the block that the anchor has bound the common subsequence: most
            # blocks share too few to win, and skip the quadratic comparison (the first test
            # needs no weight of the block: its total is at least ``weight_a + shared``).
            shared = min(weight_a, _weight(tuple(w for w in wb if w in vocabulary)))
            if not shared or 2 * shared / (weight_a + shared) < max(min_similarity, best_sim):
                continue
            total = weight_a + _weight(wb)
            bound = 2 * shared / total
            if bound < min_similarity or bound <= best_sim:
                continue
            sim = 2 * common_weight(wa, wb) / total
            if sim > best_sim:
                best, best_sim = text, sim
                if sim >= 1.0:  # the anchor's words exactly: no later block can do better
                    break
        if best_sim >= min_similarity:
            return best, "anchor"
    if h1:
        return h1, "h1"
    if html_title:
        return html_title, "title"
    return "", "none"
