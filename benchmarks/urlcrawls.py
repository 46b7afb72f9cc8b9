"""Whole crawls side by side: plain Scrapy, Zyte's duplicate-url-discarder, scrapy-templates.

    python -m benchmarks.urlcrawls [--sites demo,trac,roundup,gitweb] [--budget 1000]

Each site (:mod:`benchmarks.webapps`, and the demo site) is crawled once per tool by the example
project's generic spider with the project's settings, up to the same number of downloads, one
request at a time: with 16 at a time the order of a crawl changes from run to run, and with it
which duplicates a budget reaches (plain Scrapy's duplicate downloads moved by ±15% between
runs). :mod:`benchmarks.recorder` writes down every download and every request a
tool turned away. Two downloads are the same page when what a reader sees on them is the same
(:func:`benchmarks.recorder.page_identity`); on the demo site, whose pages carry a rotating ad,
when the site's own ``page_key`` says so.

- *duplicate downloads*: successful downloads of a page downloaded before in the same crawl
  (an error page under many URLs is no page);
- *cut*: 1 − the tool's duplicate downloads ÷ plain Scrapy's;
- *distinct pages*: pages downloaded, and per minute of the whole crawl;
- *late ÷ early*: the rate of the last 500 downloads ÷ that of the first 500;
- *pages lost*: every URL a tool turned away that Scrapy's own dupefilter would have let
  through is fetched afterwards, and so is the URL the tool took it for. A URL is a wrong
  merge when the two pages differ; a page is lost when a wrong merge's page was never
  downloaded in the crawl. A URL that answers with an HTTP error is no page. Plain Scrapy
  turns nothing away.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from w3lib.url import canonicalize_url

from benchmarks.recorder import page_identity

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "output"
sys.path.insert(0, str(ROOT / "example_project"))

TOOLS = {
    "plain Scrapy": ["--no-addon"],
    "duplicate-url-discarder": ["--peer", "dud"],
    "scrapy-templates": [],
}
WINDOW = 500
SITES = ("demo", "trac", "roundup", "gitweb")


@contextmanager
def demo_site() -> Iterator[str]:
    from demo.site import DemoSite

    with DemoSite() as site:
        yield site.url


def _sites() -> dict[str, Callable[[], AbstractContextManager[str]]]:
    from benchmarks.webapps import gitweb_site, roundup_site, trac_site

    return {"demo": demo_site, "trac": trac_site, "roundup": roundup_site, "gitweb": gitweb_site}


@dataclass
class Crawl:
    """One recorded crawl."""

    events: list[dict[str, Any]]
    stats: dict[str, Any]
    key: Callable[[str], str] | None = None
    responses: list[dict[str, Any]] = field(init=False)

    def __post_init__(self) -> None:
        self.responses = [e for e in self.events if e["kind"] == "response"]
        if self.key is not None:
            for e in self.responses:
                e["page"] = self.key(e["url"])

    @property
    def pages(self) -> set[str]:
        return {e["page"] for e in self.responses if e["status"] == 200}

    @property
    def duplicates(self) -> int:
        """Successful downloads of a page downloaded before (error pages are no pages)."""
        seen: set[str] = set()
        count = 0
        for e in self.responses:
            if e["status"] == 200:
                count += e["page"] in seen
                seen.add(e["page"])
        return count

    @property
    def seconds(self) -> float:
        return float(self.stats.get("elapsed_time_seconds", 0.0))

    def late_over_early(self) -> float | None:
        """Rate of the last :data:`WINDOW` downloads ÷ rate of the first."""
        t = [e["t"] for e in self.responses]
        if len(t) < 2 * WINDOW:
            return None
        early, late = t[WINDOW - 1] - t[0], t[-1] - t[-WINDOW]
        return early / late if late > 0 else None

    def duplicate_causes(self) -> Counter[tuple[tuple[str, ...], bool]]:
        """The duplicate downloads by what tells each URL from the one the page was first
        downloaded under: the query parameters the two differ in (``("(path)",)`` when their
        paths differ, none when only the way the query is written does), and whether one of
        those parameters tells two other downloads on the same path apart (their URLs differ
        in it alone, its value or whether it is there, and their pages differ). A duplicate of
        that second kind comes from the site's data — a one-ticket list in any sort order, a
        file unchanged between two commits — and a URL rule that removed it would merge
        distinct pages elsewhere on its path."""
        ok = [e for e in self.responses if e["status"] == 200]
        parsed = {e["url"]: _parameters(e["url"]) for e in ok}
        keys_on: dict[str, set[str]] = {}
        for path, params in parsed.values():
            keys_on.setdefault(path, set()).update(k for k, _ in params)
        page_of: dict[tuple[str, str, tuple[tuple[str, str], ...]], str] = {}
        matters: set[tuple[str, str]] = set()
        for e in ok:
            path, params = parsed[e["url"]]
            for key in keys_on[path]:
                rest = (key, path, tuple(p for p in params if p[0] != key))
                if page_of.setdefault(rest, e["page"]) != e["page"]:
                    matters.add((path, key))
        first: dict[str, str] = {}
        causes: Counter[tuple[tuple[str, ...], bool]] = Counter()
        for e in ok:
            seen = first.get(e["page"])
            if seen is None:
                first[e["page"]] = e["url"]
                continue
            (path, mine), (other_path, theirs) = parsed[e["url"]], parsed[seen]
            if path != other_path:
                causes[("(path)",), False] += 1
                continue
            keys = tuple(sorted({k for k, _ in set(mine) ^ set(theirs)}))
            causes[keys, any((path, k) in matters for k in keys)] += 1
        return causes

    def turned_away(self, tool: str) -> dict[str, str]:
        """URL → the URL it was taken for, for what the tool turned away beyond what
        Scrapy's dupefilter would have dropped: duplicate-url-discarder's drops of a URL the
        scheduler never took, scrapy-templates' drops and rewrites of a URL never downloaded
        (its downloader middleware drops requests the scheduler took)."""
        scheduled = {canonicalize_url(e["url"]) for e in self.events if e["kind"] == "scheduled"}
        fetched = {canonicalize_url(e["url"]) for e in self.responses}
        claims: dict[str, str] = {}
        if tool == "duplicate-url-discarder":
            from duplicate_url_discarder.url_canonicalizer import UrlCanonicalizer
            from duplicate_url_discarder_rules import RULE_PATHS

            canonical = UrlCanonicalizer(RULE_PATHS).process_url
            first: dict[str, str] = {}
            for e in self.events:
                if e["kind"] == "scheduled":
                    first.setdefault(canonical(e["url"]), e["url"])
                elif e["kind"] == "dupefilter" and canonicalize_url(e["url"]) not in scheduled:
                    claims.setdefault(e["url"], first.get(canonical(e["url"]), e["url"]))
        elif tool == "scrapy-templates":
            for e in self.events:
                turned = e["kind"] in ("dropped", "rewrote")
                if turned and canonicalize_url(e["url"]) not in fetched:
                    claims.setdefault(e["url"], e["canonical"])
        return claims


def _parameters(url: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    """A URL's path and its query parameters, sorted (``;`` separates them as ``&`` does)."""
    parts = urlsplit(url)
    return parts.path, tuple(sorted(parse_qsl(parts.query.replace(";", "&"), True)))


