"""Run one crawl of a local site with the example project's generic spider.

    python -m benchmarks.crawl START_URL OUT_DIR [--no-addon] [--peer dud] [--record]
        [--set NAME=VALUE ...]

Writes OUT_DIR/items.jsonl and OUT_DIR/stats.json (with ``benchmark/thread_cpu_seconds``: CPU
time of the crawl's thread from ``spider_opened`` to ``spider_closed``), and with ``--record``
OUT_DIR/record.jsonl
(:mod:`benchmarks.recorder`). ``--peer dud`` crawls with Zyte's duplicate-url-discarder and its
rule pack instead of scrapy-templates. Each crawl runs in its own process (a
Twisted reactor starts once per process), which is how the benchmarks call it.

The package's modules are byte-compiled first, as ``pip install`` does and as Python does on
first import unless ``PYTHONDONTWRITEBYTECODE`` is set: with the variable set and an editable
install, each parse worker would compile them again at its start while Scrapy's modules load
from their bytecode, a cost no installed crawl pays.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "example_project"))
os.environ.setdefault("TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS", "")


def setting(pair: str) -> tuple[str, Any]:
    """``NAME=VALUE`` from the command line: the value as JSON when it looks like JSON (a
    number, a list, true/false/null), else as text."""
    name, _, value = pair.partition("=")
    return name, json.loads(value) if value[:1] in "[{0123456789-tfn" else value


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("start_url")
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--no-addon", action="store_true", help="crawl without scrapy-templates")
    parser.add_argument("--peer", choices=["dud"], help="crawl with a peer instead")
    parser.add_argument("--record", action="store_true", help="write OUT_DIR/record.jsonl")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    args = parser.parse_args(argv)
    compileall.compile_dir(ROOT / "scrapy_templates", quiet=1)

    from demo import settings as demo_settings
    from scrapy import signals
    from scrapy.crawler import CrawlerProcess
    from scrapy.settings import Settings

    args.out_dir.mkdir(parents=True, exist_ok=True)
    settings = Settings()
    settings.setmodule(demo_settings, priority="project")
    settings.set("LOG_LEVEL", "WARNING")
    settings.set(
        "FEEDS", {str(args.out_dir / "items.jsonl"): {"format": "jsonlines", "overwrite": True}}
    )
    if args.no_addon or args.peer:
        settings.set("ADDONS", {})
    if args.peer == "dud":
        settings.set("ADDONS", {"duplicate_url_discarder.Addon": 600})
    if args.record:
        settings.set("BENCHMARK_RECORD", str(args.out_dir / "record.jsonl"))
        settings.set(
            "EXTENSIONS", {**settings.getdict("EXTENSIONS"), "benchmarks.recorder.Recorder": 0}
        )
    for pair in args.set:
        settings.set(*setting(pair))
    process = CrawlerProcess(settings)
    crawler = process.create_crawler("site")
    thread_cpu: list[float] = []

    def clock() -> None:
        thread_cpu.append(time.thread_time())

    # the reactor's thread: Scrapy's work, and the add-on's but for its workers
    crawler.signals.connect(clock, signal=signals.spider_opened)
    crawler.signals.connect(clock, signal=signals.spider_closed)
    process.crawl(crawler, base_url=args.start_url)
    process.start()
    stats = crawler.stats.get_stats() if crawler.stats else {}
    if len(thread_cpu) == 2:
        stats["benchmark/thread_cpu_seconds"] = round(thread_cpu[1] - thread_cpu[0], 4)
    (args.out_dir / "stats.json").write_text(json.dumps(stats, default=str, indent=1))


if __name__ == "__main__":
    main()
