"""Crawl throughput with and without scrapy-templates.

    python -m benchmarks.throughput [--rounds 6] [--sites sqlite,git,django] [--no-demo]

Serves the bundled demo site on 127.0.0.1 and crawls it with the example project's spider,
alternating a crawl with the add-on (memory store, URL rules off) and one without, in
separate processes. Throughput is items exported per second of crawl (Scrapy's
``elapsed_time_seconds``); the ratio is the median over rounds of with ÷ without.

Then the same on real documentation sites (:mod:`benchmarks.realsites`), with the add-on's
default settings — URL rules on, the cold start's wait included: sites without duplicate
URLs, where the add-on can only cost time — and with URL rules off, for their share of that
cost. Writes ``docs/throughput.md``.
"""

from __future__ import annotations

import argparse
import itertools
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
) -> tuple[int, float, int, float]:
    """Items, seconds, downloads and the crawl thread's CPU seconds of one crawl."""
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
        float(stats.get("benchmark/thread_cpu_seconds", "nan")),
    )


Runs = dict[str, list[tuple[int, float, int, float]]]
# how each kind of crawl runs: (with the add-on, URL rules on)
MODES = {"without": (False, False), "with": (True, True), "rules off": (True, False)}


def alternate(url: str, name: str, rounds: int, extra: list[str], modes: list[str]) -> Runs:
    """``rounds`` crawls of each of ``modes``, each round in the next of their orders (with
    rounds a multiple of the orders' number, 2 for two modes and 6 for three, each mode runs
    as often in each place of a round; which crawl runs after which still differs at the
    rounds' boundaries)."""
    runs: Runs = {mode: [] for mode in modes}
    orders = list(itertools.permutations(modes))
    for i in range(rounds):
        for mode in orders[i % len(orders)]:
            addon, url_rules = MODES[mode]
            out = OUT / f"throughput-{name}-{mode.replace(' ', '-')}"
            runs[mode].append(crawl(url, out, addon, extra, url_rules))
    return runs


def rates(runs: Runs) -> dict[str, list[float]]:
    """Items per second of each crawl."""
    return {mode: [run[0] / run[1] for run in rs] for mode, rs in runs.items()}


def per_round(rate: dict[str, list[float]], over: str, under: str) -> list[float]:
    """``over`` ÷ ``under``, round by round."""
    return [a / b for a, b in zip(rate[over], rate[under], strict=True)]


def _thread_cpu(runs: Runs, mode: str) -> float:
    return statistics.median(run[3] for run in runs[mode])


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
        "included) and without the add-on, each round taking the crawls in the next of their "
        "orders. These sites have no duplicate URLs: "
        "the add-on saves no download, and what it does costs time, save that it ends repeated "
        "links before Scrapy's scheduler (`TEMPLATES_URL_DROP_REPEATS`), which spares Scrapy's "
        "own work on each.",
        "",
        "A third crawl per round keeps the add-on but turns URL rules off "
        "(`TEMPLATES_URL_RULES=false`, which ends `TEMPLATES_URL_DROP_REPEATS` too): URL rules "
        "on ÷ off is their net effect on a site with no duplicate for them to save, the work "
        "of their middlewares and learning less the repeated links they end before Scrapy's "
        "scheduler. *Thread CPU* is the CPU time of the crawl's thread from open to close "
        "(median; the add-on's workers run in other processes).",
        "",
        "| site | items | items/s without | items/s with | with ÷ without (median) | per round "
        "| items/s URL rules off | URL rules on ÷ off (median) | thread CPU s without / with |",
        "|---|---:|---:|---:|---:|---|---:|---:|---|",
    ]
    for site in sites:
        with serve(site) as url:
            runs = alternate(url, site.name, rounds, extra, ["without", "with", "rules off"])
        rate = rates(runs)
        ratio = per_round(rate, "with", "without")
        rules = per_round(rate, "with", "rules off")
        lines.append(
            f"| {site.name} | {runs['without'][0][0]} | {statistics.median(rate['without']):.1f} "
            f"| {statistics.median(rate['with']):.1f} | **{statistics.median(ratio):.2f}** | "
            + ", ".join(f"{r:.2f}" for r in ratio)
            + f" | {statistics.median(rate['rules off']):.1f} | {statistics.median(rules):.2f} | "
            f"{_thread_cpu(runs, 'without'):.2f} / {_thread_cpu(runs, 'with'):.2f} |"
        )
        print(lines[-1], flush=True)
    lines += ["", "Target: with ÷ without ≥ 0.90 on a documentation site."]
    return lines


def demo_lines(rounds: int, articles: int, extra: list[str]) -> list[str]:
    """The demo site's section: its template pipeline (URL rules off) against plain Scrapy."""
    os.environ["DEMO_SITE_ARTICLES"] = str(articles)
    from demo.site import DemoSite

    with DemoSite() as site:
        runs = alternate(site.url, "demo", rounds, extra, ["rules off", "without"])
    rate = rates(runs)
    ratio = per_round(rate, "rules off", "without")
    return [
        "# Crawl throughput",
        "",
        f"Generated by `python -m benchmarks.throughput --rounds {rounds} --articles "
        f"{articles}`: a crawl of the demo site grown to {articles} articles "
        f"({runs['without'][0][0]} pages) on 127.0.0.1, with and without the add-on, alternating, "
        "each in its own process.",
        "",
        "| crawl | items/s (median) | downloads |",
        "|---|---:|---:|",
        *(
            f"| {label} | {statistics.median(rate[mode]):.0f} | {runs[mode][0][2]} |"
            for label, mode in (("without the add-on", "without"), ("with the add-on", "rules off"))
        ),
        "",
        f"- with ÷ without: **{statistics.median(ratio):.2f}** (target ≥ 0.90); per round: "
        + ", ".join(f"{r:.2f}" for r in ratio),
        "- URL rules are off in both crawls (`TEMPLATES_URL_RULES=false`): with them on, the "
        "crawl downloads far fewer pages, which is measured in `docs/url-rules.md`.",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=6)
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
    parser.add_argument(
        "--no-demo",
        action="store_true",
        help="the documentation sites only (prints their table; docs/throughput.md is left)",
    )
    args = parser.parse_args()
    lines = [] if args.no_demo else demo_lines(args.rounds, args.articles, args.set)
    names = [name for name in args.sites.split(",") if name]
    if names:
        lines += real_sites(names, args.rounds, args.set)
    text = "\n".join(lines) + "\n"
    print(text)
    if not (args.no_docs or args.no_demo):
        (ROOT / "docs").mkdir(exist_ok=True)
        (ROOT / "docs" / "throughput.md").write_text(text)


if __name__ == "__main__":
    main()
