"""The bundled demo site: a small news site served from memory on 127.0.0.1.

It has what makes real crawls messy: a header, navigation, sidebar, rotating ads and a footer
on every page; several page types (home, category listings with pagination and sort orders,
articles, print views, search results, "no results"); and duplicate-URL habits — session ids,
tracking parameters, sort parameters, print views, ``index.html`` next to ``/``, missing
trailing slashes and a ``/mirror/`` copy of the whole site. Pages are generated from a seed, so
every run serves the same site.
"""

from __future__ import annotations

import html
import os
import random
import threading
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

CATEGORIES = ("world", "science", "culture", "sport")
PER_PAGE = 6
# Larger sites for benchmarks: DEMO_SITE_ARTICLES=480 gives about 3,000 URLs.
N_ARTICLES = int(os.environ.get("DEMO_SITE_ARTICLES", "48"))
_WORDS = [
    "river",
    "market",
    "council",
    "study",
    "energy",
    "winter",
    "harbour",
    "museum",
    "league",
    "garden",
    "festival",
    "engine",
    "climate",
    "planet",
    "vaccine",
    "orchestra",
    "novel",
    "stadium",
    "coach",
    "election",
    "treaty",
    "budget",
    "research",
    "telescope",
    "fossil",
    "ocean",
    "forest",
    "village",
    "bridge",
    "railway",
    "library",
    "theatre",
    "painter",
    "composer",
    "goal",
    "season",
    "final",
    "record",
    "storm",
    "harvest",
    "coast",
    "island",
    "mountain",
    "valley",
    "factory",
    "school",
    "hospital",
    "journal",
    "archive",
    "signal",
    "network",
    "data",
    "model",
    "method",
    "result",
    "evidence",
    "sample",
    "theory",
    "border",
    "minister",
    "reform",
    "protest",
    "trade",
    "export",
    "import",
    "price",
    "inflation",
    "bank",
    "loan",
    "credit",
]
_FILLER = [
    "the",
    "a",
    "of",
    "and",
    "to",
    "in",
    "for",
    "with",
    "on",
    "by",
    "from",
    "after",
    "before",
    "over",
    "under",
    "about",
    "while",
]


@dataclass(frozen=True)
class Article:
    id: int
    category: str
    title: str
    date: str
    paragraphs: tuple[str, ...]

    @property
    def slug(self) -> str:
        return self.title.lower().replace(" ", "-")

    @property
    def path(self) -> str:
        return f"/articles/{self.id}-{self.slug}.html"


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(_WORDS if i % 2 == 0 else _FILLER) for i in range(rng.randint(8, 18))]
    return " ".join(words).capitalize() + "."


def _articles(seed: int = 7) -> list[Article]:
    rng = random.Random(seed)
    out = []
    for i in range(1, N_ARTICLES + 1):
        title = " ".join(rng.choice(_WORDS) for _ in range(3)).title()
        paragraphs = tuple(
            " ".join(_sentence(rng) for _ in range(rng.randint(2, 5)))
            for _ in range(rng.randint(3, 7))
        )
        date = f"2026-{1 + i % 12:02d}-{1 + (i * 7) % 28:02d}"
        out.append(Article(i, CATEGORIES[i % len(CATEGORIES)], title, date, paragraphs))
    return out


ARTICLES = _articles()
BY_ID = {a.id: a for a in ARTICLES}
_ADS = (
    "Advertisement: Fresh coffee delivered to your door every morning. Order today.",
    "Advertisement: Learn a new language in ten minutes a day with our app.",
    "Advertisement: Cheap flights to the coast this winter, book before Friday.",
)


class _Links:
    """Link decoration the way messy sites do it: a session id that depends on the page the
    link is on, tracking parameters per block, and alternate spellings of the same path."""

    def __init__(self, current: str) -> None:
        self.sid = f"{zlib.crc32(current.encode()) % 4:04x}"

    def session(self, path: str) -> str:
        sep = "&" if "?" in path else "?"
        return f"{path}{sep}sid={self.sid}"

    @staticmethod
    def track(path: str, source: str) -> str:
        sep = "&" if "?" in path else "?"
        return f"{path}{sep}utm_source={source}&utm_medium=web"


