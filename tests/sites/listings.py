"""A shop whose listing pages all name their first page as their ``rel=canonical``.

Six categories list their products eight to a page, over seven pages
(``/c/<category>/?page=N``); every listing page names ``/c/<category>/`` canonical, an old
search-engine habit. A product page is linked from its listing page only, and names itself
canonical. Page 7 of a listing is another page than page 1, whatever the site says: a rule
"drop ``page``" loses the products of pages 2 to 7. Links to a listing from the home page, the
menu and a product carry where they come from (``?ref=``), which changes nothing but a
"visitors online" count that differs at each view: a rule "drop ``ref``" is right.
"""

from __future__ import annotations

import random
from urllib.parse import parse_qs, urlsplit

from demo.site import DemoSite

CATEGORIES = ("lamps", "chairs", "tables", "shelves", "rugs", "clocks")
PAGES = 7
PER_PAGE = 8
_visitors = random.Random(3)
_WORDS = (
    "oak",
    "brass",
    "linen",
    "walnut",
    "velvet",
    "steel",
    "glass",
    "wool",
    "marble",
    "cedar",
    "copper",
    "rattan",
    "leather",
    "bamboo",
    "cotton",
    "pewter",
)


def _product(category: int, page: int, slot: int) -> int:
    return (category * PAGES + page - 1) * PER_PAGE + slot


def _describe(n: int, words: int) -> str:
    rng = random.Random(n)
    return " ".join(rng.choice(_WORDS) for _ in range(words))


def page_key(url: str) -> tuple[str, ...] | None:
    """What the site serves at ``url``: the ground truth of its pages (``None``: no page)."""
    parts = urlsplit(url)
    segments = parts.path.strip("/").split("/")
    if parts.path == "/":
        return ("home",)
    if len(segments) == 2 and segments[0] == "c" and segments[1] in CATEGORIES:
        page = parse_qs(parts.query).get("page", ["1"])[0]
        if page.isdigit() and 1 <= int(page) <= PAGES:
            return ("listing", segments[1], page)
        return None
    if len(segments) == 2 and segments[0] == "p" and segments[1].isdigit():
        n = int(segments[1])
        return ("product", segments[1]) if n < len(CATEGORIES) * PAGES * PER_PAGE else None
    return None


def products() -> set[tuple[str, ...]]:
    """The keys of every product page."""
    return {("product", str(n)) for n in range(len(CATEGORIES) * PAGES * PER_PAGE)}


def _layout(title: str, canonical: str, main: str) -> str:
    nav = "".join(f'<li><a href="/c/{c}/?ref=menu">{c.title()}</a></li>' for c in CATEGORIES)
    return (
        f'<html><head><title>{title} | Home Goods</title><link rel="canonical" '
        f'href="{canonical}"></head><body><header><a href="/">Home Goods</a><ul>{nav}</ul>'
        f"</header><main>{main}</main><footer><p>Home Goods, furniture and lamps delivered "
        "to your door since 1998.</p></footer></body></html>"
    )


def render(path: str) -> tuple[int, str]:
    """Status and HTML of ``path``."""
    key = page_key(path)
    if key is None:
        return 404, "<html><body><h1>Not found</h1></body></html>"
    if key[0] == "home":
        return 200, _layout("Home", "/", "<h1>Welcome</h1><p>Pick a category.</p>")
    if key[0] == "listing":
        category, page = key[1], int(key[2])
        c = CATEGORIES.index(category)
        items = "".join(
            f'<li><a href="/p/{n}">{_describe(n, 3).title()}</a> {_describe(n + 7, 12)}</li>'
            for n in (_product(c, page, slot) for slot in range(PER_PAGE))
        )
        pager = " ".join(f'<a href="/c/{category}/?page={p}">{p}</a>' for p in range(1, PAGES + 1))
        online = _visitors.randrange(10, 999)
        main = (
            f"<h1>{category.title()}</h1><ul>{items}</ul><p class='pager'>{pager}</p>"
            f"<p>Visitors online: {online}</p>"
        )
        return 200, _layout(category.title(), f"/c/{category}/", main)
    n = int(key[1])
    back = CATEGORIES[n // (PAGES * PER_PAGE)]
    main = (
        f'<p><a href="/c/{back}/?ref=product">{back.title()}</a></p>'
        f"<h1>{_describe(n, 3).title()}</h1><p>{_describe(n + 11, 40)}.</p>"
    )
    return 200, _layout(_describe(n, 3).title(), f"/p/{n}", main)


class ListingSite(DemoSite):
    """The site on a free port of 127.0.0.1, served by a background thread."""

    def __init__(self) -> None:
        super().__init__(render_page=render)
