"""The per-page decision: which of a page's pagelets are template, given the shared counts."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from scrapy_templates.page import HEADING_TAGS
from scrapy_templates.templates.region import MAX_PREFIX_STEPS
from scrapy_templates.templates.text import WORD


@dataclass(frozen=True, slots=True)
class Thresholds:
    """A pagelet is template when its support (pages holding it, or the size of its
    link-connected component for the global algorithm) is at least ``min_pages`` and at least
    ``min_share`` of the site's pages seen so far.

    ``min_pages = 2`` is the paper's rule (any repeated pagelet). The share test keeps a
    paragraph that two pages of a large site happen to share (an included section, a common
    warning) as content, while navigation and footers, present on most pages, stay template.

    A pagelet's number-blind pattern (its letters without its digits) is template at
    ``pattern_share``: a dated footer or a counter that is on most pages of the site, while a
    run of release notes titled "Release 3.0.2 On 2004-06-30", each on one page, stays content.

    Inside the site's main region, a pagelet that is not navigation must reach
    ``region_min_share`` (see :func:`spare_region_content`).
    """

    min_pages: int = 2
    min_share: float = 0.0
    pattern_share: float = 0.5
    region_min_share: float = 0.0


def is_template(support: int, pages_seen: int, thresholds: Thresholds) -> bool:
    return support >= thresholds.min_pages and support >= thresholds.min_share * pages_seen


def mark_pagelets(
    fingerprints: Sequence[int],
    patterns: Sequence[int],
    support: Mapping[int, int],
    pages_seen: int,
    thresholds: Thresholds,
) -> list[bool]:
    """Template flag of each pagelet from its exact fingerprint or its number-blind pattern;
    fingerprint 0 (no letters or digits) is never template."""
    by_pattern = Thresholds(thresholds.min_pages, thresholds.pattern_share)
    return [
        bool(fp)
        and (
            is_template(support.get(fp, 0), pages_seen, thresholds)
            or (bool(pattern) and is_template(support.get(pattern, 0), pages_seen, by_pattern))
        )
        for fp, pattern in zip(fingerprints, patterns, strict=True)
    ]


def spare_region_content(
    flags: Sequence[bool],
    support: Sequence[int],
    pages_seen: int,
    thresholds: Thresholds,
    plain_in_region: Callable[[int], bool],
) -> list[bool]:
    """Unflag the template pagelets that repeat on fewer than ``region_min_share`` of the site's
    pages and lie in its main region without being navigation (``plain_in_region(i)``, asked
    only of those): one section's standing sentence ("a complete list of releases is
    available…"), a heading every page of one type carries. Site-wide blocks, and menus and
    breadcrumbs of a section, stay template."""
    bar = thresholds.region_min_share * pages_seen
    return [
        flag and not (count < bar and plain_in_region(i))
        for i, (flag, count) in enumerate(zip(flags, support, strict=True))
    ]


def peel_edges(
    flags: Sequence[bool],
    candidates: Sequence[bool],
    considered: Sequence[bool],
    headings: Sequence[bool],
    weights: Sequence[int] | None,
) -> list[bool]:
    """Flag the ``candidates`` that lie at an edge of the page's content: among the
    ``considered`` pagelets (those with text in the main region), every one before it, or
    every one after it, is flagged or a candidate itself. A prev/next bar, a breadcrumb, a
    "Retrieved from ‹url›" line frame the content; a block of links between two paragraphs
    is the content's own. A frame is the lesser part of a page: nothing is peeled when the
    peeled ``weights`` (text sizes) would reach what is left unflagged, or when only
    ``headings`` would be left (a syntax page: its title and one block of "Used by:" links;
    a page too link-poor to split, whose content is one block like its neighbours').
    ``weights`` ``None``: candidates the page declares as its frame are peeled whatever their
    size, as long as more than headings is left."""
    out = list(flags)
    order = [i for i, c in enumerate(considered) if c]
    for walk in (order, order[::-1]):
        for i in walk:
            if candidates[i]:
                out[i] = True
            elif not flags[i]:
                break
    left = [i for i in order if not out[i]]
    if not any(not headings[i] for i in left):
        return list(flags)
    if weights is None:
        return out
    peeled = sum(weights[i] for i in order if out[i] and not flags[i])
    if peeled < sum(weights[i] for i in left):
        return out
    return list(flags)


# A sequence bar's words besides its link texts: labels ("Next:", "Up:") and the titles some
# generators write as plain text between the links (DocBook's chapter name).
SEQUENCE_BAR_WORDS = 24
_NEIGHBOURS = frozenset({"next", "prev"})
_PLACES = frozenset({"next", "prev", "up", "start"})


def sequence_bar(
    text: str,
    hrefs: Sequence[str],
    anchors: Sequence[str],
    declared: Mapping[str, Collection[str]],
) -> bool:
    """Whether a pagelet is the bar that leads to the page's neighbours in a sequence the page
    declares in its head (``declared``: href → its kinds, ``next``, ``prev``, ``up``…, see
    :data:`~scrapy_templates.page.SEQUENCE_RELS`). Template by the author's word from the first
    page, though its titles change on every page: every link off the page leads to a declared
    neighbour, each neighbour once, with no more than :data:`SEQUENCE_BAR_WORDS` other words;
    one that leads to the next or previous page leads to another of next, previous, up or
    start too (DocBook's footer row "‹previous title› Home ‹next title›" links home alone). A
    table of contents whose first entry is the next page, or a short page whose only pagelet
    holds its content and its bar, is not one."""
    outward = [h for h in hrefs if not h.startswith("#")]
    if not outward:
        return False
    kinds: set[str] = set()
    for href in outward:
        found = declared.get(href)
        if not found:
            return False
        kinds.update(found)
    # each neighbour once: an href comes back only as often as the head declares it
    if any(n > len(declared[h]) for h, n in Counter(outward).items()):
        return False
    if kinds & _NEIGHBOURS and len(kinds & _PLACES) < 2:
        return False
    linked = sum(len(WORD.findall(a)) for a in anchors)
    return len(WORD.findall(text)) - linked <= SEQUENCE_BAR_WORDS


def is_heading(path: str) -> bool:
    """Whether a pagelet's path ends in a heading element (``…/div/h2.title``)."""
    step = path.rpartition("/")[2]
    return step.partition(".")[0].partition("#")[0] in HEADING_TAGS


def spare_content_headings(
    flags: Sequence[bool],
    paths: Sequence[str],
    positions: Sequence[tuple[int, ...]],
    texts: Sequence[str],
    plain_in_region: Callable[[int], bool],
) -> list[bool]:
    """Unflag the template headings that start a part of the page's own content: a heading
    element in the main region, not navigation (``plain_in_region(i)``), whose next pagelet
    with text is content under the same parent. "Parameters", "Return value", "Functions"
    open their section on thousands of pages, so counting flags them; what follows them is
    the page's own. A heading followed by template (a menu's title, a box's caption) stays
    template. Walks back from the last pagelet, so a run of headings above content is spared
    whole."""
    out = list(flags)
    next_text = -1
    for i in range(len(out) - 1, -1, -1):
        if (
            out[i]
            and next_text >= 0
            and not out[next_text]
            and is_heading(paths[i])
            and positions[next_text][: len(positions[i]) - 1] == positions[i][:-1]
            and plain_in_region(i)
        ):
            out[i] = False
        if texts[i].strip():
            next_text = i
    return out


def main_region(
    positions: Sequence[tuple[int, ...]],
    weights: Sequence[int],
    templates: Sequence[bool],
    share: float,
) -> tuple[int, ...]:
    """The deepest element holding at least ``share`` of the page's content weight.

    ``positions`` are the pagelets' child-index chains, ``weights`` their content size (0 for
    template pagelets) and ``templates`` their flags. From the root, descend into the child
    holding the most weight while it holds ``share`` of the total and its siblings hold a
    template pagelet (so it is cut from a header, sidebar or footer, never from the headings
    beside it) or nothing — the main dynamic region of a page in the sense of ``004_…``
    (QA-pagelet selection), found from the template flags alone. At most
    :data:`~scrapy_templates.templates.region.MAX_PREFIX_STEPS` deep, as a site's main path:
    each step looks at the pagelets still below the region, and a page nested two thousand
    elements deep would make that thousands of passes.
    """
    total = sum(weights)
    region: tuple[int, ...] = ()
    if total == 0 or share <= 0:
        return region
    members: Sequence[int] = range(len(positions))  # the pagelets below ``region``
    for depth in range(MAX_PREFIX_STEPS):
        below: dict[int, int] = {}
        flagged: set[int] = set()
        for i in members:
            pos = positions[i]
            if len(pos) > depth:
                below[pos[depth]] = below.get(pos[depth], 0) + weights[i]
                if templates[i]:
                    flagged.add(pos[depth])
        if not below:
            return region
        child, weight = max(below.items(), key=lambda kv: kv[1])
        if weight < share * total:
            return region
        if weight < total and not (flagged - {child}):
            return region
        region = (*region, child)
        members = [i for i in members if len(positions[i]) > depth and positions[i][depth] == child]
    return region
