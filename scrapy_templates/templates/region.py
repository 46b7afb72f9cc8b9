"""The main content region of a site, learned from the pages decided so far.

A page's own main region (:func:`~scrapy_templates.templates.decide.main_region`) fails on short
pages, where a per-page header or a sidebar's "previous / next" titles are a large share of the
little text there is. Across a site, though, the element that holds the content is the same tag
path on almost every page (``#content``, ``main``, ``.document .body``). :class:`SiteRegion`
accumulates the non-template text of decided pages per tag-path prefix and descends, like the
per-page rule, to the deepest path that holds ``share`` of it — the site-level counterpart of
the main dynamic region of ``004_…``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, unquote, urljoin, urlsplit

from scrapy_templates.templates.repeats import RepeatCache, strings_size
from scrapy_templates.templates.text import WORD, letters


@dataclass
class SiteRegion:
    """Non-template text per tag-path prefix over a site's pages, and the main path it gives."""

    share: float = 0.9
    refresh_every: int = 16
    max_nodes: int = 20_000
    children: dict[str, dict[str, float]] = field(default_factory=dict)
    whole: dict[str, float] = field(default_factory=dict)
    seen: dict[str, int] = field(default_factory=dict)
    unsplit: dict[str, int] = field(default_factory=dict)
    split: dict[str, int] = field(default_factory=dict)
    templated: dict[str, int] = field(default_factory=dict)
    branches: dict[str, set[str]] = field(default_factory=dict)
    total: float = 0.0
    pages: int = 0
    _main: str | None = None
    _computed_at: int = -1
    _chains: dict[str, list[dict[str, float]]] = field(default_factory=dict)
    _prune_at: int = 0

    def add(self, paths: Sequence[str], weights: Sequence[int], flags: Sequence[bool]) -> None:
        """Record one decided page: its pagelets' paths, non-template text sizes and template
        flags.

        Each page counts once, whatever its length (its weights are normalised), so one huge
        page of another layout cannot outweigh hundreds of ordinary ones."""
        self.pages += 1
        distinct = set(paths)
        seen: set[str] = set()
        for path in distinct:
            seen.update(_prefixes(path))
        templated: set[str] = set()
        for path in {p for p, flag in zip(paths, flags, strict=True) if flag}:
            templated.update(_prefixes(path))
        counts, branches = self.seen, self.branches
        for prefix in seen:
            if prefix not in counts:
                counts[prefix] = 0
                branches.setdefault(prefix.rpartition("/")[0], set()).add(prefix)
            counts[prefix] += 1
        for path in distinct:
            self.unsplit[path] = self.unsplit.get(path, 0) + 1
        for prefix in seen - distinct:
            self.split[prefix] = self.split.get(prefix, 0) + 1
        for prefix in templated:
            self.templated[prefix] = self.templated.get(prefix, 0) + 1
        if len(self.seen) > max(self.max_nodes, self._prune_at):
            self._prune()
        page_total = sum(weights)
        if not page_total:
            return
        self.total += 1.0
        sizes: dict[str, int] = {}  # a path's pagelets are counted together
        for path, size in zip(paths, weights, strict=True):
            if size:
                sizes[path] = sizes.get(path, 0) + size
        whole, chains = self.whole, self._chains
        for path, size in sizes.items():
            weight = size / page_total
            whole[path] = whole.get(path, 0.0) + weight
            chain = chains.get(path)
            if chain is None:
                chain = chains[path] = self._chain(path)
            for below, node in zip(chain, _prefixes(path), strict=True):
                below[node] = below.get(node, 0.0) + weight

    def _chain(self, path: str) -> list[dict[str, float]]:
        """For each prefix of ``path``, the table of its parent's children it is counted in
        (one list per path: it outlives the page, and the collector walks what outlives)."""
        parents = ("", *_prefixes(path)[:-1])
        return [self.children.setdefault(parent, {}) for parent in parents]

    def _prune(self) -> None:
        """Forget tag paths seen on fewer than 1 % of the site's pages (ids generated per page
        make most paths unique). The main path only ever runs through common paths, so this
        bounds memory without changing the answer."""
        self._chains.clear()  # they hold tables about to be dropped
        rare = _RARE * self.pages
        if len(self.seen) > 4 * self.max_nodes and self.pages > 1:
            # more paths than a site has, before 1 % of its pages is one page (pages of
            # generated paths): a path seen on one page of several is no main path either
            rare = max(rare, 2)
        keep = {p for p, n in self.seen.items() if n >= rare}
        for table in (self.seen, self.unsplit, self.split, self.templated, self.whole):
            for key in [k for k in table if k not in keep]:
                del table[key]
        for mapping in (self.children, self.branches):
            for key in [k for k in mapping if k and k not in keep]:
                del mapping[key]
        for below in self.children.values():
            for key in [k for k in below if k not in keep]:
                del below[key]
        for kids in self.branches.values():
            kids.intersection_update(keep)
        # the next prune when the table has doubled: one that frees little is not redone on
        # every page
        self._prune_at = min(2 * len(self.seen), 4 * self.max_nodes)

    def main_path(self) -> str | None:
        """Deepest tag path holding ``share`` of the site's non-template text; recomputed every
        ``refresh_every`` pages (and on each of the first ones) rather than on every call."""
        stale = (
            self.pages < self.refresh_every or self.pages - self._computed_at >= self.refresh_every
        )
        if stale:
            self.refresh()
        return self._main

    def refresh(self) -> None:
        """Compute the main path now rather than at the next ``refresh_every`` pages: pages
        decided again on what a batch of them taught (a cold start's held pages) see the
        region all of them give."""
        self._main = self._descend()
        self._computed_at = self.pages

    def _descend(self) -> str | None:
        """Descend into the heaviest child while it holds ``share`` of the weight that can vote
        at that depth, and what is left beside it is a template region (a sibling holding
        template pagelets on at least a quarter of the pages it is on: header, sidebar,
        footer) or nothing. Headings and preambles next to the content, which carry no
        template, are therefore never cut off. What a template region leaves unflagged (a
        sidebar's table of contents of the current page) does not vote. A pagelet that ends
        at a node (a page too link-poor to be split there) says nothing about the node's
        children, so its weight leaves the vote.
        The descent stops above paths where pagelets end on most pages (``body/p``): a region
        holds pagelets. A sibling seen on no more pages than lack the child may be all theirs
        (the plain pages of another layout) and does not count as text beside the child; the
        counts cannot tell it from one beside the child on a few pages, a small cost there."""
        if not self.total:
            return None
        node = ""
        voting = self.total
        while True:
            below = self.children.get(node)
            if not below:
                break
            voting -= self.whole.get(node, 0.0)
            child, weight = max(below.items(), key=lambda kv: kv[1])
            pages = (self.seen.get(node, 0) if node else self.pages) - self.unsplit.get(node, 0)
            regions = [
                sibling
                for sibling in self.branches.get(node, ())
                if sibling != child and self._template_region(sibling, pages)
            ]
            leftovers = sum(below.get(sibling, 0.0) for sibling in regions)
            if voting <= 0 or weight < self.share * (voting - leftovers):
                break
            if self.split.get(child, 0) < _SPLIT_OFTEN * self.seen.get(child, 0):
                break  # pagelets end at the child, it is not a region holding them
            # a sibling found on no more pages than lack the child may be all theirs: pages of
            # another layout, which leave no text beside the child on its own pages
            without = (self.seen.get(node, 0) if node else self.pages) - self.seen.get(child, 0)
            strays = sum(
                w
                for sibling, w in below.items()
                if sibling != child and self.seen.get(sibling, 0) <= without
            )
            if weight < voting - strays - _EPSILON and not regions:
                break
            node = child
        return node or None

    def _template_region(self, path: str, pages: int) -> bool:
        """Whether ``path`` is a template region beside its siblings: it holds template
        pagelets on a quarter of the pages it is on (of ``pages``, its parent's, at most),
        and is on 1 % of those pages and 2 at least — a header, a sidebar, a footer, or the
        chrome of another page type present on a few of the site's pages."""
        seen = self.seen.get(path, 0)
        return self.templated.get(path, 0) >= _TEMPLATE_BESIDE * min(pages, seen) and seen >= max(
            _RARE * pages, 2
        )