def _layout(title: str, main: str, current: str, canonical: str | None = None) -> str:
    links = _Links(current)
    ad = _ADS[sum(map(ord, current)) % len(_ADS)]
    nav = "".join(
        f'<li><a href="{links.session(f"/category/{c}/")}">{c.title()}</a></li>' for c in CATEGORIES
    )
    popular = "".join(
        f'<li><a href="{links.track(a.path, "popular")}">{html.escape(a.title)}</a></li>'
        for a in ARTICLES[:5]
    )
    canon = f'<link rel="canonical" href="{canonical}">' if canonical else ""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)} | The Daily Demo</title>
{canon}<style>body{{font-family:sans-serif}}</style><script>var analytics = "demo";</script></head>
<body>
<header id="masthead"><a href="/index.html"><img src="/logo.png" alt="The Daily Demo"></a>
<p class="tagline">All the news that fits the demo</p>
<form action="/search"><input name="q"><button>Search</button></form></header>
<nav id="menu"><ul><li><a href="/">Home</a></li>{nav}
<li><a href="/about">About us</a></li></ul></nav>
<div id="page">
<main id="content">{main}</main>
<aside id="sidebar">
<section class="popular"><h3>Most read</h3><ol>{popular}</ol></section>
<section class="ad"><p>{ad}</p><a href="/ads/click?id=1">Learn more</a></section>
<section class="newsletter"><h3>Newsletter</h3><p>Get the best stories of the week in your
inbox every Sunday.</p><a href="/newsletter">Subscribe</a> <a href="/privacy">Privacy</a>
<a href="/terms">Terms</a></section>
</aside></div>
<footer id="footer"><p>© 2026 The Daily Demo. All rights reserved.</p>
<ul><li><a href="/about">About</a></li><li><a href="/contact">Contact</a></li>
<li><a href="/privacy">Privacy policy</a></li><li><a href="/terms">Terms of use</a></li></ul>
</footer></body></html>"""


def _article_main(a: Article, links: _Links) -> str:
    body = "".join(f"<p>{html.escape(p)}</p>" for p in a.paragraphs)
    related = [BY_ID[1 + (a.id + k * 5) % N_ARTICLES] for k in (1, 2, 3)]
    rel = "".join(
        f'<li><a href="{links.session(r.path)}">{html.escape(r.title)}</a></li>' for r in related
    )
    return (
        f'<div class="breadcrumb"><a href="/">Home</a> › <a href="/category/{a.category}">'
        f"{a.category.title()}</a></div>"
        f'<article><h1>{html.escape(a.title)}</h1><p class="byline">Published {a.date} in '
        f"{a.category.title()}</p>{body}"
        f'<p class="tools"><a href="{a.path}?print=1">Print this article</a></p></article>'
        f'<div class="related"><h3>Related</h3><ul>{rel}</ul></div>'
    )


def _listing(items: list[Article], links: _Links) -> str:
    return "".join(
        f'<div class="teaser"><h2><a href="{links.session(a.path)}">{html.escape(a.title)}</a></h2>'
        f"<p>{html.escape(a.paragraphs[0][:160])}…</p></div>"
        for a in items
    )


def _route(raw_path: str) -> tuple[str, dict[str, list[str]]]:
    """The path the site answers for ``raw_path`` (mirror prefix, ``index.html`` and a
    missing category slash undone) and the parsed query."""
    parts = urlsplit(raw_path)
    path = parts.path
    if path.startswith("/mirror/"):
        path = path[len("/mirror") :]
    if path.endswith("/index.html"):
        path = path[: -len("index.html")]
    if path.startswith("/category/") and not path.endswith("/"):
        path += "/"
    return path, parse_qs(parts.query)


def page_key(raw_path: str) -> tuple[str, ...]:
    """What the site serves at a path (with query): two paths with the same key get the same
    page content (up to the rotating ad and session links). The ground truth of the demo's
    duplicate URLs, used by tests and benchmarks."""
    path, query = _route(raw_path)
    if path.startswith("/category/"):
        page = query.get("page", ["1"])[0]
        return ("category", path, query.get("sort", ["date"])[0], page if page.isdigit() else "1")
    if path.startswith("/articles/") and path.endswith(".html"):
        return ("article", path.split("/")[2].split("-")[0])
    if path == "/search":
        return ("search", query.get("q", [""])[0].strip().lower())
    return ("page", path)


def render(raw_path: str) -> tuple[int, str]:
    """Status and HTML for a request path (with query); the whole site is this function."""
    path, query = _route(raw_path)
    links = _Links(raw_path)
    if path == "/":
        latest = sorted(ARTICLES, key=lambda a: a.date, reverse=True)[:8]
        main = "<h1>Latest news</h1>" + _listing(latest, links)
        return 200, _layout("Home", main, raw_path)
    if path.startswith("/category/"):
        cat = path.split("/")[2]
        if cat not in CATEGORIES:
            return 404, _layout("Not found", "<h1>Page not found</h1>", raw_path)
        items = [a for a in ARTICLES if a.category == cat]
        if query.get("sort", ["date"])[0] == "title":
            items.sort(key=lambda a: a.title)
        else:
            items.sort(key=lambda a: a.date, reverse=True)
        page = int(query.get("page", ["1"])[0]) if query.get("page", ["1"])[0].isdigit() else 1
        chunk = items[(page - 1) * PER_PAGE : page * PER_PAGE]
        pages = (len(items) + PER_PAGE - 1) // PER_PAGE
        pager = " ".join(
            f'<a href="{links.session(f"/category/{cat}/?page={n}")}">{n}</a>'
            for n in range(1, pages + 1)
        )
        sorts = (
            f'<p class="sort">Sort by <a href="/category/{cat}/?sort=date">date</a> or '
            f'<a href="/category/{cat}/?sort=title">title</a></p>'
        )
        main = (
            f"<h1>{cat.title()}</h1>{sorts}{_listing(chunk, links)}<div class='pager'>{pager}</div>"
        )
        return 200, _layout(cat.title(), main, raw_path)
    if path.startswith("/articles/") and path.endswith(".html"):
        try:
            art = BY_ID[int(path.split("/")[2].split("-")[0])]
        except (ValueError, KeyError):
            return 404, _layout("Not found", "<h1>Page not found</h1>", raw_path)
        if query.get("print"):
            body = "".join(f"<p>{html.escape(p)}</p>" for p in art.paragraphs)
            return 200, (
                f"<html><head><title>{html.escape(art.title)}</title>"
                f'<link rel="canonical" href="{art.path}"></head>'
                f"<body><h1>{html.escape(art.title)}</h1>"
                f"<p>Published {art.date}</p>{body}</body></html>"
            )
        main = _article_main(art, links)
        return 200, _layout(art.title, main, raw_path, canonical=art.path)
    if path == "/search":
        q = query.get("q", [""])[0].strip().lower()
        hits = [a for a in ARTICLES if q and q in " ".join(a.paragraphs).lower()][:PER_PAGE]
        if hits:
            main = f"<h1>Results for “{html.escape(q)}”</h1>" + _listing(hits, links)
        else:
            main = (
                f"<h1>No results for “{html.escape(q)}”</h1><p>Try another word, or browse the "
                "categories in the menu.</p>"
            )
        return 200, _layout("Search", main, raw_path)
    static = {
        "/about": "About us",
        "/contact": "Contact",
        "/privacy": "Privacy policy",
        "/terms": "Terms of use",
        "/newsletter": "Newsletter",
    }
    if path in static:
        main = (
            f"<h1>{static[path]}</h1><p>This page of The Daily Demo explains {static[path].lower()}"
            f" in plain words.</p><p>Search for <a href='/search?q=river'>river</a>, "
            f"<a href='/search?q=telescope'>telescope</a> or <a href='/search?q=zzzz'>zzzz</a>.</p>"
            f"<p>Also on <a href='/mirror/'>our mirror</a>.</p>"
        )
        return 200, _layout(static[path], main, raw_path)
    return 404, _layout("Not found", "<h1>Page not found</h1>", raw_path)


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        status, body = self.server.render(self.path)
        data = body.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        return None


class _Server(ThreadingHTTPServer):
    # A crawl opens its connections in bursts (16 at once, more with a site's first sample);
    # with the standard library's listen backlog of 5 the kernel drops the rest and the
    # client retries a second later, a stall no real web server would cause.
    request_queue_size = 128
    render: Callable[[str], tuple[int, str]]


class DemoSite:
    """The demo site on a free port of 127.0.0.1, served by a background thread;
    ``render_page`` (path → status and HTML) serves another site the same way."""

    def __init__(
        self, port: int = 0, render_page: Callable[[str], tuple[int, str]] = render
    ) -> None:
        self.server = _Server(("127.0.0.1", port), _Handler)
        self.server.render = render_page
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/"

    def __enter__(self) -> DemoSite:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
