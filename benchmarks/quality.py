"""Content-text quality on real sites: scrapy-templates against single-page extractors.

    python -m benchmarks.quality [--sites sqlite,django,git,gtk3,javadoc] [--skip-peers]
                                 [--compare-exact]

For each site: serve it on 127.0.0.1, crawl it with the add-on (memory store, default
settings), and score every exported item's ``content_text`` against the site's gold
main-content container: lowercased ``\\w+`` tokens, multiset overlap, precision / recall / F1
macro-averaged over pages. trafilatura, jusText, readability-lxml and boilerpy3 are scored on
the same pages. "first 50" is the same score over the first 50 items the crawl exported (the
cold start). Writes ``docs/quality.md`` and ``benchmarks/output/quality.json``.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from benchmarks.realsites import SITES, Site, ensure_installed, gold_text, local_file, serve

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "output"
_TOKEN = re.compile(r"\w+")


def tokens(text: str) -> Counter[str]:
    return Counter(_TOKEN.findall(text.lower()))


def prf(pred: str, gold: str) -> tuple[float, float, float]:
    p_tok, g_tok = tokens(pred), tokens(gold)
    overlap = sum((p_tok & g_tok).values())
    p = overlap / sum(p_tok.values()) if p_tok else 0.0
    r = overlap / sum(g_tok.values()) if g_tok else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return p, r, f


def _trafilatura(html: bytes) -> str:
    import trafilatura

    return trafilatura.extract(html) or ""


def _justext(html: bytes) -> str:
    import justext

    paragraphs = justext.justext(html, justext.get_stoplist("English"))
    return "\n".join(p.text for p in paragraphs if not p.is_boilerplate)


def _readability(html: bytes) -> str:
    import lxml.html
    from readability import Document

    summary = Document(html.decode("utf-8", "replace")).summary()
    return str(lxml.html.fromstring(summary).text_content()) if summary.strip() else ""


def _boilerpy3(html: bytes) -> str:
    from boilerpy3 import extractors

    return str(extractors.ArticleExtractor().get_content(html.decode("utf-8", "replace")))


PEERS: dict[str, Callable[[bytes], str]] = {
    "trafilatura": _trafilatura,
    "jusText": _justext,
    "readability-lxml": _readability,
    "boilerpy3": _boilerpy3,
}


def _mean(rows: list[tuple[float, float, float]]) -> list[float]:
    return [round(sum(r[i] for r in rows) / len(rows), 4) if rows else 0.0 for i in range(3)]


def crawl(site: Site, extra: list[str]) -> tuple[list[dict], dict, float]:
    out_dir = OUT / f"crawl-{site.name}"
    with serve(site) as start_url:
        t0 = time.perf_counter()
        cmd = [sys.executable, "-m", "benchmarks.crawl", start_url, str(out_dir)]
        for pair in extra:
            cmd += ["--set", pair]
        subprocess.run(cmd, check=True, cwd=ROOT)
        elapsed = time.perf_counter() - t0
    items = [json.loads(line) for line in (out_dir / "items.jsonl").read_text().splitlines()]
    stats = json.loads((out_dir / "stats.json").read_text())
    return items, stats, elapsed


def score_site(site: Site, skip_peers: bool, extra: list[str]) -> dict:
    items, stats, elapsed = crawl(site, extra)
    ours: list[tuple[float, float, float]] = []
    peers: dict[str, list[tuple[float, float, float]]] = {name: [] for name in PEERS}
    skipped = Counter()
    worst = []
    for item in items:
        path = local_file(site, item["url"])
        if not path.is_file():
            skipped["no-file"] += 1
            continue
        html = path.read_bytes()
        gold = gold_text(site, html)
        if not tokens(gold):
            skipped["empty-gold"] += 1
            continue
        if "content_text" not in item:
            skipped["not-marked"] += 1
            ours.append((0.0, 0.0, 0.0))
            continue
        score = prf(item["content_text"], gold)
        ours.append(score)
        worst.append((score[2], item["url"]))
        if not skip_peers:
            for name, extract in PEERS.items():
                try:
                    peers[name].append(prf(extract(html), gold))
                except Exception:
                    peers[name].append((0.0, 0.0, 0.0))
    worst.sort()
    return {
        "site": site.name,
        "gold": site.gold_doc,
        "items": len(items),
        "scored": len(ours),
        "skipped": dict(skipped),
        "crawl_seconds": round(elapsed, 1),
        "bootstrap_pages": stats.get("templates/bootstrap_pages", 0),
        "ours": _mean(ours),
        "ours_first50": _mean(ours[:50]),
        "peers": {name: _mean(rows) for name, rows in peers.items() if rows},
        "worst": worst[:5],
    }


def write_markdown(results: list[dict], path: Path) -> None:
    lines = [
        "# Content quality on real sites",
        "",
        "Generated by `python -m benchmarks.quality`. Token precision / recall / F1 of each "
        "page's content text against the site's gold main-content container (lowercased `\\w+` "
        "tokens, multiset overlap, macro-averaged over pages). Every item the crawl exported is "
        "scored, from the first one on; *first 50* is the score of the first 50 items alone. "
        "*Exact counting only* is the same crawl with `TEMPLATES_LAYOUT = False` (no layout "
        "clusters, no block variability).",
        "",
        "| site | pages | tool | P | R | F1 |",
        "|---|---:|---|---:|---:|---:|",
    ]
    for r in results:
        rows = [
            ("**scrapy-templates**", r["ours"]),
            ("scrapy-templates, first 50", r["ours_first50"]),
        ]
        if "exact_only" in r:
            rows += [
                ("scrapy-templates, exact counting only", r["exact_only"]),
                ("scrapy-templates, exact counting only, first 50", r["exact_only_first50"]),
            ]
        rows += sorted(r["peers"].items(), key=lambda kv: -kv[1][2])
        for name, (p, rec, f) in rows:
            lines.append(
                f"| {r['site']} | {r['scored']} | {name} | {p:.3f} | {rec:.3f} | {f:.3f} |"
            )
    lines += ["", "Gold containers:", ""]
    lines += [f"- **{r['site']}**: {r['gold']}" for r in results]
    path.write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sites", default=",".join(SITES))
    parser.add_argument("--skip-peers", action="store_true")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--no-docs", action="store_true", help="do not rewrite docs/quality.md")
    parser.add_argument(
        "--compare-exact",
        action="store_true",
        help="crawl each site again with TEMPLATES_LAYOUT=false and add its scores",
    )
    args = parser.parse_args()
    sites = [SITES[name] for name in args.sites.split(",")]
    ensure_installed(sites)
    OUT.mkdir(parents=True, exist_ok=True)
    results = []
    for site in sites:
        result = score_site(site, args.skip_peers, args.set)
        if args.compare_exact:
            exact = score_site(site, True, [*args.set, "TEMPLATES_LAYOUT=false"])
            result["exact_only"], result["exact_only_first50"] = (
                exact["ours"],
                exact["ours_first50"],
            )
        results.append(result)
        print(json.dumps(result, indent=1))
    (OUT / "quality.json").write_text(json.dumps(results, indent=1))
    if not args.no_docs:
        (ROOT / "docs").mkdir(exist_ok=True)
        write_markdown(results, ROOT / "docs" / "quality.md")


if __name__ == "__main__":
    main()
