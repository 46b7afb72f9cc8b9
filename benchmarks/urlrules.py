"""Quality and speed of the learned URL rules.

    python -m benchmarks.urlrules [--rounds 3] [--no-docs]

1. Quality (metrics of ``003_…`` §3): each site is crawled once with the add-on and URL rules
   off, so every URL variant is downloaded; the exported items give samples (page simhash,
   content hash, rel=canonical) and thus duplicate clusters from page content — the ground
   truth. Rules are learned from a random half of the URLs and applied to all of them, next to
   ``w3lib.url.canonicalize_url``, ``courlan.normalize_url`` and the identity. Sites: the demo
   site and Trac (``pip install Trac``; a fresh environment with 60 tickets is created and
   served with ``tracd`` on localhost; the crawl stops at 800 pages).
2. Crawl: the demo crawl with and without the add-on, ``--rounds`` times, 16 requests at a
   time; duplicate downloads are items whose page (the demo site's own ``page_key``) was
   already downloaded. Then whole crawls side by side (:mod:`benchmarks.urlcrawls`): plain
   Scrapy, duplicate-url-discarder and the add-on on the demo site, Trac, Roundup and gitweb,
   ``--budget`` downloads each.
3. Speed: ``RuleSet.apply`` per URL against ``canonicalize_url`` on the same URLs, and the time
   to learn from 100,000 synthetic URLs.

Writes ``docs/url-rules.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "output"
sys.path.insert(0, str(ROOT / "example_project"))


def crawl(start: str, out: Path, *settings: str, addon: bool = True) -> list[dict[str, Any]]:
    cmd = [sys.executable, "-m", "benchmarks.crawl", start, str(out)]
    if not addon:
        cmd.append("--no-addon")
    for setting in settings:
        cmd += ["--set", setting]
    subprocess.run(cmd, check=True, cwd=ROOT)
    with (out / "items.jsonl").open(encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def evaluate(
    urls: Sequence[str], clusters: Sequence[int], normalize: Callable[[str], str]
) -> dict[str, float]:
    """Compression, dup-reduction and false-positive rates of ``normalize`` (eqs. 1–3)."""
    import numpy as np

    from scrapy_templates.urlnorm.learn import support_and_fpr

    groups: dict[str, list[int]] = {}
    for i, url in enumerate(urls):
        groups.setdefault(normalize(url), []).append(i)
    n_ori, n_norm = len(urls), len(groups)
    c_ori = len(set(clusters))
    # clusters joined by a shared normalized URL count as one after normalization
    parent = list(range(max(clusters) + 1))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for members in groups.values():
        first = find(clusters[members[0]])
        for m in members[1:]:
            parent[find(clusters[m])] = first
    c_norm = len({find(c) for c in set(clusters)})
    support, fpr = support_and_fpr(np.asarray(clusters), list(groups.values()))
    dup_before = 1 - c_ori / n_ori
    dup_after = 1 - c_norm / n_norm
    return {
        "urls": n_ori,
        "clusters": c_ori,
        "normalized": n_norm,
        "ideal": 1 - c_ori / n_ori,
        "compression": 1 - n_norm / n_ori,
        "dup_reduction": 1 - dup_after / dup_before if dup_before else 0.0,
        "fpr": fpr,
        "support": support,
    }


def quality(name: str, items: list[dict[str, Any]], seeds: int = 5) -> dict[str, dict[str, float]]:
    from courlan import normalize_url
    from w3lib.url import canonicalize_url

    from scrapy_templates.urlnorm.clusters import Sample, canonical_votes, duplicate_clusters
    from scrapy_templates.urlnorm.learn import learn_rules

    samples = [Sample.from_record(item) for item in items if "templates" in item]
    urls, clusters = duplicate_clusters(samples)
    full = learn_rules(urls, clusters, site=name, votes=canonical_votes(samples, urls))
    methods: dict[str, Callable[[str], str]] = {
        "identity": lambda u: u,
        "w3lib canonicalize_url": canonicalize_url,
        "courlan normalize_url": normalize_url,
        "rules learned from all URLs": full.ruleset.apply,
    }
    out = {m: evaluate(urls, clusters, f) for m, f in methods.items()}
    out["rules learned from all URLs"]["rules"] = len(full.ruleset.rules)
    out["rules learned from all URLs"]["learn_seconds"] = full.seconds
    # generalisation: learn from the URLs of a random half of the pages (clusters stay whole:
    # a random half of the URLs would keep a duplicate pair only one time in four on sites
    # this small) and apply to all URLs; the median run of several seeds by compression
    pages = sorted(set(clusters))
    runs = []
    for seed in range(seeds):
        half = set(random.Random(seed).sample(pages, len(pages) // 2))
        train = [i for i, c in enumerate(clusters) if c in half]
        train_urls = [urls[i] for i in train]
        report = learn_rules(
            train_urls,
            [clusters[i] for i in train],
            site=name,
            votes=canonical_votes(samples, train_urls),
        )
        run = evaluate(urls, clusters, report.ruleset.apply)
        run["rules"] = len(report.ruleset.rules)
        run["learn_seconds"] = report.seconds
        runs.append(run)
    runs.sort(key=lambda r: r["compression"])
    label = f"rules learned from half the pages (median of {seeds} seeds)"
    out[label] = runs[len(runs) // 2]
    out[label]["worst_fpr"] = max(r["fpr"] for r in runs)
    out[label]["lowest"] = runs[0]["compression"] / runs[0]["ideal"] if runs[0]["ideal"] else 0
    return out


def _path(url: str) -> str:
    return urlsplit(url)._replace(scheme="", netloc="").geturl()


def crawl_rounds(rounds: int) -> list[dict[str, Any]]:
    from demo.site import DemoSite, page_key

    results = []
    with DemoSite() as site:
        for i in range(rounds):
            row: dict[str, Any] = {}
            for addon in (i % 2 == 0, i % 2 != 0):
                out = OUT / f"urlrules-crawl-{int(addon)}"
                items = crawl(site.url, out, addon=addon)
                stats = json.loads((out / "stats.json").read_text())
                keys = [page_key(_path(it["url"])) for it in items]
                row["with" if addon else "without"] = {
                    "downloads": int(stats.get("downloader/response_count", 0)),
                    "items": len(items),
                    "pages": len(set(keys)),
                    "duplicates": len(keys) - len(set(keys)),
                    "keys": set(keys),
                    "rewritten": int(stats.get("templates/urls/rewritten", 0)),
                    "dropped": int(stats.get("templates/urls/dropped", 0)),
                    "enqueued": int(stats.get("scheduler/enqueued", 0)),
                }
            w, wo = row["with"], row["without"]
            row["cut"] = 1 - w["duplicates"] / wo["duplicates"]
            row["lost"] = len(wo["keys"] - w["keys"])
            results.append(row)
    return results


def synthetic_urls(n: int, seed: int = 3) -> tuple[list[str], list[int]]:
    """A large site with the demo's habits: each page under a few URL variants."""
    rng = random.Random(seed)
    urls: list[str] = []
    clusters: list[int] = []
    page = 0
    cats = [f"cat{i}" for i in range(40)]
    while len(urls) < n:
        cat = rng.choice(cats)
        pid = f"{page}-{rng.choice(['news', 'story', 'report'])}"
        base = f"http://big.example/{cat}/{pid}.html"
        variants = [base, f"{base}?sid={rng.getrandbits(32):08x}"]
        if rng.random() < 0.5:
            variants.append(f"{base}?print=1")
        if rng.random() < 0.3:
            variants.append(f"{base}?utm_source=feed&utm_medium=rss")
        if rng.random() < 0.4:
            variants.append(f"http://big.example/mirror/{cat}/{pid}.html")
        for v in variants[: rng.randint(1, len(variants))]:
            urls.append(v)
            clusters.append(page)
        page += 1
    return urls[:n], clusters[:n]