_EPSILON = 1e-9
_SPLIT_OFTEN = 0.25
_RARE = 0.01
_TEMPLATE_BESIDE = 0.25


# Prefixes go this many steps deep at most: a main region lies far above (real pages nest
# their content a few dozen elements deep), and the prefixes of a path d steps deep hold d²
# characters — a page nested 2,000 deep would otherwise cost gigabytes.
MAX_PREFIX_STEPS = 64


def _all_prefixes(path: str) -> tuple[str, ...]:
    steps = path.split("/", MAX_PREFIX_STEPS)[:MAX_PREFIX_STEPS]
    return tuple("/".join(steps[: i + 1]) for i in range(len(steps)))


# ``a/b/c`` → ``("a", "a/b", "a/b/c")``, at most MAX_PREFIX_STEPS of them; cached, since a
# site's paths repeat page after page (8 million characters, about 16 MB, at most).
_prefixes = RepeatCache[str, tuple[str, ...]](
    8_000_000, _all_prefixes, lambda found: sum(map(len, found)), len
)


def in_region(path: str, region: str) -> bool:
    return path == region or path.startswith(region + "/")


NAVIGATION_LINK_SHARE = 0.55


def same_site(href: str, host: str) -> bool:
    """Whether a link leads to another page of the site: not a fragment of this page, not
    another host (a type name linked to an external API reference is not navigation)."""
    if href[:1] == "#":
        return False
    colon = href.find(":")
    if href[:2] == "//" or (colon >= 0 and href.find("/", 0, colon) < 0):
        try:
            parts = urlsplit(href)
        except ValueError:  # "http://[:PORT_NUMBER]/" in a page's text: leads nowhere
            return False
        return parts.scheme in ("", "http", "https") and parts.netloc.lower() == host
    return True


