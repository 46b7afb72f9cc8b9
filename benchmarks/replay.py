"""Content quality of every development site in one run, from stored crawls replayed offline.

    python -m benchmarks.replay record [--sites a,b]   # crawl each site once, store its order
    python -m benchmarks.replay [--sites a,b] [--set NAME=VALUE ...] [--docs]

``record`` crawls each site live with default settings (as ``benchmarks.quality`` does) and
stores the order the pipeline marked its pages in: ``benchmarks/replays/<site>.txt``, one URL
path per line under a header naming the Debian package and its version. The pages themselves
are the package's files, read from disk when replaying.

The default command replays every stored crawl through :func:`scrapy_templates.marker.replay`
— the pipeline's own marking flow, with its cold start and relearning by page counts, no
Scrapy and no network — and scores each page's content text against the site's gold
container as ``benchmarks.quality`` does; it also times the replay beyond parsing the pages:
the marking's own cost per page. The single-page extractors are scored on the same pages once
and cached in ``benchmarks/output/peers/``. ``--docs`` writes the table into
``docs/quality.md``. The live crawl benchmark stays the judge of the cold start in real crawl
order; the replay judges every site at once.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scrapy.settings import BaseSettings

from benchmarks.crawl import setting
from benchmarks.quality import PEERS, crawl, peer_score, prf, tokens
from benchmarks.realsites import (
    GOLD_VERSION,
    SITES,
    Site,
    ensure_installed,
    gold_text,
    local_file,
)
from scrapy_templates.config import TemplatesConfig
from scrapy_templates.marker import parse_configured, replay
from scrapy_templates.page import PageError
from scrapy_templates.store.memory import MemoryStore

ROOT = Path(__file__).resolve().parent.parent
REPLAYS = ROOT / "benchmarks" / "replays"
PEER_CACHE = ROOT / "benchmarks" / "output" / "peers"
FIRST = 50

Score = tuple[float, float, float]


def package_version(package: str) -> str:
    found = subprocess.run(
        ["dpkg-query", "-W", "-f=${Version}", package], capture_output=True, text=True
    )
    return found.stdout.strip() or "unknown"


def record(site: Site) -> Path:
    """Crawl ``site`` live with default settings and store the order its items came in."""
    items, _, _ = crawl(site, [])
    origin = items[0]["url"].split("/", 3)[:3] if items else []
    prefix = "/".join(origin)
    paths = [item["url"][len(prefix) :] for item in items if item["url"].startswith(prefix)]
    REPLAYS.mkdir(parents=True, exist_ok=True)
    path = REPLAYS / f"{site.name}.txt"
    header = f"# {site.name}: {site.package} {package_version(site.package)}, {len(paths)} pages"
    path.write_text("\n".join([header, *paths]) + "\n")
    return path


@dataclass(frozen=True)
class Stored:
    """A stored crawl: the package version it was recorded with and the page paths in order."""

    header: str
    paths: list[str]

    @classmethod
    def load(cls, path: Path) -> Stored:
        lines = path.read_text().splitlines()
        header = lines[0] if lines and lines[0].startswith("#") else ""
        return cls(header, [line for line in lines if line and not line.startswith("#")])


def _mean(rows: list[Score]) -> Score:
    if not rows:
        return (0.0, 0.0, 0.0)
    n = len(rows)
    return (sum(r[0] for r in rows) / n, sum(r[1] for r in rows) / n, sum(r[2] for r in rows) / n)


def replay_site(site: Site, stored: Stored, config: TemplatesConfig) -> dict[str, Any]:
    """Replay one stored crawl; the scores of its pages against the gold container."""
    base = "http://127.0.0.1:8000"
    pages = []
    missing = 0
    for path in stored.paths:
        file = local_file(site, base + path)
        if file.is_file():
            pages.append((base + path, file.read_bytes()))
        else:
            missing += 1
    golds = {url: gold_text(site, html) for url, html in pages}

    async def run() -> list[tuple[str, str | None]]:
        store = MemoryStore()
        await store.open()
        try:
            return [
                (r.url, r.marks.content if r.marks else None)
                async for r in replay(pages, config, store)
            ]
        finally:
            await store.close()

    # the first pass warms the parser, as the replay's own parse is warm after it
    parsing = min(parse_seconds(pages, config) for _ in range(2))
    t0 = time.perf_counter()
    marked = asyncio.run(run())
    seconds = time.perf_counter() - t0
    scores: list[tuple[str, Score]] = []
    for url, content in marked:
        gold = golds[url]
        if tokens(gold):
            scores.append((url, prf(content or "", gold)))
    worst = sorted(scores, key=lambda s: s[1][2])[:5]
    return {
        "pages": len(scores),
        "missing": missing,
        "seconds": round(seconds, 1),
        "marking_ms": (seconds - parsing) / max(1, len(pages)) * 1000,
        "parsing_ms": parsing / max(1, len(pages)) * 1000,
        "ours": _mean([s for _, s in scores]),
        "first50": _mean([s for _, s in scores[:FIRST]]),
        "worst": [(url[len(base) :], round(s[2], 3)) for url, s in worst],
        "urls": [url for url, _ in scores],
        "golds": golds,
        "html": dict(pages),
    }


def parse_seconds(pages: list[tuple[str, bytes]], config: TemplatesConfig) -> float:
    """How long parsing ``pages`` takes, as the replay parses each: what the replay's time is
    beyond its marking (counting, deciding, learning)."""
    t0 = time.perf_counter()
    for url, html in pages:
        with contextlib.suppress(PageError):
            parse_configured(html, url, config)
    return time.perf_counter() - t0


def peer_scores(site: Site, stored: Stored, result: dict[str, Any]) -> dict[str, Score]:
    """The single-page extractors on the replayed pages, cached by package version and pages."""
    urls: list[str] = result["urls"]
    keyed = "\n".join([stored.header, f"gold {GOLD_VERSION}", *urls])
    key = hashlib.blake2b(keyed.encode(), digest_size=8).hexdigest()
    cache = PEER_CACHE / f"{site.name}-{key}.json"
    if cache.is_file():
        return {k: (v[0], v[1], v[2]) for k, v in json.loads(cache.read_text()).items()}
    html: dict[str, bytes] = result["html"]
    golds: dict[str, str] = result["golds"]
    found: dict[str, Score] = {}
    for name in PEERS:
        found[name] = _mean([peer_score(name, html[url], golds[url]) for url in urls])
    PEER_CACHE.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(found))
    return found


def table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| site | pages | P | R | F1 | first 50 F1 | best single-page tool | its F1 | margin "
        "| marking ms / page |",
        "|---|---:|---:|---:|---:|---:|---|---:|---:|---:|",
    ]
    for r in rows:
        p, rec, f = r["ours"]
        best_name, best = max(r["peers"].items(), key=lambda kv: kv[1][2])
        lines.append(
            f"| {r['site']} | {r['pages']} | {p:.3f} | {rec:.3f} | {f:.3f} | "
            f"{r['first50'][2]:.3f} | {best_name} | {best[2]:.3f} | {f - best[2]:+.3f} | "
            f"{r['marking_ms']:.2f} |"
        )
    worst = min(rows, key=lambda r: r["ours"][2])
    lines.append("")
    lines.append(f"Worst site: **{worst['site']}**, F1 {worst['ours'][2]:.3f}.")
    return lines


def write_docs(rows: list[dict[str, Any]], settings: list[str]) -> None:
    path = ROOT / "docs" / "quality.md"
    text = path.read_text() if path.is_file() else "# Content quality on real sites\n"
    start, end = "<!-- replay -->", "<!-- /replay -->"
    changed = f" with {', '.join(settings)}" if settings else " with default settings"
    block = [
        start,
        "## Every site, replayed",
        "",
        "Generated by `python -m benchmarks.replay --docs`: each site's stored crawl "
        f"(`benchmarks/replays/`) replayed through the pipeline's marking{changed}, every page "
        "scored as above; *best single-page tool* is the best of "
        f"{', '.join(PEERS)} on the same pages. *Marking ms / page* is the replay's time "
        "beyond parsing its pages (counting in the memory store, deciding, learning, the "
        "relearning by page counts) per page read, the parse timed apart on warm pages; from "
        "one run, so a figure moves from run to run (by over a millisecond on the slowest "
        "sites).",
        "",
        *table(rows),
        end,
    ]
    if start in text:
        head, _, rest = text.partition(start)
        _, _, tail = rest.partition(end)
        text = head + "\n".join(block) + tail
    else:
        text = text.rstrip("\n") + "\n\n" + "\n".join(block) + "\n"
    path.write_text(text)


def config_of(pairs: list[str]) -> TemplatesConfig:
    settings = BaseSettings()
    for pair in pairs:
        settings.set(*setting(pair))
    return TemplatesConfig.from_settings(settings)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("command", nargs="?", choices=["record", "score"], default="score")
    parser.add_argument("--sites", default=",".join(SITES))
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--skip-peers", action="store_true")
    parser.add_argument("--docs", action="store_true", help="write the table into docs/")
    args = parser.parse_args(argv)
    sites = [SITES[name] for name in args.sites.split(",")]
    ensure_installed(sites)
    if args.command == "record":
        for site in sites:
            print(f"recorded {record(site)}")
        return
    config = config_of(args.set)
    rows = []
    t0 = time.perf_counter()
    for site in sites:
        stored_path = REPLAYS / f"{site.name}.txt"
        if not stored_path.is_file():
            sys.exit(f"no stored crawl of {site.name}: run `python -m benchmarks.replay record`")
        stored = Stored.load(stored_path)
        result = replay_site(site, stored, config)
        peers = {} if args.skip_peers else peer_scores(site, stored, result)
        del result["html"], result["golds"]  # each site's pages, needed no further
        rows.append({"site": site.name, **result, "peers": peers or {"-": (0.0, 0.0, 0.0)}})
        p, r, f = result["ours"]
        print(
            f"{site.name:10} {result['pages']:5} pages  P {p:.3f} R {r:.3f} F1 {f:.3f}  "
            f"first50 {result['first50'][2]:.3f}  ({result['seconds']}s, marking "
            f"{result['marking_ms']:.2f} ms a page)  "
            f"worst {result['worst'][:3]}",
            flush=True,
        )
    print(f"{time.perf_counter() - t0:.0f}s in all")
    print("\n".join(table(rows)))
    if args.docs:
        write_docs(rows, args.set)


if __name__ == "__main__":
    main()
