"""A news site whose every link carries a fresh session id.

Sixty articles in four sections, a home page and a page per section. Each page view writes a
new ``?sid=`` into every link it shows, so a crawler that keeps the parameter never runs out
of new URLs; what a page says depends on its path only. Articles of one section share a large
section menu (every article title of the section) and a standing paragraph, and differ in a
sentence of their own: whole-page near-duplicates that are distinct pages.
"""

from __future__ import annotations

import random
import secrets
from urllib.parse import urlsplit

from demo.site import DemoSite

SECTIONS = ("world", "science", "culture", "sport")
ARTICLES = 60
_WORDS = (
    "river",
    "market",
    "council",
    "harbour",
    "winter",
    "festival",
    "orchard",
    "bridge",
    "library",
    "station",
    "museum",
    "election",
    "harvest",
    "theatre",
    "football",
    "comet",
    "glacier",
    "violin",
    "bakery",
    "ferry",
)


def _section(n: int) -> str:
    return SECTIONS[n % len(SECTIONS)]


def _title(n: int) -> str:
    rng = random.Random(n)
    return f"{rng.choice(_WORDS).title()} {rng.choice(_WORDS)} report {n}"


def _body(n: int) -> str:
    """The section's standing paragraph and a sentence of the article's own: articles of a
    section differ in a few words."""
    shared = random.Random(_section(n))
    standing = " ".join(shared.choice(_WORDS) for _ in range(60))
    own = random.Random(1000 + n)
    return (
        f"<p>{standing.capitalize()}.</p>"
        f"<p>Article {n}: {' '.join(own.choice(_WORDS) for _ in range(6))}.</p>"
    )


def page_key(path: str) -> str | None:
    """What the site serves at a path, the query left out: the ground truth of its
    duplicates (``None``: no page)."""
    path = urlsplit(path).path
    if path == "/":
        return "home"
    parts = path.strip("/").split("/")
    if len(parts) == 2 and parts[0] == "section" and parts[1] in SECTIONS:
        return path
    if len(parts) == 2 and parts[0] == "article" and parts[1].isdigit():
        return path if int(parts[1]) < ARTICLES else None
    return None


def render(path: str) -> tuple[int, str]:
    """Status and HTML of ``path``; links carry a session id fresh for this view."""
    key = page_key(path)
    if key is None:
        return 404, "<html><body><h1>Not found</h1></body></html>"

    def link(href: str, text: str) -> str:
        return f'<a href="{href}?sid={secrets.token_hex(6)}">{text}</a>'

    nav = " | ".join([link("/", "Home"), *(link(f"/section/{s}", s.title()) for s in SECTIONS)])
    if key == "home":
        main = (
            "<h1>Front page</h1><ul>"
            + "".join(f"<li>{link(f'/article/{n}', _title(n))}</li>" for n in range(0, ARTICLES, 6))
            + "</ul>"
        )
        menu = ""
    elif key.startswith("/section/"):
        section = key.rsplit("/", 1)[1]
        main = (
            f"<h1>{section.title()}</h1><ul>"
            + "".join(
                f"<li>{link(f'/article/{n}', _title(n))}</li>"
                for n in range(ARTICLES)
                if _section(n) == section
            )
            + "</ul>"
        )
        menu = ""
    else:
        n = int(key.rsplit("/", 1)[1])
        main = f"<article><h1>{_title(n)}</h1>{_body(n)}</article>"
        menu = (
            "<aside><h2>More in this section</h2><ul>"
            + "".join(
                f"<li>{link(f'/article/{m}', _title(m))}</li>"
                for m in range(ARTICLES)
                if _section(m) == _section(n)
            )
            + "</ul></aside>"
        )
    html = (
        f"<html><head><title>Daily Sessions</title></head><body><header><nav>{nav}</nav>"
        f"</header><main>{main}</main>{menu}<footer><p>Daily Sessions, every story "
        "every day. Contact the newsroom for corrections.</p></footer></body></html>"
    )
    return 200, html


class SessionSite(DemoSite):
    """The site on a free port of 127.0.0.1, served by a background thread."""

    def __init__(self) -> None:
        super().__init__(render_page=render)