def _words(text: str) -> Counter[str]:
    return Counter(w for w in WORD.findall(text.lower()) if not w.isdigit())


def navigation_links(text: str, hrefs: Sequence[str], anchors: Sequence[str], host: str) -> int:
    """How many other pages of the site on ``host`` a block links to when it reads as
    navigation, else 0: its links hold at least ``NAVIGATION_LINK_SHARE`` of its letters,
    with fewer words outside them than links (breadcrumbs, menus, "previous | up | next":
    separators between the links, at most the current page's name besides). A sentence
    whose words join its links ("Uses of Pair in org.tuple", "Methods in org.tuple that
    return Pair") is not navigation."""
    targets = set()
    linked_anchors = []
    for href, anchor in zip(hrefs, anchors, strict=True):
        if same_site(href, host):
            linked_anchors.append(anchor)
            targets.add(href)
    if not targets:
        return 0
    linked = letters("".join(linked_anchors))
    if not linked >= NAVIGATION_LINK_SHARE * letters(text) > 0:
        return 0
    outside = _words(text) - _words(" ".join(anchors))
    return len(targets) if sum(outside.values()) < len(hrefs) else 0


Block = tuple[str, tuple[str, ...], tuple[str, ...], str]


def links_size(hrefs: Sequence[str], anchors: Sequence[str], host: str) -> int:
    """What keeping a block's links (and the host they were judged for) costs a cache."""
    return strings_size(hrefs) + strings_size(anchors) + len(host)


def _block_size(block: Block) -> int:
    text, hrefs, anchors, host = block
    return len(text) + links_size(hrefs, anchors, host)


# A site's menus and bars come back on page after page, and the test reads every word and link
# of them (a reference manual's sidebar: hundreds of links on every page).
_navigation = RepeatCache[Block, int](
    2_000_000, lambda block: navigation_links(*block), lambda found: 0, _block_size
)


def block_navigation(text: str, hrefs: Sequence[str], anchors: Sequence[str], host: str) -> int:
    """:func:`navigation_links`, remembered for blocks that come back (bounded)."""
    return _navigation((text, tuple(hrefs), tuple(anchors), host))


def names_itself(hrefs: Sequence[str], url: str) -> bool:
    """Whether every link of a block leads back to the page at ``url``: to the page itself (a
    permalink, "back to top"), or to a script whose query names the page's last path step as
    a whole value, or as the last step of one (MediaWiki's "Retrieved from
    ‹index.php?title=‹page›&oldid=…›"). Such a block is about the page, not part of what it
    says."""
    if not hrefs:
        return False
    try:
        own = urlsplit(url)
        step = unquote(own.path.rstrip("/").rpartition("/")[2])
        name = step.rpartition(".")[0] or step
        for href in hrefs:
            target = urlsplit(urljoin(url, href))
            if target.netloc.lower() != own.netloc.lower():
                return False
            if (target.path, target.query) == (own.path, own.query):
                continue
            values = [value.rpartition("/")[2] for _, value in parse_qsl(target.query)]
            if len(name) < 3 or name not in values:
                return False
    except ValueError:  # a link Python cannot split leads nowhere known
        return False
    return True
