"""Per-page cost of the template pipeline, as ratios to peers measured in the same run.

    python -m benchmarks.speed [--pages 300] [--repeat 5] [--chunk 20] [--sites sqlite,…]

On the same real pages (the Debian doc sites of the quality benchmark), times:

- ``lxml``: a bare ``lxml.html.fromstring`` parse;
- ``trafilatura``: ``trafilatura.extract``;
- ``page``: :func:`scrapy_templates.page.parse_page` (parse, partition, fingerprints, simhash);
- ``pipeline``: the whole ``TemplatePipeline.process_item`` with the memory store (the above plus
  the store round trip, the decision and writing the item fields);
- ``simhash package``: ``simhash.Simhash(text).value`` on the page text, for reference;
- with a parse worker: the CPU time the crawl's own thread spends per page when the parse runs
  in a worker process (the pipeline rows run without one).

Each round runs every tool over all the pages, the tools taking turns ``--chunk`` pages at a
time, so a ratio compares runs made under the same machine load even when that load drifts.
Every turn starts after a garbage collection, and one untimed round comes first (caches warm,
as in a crawl past its first pages). Each round gets fresh pipelines, made before the clock
starts (creating a Scrapy crawler takes ~150 ms, a one-time cost that is not the pipeline's
per page). The table gives the median over ``--repeat`` rounds of the mean milliseconds per
page; the ratios are the medians of the per-round ratios.
Writes ``docs/speed.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import random
import statistics
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.realsites import SITES, ensure_installed

ROOT = Path(__file__).resolve().parent.parent


def load_pages(n: int, seed: int = 1, sites: list[str] | None = None) -> list[tuple[str, bytes]]:
    files = []
    for site in (SITES[name] for name in sites or SITES):
        files += [(site.name, f) for f in sorted(site.root.rglob("*.html"))]
    random.Random(seed).shuffle(files)
    return [(f"http://{name}.test/{path.name}", path.read_bytes()) for name, path in files[:n]]


class Tool:
    """Something timed on the pages: ``prepare`` makes its state for a round (untimed; a
    fresh pipeline, say), ``run`` handles a chunk of pages with it."""

    def __init__(
        self,
        run: Callable[[Any, list[tuple[str, bytes]]], None],
        prepare: Callable[[], Any] = lambda: None,
    ) -> None:
        self.run = run
        self.prepare = prepare


def each(func: Callable[[str, bytes], Any]) -> Tool:
    """A tool that calls ``func`` on every page, keeping no result alive."""

    def run(_state: Any, chunk: list[tuple[str, bytes]]) -> None:
        for url, html in chunk:
            func(url, html)

    return Tool(run)


def one_round(
    tools: dict[str, Tool], pages: list[tuple[str, bytes]], chunk: int
) -> dict[str, float]:
    """Seconds each tool spends on all ``pages``, the tools taking turns chunk by chunk (so a
    change in the machine's load falls on all of them alike), each turn after a garbage
    collection (so no tool pays for another's garbage)."""
    states = {name: tool.prepare() for name, tool in tools.items()}
    spent = dict.fromkeys(tools, 0.0)
    for start in range(0, len(pages), chunk):
        part = pages[start : start + chunk]
        for name, tool in tools.items():
            gc.collect()
            t0 = time.perf_counter()
            tool.run(states[name], part)
            spent[name] += time.perf_counter() - t0
    return spent


def evidence_memory(pages: list[Any], comparison: str) -> tuple[int, int]:
    """Blocks tracked and bytes allocated by the layout model's block evidence for ``pages``
    (parsed), one :class:`LayoutBlocks` per site."""
    from urllib.parse import urlsplit

    from scrapy_templates.templates.variability import LayoutBlocks

    gc.collect()
    tracemalloc.start()
    layouts: dict[str, LayoutBlocks] = {}
    for page in pages:
        site = urlsplit(page.url).netloc
        layout = layouts.setdefault(site, LayoutBlocks(comparison=comparison))
        layout.add([p.path for p in page.pagelets], [p.text for p in page.pagelets])
    gc.collect()
    size = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return sum(layout.tracked for layout in layouts.values()), size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pages", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--chunk", type=int, default=20, help="pages per turn of each tool")
    parser.add_argument("--no-docs", action="store_true")
    parser.add_argument("--sites", default=",".join(SITES), help="sites to draw pages from")
    args = parser.parse_args()
    sites = args.sites.split(",")
    ensure_installed(list(SITES.values()))

    import lxml.html
    import trafilatura
    from simhash import Simhash

    from benchmarks.harness import template_pipeline
    from scrapy_templates.compiled import compiled
    from scrapy_templates.crawl.pipeline import TemplatePipeline
    from scrapy_templates.page import parse_page
    from scrapy_templates.settings import DEFAULTS

    pages = load_pages(args.pages, sites=sites)
    n = len(pages)
    compiled_ = all(
        compiled(name) is not None for name in ("_walk", "_fingerprint", "templates._offsets")
    )
    texts = [str(lxml.html.fromstring(html).text_content()) for _, html in pages]

    def pipeline_run(**settings: Any) -> Tool:
        """A fresh pipeline (and event loop) for every round, made untimed: creating a Scrapy
        crawler is a one-time cost, not a per-page one."""

        def prepare() -> tuple[TemplatePipeline, asyncio.AbstractEventLoop]:
            values = {
                **DEFAULTS,
                "TEMPLATES_BOOTSTRAP_PAGES": 0,
                "TEMPLATES_PARSE_WORKERS": 0,
                **settings,
            }
            pipeline = template_pipeline(values)
            return pipeline, asyncio.new_event_loop()

        def run(
            state: tuple[TemplatePipeline, asyncio.AbstractEventLoop],
            chunk: list[tuple[str, bytes]],
        ) -> None:
            pipeline, loop = state

            async def go() -> None:
                for url, html in chunk:
                    await pipeline.process_item({"url": url, "html": html})

            loop.run_until_complete(go())

        return Tool(run, prepare)

    def crawl_thread_with_worker() -> float:
        """CPU seconds the crawl's thread spends marking every page with one parse worker,
        pages handed over 16 at a time as a crawl's concurrent responses would be (the thread
        only: URL-rule learning runs in a thread of its own)."""
        values = {**DEFAULTS, "TEMPLATES_BOOTSTRAP_PAGES": 0, "TEMPLATES_PARSE_WORKERS": 1}
        pipeline = template_pipeline(values)

        async def go() -> float:
            await pipeline.open_spider()
            gate = asyncio.Semaphore(16)

            async def one(url: str, html: bytes) -> None:
                async with gate:
                    await pipeline.process_item({"url": url, "html": html})

            assert pipeline.workers is not None
            await pipeline.workers.until_ready()
            gc.collect()
            t0 = time.thread_time()
            await asyncio.gather(*(one(url, html) for url, html in pages))
            spent = time.thread_time() - t0
            await pipeline.close_spider()
            return spent

        return asyncio.run(go())

    text_of = {url: text for (url, _), text in zip(pages, texts, strict=True)}

    def simhash_package(url: str, _html: bytes) -> None:
        # The package raises OverflowError on long pages (uint8 weights); timed all the same.
        with contextlib.suppress(OverflowError):
            Simhash(text_of[url])

    tools: dict[str, Tool] = {
        "lxml.html.fromstring": each(lambda u, h: lxml.html.fromstring(h)),
        "trafilatura.extract": each(lambda u, h: trafilatura.extract(h)),
        "parse_page": each(lambda u, h: parse_page(h, u)),
        "pipeline (memory store)": pipeline_run(),
        "pipeline, exact counting only (TEMPLATES_LAYOUT off)": pipeline_run(
            TEMPLATES_LAYOUT=False
        ),
        "pipeline, block samples as words (TEMPLATES_BLOCK_COMPARE='words')": pipeline_run(
            TEMPLATES_BLOCK_COMPARE="words"
        ),
        "pipeline, global algorithm (TEMPLATES_ALGORITHM='global')": pipeline_run(
            TEMPLATES_ALGORITHM="global"
        ),
        "simhash package (page text)": each(simhash_package),
    }

    one_round(tools, pages, args.chunk)  # warm: caches filled, every import done
    rounds = [
        {name: t / n * 1000 for name, t in one_round(tools, pages, args.chunk).items()}
        for _ in range(args.repeat)
    ]
    per_page = {name: statistics.median(r[name] for r in rounds) for name in tools}
    lxml_ms = per_page["lxml.html.fromstring"]
    worker_ms = statistics.median(crawl_thread_with_worker() / n * 1000 for _ in range(3))
    ours_key = "pipeline (memory store)"
    ratio = {name: statistics.median(r[ours_key] / r[name] for r in rounds) for name in tools}
    rows = [
        "# Per-page speed",
        "",
        f"Generated by `python -m benchmarks.speed --pages {args.pages}`: {n} pages drawn from the "
        f"real sites of the quality benchmark ({', '.join(sites)}), each tool timed over all of "
        f"them in one run, the tools taking turns {args.chunk} pages at a time (median of "
        "several rounds), mean milliseconds per page. The pipeline runs with default settings "
        "(layout model on), with exact counting only and with the global algorithm (links kept "
        "and components updated in the store, per page); each round gets fresh pipelines, made "
        "before the clock starts. Compiled twins (partition walk, fingerprints, block "
        f"signatures): {'yes' if compiled_ else 'no'}.",
        "",
        "| what | ms / page | pipeline ÷ this |",
        "|---|---:|---:|",
    ]
    for name, ms in per_page.items():
        rows.append(f"| {name} | {ms:.2f} | {ratio[name]:.2f}× |")
    rows += [
        "",
        f"- pipeline ÷ trafilatura: **{ratio['trafilatura.extract']:.3f}** (target ≤ 0.25)",
        f"- pipeline ÷ bare lxml parse: **{ratio['lxml.html.fromstring']:.2f}** (target ≤ 3)",
        f"- rounds: {args.repeat}; per-round pipeline ÷ lxml: "
        + ", ".join(f"{r[ours_key] / r['lxml.html.fromstring']:.2f}" for r in rounds),
        "",
        "With a parse worker (`TEMPLATES_PARSE_WORKERS`, the default on more than one CPU) the "
        "worker parses, counts in its own copy of its sites' counts and decides, and the "
        "crawl's thread counts the page in the store and writes the item's fields: CPU time of "
        "the crawl's thread while the pipeline marks the same pages, 16 in flight: "
        f"**{worker_ms:.2f} ms** per page, {worker_ms / lxml_ms:.2f}× the bare lxml parse "
        "(median of 3 runs; the worker's own CPU, on another core, is not in it). The total "
        "work per page is the pipeline row above.",
    ]
    parsed = [parse_page(html, url) for url, html in pages]
    rows += [
        "",
        "Memory of the block evidence (each site's blocks and their samples, traced while the "
        "pages are added, one layout per site):",
        "",
        "| TEMPLATES_BLOCK_COMPARE | blocks | KB | bytes / block |",
        "|---|---:|---:|---:|",
    ]
    for comparison in ("bits", "words"):
        blocks, size = evidence_memory(parsed, comparison)
        rows.append(f"| {comparison} | {blocks} | {size / 1024:.0f} | {size / blocks:.0f} |")
    text = "\n".join(rows) + "\n"
    print(text)
    if not args.no_docs:
        (ROOT / "docs").mkdir(exist_ok=True)
        (ROOT / "docs" / "speed.md").write_text(text)


if __name__ == "__main__":
    main()