def _demo_key(url: str) -> str:
    from demo.site import page_key

    return repr(page_key(urlsplit(url)._replace(scheme="", netloc="").geturl()))


KEYS: dict[str, Callable[[str], str]] = {"demo": _demo_key}


def crawl(site: str, tool: str, url: str, budget: int) -> Crawl:
    out = OUT / f"urlcrawls-{site}-{tool.split()[0].lower()}"
    cmd = [sys.executable, "-m", "benchmarks.crawl", url, str(out), "--record", *TOOLS[tool]]
    for setting in (f"CLOSESPIDER_PAGECOUNT={budget}", "CONCURRENT_REQUESTS=1"):
        cmd += ["--set", setting]
    subprocess.run(cmd, check=True, cwd=ROOT)
    with (out / "record.jsonl").open(encoding="utf-8") as f:
        events = [json.loads(line) for line in f]
    return Crawl(events, json.loads((out / "stats.json").read_text()), KEYS.get(site))


def fetch_identity(url: str) -> str:
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            kind = response.headers.get("Content-Type", "")
            return page_identity(response.read(), kind)
    except urllib.error.HTTPError as error:
        return f"{error.code}:" + page_identity(error.read(), error.headers.get("Content-Type", ""))
    except (OSError, ValueError) as error:
        return f"error:{type(error).__name__}"