def speed(url_lists: list[list[str]], rulesets: list[Any]) -> dict[str, float]:
    from w3lib.url import canonicalize_url

    from scrapy_templates.urlnorm.learn import learn_rules

    pairs = [(rs, u) for rs, urls in zip(rulesets, url_lists, strict=True) for u in urls]
    work = (pairs * (60_000 // max(1, len(pairs)) + 1))[:60_000]
    ratios = []
    times: dict[str, list[float]] = {"apply": [], "canonicalize_url": []}
    for _ in range(5):
        t0 = time.perf_counter()
        for rs, u in work:
            rs.apply(u)
        t_apply = time.perf_counter() - t0
        t0 = time.perf_counter()
        for _, u in work:
            canonicalize_url(u)
        t_canon = time.perf_counter() - t0
        times["apply"].append(t_apply / len(work) * 1e6)
        times["canonicalize_url"].append(t_canon / len(work) * 1e6)
        ratios.append(t_apply / t_canon)
    urls, clusters = synthetic_urls(100_000)
    t0 = time.perf_counter()
    report = learn_rules(urls, clusters, site="big.example")
    learn_seconds = time.perf_counter() - t0
    synthetic = evaluate(urls, clusters, report.ruleset.apply)
    return {
        "apply_us": statistics.median(times["apply"]),
        "canonicalize_us": statistics.median(times["canonicalize_url"]),
        "ratio": statistics.median(ratios),
        "learn_100k_seconds": learn_seconds,
        "learn_100k_rules": len(report.ruleset.rules),
        "synthetic_compression": synthetic["compression"],
        "synthetic_ideal": synthetic["ideal"],
        "synthetic_fpr": synthetic["fpr"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3, help="demo crawls with and without")
    parser.add_argument("--no-docs", action="store_true")
    parser.add_argument("--reuse", action="store_true", help="reuse the last crawls' items")
    parser.add_argument(
        "--budget", type=int, default=1000, help="downloads per crawl side by side (part 4)"
    )
    args = parser.parse_args()
    os.environ.setdefault("TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS", "")
    from demo.site import DemoSite

    from benchmarks import urlcrawls
    from benchmarks.webapps import trac_site
    from scrapy_templates.urlnorm.clusters import Sample, canonical_votes, duplicate_clusters
    from scrapy_templates.urlnorm.learn import learn_rules

    no_rules = ("TEMPLATES_URL_RULES=false", "TEMPLATES_KEEP_HTML=false")
    if args.reuse and (OUT / "urlrules-trac" / "items.jsonl").exists():
        demo_items, trac_items = (
            [json.loads(line) for line in (OUT / d / "items.jsonl").open(encoding="utf-8")]
            for d in ("urlrules-demo", "urlrules-trac")
        )
    else:
        with DemoSite() as site:
            demo_items = crawl(site.url, OUT / "urlrules-demo", *no_rules)
        with trac_site() as trac_url:
            trac_items = crawl(
                trac_url, OUT / "urlrules-trac", *no_rules, "CLOSESPIDER_PAGECOUNT=800"
            )
    sites = {"demo site": demo_items, "Trac 1.6": trac_items}
    results = {name: quality(name, items) for name, items in sites.items()}

    url_lists, rulesets = [], []
    for name, items in sites.items():
        samples = [Sample.from_record(i) for i in items if "templates" in i]
        urls, clusters = duplicate_clusters(samples)
        votes = canonical_votes(samples, urls)
        rulesets.append(learn_rules(urls, clusters, site=name, votes=votes).ruleset)
        url_lists.append(urls)
    speeds = speed(url_lists, rulesets)
    rounds = crawl_rounds(args.rounds)
    side_by_side = {site: urlcrawls.compare(site, args.budget) for site in urlcrawls.SITES}

    lines = [
        "# URL rules: quality, crawl savings, speed",
        "",
        f"Generated by `python -m benchmarks.urlrules --rounds {args.rounds}` (see the "
        "module docstring for the method).",
        "",
        "## Quality against duplicate clusters from page content",
        "",
        "Rules are learned from all of a site's URLs (as in a crawl, which learns from what it "
        "has fetched), and — to see how they carry to unseen pages — from the URLs of a random "
        "half of its pages, then applied to all URLs. "
        "*ideal* is the compression of a perfect normalizer (1 − clusters/URLs); fpr is over "
        "URL pairs made equal.",
        "",
    ]
    for name, table in results.items():
        first = next(iter(table.values()))
        lines += [
            f"### {name}: {first['urls']} URLs, {first['clusters']} clusters, ideal compression "
            f"{first['ideal']:.3f}",
            "",
            "| method | URLs after | compression | ÷ ideal | dup-reduction | fpr |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for method, m in table.items():
            lines.append(
                f"| {method} | {m['normalized']} | {m['compression']:.3f} | "
                f"{m['compression'] / m['ideal'] if m['ideal'] else 0:.3f} | "
                f"{m['dup_reduction']:.3f} | {m['fpr']:.4f} |"
            )
        ours = table["rules learned from all URLs"]
        half = next(v for k, v in table.items() if k.startswith("rules learned from half"))
        lines += [
            "",
            f"From all URLs: {int(ours['rules'])} rule{'' if ours['rules'] == 1 else 's'}, "
            f"learned in {ours['learn_seconds']:.2f} "
            f"s. From half the pages: lowest run {half['lowest']:.3f} of ideal, highest fpr "
            f"{half['worst_fpr']:.4f}.",
            "",
        ]
    cuts = [r["cut"] for r in rounds]
    lines += [
        "## Duplicate downloads in a real crawl of the demo site",
        "",
        "| round | downloads without | duplicates without | downloads with | duplicates with "
        "| cut | pages lost | rewritten before enqueue | dropped |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for i, r in enumerate(rounds, 1):
        w, wo = r["with"], r["without"]
        lines.append(
            f"| {i} | {wo['downloads']} | {wo['duplicates']} | {w['downloads']} | "
            f"{w['duplicates']} | {r['cut']:.2f} | {r['lost']} | {w['rewritten']} | "
            f"{w['dropped']} |"
        )
    lines += [
        "",
        f"Median cut of duplicate downloads: **{statistics.median(cuts):.2f}** (target ≥ 0.80); "
        f"lowest {min(cuts):.2f}, highest {max(cuts):.2f}.",
        "",
        "## Whole crawls side by side",
        "",
        "Plain Scrapy, Scrapy with Zyte's duplicate-url-discarder and its rule pack, and "
        "scrapy-templates with its default settings, on the demo site and three real web "
        "applications (`benchmarks/webapps.py`), one request at a time, as "
        "`benchmarks/urlcrawls.py` describes. A page is what a reader sees; *pages lost* "
        "counts turned-away URLs whose page differs from the page the tool took them for and "
        "was never downloaded. Every download counts, as the downloader got it: a URL rule's "
        "check (a turned-away URL fetched anyway, a duplicate when the rule holds) and a "
        "download that ends in the downloader as a repeat of a page downloaded before are "
        "duplicate downloads too.",
        "",
        *urlcrawls.table(side_by_side, args.budget),
        "### What plain Scrapy's duplicate downloads are",
        "",
        "Each duplicate download of plain Scrapy against the URL its page was first downloaded "
        "under: the parameters the two differ in, and whether one of them tells two other "
        "downloads on the same path apart (they differ in it alone, their pages differ). Those "
        "duplicates come from the site's data — a list of one ticket in every sort order, a "
        "file unchanged between two commits — and a rule that drops such a parameter merges "
        "distinct pages elsewhere on the path; a rule can only remove them where it finds a "
        "narrower context in which the parameter never matters (one action of a script, one "
        "value of the parameter).",
        "",
        *urlcrawls.causes_table(side_by_side),
        "## Speed",
        "",
        f"- `RuleSet.apply`: {speeds['apply_us']:.1f} µs per URL; `canonicalize_url`: "
        f"{speeds['canonicalize_us']:.1f} µs; ratio **{speeds['ratio']:.2f}** (target ≤ 1), on "
        "the crawled URLs of both sites, median of 5 rounds.",
        f"- Learning from 100,000 synthetic URLs: **{speeds['learn_100k_seconds']:.1f} s** "
        f"(target ≤ 5 s); {int(speeds['learn_100k_rules'])} rules, compression "
        f"{speeds['synthetic_compression']:.3f} of ideal {speeds['synthetic_ideal']:.3f}, fpr "
        f"{speeds['synthetic_fpr']:.4f}.",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if not args.no_docs:
        (ROOT / "docs" / "url-rules.md").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
