"""One parse of a page: its pagelets, links, text and fingerprints.

The pagelet partition follows ``000_…`` §3.1 (Definition 2 and the ``Partition`` procedure): an
element is split into its children when one of its children holds at least ``k`` hyperlinks,
otherwise it is a pagelet. The partition is flat and in document order. Text that belongs to a
split element itself (its leading text and the tails between its children) becomes a small
"loose text" pagelet in place, so that concatenating the pagelets gives back the whole visible
text of the page.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import re
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple
from urllib.parse import urljoin

import lxml.etree
from w3lib.encoding import html_to_unicode

from scrapy_templates.compiled import compiled
from scrapy_templates.fingerprint import text_fingerprints

_INVISIBLE = ("script", "style", "noscript", "template", "head", "iframe", "object")
_DIGITS = re.compile(r"\d")
# Elements a browser lays out as blocks: their text must not run into the next element's.
BLOCK_TAGS = [
    "address",
    "article",
    "aside",
    "blockquote",
    "br",
    "caption",
    "dd",
    "details",
    "dialog",
    "div",
    "dl",
    "dt",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hr",
    "li",
    "main",
    "nav",
    "ol",
    "option",
    "p",
    "pre",
    "section",
    "summary",
    "table",
    "tbody",
    "td",
    "tfoot",
    "th",
    "thead",
    "tr",
    "ul",
]
BLOCK_LIMIT = 30
# The link relations of HTML that place a page among others of a sequence (a manual's pages,
# a listing's pages), by the name they go under here; Sphinx, DocBook, gtk-doc and texinfo
# write them in the head of every page.
SEQUENCE_RELS = {
    "next": "next",
    "prev": "prev",
    "previous": "prev",
    "up": "up",
    "start": "start",
    "first": "start",
    "home": "start",
    "top": "start",
    "last": "last",
    "contents": "contents",
    "toc": "contents",
    "index": "index",
}
_TITLE_BLOCKS = ("h1", "h2", "h3", "h4", "h5", "h6", "p", "li", "dt", "td", "a", "strong", "b")
# Nothing looks elements up by id, so the parser keeps no table of them. ``huge_tree`` lets
# libxml2 nest 2,048 elements deep instead of 256 (a deeper page is cut and noted).
_PARSER = lxml.etree.HTMLParser(
    encoding="utf-8",
    recover=True,
    remove_comments=True,
    remove_pis=True,
    collect_ids=False,
    huge_tree=True,
)
# Characters that libxml2 keeps in text but lxml refuses to store (C0 controls other than tab,
# newline and carriage return; U+FFFE and U+FFFF), as bytes and as character references. A
# browser shows none of them; a form feed is white space.
_CONTROL_BYTES = bytes([*range(0x09), 0x0B, 0x0C, *range(0x0E, 0x20)])
_CONTROL_REF = re.compile(
    rb"&#(?:[xX]0*(?:[0-8bBcCeEfF]|1[0-9a-fA-F]|[fF]{3}[eEfF])"
    rb"|0*(?:[0-8]|1[124-9]|2[0-9]|3[01]|6553[45]))(?![0-9a-fA-F]);?"
)
_NONCHARACTER = re.compile(b"\xef\xbf[\xbe\xbf]")
# libxml2 compares each attribute of an element with those before it: n attributes cost n²
# (30,000 on one element take about a second, 100,000 ten). A page whose long tags add up to
# more than one element of 10,000 attributes would cost (~0.1 s) is refused. Tags shorter than
# 256 bytes are not counted: each adds under 128², and all of them together stay below a few
# tenths of a second on the largest page read.
MAX_ATTRIBUTE_WORK = 10_000**2
# The partition splits no element this many levels below the body: its whole text is one
# pagelet. Each pagelet's path and position are as long as its depth, so a page nested
# 2,000 deep with a pagelet at every level of its links' chain held hundreds of megabytes;
# the documentation pages read go 17 levels deep.
SPLIT_DEPTH = 64
_LONG_TAG = re.compile(rb"<[A-Za-z][^<>]{255,}")
_ATTRIBUTE = re.compile(rb"""[^\s"'<>/=]+(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s>]*))?""")
_EDGE_BLOCKS = frozenset(BLOCK_TAGS) - {"br", "hr"}
HEADING_TAGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
# Edge blocks of an unsplit pagelet shorter than this are not counted (a heading's word or two
# may well be the page's own); the shortest template text cut from inside one, too
# (:data:`~scrapy_templates.templates.inner.MIN_CHARS`).
HIDDEN_MIN_CHARS = 24
# ... and longer ones too: a template block is a line or two (a footer, a caution), and a
# long block at a column's edge is the page's own text.
HIDDEN_MAX_CHARS = 500
_walk = compiled("_walk")
if _walk is not None:
    _walk.set_block_tags(BLOCK_TAGS)