def _page(identity: str) -> bool:
    return ":" not in identity


def losses(crawl: Crawl, tool: str) -> dict[str, int]:
    """Wrong merges and pages lost among the URLs the tool turned away (module docstring)."""
    claims = crawl.turned_away(tool)
    urls = sorted(set(claims) | set(claims.values()))
    with ThreadPoolExecutor(4) as pool:
        identity = dict(zip(urls, pool.map(crawl.key or fetch_identity, urls), strict=True))
    pages = crawl.pages
    # a URL that answers with an error is no page: turning it away loses nothing
    wrong = [u for u, c in claims.items() if identity[u] != identity[c] and _page(identity[u])]
    lost = {identity[u] for u in wrong if identity[u] not in pages}
    return {"turned_away": len(claims), "wrong": len(wrong), "lost": len(lost)}


def compare(site: str, budget: int) -> dict[str, dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    with _sites()[site]() as url:
        for tool in TOOLS:
            c = crawl(site, tool, url, budget)
            rows[tool] = {
                "downloads": len(c.responses),
                "duplicates": c.duplicates,
                "pages": len(c.pages),
                "seconds": c.seconds,
                "per_minute": 60 * len(c.pages) / c.seconds if c.seconds else 0.0,
                "late_over_early": c.late_over_early(),
                **losses(c, tool),
            }
            if tool == "plain Scrapy":
                rows[tool]["causes"] = [[*k, n] for k, n in c.duplicate_causes().most_common()]
            print(site, tool, rows[tool], flush=True)
    plain = rows["plain Scrapy"]
    for row in rows.values():
        row["cut"] = 1 - row["duplicates"] / plain["duplicates"] if plain["duplicates"] else 0.0
        row["speed"] = row["per_minute"] / plain["per_minute"] if plain["per_minute"] else 0.0
    return rows


def table(results: dict[str, dict[str, dict[str, Any]]], budget: int) -> list[str]:
    lines = [
        "| site | tool | downloads | duplicate downloads | cut | distinct pages | pages lost "
        "(wrong merges / turned away) | wall s | distinct pages/min | ÷ plain | late ÷ early |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for site, rows in results.items():
        for tool, r in rows.items():
            share = r["duplicates"] / r["downloads"] if r["downloads"] else 0.0
            late = r["late_over_early"]
            lines.append(
                f"| {site} | {tool} | {r['downloads']} | {r['duplicates']} ({share:.0%}) | "
                f"{r['cut']:.2f} | {r['pages']} | {r['lost']} ({r['wrong']} / "
                f"{r['turned_away']}) | {r['seconds']:.0f} | {r['per_minute']:.0f} | "
                f"{r['speed']:.2f} | {'–' if late is None else f'{late:.2f}'} |"
            )
    lines += ["", f"Every crawl stops at {budget} downloads.", ""]
    return lines


def causes_table(results: dict[str, dict[str, dict[str, Any]]], most: int = 4) -> list[str]:
    """Plain Scrapy's duplicate downloads per site (:meth:`Crawl.duplicate_causes`): how many
    differ from the page's first URL in a parameter that tells other pages apart on the same
    path, and the most common differences."""
    lines = [
        "| site | duplicate downloads | in a parameter that tells pages apart on the path | "
        "most common differences |",
        "|---|---:|---:|---|",
    ]
    for site, rows in results.items():
        causes = rows["plain Scrapy"]["causes"]
        total = sum(n for *_, n in causes)
        data = sum(n for _, matters, n in causes if matters)
        common = "; ".join(
            f"{' '.join(keys) or 'the same parameters'}"
            f"{' (tells pages apart)' if matters else ''}: {n}"
            for keys, matters, n in causes[:most]
        )
        share = data / total if total else 0.0
        lines.append(f"| {site} | {total} | {data} ({share:.0%}) | {common} |")
    return [*lines, ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sites", default=",".join(SITES))
    parser.add_argument("--budget", type=int, default=1000)
    args = parser.parse_args()
    results = {site: compare(site, args.budget) for site in args.sites.split(",")}
    print("\n".join(table(results, args.budget)))
    (OUT / "urlcrawls.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
