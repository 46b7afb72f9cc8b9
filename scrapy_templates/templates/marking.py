"""The per-page decision as one function of plain data, and what a site learns from a page.

:func:`decide_page` turns a parsed page, what counting it gave (the store's counts and the
layout model's block evidence, both with the page itself counted, as ``000_…`` counts a
pagelet's own page) and what the site has learned from earlier pages (its main region, anchor
texts, published model) into the page's marks: template flags, content text, title and the
item's summary. It reads the evidence once and changes nothing, so every part of one page is
decided under the same main region. :meth:`~scrapy_templates.templates.evidence.SiteEvidence.learn`
then adds the decided page to the evidence for the pages after it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from scrapy_templates.page import Page, Pagelet, navigation_element
from scrapy_templates.sites import page_id
from scrapy_templates.templates.decide import (
    Thresholds,
    is_heading,
    main_region,
    mark_pagelets,
    peel_edges,
    sequence_bar,
    spare_content_headings,
    spare_region_content,
)
from scrapy_templates.templates.evidence import SiteEvidence
from scrapy_templates.templates.region import block_navigation, in_region, names_itself
from scrapy_templates.templates.repeats import RepeatCache
from scrapy_templates.templates.title import choose_title
from scrapy_templates.templates.variability import BAR, DYNAMIC, FRAME, STATIC, layout_may_flag


@dataclass(frozen=True, slots=True)
class MarkSettings:
    """The decision's settings: the template thresholds, the share of a page's content its
    main region holds (0: no region, every non-template pagelet is content), whether the
    layout model flags static blocks, the snippet length of the marks and the counting
    algorithm (``"local"`` or ``"global"``), and the share of a section's pages that makes a
    link block template (0: sections are not looked at)."""

    thresholds: Thresholds = field(default_factory=Thresholds)
    main_share: float = 0.9
    snippet: int = 120
    algorithm: str = "local"
    section_share: float = 0.0


@dataclass(frozen=True, slots=True)
class PageCounts:
    """What counting one page gave, the page included: ``pages`` of its site seen so far;
    per fingerprint, ``counts`` (pages holding it) and ``support`` (the same for the local
    algorithm, the size of its link-connected component for the global one); and, with the
    layout model, the page's layout cluster and its pagelets' stability there; with
    sections, which of its link blocks its section makes template."""

    pages: int
    counts: Mapping[int, int]
    support: Mapping[int, int]
    layout: int | None = None
    levels: Sequence[int] | None = None
    section: Sequence[bool] | None = None


@dataclass(frozen=True, slots=True)
class PageMarks:
    """A page's decision: per pagelet its template flag, whether the layout model flagged
    it (``static``: a static block, a frame of the content, a frame position) and the content
    text it gives (``None``: none); the item's ``marks``
    (its pagelets field), ``content`` text and ``info`` summary; the main path it was
    decided under; ``sizes``: each pagelet's text length, for the crawl's counters;
    ``framed``: which pagelets framed the content (for the layout's frame positions)."""

    flags: list[bool]
    static: list[bool]
    texts: list[str | None]
    sizes: list[int]
    marks: list[dict[str, Any]]
    content: str
    info: dict[str, Any]
    main_path: str | None
    framed: list[bool]

    def tallies(self) -> dict[str, int]:
        """The page's share of the crawl's ``templates/…`` counters."""
        total = template = outside = 0
        for size, flag, text in zip(self.sizes, self.flags, self.texts, strict=True):
            total += size
            if flag:
                template += size
            elif text is None:
                outside += 1
        n_template = sum(self.flags)
        return {
            "items_marked": 1,
            "pagelets_template": n_template,
            "pagelets_content": len(self.flags) - n_template - outside,
            "pagelets_outside_main": outside,
            "pagelets_static": sum(self.static),
            "text_chars": total,
            "template_chars": template,
        }


def clip_words(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters at a word boundary, with "…" when cut (a
    single word longer than the limit is cut inside it)."""
    if len(text) <= limit:
        return text
    if limit <= 1:
        return "…"[:limit]
    cut = text[: limit - 1]
    if text[limit - 1] != " " and " " in cut:
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip() + "…"


class PageNavigation:
    """Per pagelet of a page, how many other pages of the site it links to as navigation
    (:func:`~scrapy_templates.templates.region.navigation_links`; 0: it is none), worked
    out when first asked and kept: section counting and several steps of the decision ask,
    each about a few pagelets."""

    __slots__ = ("_known", "_pagelets", "host")

    def __init__(self, page: Page) -> None:
        self._pagelets = page.pagelets
        self.host = urlsplit(page.url).netloc.lower()
        self._known: dict[int, int] = {}

    def links(self, i: int) -> int:
        found = self._known.get(i)
        if found is None:
            p = self._pagelets[i]
            found = block_navigation(p.text, p.hrefs, p.anchors, self.host) if p.hrefs else 0
            self._known[i] = found
        return found

    def menu(self, i: int) -> bool:
        """Whether pagelet ``i`` is navigation to two pages or more (a menu, a bar; one link
        is a reference)."""
        return self.links(i) >= 2


@dataclass(frozen=True, slots=True)
class PageFlags:
    """What marking a page decides before its content: per pagelet its template flag,
    whether the layout model flagged it (``static``) and whether it framed the content
    (``framed``); the main path they were decided under. All a site learns from a page."""

    flags: list[bool]
    static: list[bool]
    framed: list[bool]
    main_path: str | None


def page_flags(
    page: Page,
    counts: PageCounts,
    evidence: SiteEvidence,
    settings: MarkSettings,
    navigation: PageNavigation | None = None,
) -> PageFlags:
    """The page's template flags: exact counting's (``000_…`` §3), with plain blocks of the
    main region spared below the region share and the layout model's static blocks added
    (``001_…``). Reads ``evidence`` once, changes nothing, and asks nothing of the page's
    elements. ``navigation``: the page's, when the caller has asked it already."""
    nav = PageNavigation(page) if navigation is None else navigation
    main_path = evidence.main_path() if settings.main_share > 0 else None
    flags = _count_flags(page, counts, main_path, nav, settings)
    flags = _author_navigation(page, flags)
    if counts.section is not None:
        flags = [f or s for f, s in zip(flags, counts.section, strict=True)]
    static = [False] * len(flags)
    framed = [False] * len(flags)
    if counts.levels is not None:
        flags, static, framed = _layout_flags(page, counts.levels, flags, main_path, nav)
    flags = _sequence_bars(page, flags, main_path)
    if settings.main_share > 0:
        flags = _spare_headings(page, flags, main_path, nav)
        static = [s and f for s, f in zip(static, flags, strict=True)]
    return PageFlags(flags, static, framed, main_path)


def decide_page(
    page: Page,
    counts: PageCounts,
    evidence: SiteEvidence,
    settings: MarkSettings,
    navigation: PageNavigation | None = None,
    decided: PageFlags | None = None,
) -> PageMarks:
    """Mark ``page``: its flags (:func:`page_flags`, or ``decided`` when the caller has them),
    the content text from the site's main region (``004_…``), the title from anchor texts
    (``001_…`` step 5). Reads ``evidence`` once and changes nothing."""
    nav = PageNavigation(page) if navigation is None else navigation
    found = page_flags(page, counts, evidence, settings, nav) if decided is None else decided
    flags, static, main_path = found.flags, found.static, found.main_path
    texts = _content_texts(page, flags, main_path, settings.main_share)
    if evidence.inner is not None:
        inner = evidence.inner
        texts = [
            inner.cut(p.path, t) if t else t for p, t in zip(page.pagelets, texts, strict=True)
        ]
    marks = _marks(page, counts, flags, static, texts, settings.snippet)
    content = "\n".join(t for t in texts if t)
    sizes = [len(p.text) for p in page.pagelets]
    info = _info(page, counts, evidence, settings, sizes, flags, main_path)
    return PageMarks(flags, static, texts, sizes, marks, content, info, main_path, found.framed)


# the ``nav`` element above each tag path that names one, asked of every page's pagelets
_navigation_element = RepeatCache[str, str | None](
    1_000_000, navigation_element, lambda found: len(found) if found else 0, len
)


def _author_navigation(page: Page, flags: list[bool]) -> list[bool]:
    """``flags`` with the pagelets of the page's ``nav`` elements (:func:`navigation_element`)
    set, for a ``nav`` that links to another page: one whose links all stay on the page is
    its table of contents (docutils writes ``.. contents::`` as a ``nav``)."""
    elements = [_navigation_element(p.path) if "nav" in p.path else None for p in page.pagelets]
    menus = {
        element
        for element, p in zip(elements, page.pagelets, strict=True)
        if element is not None and any(not h.startswith("#") for h in p.hrefs)
    }
    if not menus:
        return flags
    return [f or e in menus for f, e in zip(flags, elements, strict=True)]


def _sequence_bars(page: Page, flags: list[bool], main_path: str | None) -> list[bool]:
    """``flags`` with the bars to the page's declared neighbours (:func:`sequence_bar`) set
    where they frame its content, however large they are (:func:`peel_edges`): at the top
    or bottom of the main region (the whole page while the site has none, or the page has no
    pagelet in it). Two pages in sequence can be neighbours in the content too (gtk-doc's
    class pages name the next class in their text)."""
    if not page.sequence:
        return flags
    declared: dict[str, set[str]] = {}
    for href, kind in page.sequence:
        declared.setdefault(href, set()).add(kind)
    pagelets = page.pagelets
    bars = [
        not f and bool(p.hrefs) and sequence_bar(p.text, p.hrefs, p.anchors, declared)
        for f, p in zip(flags, pagelets, strict=True)
    ]
    if not any(bars):
        return flags
    considered = _considered(pagelets, main_path)
    if not any(considered):  # the page has no pagelet in the site's main region
        considered = _considered(pagelets, None)
    headings = [is_heading(p.path) for p in pagelets]
    return peel_edges(flags, bars, considered, headings, None)


def _considered(pagelets: Sequence[Pagelet], main_path: str | None) -> list[bool]:
    """Which pagelets have text in the main region (anywhere while there is none): those
    a frame is peeled from."""
    return [
        bool(p.text.strip()) and (main_path is None or in_region(p.path, main_path))
        for p in pagelets
    ]


def _count_flags(
    page: Page,
    counts: PageCounts,
    main_path: str | None,
    nav: PageNavigation,
    settings: MarkSettings,
) -> list[bool]:
    """Exact counting's flags, with the main region's plain blocks spared below
    ``region_min_share`` (``nav``: which pagelets are navigation)."""
    pagelets = page.pagelets
    support = counts.support
    thresholds = settings.thresholds
    flags = mark_pagelets(
        [p.fingerprint for p in pagelets],
        [p.pattern for p in pagelets],
        support,
        counts.pages,
        thresholds,
    )
    if settings.main_share <= 0 or thresholds.region_min_share <= 0:
        return flags

    best = [max(support.get(p.fingerprint, 0), support.get(p.pattern, 0)) for p in pagelets]
    plain_in_region = _plain_in_region(page, main_path, nav)
    return spare_region_content(flags, best, counts.pages, thresholds, plain_in_region)


def _layout_flags(
    page: Page,
    levels: Sequence[int],
    flags: list[bool],
    main_path: str | None,
    nav: PageNavigation,
) -> tuple[list[bool], list[bool], list[bool]]:
    """The flags with the layout model's added (``001_…`` step 4), which pagelets it
    flagged, and which of them framed the content: static blocks where
    :func:`layout_may_flag` allows; shifting navigation and :data:`BAR` blocks (their link
    labels steady: they are navigation whatever their other words), and static blocks whose
    links lead back to the page, where they frame the content (:func:`peel_edges`); a block
    at a :data:`FRAME` position of the layout wherever it lies, navigation by its words or
    not (a page of one short section is little more than its bars)."""
    pagelets = page.pagelets
    may = [
        level != DYNAMIC
        and not f
        and p.fingerprint != 0
        and layout_may_flag(level, p.path, level in (BAR, FRAME) or nav.menu(i), main_path)
        for i, (level, f, p) in enumerate(zip(levels, flags, pagelets, strict=True))
    ]
    static = [m and level == STATIC for m, level in zip(may, levels, strict=True)]
    flags = [f or s for f, s in zip(flags, static, strict=True)]
    considered = _considered(pagelets, main_path)
    framing = [
        (m and not s)
        or (
            level == STATIC
            and c
            and not f
            and p.fingerprint != 0
            and names_itself(p.hrefs, page.url)
        )
        for m, s, level, c, f, p in zip(
            may, static, levels, considered, flags, pagelets, strict=True
        )
    ]
    positions = [m and level == FRAME for m, level in zip(may, levels, strict=True)]
    framed = [False] * len(flags)
    added = positions  # no framing candidate: the frame positions alone
    if any(framing):
        headings = [is_heading(p.path) for p in pagelets]
        weights = [len(p.text) for p in pagelets]
        peeled = peel_edges(flags, framing, considered, headings, weights)
        framed = [p and not f for p, f in zip(peeled, flags, strict=True)]
        if any(positions):
            # frame positions are flagged wherever they lie: they are no part of what a
            # page's bars would peel, nor of what must be left after them; one framed the
            # content only where the first peel found it at an edge
            settled = [f or p for f, p in zip(flags, positions, strict=True)]
            peeled = peel_edges(settled, framing, considered, headings, weights)
            framed = [
                p and not f and (fr or not pos)
                for p, f, fr, pos in zip(peeled, flags, framed, positions, strict=True)
            ]
        added = [p and not f for p, f in zip(peeled, flags, strict=True)]
    static = [s or a for s, a in zip(static, added, strict=True)]
    return [f or a for f, a in zip(flags, added, strict=True)], static, framed


def _spare_headings(
    page: Page, flags: list[bool], main_path: str | None, nav: PageNavigation
) -> list[bool]:
    """Template headings that open the page's own content in its main region (the site's
    learned one, anywhere while it has none) are content."""
    pagelets = page.pagelets
    return spare_content_headings(
        flags,
        [p.path for p in pagelets],
        [p.position for p in pagelets],
        [p.text for p in pagelets],
        _plain_in_region(page, main_path, nav),
    )


def _plain_in_region(
    page: Page, main_path: str | None, nav: PageNavigation
) -> Callable[[int], bool]:
    """Whether pagelet ``i`` lies in the main region (anywhere while there is none) and is not
    navigation: what a template flag may be taken back from."""
    pagelets = page.pagelets

    def plain_in_region(i: int) -> bool:
        return (main_path is None or in_region(pagelets[i].path, main_path)) and not nav.menu(i)

    return plain_in_region


def _content_texts(
    page: Page, flags: list[bool], main_path: str | None, share: float
) -> list[str | None]:
    """The content text each pagelet gives (``None``: none).

    Non-template pagelets count when they lie in the site's main region (a pagelet that
    contains the region gives the region's text only), or — while the site has no main
    region below the root, or the page has no element at its path — in the page's own main
    region."""
    pagelets = page.pagelets
    plain = [None if flag else p.text for p, flag in zip(pagelets, flags, strict=True)]
    if share <= 0:
        return plain
    if main_path is not None:
        texts: list[str | None] = []
        for i, (pagelet, text) in enumerate(zip(pagelets, plain, strict=True)):
            if text is None or in_region(pagelet.path, main_path):
                texts.append(text)
            elif main_path.startswith(pagelet.path + "/"):
                texts.append(page.text_below(i, main_path))
            else:
                texts.append(None)
        if any(texts):
            return texts
    weights = [0 if flag else len(p.text) for p, flag in zip(pagelets, flags, strict=True)]
    region = main_region([p.position for p in pagelets], weights, flags, share)
    depth = len(region)
    return [
        text if p.position[:depth] == region else None
        for p, text in zip(pagelets, plain, strict=True)
    ]


def _marks(
    page: Page,
    counts: PageCounts,
    flags: list[bool],
    static: list[bool],
    texts: list[str | None],
    snippet: int,
) -> list[dict[str, Any]]:
    """The item's pagelets field: per pagelet its path, text snippet, pages holding it and
    flag; ``static`` when the layout model flagged it, ``outside_main`` when it is content
    outside the main region."""
    found = counts.counts
    marks = []
    for pagelet, flag, text, is_static in zip(page.pagelets, flags, texts, static, strict=True):
        mark: dict[str, Any] = {
            "path": pagelet.path,
            "text": clip_words(pagelet.text, snippet),
            "pages": found.get(pagelet.fingerprint, 0),
            "template": flag,
        }
        if is_static:
            mark["static"] = True
        if not flag and text is None:
            mark["outside_main"] = True
        marks.append(mark)
    return marks


def _info(
    page: Page,
    counts: PageCounts,
    evidence: SiteEvidence,
    settings: MarkSettings,
    sizes: list[int],
    flags: list[bool],
    main_path: str | None,
) -> dict[str, Any]:
    """The item's summary of the decision."""
    total = sum(sizes)
    template = sum(n for n, f in zip(sizes, flags, strict=True) if f)
    info: dict[str, Any] = {
        "site": evidence.site,
        "pages_seen": counts.pages,
        "algorithm": settings.algorithm,
        "template_share": round(template / total, 4) if total else 0.0,
        "text_chars": total,
        "simhash": f"{page.simhash:016x}",
    }
    title, title_from = _title(page, flags, evidence)
    if title:
        info["title"] = clip_words(title, settings.snippet * 2)
        info["title_from"] = title_from
    if counts.layout is not None:
        info["layout"] = counts.layout
    if main_path:
        info["main_path"] = main_path
    if page.notes:
        info["notes"] = page.notes
    if page.canonical:
        info["canonical"] = page.canonical
    return info


def _title(page: Page, flags: list[bool], evidence: SiteEvidence) -> tuple[str, str]:
    """Webstemmer's anchor-text match over the blocks of the page's content pagelets, with
    the ``<h1>`` / ``<title>`` fallback."""
    anchor = evidence.anchors.get(page_id(page.url))
    blocks = page.blocks(i for i, f in enumerate(flags) if not f) if anchor else []
    return choose_title(anchor, blocks, page.h1, page.title)
