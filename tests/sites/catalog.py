"""A site with two sections that share one URL form and not its meaning.

``/shop/item?id=N&view=V`` shows item N whatever the view (``list``, ``grid``, ``print``: a
presentation choice), ``/docs/item?id=N&view=V`` shows a different chapter of document N per
view (``list`` when the view is left out). A rule "drop ``view``" learned where the docs
section looked like the shop — or written by someone who only knew the shop — is right in
one section and loses pages in the other.
"""

from __future__ import annotations

import random
from urllib.parse import parse_qs, urlsplit

from demo.site import DemoSite

SECTIONS = ("shop", "docs")
VIEWS = ("list", "grid", "print")
ITEMS = 10
_WORDS = ("lamp", "chair", "table", "shelf", "rug", "clock", "mirror", "vase", "desk", "bench")


def page_key(url: str) -> tuple[str, int, str] | None:
    """What the site serves at ``url``: section, item and (docs only) view; ``None`` for no
    item page."""
    parts = urlsplit(url)
    section = parts.path.strip("/").split("/")[0]
    query = parse_qs(parts.query)
    if parts.path != f"/{section}/item" or section not in SECTIONS:
        return None
    try:
        n = int(query["id"][0])
    except (KeyError, ValueError):
        return None
    view = query.get("view", ["list"])[0]
    if not 0 <= n < ITEMS or view not in VIEWS:
        return None
    return section, n, view if section == "docs" else ""


def _text(key: tuple[str, int, str]) -> str:
    rng = random.Random(repr(key))
    return " ".join(rng.choice(_WORDS) for _ in range(40))


def render(path: str) -> tuple[int, str]:
    """Status and HTML of ``path``: the home page links every item in every view."""
    nav = '<nav><a href="/">Home</a> <a href="/shop/item?id=0">Shop</a></nav>'
    if urlsplit(path).path == "/":
        links = "".join(
            f'<li><a href="/{s}/item?id={n}&amp;view={v}">{s} {n} {v}</a></li>'
            for s in SECTIONS
            for n in range(ITEMS)
            for v in VIEWS
        )
        main = f"<h1>Catalogue</h1><ul>{links}</ul>"
    else:
        key = page_key(path)
        if key is None:
            return 404, "<html><body><h1>Not found</h1></body></html>"
        section, n, view = key
        main = f"<h1>{section.title()} {n} {view}</h1><p>{_text(key)}.</p>"
    html = (
        f"<html><head><title>Catalogue</title></head><body><header>{nav}</header>"
        f"<main>{main}</main><footer><p>The catalogue, open every day of the year.</p>"
        "</footer></body></html>"
    )
    return 200, html


class CatalogSite(DemoSite):
    """The site on a free port of 127.0.0.1, served by a background thread."""

    def __init__(self) -> None:
        super().__init__(render_page=render)
