"""Crawl throughput with and without scrapy-templates.

    python -m benchmarks.throughput [--rounds 5] [--sites sqlite,git,django]

Serves the bundled demo site on 127.0.0.1 and crawls it with the example project's spider,
alternating a crawl with the add-on (memory store, URL rules off) and one without, in
separate processes. Throughput is items exported per second of crawl (Scrapy's
``elapsed_time_seconds``); the ratio is the median over rounds of with ÷ without.

Then the same on real documentation sites (:mod:`benchmarks.realsites`), with the add-on's
default settings — URL rules on, the cold start's wait included: sites without duplicate
URLs, where the add-on can only cost time. Writes ``docs/throughput.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "output"
sys.path.insert(0, str(ROOT / "example_project"))


def crawl(
    start_url: str, out_dir: Path, addon: bool, extra: list[str], url_rules: bool = False
) -> tuple[int, float, int]:
    cmd = [sys.executable, "-m", "benchmarks.crawl", start_url, str(out_dir)]
    if not addon:
        cmd.append("--no-addon")
    else:
        if not url_rules:
            # the template pipeline's cost; URL rules change what is downloaded (their
            # savings are measured in docs/url-rules.md)
            cmd += ["--set", "TEMPLATES_URL_RULES=false"]
        for pair in extra:
            cmd += ["--set", pair]
    subprocess.run(cmd, check=True, cwd=ROOT)
    stats = json.loads((out_dir / "stats.json").read_text())
    return (
        int(stats.get("item_scraped_count", 0)),
        float(stats["elapsed_time_seconds"]),
        int(stats.get("downloader/response_count", 0)),
    )


Runs = dict[bool, list[tuple[int, float, int]]]


def alternate(url: str, name: str, rounds: int, extra: list[str], url_rules: bool) -> Runs:
    """``rounds`` crawls with the add-on and as many without, alternating which goes first."""
    runs: Runs = {True: [], False: []}
    for i in range(rounds):
        for addon in (i % 2 == 0, i % 2 != 0):
            out = OUT / f"throughput-{name}-{int(addon)}"
            runs[addon].append(crawl(url, out, addon, extra, url_rules))
    return runs


def ratios(runs: Runs) -> tuple[dict[bool, list[float]], list[float]]:
    """Items per second of each crawl, and with ÷ without per round."""
    rate = {addon: [items / secs for items, secs, _ in rs] for addon, rs in runs.items()}
    return rate, [w / wo for w, wo in zip(rate[True], rate[False], strict=True)]


def real_sites(names: list[str], rounds: int, extra: list[str]) -> list[str]:
    """The table of the documentation sites, crawled whole with default settings."""
    from benchmarks.realsites import SITES, ensure_installed, serve

    sites = [SITES[name] for name in names]
    ensure_installed(sites)
    lines = [
        "",
        "## Real documentation sites, default settings",
        "",
        f"`python -m benchmarks.throughput --sites {','.join(names)} --rounds {rounds}`: each "
        "site crawled whole, with the add-on's default settings (URL rules on, the cold start "
        "included) and without the add-on, alternating. These sites have no duplicate URLs: "
        "the add-on saves no download, and what it does costs time, save that it ends repeated "
        "links before Scrapy's scheduler (`TEMPLATES_URL_DROP_REPEATS`), which spares Scrapy's "
        "own work on each.",
        "",
        "| site | items | items/s without | items/s with | with ÷ without (median) | per round |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for site in sites:
        with serve(site) as url:
            runs = alternate(url, site.name, rounds, extra, url_rules=True)
        rate, per_round = ratios(runs)
        lines.append(
            f"| {site.name} | {runs[False][0][0]} | {statistics.median(rate[False]):.1f} | "
            f"{statistics.median(rate[True]):.1f} | **{statistics.median(per_round):.2f}** | "
            + ", ".join(f"{r:.2f}" for r in per_round)
            + " |"
        )
        print(lines[-1], flush=True)
    lines += ["", "Target: with ÷ without ≥ 0.90 on a documentation site."]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--articles", type=int, default=300, help="size of the demo site")
    parser.add_argument(
        "--sites",
        default="sqlite,git,django",
        help="real documentation sites to crawl with default settings ('' for none)",
    )
    parser.add_argument("--no-docs", action="store_true")
    parser.add_argument(
        "--set", action="append", default=[], metavar="NAME=VALUE", help="for the add-on crawl"
    )
    args = parser.parse_args()
    os.environ["DEMO_SITE_ARTICLES"] = str(args.articles)
    from demo.site import DemoSite

    with DemoSite() as site:
        runs = alternate(site.url, "demo", args.rounds, args.set, url_rules=False)
    rate, per_round = ratios(runs)
    median_ratio = statistics.median(per_round)
    lines = [
        "# Crawl throughput",
        "",
        f"Generated by `python -m benchmarks.throughput --rounds {args.rounds} --articles "
        f"{args.articles}`: a crawl of the demo site grown to {args.articles} articles "
        f"({runs[False][0][0]} pages) on 127.0.0.1, with and without the add-on, alternating, "
        "each in its own process.",
        "",
        "| crawl | items/s (median) | downloads |",
        "|---|---:|---:|",
        *(
            f"| {label} | {statistics.median(rate[addon]):.0f} | {runs[addon][0][2]} |"
            for label, addon in (("without the add-on", False), ("with the add-on", True))
        ),
        "",
        f"- with ÷ without: **{median_ratio:.2f}** (target ≥ 0.90); per round: "
        + ", ".join(f"{r:.2f}" for r in per_round),
        "- URL rules are off in both crawls (`TEMPLATES_URL_RULES=false`): with them on, the "
        "crawl downloads far fewer pages, which is measured in `docs/url-rules.md`.",
    ]
    names = [name for name in args.sites.split(",") if name]
    if names:
        lines += real_sites(names, args.rounds, args.set)
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_docs:
        (ROOT / "docs").mkdir(exist_ok=True)
        (ROOT / "docs" / "throughput.md").write_text(text)


if __name__ == "__main__":
    main()
