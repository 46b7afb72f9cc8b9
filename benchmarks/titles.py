"""Title accuracy on real sites: the item's ``templates.title`` against the page's own
``<title>`` and first ``<h1>``.

    python -m benchmarks.titles [--sites sqlite,django,git,gtk3,javadoc]

The gold title of a page is the first heading (``h1``-``h3``) inside the site's gold content
container (see :mod:`benchmarks.realsites`), the heading a reader sees above the text (on
git's asciidoc pages, the header's ``h1`` above the content); a page without one is left out.
Each candidate is scored by word-token F1 against it (the tokens of :mod:`benchmarks.quality`),
and counted as exact when its tokens equal the gold's. Prints a table per site; the worst site
is the figure that counts.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path

import lxml.html

from benchmarks.quality import crawl, prf, tokens
from benchmarks.realsites import SITES, ensure_installed, local_file

DOCS = Path(__file__).resolve().parent.parent / "docs" / "titles.md"
_HEADINGS = ("h1", "h2", "h3")
# Where a site's gold title is not the first heading of its gold container: asciidoc pages put
# the manual page's name in a header above the content, whose headings are its sections.
_TITLE_SELECTORS = {"git": "#header h1"}


def _text(element: lxml.html.HtmlElement) -> str:
    return " ".join(element.text_content().replace("¶", " ").split())


def gold_title(site_name: str, html: bytes) -> str | None:
    doc = lxml.html.fromstring(html)
    if site_name in _TITLE_SELECTORS:
        found = doc.cssselect(_TITLE_SELECTORS[site_name])
        return _text(found[0]) if found else None
    for container in SITES[site_name].gold(doc):
        for heading in container.iter(*_HEADINGS):
            text = _text(heading)
            if text:
                return text
    return None


def candidates(html: bytes) -> dict[str, str]:
    doc = lxml.html.fromstring(html)
    title = doc.find(".//title")
    h1 = next(iter(doc.iter("h1")), None)
    return {
        "<title>": _text(title) if title is not None else "",
        "first <h1>": _text(h1) if h1 is not None else "",
    }


def score_site(name: str) -> Iterator[tuple[str, float, float, int]]:
    site = SITES[name]
    items, _stats, _elapsed = crawl(site, [])
    scores: dict[str, list[tuple[float, bool]]] = {}
    for item in items:
        path = local_file(site, item["url"])
        if not path.is_file():
            continue
        html = path.read_bytes()
        gold = gold_title(name, html)
        if not gold:
            continue
        found = {"templates.title": str(item.get("templates", {}).get("title", ""))}
        found.update(candidates(html))
        for label, text in found.items():
            f1 = prf(text, gold)[2]
            exact = tokens(text) == tokens(gold)
            scores.setdefault(label, []).append((f1, exact))
    for label, rows in scores.items():
        n = len(rows)
        yield label, sum(f for f, _ in rows) / n, sum(e for _, e in rows) / n, n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sites", default=",".join(SITES))
    parser.add_argument("--no-docs", action="store_true", help="do not rewrite docs/titles.md")
    args = parser.parse_args()
    names = args.sites.split(",")
    ensure_installed([SITES[n] for n in names])
    lines = ["| site | title from | pages | token F1 | exact |", "|---|---|--:|--:|--:|"]
    for name in names:
        for label, f1, exact, n in score_site(name):
            lines.append(f"| {name} | {label} | {n} | {f1:.3f} | {exact:.1%} |")
            print(lines[-1], flush=True)
    if not args.no_docs:
        DOCS.write_text(
            "# Titles\n\n"
            "`templates.title` on each item comes from the anchor texts of the links to the page "
            "(Webstemmer's method: the content block most like them), else the page's first "
            "`<h1>`, else its `<title>`. Measured against the heading a reader sees above the "
            "text (the first heading of each site's gold content container; the header `<h1>` on "
            "git's manual pages), by word-token F1, on one crawl of each development site with "
            "default settings:\n\n"
            + "\n".join(lines)
            + "\n\nReproduce: `python -m benchmarks.titles`.\n",
            encoding="utf-8",
        )


if __name__ == "__main__":
    main()
