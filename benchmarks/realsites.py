"""Real multi-page sites from Debian packages, served from 127.0.0.1, with their gold
main-content containers.

    python -m benchmarks.realsites          # install the packages if missing and list the sites
"""

from __future__ import annotations

import copy
import functools
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

import lxml.etree
import lxml.html

from scrapy_templates.page import BLOCK_TAGS


@dataclass(frozen=True)
class Site:
    name: str
    package: str
    root: Path
    start: str
    gold: Callable[[lxml.html.HtmlElement], list[lxml.html.HtmlElement]]
    gold_doc: str


def _sqlite_gold(doc: lxml.html.HtmlElement) -> list[lxml.html.HtmlElement]:
    body = doc.find("body")
    if body is None:
        return []
    for el in body.xpath('.//*[contains(concat(" ", normalize-space(@class), " "), " nosearch ")]'):
        el.drop_tree()
    return [body]


def _gtkdoc_gold(doc: lxml.html.HtmlElement) -> list[lxml.html.HtmlElement]:
    body = doc.find("body")
    if body is None:
        return []
    for el in body.cssselect("table.navigation, div.footer"):
        el.drop_tree()
    return [body]


def _first_match(
    selectors: list[str], remove: tuple[str, ...] | list[str] = ()
) -> Callable[[lxml.html.HtmlElement], list[lxml.html.HtmlElement]]:
    """Gold from the first selector that matches, with the ``remove`` elements dropped."""

    def gold(doc: lxml.html.HtmlElement) -> list[lxml.html.HtmlElement]:
        for selector in selectors:
            found = doc.cssselect(selector)
            if found:
                for el in found:
                    for drop in remove:
                        for junk in el.cssselect(drop):
                            junk.drop_tree()
                return list(found)
        return []

    return gold


SITES = {
    "sqlite": Site(
        "sqlite",
        "sqlite3-doc",
        Path("/usr/share/doc/sqlite3"),
        "/index.html",
        _sqlite_gold,
        "body without .nosearch (the blocks sqlite.org's own search indexer skips)",
    ),
    "django": Site(
        "django",
        "python-django-doc",
        Path("/usr/share/doc/python-django-doc/html"),
        "/index.html",
        lambda doc: doc.cssselect("#yui-main .yui-b"),
        "#yui-main .yui-b (the Sphinx document body)",
    ),
    "git": Site(
        "git",
        "git-doc",
        Path("/usr/share/doc/git-doc"),
        "/git.html",
        lambda doc: doc.cssselect("#content"),
        "#content (the asciidoc document body)",
    ),
    "gtk3": Site(
        "gtk3",
        "libgtk-3-doc",
        Path("/usr/share/gtk-doc/html/gtk3"),
        "/index.html",
        _gtkdoc_gold,
        "body without table.navigation and div.footer (gtk-doc's navigation bar and footer)",
    ),
    "javadoc": Site(
        "javadoc",
        "libcommons-lang3-java-doc",
        Path("/usr/share/doc/libcommons-lang3-java/api"),
        "/index.html",
        lambda doc: doc.cssselect("main"),
        "main (the javadoc page body of Apache Commons Lang 3)",
    ),
    "buildbot": Site(
        "buildbot",
        "buildbot-doc",
        Path("/usr/share/doc/buildbot/html"),
        "/index.html",
        _first_match(
            ['div[itemprop="articleBody"]'],
            ["a.headerlink", 'div[itemprop="articleBody"] > div.admonition.caution:first-child'],
        ),
        'div[itemprop="articleBody"] without its "¶" links and the Python 2.7 caution every '
        "page opens with (Sphinx, sphinx-rtd-theme: the sidebar expands the current chapter)",
    ),
    "groonga": Site(
        "groonga",
        "groonga-doc",
        Path("/usr/share/doc/groonga-doc/en/html"),
        "/index.html",
        _first_match(["main.bd-content > div:not(.prev-next-area)"], ["a.headerlink"]),
        'main.bd-content without the prev/next area and the "¶" links (Sphinx, '
        "pydata-sphinx-theme: the sidebar lists the current section's pages)",
    ),
    "maxima": Site(
        "maxima",
        "maxima-doc",
        Path("/usr/share/doc/maxima-doc/html"),
        "/maxima.html",
        _first_match(["body"], ["div.header", "a.copiable-anchor"]),
        "body without the Next/Previous/Up node bars (texinfo, one page per node)",
    ),
    "erlang": Site(
        "erlang",
        "erlang-doc",
        Path("/usr/share/doc/erlang-doc"),
        "/doc/index.html",
        _first_match(
            ["div#content", 'main[role="main"]', "body"],
            ["div.footer", "div#content center:last-child > small"],
        ),
        "div#content without its footer (Erlang/OTP's docs: the left panel is the current "
        "application's; its jinterface javadoc pages: main)",
    ),
    "docbook": Site(
        "docbook",
        "docbook-xsl-doc-html",
        Path("/usr/share/doc/docbook-xsl-doc-html/doc"),
        "/index.html",
        _first_match(["body > div:not(.navheader):not(.navfooter)", "body"]),
        "the body's divisions but the navheader and navfooter (DocBook XSL chunked HTML: "
        "a header naming the part, Prev/Next links, a footer with the neighbours' titles)",
    ),
}


def ensure_installed(sites: list[Site]) -> None:
    """apt-get install the Debian packages of the sites whose files are missing."""
    missing = [s.package for s in sites if not (s.root / s.start.lstrip("/")).exists()]
    if not missing:
        return
    if shutil.which("apt-get") is None:
        raise SystemExit(f"install the Debian packages {missing} first")
    subprocess.run(["apt-get", "update", "-qq"], check=True)
    subprocess.run(["apt-get", "install", "-y", "-qq", *missing], check=True)


class LocalServer(ThreadingHTTPServer):
    """A threaded server whose listen backlog takes a crawl's burst of connections (the
    standard library's 5 makes the client retry a second later; see the demo site's server)."""

    request_queue_size = 128


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        return None


@contextmanager
def serve(site: Site) -> Iterator[str]:
    """Serve ``site.root`` on a free port of 127.0.0.1; yields the start URL."""
    handler = functools.partial(_QuietHandler, directory=str(site.root))
    server = LocalServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        host, port = server.server_address[:2]
        yield f"http://{host}:{port}{site.start}"
    finally:
        server.shutdown()
        server.server_close()


def local_file(site: Site, url: str) -> Path:
    return site.root / unquote(urlsplit(url).path).lstrip("/")


# Changes whenever gold texts change, so that scores cached against the old ones are not read.
GOLD_VERSION = 2


def visible_text(elements: list[lxml.html.HtmlElement]) -> str:
    """Text as a browser lays it out: scripts and styles dropped, block elements separated
    from what comes before and after them ("Result<div>OTP 22.0</div>" is two words)."""
    parts = []
    for el in elements:
        el = copy.deepcopy(el)
        lxml.etree.strip_elements(el, "script", "style", "noscript", "template", with_tail=False)
        for block in el.iter(*BLOCK_TAGS):
            block.text = "\n" + (block.text or "")
            block.tail = "\n" + (block.tail or "")
        parts.append(el.text_content())
    return "\n".join(parts)


def gold_text(site: Site, html: bytes) -> str:
    doc = lxml.html.document_fromstring(html)
    return visible_text(site.gold(doc))


if __name__ == "__main__":
    ensure_installed(list(SITES.values()))
    for s in SITES.values():
        n = sum(1 for _ in s.root.rglob("*.html"))
        print(f"{s.name:8} {n:5d} html files under {s.root}  gold: {s.gold_doc}")
