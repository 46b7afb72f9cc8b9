"""Downloads of two crawler processes sharing one Redis, against one process, both cold.

    python -m benchmarks.processes [--rounds 5] [--large-rounds 3]

Serves the demo site and crawls it with scrapy-redis (shared scheduler and dupefilter,
``SCHEDULER_PERSIST = True``) and the add-on with the Redis store, starting from nothing:
once with one process (16 concurrent requests, Scrapy's default), once with two processes of
16 each, and once with two processes of 8 each (the same total concurrency as one). All learn
URL rules while they crawl; two processes learn under the per-host lock and the other process
installs what was published. Reports responses downloaded, items exported and pages lost
(distinct pages, by the demo site's own ``page_key``, that another crawl of the round
exported and this one did not), and the ratios to one process per round. Runs on the demo
site as bundled (48 articles) and grown to 300 articles (``--large-rounds`` rounds; each
size is served by its own run of this module, as the site's size is fixed at import).
Writes ``docs/processes.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import redis

from benchmarks.memory import redis_server

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "output"
RUNNER = ROOT / "tests" / "crawl" / "crawl_runner.py"
sys.path.insert(0, str(ROOT / "example_project"))
LARGE = 300

Crawl = dict[str, Any]


def _launch(out: Path, key: str, url: str, concurrency: int) -> subprocess.Popen[bytes]:
    settings: dict[str, Any] = {
        "CONCURRENT_REQUESTS": concurrency,
        "SCHEDULER": "scrapy_redis.scheduler.Scheduler",
        "DUPEFILTER_CLASS": "scrapy_redis.dupefilter.RFPDupeFilter",
        "SCHEDULER_PERSIST": True,
        "MAX_IDLE_TIME_BEFORE_CLOSE": 3,
        "REDIS_URL": url,
        "TEMPLATES_STORE": "redis",
        "TEMPLATES_REDIS_PREFIX": key,
        "LOG_LEVEL": "WARNING",
    }
    cmd = [sys.executable, str(RUNNER), str(out), "--redis-key", key]
    for name, value in settings.items():
        cmd += ["--set", f"{name}={json.dumps(value)}"]
    return subprocess.Popen(cmd, cwd=ROOT)


def _run(outs: list[Path], key: str, url: str, start: str, concurrency: int) -> Crawl:
    from demo.site import page_key

    redis.Redis.from_url(url).lpush(f"{key}:start_urls", start)
    procs = [_launch(out, key, url, concurrency) for out in outs]
    for proc in procs:
        if proc.wait() != 0:
            raise SystemExit(f"crawl {key} failed")
    stats = [json.loads((out / "stats.json").read_text()) for out in outs]
    pages = set()
    for out in outs:
        for line in (out / "items.jsonl").read_text().splitlines():
            parts = urlsplit(json.loads(line)["url"])
            pages.add(page_key(parts.path + (f"?{parts.query}" if parts.query else "")))
    return {
        "downloads": sum(s.get("downloader/response_count", 0) for s in stats),
        "items": sum(s.get("item_scraped_count", 0) for s in stats),
        "working": sum(1 for s in stats if s.get("downloader/response_count", 0) > 0),
        "pages": sorted(map(list, pages)),
    }


def measure(rounds: int, tag: str) -> list[list[Crawl]]:
    """``rounds`` rounds of the three crawls on the demo site of this process's size."""
    from demo.site import DemoSite

    rows = []
    with redis_server() as url, DemoSite() as site:
        for r in range(rounds):
            one = _run([OUT / f"processes{tag}-{r}-one"], f"one{r}", url, site.url, 16)
            pair = [OUT / f"processes{tag}-{r}-two-{i}" for i in range(2)]
            two = _run(pair, f"two{r}", url, site.url, 16)
            pair = [OUT / f"processes{tag}-{r}-half-{i}" for i in range(2)]
            half = _run(pair, f"half{r}", url, site.url, 8)
            rows.append([one, two, half])
            print(r, *((c["downloads"], c["items"], len(c["pages"])) for c in rows[-1]), flush=True)
    return rows