_Found = tuple[str, str, tuple[str, ...], tuple[int, ...], tuple[str, ...]]
# Elements that hold a page's own content: a ``nav`` within one belongs to it (a table of
# contents), not to the page's frame.
_CONTENT_TAGS = frozenset({"main", "article"})
# What the fingerprints of a pagelet in a menu (:func:`navigation_element`) are XORed with.
MENU_SALT = 0x6D656E755F636F70


def navigation_element(path: str) -> str | None:
    """The path of the HTML5 ``nav`` element a pagelet at tag ``path`` lies in, outside
    ``main`` and ``article`` (``None`` for none): the page's own menu or sidebar, by the
    author's word."""
    if "nav" not in path:
        return None
    steps = path.split("/")
    for i, step in enumerate(steps):
        tag = step.partition(".")[0].partition("#")[0]
        if tag in _CONTENT_TAGS:
            return None
        if tag == "nav":
            return "/".join(steps[: i + 1])
    return None


def _menu_fingerprint(fingerprint: int) -> int:
    return fingerprint ^ MENU_SALT if fingerprint else 0


class Detached(LookupError):
    """A question about a page's elements that a page parsed in another process cannot answer
    (only the answers asked for when it was detached travel with it)."""


class PageError(ValueError):
    """The input cannot be treated as an HTML page; ``reason`` is a short machine-readable tag."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class Pagelet(NamedTuple):
    """A flat region of a page: its tag path, visible text, hrefs and text fingerprint.

    ``fingerprint`` is 0 for a pagelet without letters or digits; such pagelets are never
    counted. ``pattern`` is the number-blind fingerprint of a pagelet with digits (0 for
    one without). Both are drawn apart (:data:`MENU_SALT`) for a pagelet in the page's menu
    (:func:`navigation_element`), so that the content's copy of a menu's text is counted on
    its own: a Sphinx index page lists its chapters with the very words of the sidebar that
    every page of the site holds. ``position`` is the chain of child indexes from the
    partition root, so pagelets under one element share a prefix. ``anchors`` holds the text
    of each link of ``hrefs``. A named tuple: immutable, and made several times faster than
    a frozen dataclass (a page has dozens).
    """

    path: str
    text: str
    hrefs: tuple[str, ...]
    fingerprint: int
    pattern: int = 0
    position: tuple[int, ...] = ()
    anchors: tuple[str, ...] = ()


@dataclass(slots=True)
class Page:
    """The parsed page: pagelets in document order plus page-level fingerprints."""

    url: str
    pagelets: list[Pagelet]
    title: str
    simhash: int
    text_hash: str
    notes: list[str] = field(default_factory=list)
    elements: list[lxml.etree._Element] = field(default_factory=list, repr=False)
    canonical: str | None = None
    h1: str = ""
    sequence: tuple[tuple[str, str], ...] = ()
    detached: bool = False
    below: dict[tuple[int, str], str | None] = field(default_factory=dict, repr=False)
    block_texts: list[tuple[str, ...]] | None = field(default=None, repr=False)
    reload: Callable[[], list[lxml.etree._Element]] | None = field(default=None, repr=False)
    hidden: tuple[int, ...] = ()
    # where the page was parsed, detached anew for other questions (a main path, and whether
    # with blocks): the page that answers them, or None when it cannot be had (see answers)
    refetch: Callable[[str | None, bool], Awaitable[Page | None]] | None = field(
        default=None, repr=False
    )

    @property
    def text(self) -> str:
        return "\n".join(p.text for p in self.pagelets if p.text)

    def hrefs(self) -> Iterator[str]:
        for pagelet in self.pagelets:
            yield from pagelet.hrefs

    def text_below(self, index: int, path: str) -> str | None:
        """Visible text of the elements at tag ``path`` inside pagelet ``index`` (whose own
        path is a prefix of ``path``), in document order; ``None`` when there are none. A tag
        path names every element it matches, as it does for pagelet paths.

        A detached page answers for the path it was detached with; for another it parses
        again with :attr:`reload`, or raises :class:`Detached` when it has none."""
        if self.detached:
            if (index, path) in self.below:
                return self.below[index, path]
            self._attach(f"text below pagelet {index} at {path}")
        pagelet = self.pagelets[index]
        if not path.startswith(pagelet.path + "/") or index >= len(self.elements):
            return None
        level = [self.elements[index]]
        for step in path[len(pagelet.path) + 1 :].split("/"):
            level = [
                child
                for el in level
                for child in el
                if isinstance(child.tag, str) and _tag_step(child) == step
            ]
            if not level:
                return None
        texts = (_visible_text(el) for el in level)
        return "\n".join(t for t in texts if t) or None

    def blocks(self, indexes: Iterable[int], limit: int = BLOCK_LIMIT) -> list[str]:
        """Texts of the heading, paragraph, list-item and link elements inside the pagelets
        at ``indexes`` (Webstemmer's layout blocks, finer than pagelets), at most ``limit``
        (no more than :data:`BLOCK_LIMIT`). A detached page answers when it was detached with
        its blocks; without them it parses again with :attr:`reload`, or raises
        :class:`Detached` when it has none."""
        if self.detached and self.block_texts is None:
            self._attach("blocks")
        out: list[str] = []
        walked: dict[int, list[str]] = {}
        for index in indexes:
            for text in self._blocks_of(index, limit, walked):
                out.append(text)
                if len(out) >= limit:
                    return out
        return out

    def _blocks_of(self, index: int, limit: int, walked: dict[int, list[str]]) -> Sequence[str]:
        """The title blocks below pagelet ``index``'s element. Lines of loose text share the
        element they were split from: ``walked`` keeps each element's blocks (by identity),
        so that thousands of them do not walk it thousands of times."""
        if self.block_texts is not None:
            return self.block_texts[index] if index < len(self.block_texts) else ()
        if index >= len(self.elements):
            return ()
        element = self.elements[index]
        found = walked.get(id(element))
        if found is not None:
            return found
        if _walk is not None:
            with contextlib.suppress(RecursionError):  # deeper than it walks: read in Python
                found = list(_walk.texts_named(element, _TITLE_BLOCKS, limit))
        if found is None:
            texts = (_clean(" ".join(el.itertext())) for el in element.iter(*_TITLE_BLOCKS))
            found = list(itertools.islice(filter(None, texts), limit))
        walked[id(element)] = found
        return found

    def answers(self, main_path: str | None, blocks: bool) -> bool:
        """Whether the page answers :meth:`text_below` for ``main_path`` (in every pagelet
        whose path leads to it) and, when ``blocks``, :meth:`blocks`, without parsing again."""
        if not self.detached:
            return True
        if blocks and self.block_texts is None:
            return False
        return main_path is None or all(
            (i, main_path) in self.below
            for i, pagelet in enumerate(self.pagelets)
            if main_path.startswith(pagelet.path + "/")
        )

    def _attach(self, question: str) -> None:
        """Take the pagelet elements of a fresh parse (:attr:`reload`, e.g.
        :func:`parse_elements`) to answer ``question``."""
        if self.reload is None:
            raise Detached(question)
        elements = self.reload()
        if len(elements) != len(self.pagelets):
            raise Detached(f"{question}: the page parses differently here")
        self.elements, self.detached, self.reload, self.refetch = elements, False, None, None

    def detach(self, main_path: str | None = None, blocks: bool = False) -> Page:
        """A copy without elements, to send to another process: it keeps :meth:`text_below`
        for ``main_path`` under every pagelet whose path leads to it, and :meth:`blocks` when
        ``blocks`` is true — the questions the pipeline asks of a page's elements."""
        below: dict[tuple[int, str], str | None] = {}
        if main_path is not None:
            for i, pagelet in enumerate(self.pagelets):
                if main_path.startswith(pagelet.path + "/"):
                    below[i, main_path] = self.text_below(i, main_path)
        block_texts = None
        if blocks:
            walked: dict[int, list[str]] = {}
            block_texts = [
                tuple(self._blocks_of(i, BLOCK_LIMIT, walked)) for i in range(len(self.pagelets))
            ]
        return Page(
            self.url,
            self.pagelets,
            self.title,
            self.simhash,
            self.text_hash,
            self.notes,
            [],
            self.canonical,
            self.h1,
            self.sequence,
            detached=True,
            below=below,
            block_texts=block_texts,
            hidden=self.hidden,
        )


def _decode(html: str | bytes, max_bytes: int, notes: list[str]) -> bytes:
    """UTF-8 bytes of the document, cut to ``max_bytes``; bytes are decoded by their declared
    or sniffed encoding (w3lib), never assumed."""
    if isinstance(html, bytes):
        head = html[:1024]
        nuls = head.count(b"\x00")
        # binary: a NUL among the first bytes (the magic number of an image or an archive) or
        # many of them; a few stray NULs in a page's text do not make it binary
        if nuls and (b"\x00" in head[:16] or nuls * 64 > len(head)):
            # UTF-16 text also has NUL bytes: let w3lib's BOM sniffing try first.
            encoding, text = html_to_unicode(None, html)
            if "16" not in encoding and "32" not in encoding:
                raise PageError("not-html", "binary body (NUL bytes)")
        else:
            encoding, text = html_to_unicode(None, html)
    else:
        encoding, text = "", html
    stripped = text.lstrip()[:4096]
    if not stripped:
        raise PageError("empty", "empty body")
    if stripped.startswith("%PDF") or "<" not in stripped:
        raise PageError("not-html", "body does not look like HTML")
    if isinstance(html, bytes) and _unchanged_utf8(html, encoding, text):
        data = html
    else:
        data = text.encode("utf-8", errors="replace")
    if len(data) > max_bytes:
        notes.append("truncated")
        data = data[:max_bytes]
    return _text_safe(data)  # after the cut: the work is bounded by max_bytes


def _text_safe(data: bytes) -> bytes:
    """``data`` without the characters lxml cannot hold in text (see :data:`_CONTROL_BYTES`):
    the compiled walk would keep them where the Python walk cannot, and no reader sees
    them. A form feed becomes a space; the others go. Typical pages have none, and cost a few
    scans at C speed."""
    if len(data.translate(None, _CONTROL_BYTES)) != len(data):
        data = data.replace(b"\x0c", b" ").translate(None, _CONTROL_BYTES)
    if b"&#" in data:
        data = _CONTROL_REF.sub(_reference_replacement, data)
    if b"\xef\xbf" in data:
        data = _NONCHARACTER.sub(b"", data)
    return data


def _reference_replacement(match: re.Match[bytes]) -> bytes:
    digits = match.group().lstrip(b"&#").rstrip(b";")
    value = int(digits[1:], 16) if digits[:1] in (b"x", b"X") else int(digits)
    return b" " if value == 0x0C else b""


def _unchanged_utf8(html: bytes, encoding: str, text: str) -> bool:
    """Whether ``html`` already is the UTF-8 encoding of ``text`` (decoded as UTF-8 without a
    byte-order mark, nothing replaced), so it need not be encoded again."""
    return (
        encoding in ("utf-8", "utf8")
        and not html.startswith(b"\xef\xbb\xbf")
        and "\ufffd" not in text
    )


def _tag_step(el: lxml.etree._Element) -> str:
    """``tag#id`` or ``tag.first-class``; ids and classes with digits are left out (they are
    usually generated per page and would make equal layouts look different)."""
    step = str(el.tag)
    el_id = el.get("id")
    if el_id and not _DIGITS.search(el_id):
        return f"{step}#{el_id}"
    cls = el.get("class")
    if cls:
        parts = cls.split(None, 1)
        if parts and not _DIGITS.search(parts[0]):
            return f"{step}.{parts[0]}"
    return step


def _clean(text: str) -> str:
    return " ".join(text.split())


def _visible_text(el: lxml.etree._Element) -> str:
    """Text of ``el`` (not its tail), white space collapsed, a block element's end a break."""
    if _walk is not None:
        with contextlib.suppress(RecursionError):  # deeper than it walks: marked by the Python walk
            return str(_walk.visible_text(el))
    return _clean(lxml.etree.tostring(el, method="text", encoding="unicode", with_tail=False))


def _holding(root: lxml.etree._Element, k: int) -> set[lxml.etree._Element]:
    """The elements that hold at least ``k`` hyperlinks, counted by walking up from each
    anchor. A walk stops at an element already known to hold ``k``: its ancestors hold as
    many, so their exact counts are never needed."""
    counts: dict[lxml.etree._Element, int] = {}
    holding: set[lxml.etree._Element] = set()
    for anchor in root.iter("a"):
        if anchor.get("href") is None:
            continue
        el: lxml.etree._Element | None = anchor
        while el is not None and el not in holding:
            n = counts[el] = counts.get(el, 0) + 1
            if n >= k:
                holding.add(el)
            el = None if el is root else el.getparent()
    return holding


def _anchor_text(anchor: lxml.etree._Element) -> str:
    if len(anchor):
        return _clean(" ".join(anchor.itertext()))
    return _clean(anchor.text or "")


@dataclass(frozen=True, slots=True)
class _Close:
    """End of a split element: flush its loose text, then leave it."""

    owner: tuple[lxml.etree._Element, str, tuple[int, ...]]


def partition(
    root: lxml.etree._Element, k: int
) -> tuple[list[Pagelet], list[lxml.etree._Element], int]:
    """Flat pagelet partition of ``root`` in document order (``000_…`` §3.1), with the
    element of each pagelet (the split element itself for loose text) and the simhash of the
    page text (computed in the same pass as the pagelet fingerprints). The compiled walk is
    used when it was built (and the tree is not deeper than it walks); both give the same
    pagelets."""
    found, elements = _walked(root, k)
    fps = text_fingerprints([found_text for _, found_text, _, _, _ in found])
    pagelets = [
        Pagelet(path, text, hrefs, fp, pattern, position, anchors)
        if navigation_element(path) is None
        else Pagelet(
            path, text, hrefs, _menu_fingerprint(fp), _menu_fingerprint(pattern), position, anchors
        )
        for (path, text, hrefs, position, anchors), fp, pattern in zip(
            found, fps.exact, fps.patterns, strict=True
        )
    ]
    return pagelets, elements, fps.simhash


def _walked(root: lxml.etree._Element, k: int) -> tuple[list[_Found], list[lxml.etree._Element]]:
    """The partition walk: compiled when it was built and the tree is not too deep for it."""
    walked = _walk.partition(root, k, SPLIT_DEPTH) if _walk is not None else None
    return walked if walked is not None else python_partition(root, k)


def python_partition(
    root: lxml.etree._Element, k: int
) -> tuple[list[_Found], list[lxml.etree._Element]]:
    """The partition walk in Python: ``(path, text, hrefs, position, anchors)`` of each
    pagelet and its element. Block starts and ends are marked in the tree first (a newline
    at the start of each block element's text and tail), so that lxml's text of an element
    breaks words there, as a browser's rendering does ("lead<p>One" is two words)."""
    _mark_blocks(root)
    # The root step is the bare tag: a body's class or id usually names the page type
    # ("manpage", "single-post"), which would split one site's paths at the first step.
    split = {el.getparent() for el in _holding(root, k)}
    found: list[_Found] = []
    elements: list[lxml.etree._Element] = []
    loose: list[str] = []
    # An explicit stack in document order (no recursive closure: a closure that refers to
    # itself is a reference cycle that would keep the whole tree alive until the next GC).
    # Entries: (element, path, position) to visit, a str of loose text, or None to close the
    # loose text collected so far into a pagelet of the enclosing split element.
    owners: list[tuple[lxml.etree._Element, str, tuple[int, ...]]] = []
    stack: list[Any] = [(root, str(root.tag), ())]
    while stack:
        entry = stack.pop()
        if entry is None or isinstance(entry, _Close):
            if isinstance(entry, _Close):
                owners.pop()
            text = _clean(" ".join(loose))
            loose.clear()
            if text:
                owner, path, position = owners[-1] if entry is None else entry.owner
                found.append((path + "/text()", text, (), position, ()))
                elements.append(owner)
            continue
        if isinstance(entry, str):
            loose.append(entry)
            continue
        el, path, position = entry
        if el in split and len(position) < SPLIT_DEPTH:
            owners.append(entry)
            stack.extend(reversed(_split_entries(entry)))
            continue
        pagelet = _pagelet(el, path, position)
        if pagelet is not None:
            found.append(pagelet)
            elements.append(el)
    return found, elements


def _mark_blocks(root: lxml.etree._Element) -> None:
    """Put a newline at the start of the text and of the tail of each block element under
    ``root``, so that lxml's text of an element breaks words where a browser would."""
    for el in root.iter(*BLOCK_TAGS):
        text, tail = el.text, el.tail
        el.text = "\n" + text if text else "\n"
        el.tail = "\n" + tail if tail else "\n"


def _split_entries(owner: tuple[lxml.etree._Element, str, tuple[int, ...]]) -> list[Any]:
    """The stack entries of a split element's content, in document order: its leading
    text, then for each child element a close of the loose text so far and the child, and
    each child's tail; last, the close of the element itself."""
    el, path, position = owner
    todo: list[Any] = [el.text] if el.text else []
    for i, child in enumerate(el):
        if isinstance(child.tag, str):
            todo.append(None)
            todo.append((child, f"{path}/{_tag_step(child)}", (*position, i)))
        if child.tail:
            todo.append(child.tail)
    todo.append(_Close(owner))
    return todo


def _pagelet(el: lxml.etree._Element, path: str, position: tuple[int, ...]) -> _Found | None:
    """The pagelet of an element that is not split: its visible text and its links (the
    anchors with an ``href``); ``None`` when it has neither."""
    text = _visible_text(el)
    links = [a for a in el.iter("a") if a.get("href") is not None]
    if not text and not links:
        return None
    hrefs = tuple(a.get("href", "") for a in links)
    anchors = tuple(_anchor_text(a) for a in links)
    return (path, text, hrefs, position, anchors)


def parse_page(
    html: str | bytes,
    url: str,
    *,
    k: int = 3,
    max_bytes: int = 5_000_000,
    max_tags: int = 100_000,
) -> Page:
    """Parse ``html`` once and return its pagelets and fingerprints.

    Raises :class:`PageError` for input that is not an HTML page (empty, binary, more than
    ``max_tags`` tags, attributes that would hold the parse, see :data:`MAX_ATTRIBUTE_WORK`);
    a page cut to ``max_bytes`` is parsed and carries the note
    ``"truncated"``, one whose parse stopped at elements nested deeper than 2,048 the note
    ``"too-deep"`` (``"cut"`` for any other error that stops libxml2), one with pagelets
    :data:`SPLIT_DEPTH` levels deep, left whole there, the note ``"deep"``.
    """
    notes: list[str] = []
    doc = _parse_tree(html, max_bytes, max_tags, notes)
    first: dict[str, lxml.etree._Element] = {}
    links = []
    for el in _elements_named(doc, ("title", "h1", "link")):
        if el.tag == "link":
            links.append(el)
        else:
            first.setdefault(str(el.tag), el)
    title = _clean("".join(first["title"].itertext())) if "title" in first else ""
    h1 = _clean(" ".join(first["h1"].itertext())) if "h1" in first else ""
    canonical = _canonical(links, url)
    sequence = _sequence(links)
    pagelets, elements, page_simhash = partition(_visible_root(doc), k)
    if any(len(p.position) >= SPLIT_DEPTH for p in pagelets):
        notes.append("deep")
    text = "\n".join(p.text for p in pagelets)
    text_hash = hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()
    return Page(
        url,
        pagelets,
        title,
        page_simhash,
        text_hash,
        notes,
        elements,
        canonical,
        h1,
        sequence,
        hidden=hidden_fingerprints(pagelets, elements),
    )


def _blocks_below(el: lxml.etree._Element, path: str) -> tuple[list[lxml.etree._Element], str]:
    """The block children of ``el`` (``path``), or of the first element below it that has more
    than one when ``el`` only wraps it (a column in a few single-child containers), with that
    element's path. Line breaks and rules hold no text and are left out."""
    while True:
        blocks = [c for c in el if isinstance(c.tag, str) and c.tag in _EDGE_BLOCKS]
        if len(blocks) != 1 or len(el) != 1 or _has_text(el.text) or _has_text(blocks[0].tail):
            return blocks, path
        el = blocks[0]
        path = f"{path}/{_tag_step(el)}"


def _has_text(text: str | None) -> bool:
    return bool(text and not text.isspace())


def _is_section(el: lxml.etree._Element) -> bool:
    """Whether ``el``'s first child element is a heading: a section of the page's text."""
    first = next((c for c in el if isinstance(c.tag, str)), None)
    return first is not None and first.tag in HEADING_TAGS


def hidden_fingerprints(
    pagelets: Sequence[Pagelet], elements: Sequence[lxml.etree._Element]
) -> tuple[int, ...]:
    """Fingerprints and patterns of the blocks at the edges of unsplit pagelets: the first
    and the last block child of a pagelet's element (or of the first element below it with
    several), when its text is :data:`HIDDEN_MIN_CHARS` to :data:`HIDDEN_MAX_CHARS` long.

    A page too link-poor to be split keeps its footer
    ("Copyright © 2002-2026 Ericsson AB") inside its content column; counted here, that
    footer's pattern has the support of every page that shows it, not only of the pages
    where it is a pagelet of its own. Evidence only: these are counted, never marked.
    Navigation is left out (a menu's fingerprints are drawn apart), pagelets and edge blocks
    alike, and so are edge blocks that start with a heading: a section of the page's text
    ("GIT — Part of the git(1) suite" closes every manual page of git as its last section,
    and is the page's)."""
    texts: list[str] = []
    for pagelet, el in zip(pagelets, elements, strict=True):
        # most pagelets are a paragraph or a list item: no element inside, or little text
        if len(pagelet.text) <= HIDDEN_MIN_CHARS or not pagelet.fingerprint:
            continue
        # loose text shares the element it was split from: ``len`` of that one, asked for
        # each of thousands of lines, would walk its children as often
        if pagelet.path.endswith("/text()") or not len(el):
            continue
        if navigation_element(pagelet.path) is not None:
            continue
        blocks, path = _blocks_below(el, pagelet.path)
        if len(blocks) < 2:
            continue
        for child in (blocks[0], blocks[-1]):
            if _is_section(child) or navigation_element(f"{path}/{_tag_step(child)}"):
                continue
            text = _visible_text(child)
            if HIDDEN_MIN_CHARS <= len(text) <= HIDDEN_MAX_CHARS and text != pagelet.text:
                texts.append(text)
    if not texts:
        return ()
    fps = text_fingerprints(texts)
    return tuple(dict.fromkeys(fp for fp in (*fps.exact, *fps.patterns) if fp))


def parse_elements(
    html: str | bytes, *, k: int = 3, max_bytes: int = 5_000_000, max_tags: int = 100_000
) -> list[lxml.etree._Element]:
    """The element of each pagelet :func:`parse_page` finds, without fingerprints, title or
    links: for a page parsed in another process (a worker) whose elements are needed after
    all (:attr:`Page.reload`)."""
    return _walked(_visible_root(_parse_tree(html, max_bytes, max_tags, [])), k)[1]


def _parse_tree(
    html: str | bytes, max_bytes: int, max_tags: int, notes: list[str]
) -> lxml.etree._Element:
    data = _decode(html, max_bytes, notes)
    # Every element has a start tag, so "<" bounds the element count without a tree walk
    # (and a page of fewer bytes than max_tags cannot have more tags).
    if len(data) > max_tags and (tags := data.count(b"<")) > max_tags:
        raise PageError("too-many-tags", f"{tags} tags > {max_tags}")
    if (work := _attribute_work(data)) > MAX_ATTRIBUTE_WORK:
        raise PageError(
            "too-many-attributes", f"attributes that cost {work:.2g} comparisons to parse"
        )
    try:
        doc = lxml.etree.fromstring(data, parser=_PARSER)
    except (lxml.etree.LxmlError, ValueError) as exc:
        raise PageError("parse-error", f"HTML could not be parsed: {exc}") from exc
    if doc is None:
        raise PageError("empty", "no element in the document")
    last = _PARSER.error_log.last_error
    if last is not None and last.level == lxml.etree.ErrorLevels.FATAL:
        # libxml2 stopped there (elements nested deeper than it allows): what came before is
        # the page, like a page cut to ``max_bytes``
        notes.append("too-deep" if last.type == lxml.etree.ErrorTypes.ERR_RESOURCE_LIMIT else "cut")
    return doc


def _attribute_work(data: bytes) -> int:
    """The sum of n² over the tags of ``data`` longer than 256 bytes, n the attributes of
    each (see :data:`MAX_ATTRIBUTE_WORK`). A tag of n attributes holds at least 2n bytes, so a
    document of n bytes has at most n²/4 attribute pairs, and a small one is not scanned."""
    if len(data) * len(data) <= 4 * MAX_ATTRIBUTE_WORK:
        return 0
    work = 0
    for tag in _LONG_TAG.finditer(data):
        n = sum(1 for _ in _ATTRIBUTE.finditer(tag.group(), 1)) - 1  # the first is the name
        work += n * n
    return work


def _visible_root(doc: lxml.etree._Element) -> lxml.etree._Element:
    """Remove the invisible elements (keeping their tails) and return the body, or the whole
    document when it has none."""
    lxml.etree.strip_elements(doc, *_INVISIBLE, with_tail=False)
    body = doc.find("body")
    return body if body is not None else doc


def _elements_named(doc: lxml.etree._Element, names: tuple[str, ...]) -> list[lxml.etree._Element]:
    """``doc.iter(*names)`` as a list, found by the compiled module when it was built."""
    if _walk is not None:
        return list(_walk.elements_named(doc, names))
    return list(doc.iter(*names))


def _sequence(links: Iterable[lxml.etree._Element]) -> tuple[tuple[str, str], ...]:
    """The ``(href, rel)`` of each ``<link>`` that places the page in a sequence of pages
    (:data:`SEQUENCE_RELS`: next, previous, up, start, contents…), its href as written."""
    found = []
    for link in links:
        href = str(link.get("href") or "").strip()
        if href:
            for rel in (link.get("rel") or "").lower().split():
                if rel in SEQUENCE_RELS:
                    found.append((href, SEQUENCE_RELS[rel]))
    return tuple(found)


def _canonical(links: Iterable[lxml.etree._Element], url: str) -> str | None:
    """The absolute URL of the first ``<link rel="canonical">`` among ``links``, if any."""
    for link in links:
        if "canonical" in (link.get("rel") or "").lower().split():
            href = str(link.get("href") or "").strip()
            if href:
                try:
                    return urljoin(url, href)
                except ValueError:
                    return None
    return None
