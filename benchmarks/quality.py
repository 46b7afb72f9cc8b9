"""Content-text quality on real sites: scrapy-templates against single-page extractors.

    python -m benchmarks.quality [--sites sqlite,django,git,gtk3,javadoc] [--skip-peers]
                                 [--repeat N] [--compare "LABEL:NAME=VALUE[,NAME=VALUE]" ...]

For each site: serve it on 127.0.0.1, crawl it with the add-on (memory store, default
settings), and score every exported item's ``content_text`` against the site's gold
main-content container: lowercased ``\\w+`` tokens, multiset overlap, precision / recall / F1
macro-averaged over pages. trafilatura, resiliparse, jusText, readability-lxml and boilerpy3
are scored on the same pages. "first 50" is the same score over the first 50 items the crawl
exported (the cold start). A crawl's order depends on which responses come back first, so a
pagelet near a share threshold is flagged on some runs and not on others: ``--repeat N`` crawls
each configuration N times and reports the mean (and the range of F1). ``--compare`` adds rows
for the add-on with other settings, crawled as many times. Writes ``docs/quality.md`` and
``benchmarks/output/quality.json``.
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


def _resiliparse(html: bytes) -> str:
    from resiliparse.extract.html2text import extract_plain_text

    return str(extract_plain_text(html.decode("utf-8", "replace"), main_content=True))


PEERS: dict[str, Callable[[bytes], str]] = {
    "trafilatura": _trafilatura,
    "resiliparse": _resiliparse,
    "jusText": _justext,
    "readability-lxml": _readability,
    "boilerpy3": _boilerpy3,
}


def peer_score(name: str, html: bytes, gold: str) -> tuple[float, float, float]:
    """One single-page extractor's score on a page: 0 when it fails on that page; a library
    that is not installed stops the benchmark rather than scoring (and caching) zeros."""
    try:
        return prf(PEERS[name](html), gold)
    except ImportError as exc:
        raise SystemExit(f"{name} is not installed ({exc}): pip install -e '.[bench]'") from exc
    except Exception:
        return (0.0, 0.0, 0.0)


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


def score_crawl(site: Site, skip_peers: bool, extra: list[str]) -> dict:
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
            for name in PEERS:
                peers[name].append(peer_score(name, html, gold))
    worst.sort()
    return {
        "items": len(items),
        "scored": len(ours),
        "skipped": dict(skipped),
        "crawl_seconds": round(elapsed, 1),
        "bootstrap_waits": stats.get("templates/bootstrap_waits", 0),
        "ours": _mean(ours),
        "ours_first50": _mean(ours[:50]),
        "peers": {name: _mean(rows) for name, rows in peers.items() if rows},
        "worst": worst[:5],
    }


def score_runs(site: Site, repeat: int, skip_peers: bool, extra: list[str]) -> dict:
    """``repeat`` crawls of one configuration: the mean scores, the F1 of each run, and the
    details of the first run (peers score the same pages on every run, so once is enough)."""
    runs = [score_crawl(site, skip_peers or i > 0, extra) for i in range(repeat)]
    first = runs[0]
    first["ours"] = [round(sum(r["ours"][i] for r in runs) / repeat, 4) for i in range(3)]
    first["ours_first50"] = [
        round(sum(r["ours_first50"][i] for r in runs) / repeat, 4) for i in range(3)
    ]
    first["f1_runs"] = [r["ours"][2] for r in runs]
    return first


def write_markdown(results: list[dict], repeat: int, path: Path) -> None:
    runs = f"the mean of {repeat} crawls (F1 range in brackets)" if repeat > 1 else "one crawl"
    lines = [
        "# Content quality on real sites",
        "",
        "Generated by `python -m benchmarks.quality`. Token precision / recall / F1 of each "
        "page's content text against the site's gold main-content container (lowercased `\\w+` "
        "tokens, multiset overlap, macro-averaged over pages). Every item the crawl exported is "
        "scored, from the first one on; *first 50* is the score of the first 50 items alone. "
        f"Rows of scrapy-templates give {runs}; other rows name the settings changed.",
        "",
        "| site | pages | tool | P | R | F1 |",
        "|---|---:|---|---:|---:|---:|",
    ]
    for r in results:
        rows = []
        for label, variant in [("**scrapy-templates**", r), *r.get("variants", {}).items()]:
            f1 = f"{variant['ours'][2]:.3f}"
            if len(variant["f1_runs"]) > 1:
                f1 += f" ({min(variant['f1_runs']):.3f}–{max(variant['f1_runs']):.3f})"
            rows.append((label, variant["ours"], f1))
            rows.append((f"{label}, first 50", variant["ours_first50"], None))
        for name, score in sorted(r["peers"].items(), key=lambda kv: -kv[1][2]):
            rows.append((name, score, None))
        for name, (p, rec, f), f1 in rows:
            shown = f1 or f"{f:.3f}"
            lines.append(
                f"| {r['site']} | {r['scored']} | {name} | {p:.3f} | {rec:.3f} | {shown} |"
            )
    lines += ["", "Gold containers:", ""]
    lines += [f"- **{r['site']}**: {r['gold']}" for r in results]
    kept = path.read_text().partition("<!-- replay -->") if path.is_file() else ("", "", "")
    if kept[1]:  # the replay benchmark's table stays
        lines += ["", kept[1] + kept[2].rstrip("\n")]
    path.write_text("\n".join(lines) + "\n")


def _variant(spec: str) -> tuple[str, list[str]]:
    label, sep, settings = spec.partition(":")
    if not sep or not settings:
        raise argparse.ArgumentTypeError(f"expected LABEL:NAME=VALUE[,NAME=VALUE], got {spec!r}")
    return label, settings.split(",")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sites", default=",".join(SITES))
    parser.add_argument("--skip-peers", action="store_true")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--repeat", type=int, default=1, help="crawls per configuration")
    parser.add_argument(
        "--compare",
        action="append",
        default=[],
        type=_variant,
        metavar="LABEL:NAME=VALUE[,NAME=VALUE]",
        help="also crawl each site with these settings and add a row LABEL",
    )
    parser.add_argument("--no-docs", action="store_true", help="do not rewrite docs/quality.md")
    args = parser.parse_args()
    sites = [SITES[name] for name in args.sites.split(",")]
    ensure_installed(sites)
    OUT.mkdir(parents=True, exist_ok=True)
    results = []
    for site in sites:
        result = score_runs(site, args.repeat, args.skip_peers, args.set)
        result = {"site": site.name, "gold": site.gold_doc, **result, "variants": {}}
        for label, settings in args.compare:
            variant = score_runs(site, args.repeat, True, [*args.set, *settings])
            result["variants"][label] = {
                k: variant[k]
                for k in ("ours", "ours_first50", "f1_runs", "settings")
                if k in variant
            } | {"settings": settings}
        results.append(result)
        print(json.dumps(result, indent=1))
    (OUT / "quality.json").write_text(json.dumps(results, indent=1))
    if not args.no_docs:
        (ROOT / "docs").mkdir(exist_ok=True)
        write_markdown(results, args.repeat, ROOT / "docs" / "quality.md")


if __name__ == "__main__":
    main()