def _table(rows: list[list[Crawl]]) -> list[str]:
    lines = [
        "| round | 1 × 16 | lost | 2 × 16 | lost | ÷ 1 × 16 | 2 × 8 | lost | ÷ 1 × 16 |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    lost_crawls = 0
    for r, crawls in enumerate(rows):
        pages = [{tuple(p) for p in c["pages"]} for c in crawls]
        every = set().union(*pages)
        lost = [len(every - own) for own in pages]
        lost_crawls += sum(1 for n in lost if n)
        cells = [
            f"{c['downloads']} ({c['items']}){'*' if i and c['working'] != 2 else ''} | {n}"
            for i, (c, n) in enumerate(zip(crawls, lost, strict=True))
        ]
        one = crawls[0]["downloads"]
        lines.append(
            f"| {r} | {cells[0]} | {cells[1]} | {crawls[1]['downloads'] / one:.2f} | {cells[2]} "
            f"| {crawls[2]['downloads'] / one:.2f} |"
        )
    ratios = {
        n: [c[i]["downloads"] / c[0]["downloads"] for c in rows] for i, n in ((1, 16), (2, 8))
    }
    both = {
        n: [c[i]["downloads"] / c[0]["downloads"] for c in rows if c[i]["working"] == 2]
        for i, n in ((1, 16), (2, 8))
    }
    lines += [
        "",
        f"Median ratio of downloads: two processes of 16, **{statistics.median(ratios[16]):.2f}**;"
        f" two of 8, **{statistics.median(ratios[8]):.2f}**. Over the crawls where both"
        f" processes downloaded: two of 16, {_median(both[16])}; two of 8, {_median(both[8])}."
        f" Crawls that lost a page: {lost_crawls} of {3 * len(rows)}.",
    ]
    return lines


def write(small: list[list[Crawl]], large: list[list[Crawl]]) -> str:
    lines = [
        "# Two processes against one",
        "",
        "Generated by `python -m benchmarks.processes`: the demo site crawled with scrapy-redis",
        "and the add-on (Redis store), from an empty Redis, by one process and by two.",
        "",
        "Downloads (items) per crawl; 1 × 16 is one process of 16 concurrent requests; a",
        "crawl marked * is one where only one of the two processes downloaded anything: an",
        "idle Scrapy engine looks at the shared queue only on its 5-second heartbeat, and the",
        "bundled site is crawled in about two seconds, often before the second process looks.",
        "*Lost* counts the distinct pages",
        "(the demo site's `page_key`) that another crawl of the same round exported and this",
        "one did not.",
        "",
        f"## The demo site as bundled (48 articles), {len(small)} rounds",
        "",
        *_table(small),
        "",
        f"## The demo site grown to {LARGE} articles, {len(large)} rounds",
        "",
        *_table(large),
        "",
        "Rules learned while the crawl runs come after some duplicates are already in flight, and",
        "how many slip through varies from run to run, for one process as for two. On the",
        "bundled site (69 distinct pages, about 170 downloads) the whole crawl is that learning",
        "phase. With the same rules in force from the start (a second crawl, or",
        "`TEMPLATES_URL_RULES_FILE`), two processes download no more than one",
        "(`tests/crawl/test_shared_crawl.py`).",
    ]
    text = "\n".join(lines) + "\n"
    (ROOT / "docs" / "processes.md").write_text(text)
    return text


def _median(values: list[float]) -> str:
    if not values:
        return "no such crawl"
    return f"**{statistics.median(values):.2f}** ({len(values)} crawls)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--large-rounds", type=int, default=3)
    parser.add_argument("--measure", metavar="JSON", help="(internal) measure, write JSON")
    args = parser.parse_args()
    if args.measure:
        tag = os.environ.get("DEMO_SITE_ARTICLES", "")
        Path(args.measure).write_text(json.dumps(measure(args.rounds, f"-{tag}" if tag else "")))
        return
    results = []
    for articles, rounds in (("48", args.rounds), (str(LARGE), args.large_rounds)):
        path = OUT / f"processes-{articles}.json"
        OUT.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "DEMO_SITE_ARTICLES": articles}
        cmd = [sys.executable, "-m", "benchmarks.processes", "--rounds", str(rounds)]
        subprocess.run([*cmd, "--measure", str(path)], check=True, cwd=ROOT, env=env)
        results.append(json.loads(path.read_text()))
    print(write(*results))


if __name__ == "__main__":
    main()
