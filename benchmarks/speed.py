"""Per-page cost of the template pipeline, as ratios to peers measured in the same run.

    python -m benchmarks.speed [--pages 300] [--repeat 5] [--sites sqlite,django,git,…]

On the same real pages (the Debian doc sites of the quality benchmark), times:

- ``lxml``: a bare ``lxml.html.fromstring`` parse;
- ``trafilatura``: ``trafilatura.extract``;
- ``page``: :func:`scrapy_templates.page.parse_page` (parse, partition, fingerprints, simhash);
- ``pipeline``: the whole ``TemplatePipeline.process_item`` with the memory store (the above plus
  the store round trip, the decision and writing the item fields);
- ``simhash package``: ``simhash.Simhash(text).value`` on the page text, for reference;
- with a parse worker: the CPU time the crawl's own thread spends per page when the parse runs
  in a worker process (the pipeline rows run without one).

Each round runs every tool once over all the pages, one after the other, so a ratio compares
runs made under the same machine load. Every run starts after a garbage collection, and one
untimed pass of every tool comes first (caches warm, as in a crawl past its first pages). Each
pipeline run gets a fresh pipeline, made before the clock starts (creating a Scrapy crawler
takes ~150 ms, a one-time cost that is not the pipeline's per page). The table gives the
median over ``--repeat`` rounds of the mean milliseconds per page; the ratios are the medians
of the per-round ratios.
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


def timed(func: Callable[..., Any], prepare: Callable[[], Any] | None = None) -> float:
    """Seconds of ``func``, after a garbage collection so that no tool pays for another's
    garbage. ``prepare`` runs first, untimed, and what it returns is passed to ``func``."""
    state = prepare() if prepare is not None else None
    gc.collect()
    t0 = time.perf_counter()
    func() if prepare is None else func(state)
    return time.perf_counter() - t0


def each(func: Callable[[str, bytes], Any], pages: list[tuple[str, bytes]]) -> Callable[[], None]:
    """Run ``func`` on every page, keeping no result alive."""

    def run() -> None:
        for url, html in pages:
            func(url, html)

    return run


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
    return sum(len(layout.blocks) for layout in layouts.values()), size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pages", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-docs", action="store_true")
    parser.add_argument("--sites", default=",".join(SITES), help="sites to draw pages from")
    args = parser.parse_args()
    sites = args.sites.split(",")
    ensure_installed(list(SITES.values()))

    import lxml.html
    import trafilatura
    from scrapy.utils.test import get_crawler
    from simhash import Simhash

    from scrapy_templates.compiled import compiled
    from scrapy_templates.crawl.pipeline import TemplatePipeline
    from scrapy_templates.page import parse_page
    from scrapy_templates.settings import DEFAULTS

    pages = load_pages(args.pages, sites=sites)
    n = len(pages)
    compiled_ = compiled("_walk") is not None and compiled("_fingerprint") is not None
    texts = [str(lxml.html.fromstring(html).text_content()) for _, html in pages]

    def pipeline_run(**settings: Any) -> tuple[Callable[..., None], Callable[[], Any]]:
        """A fresh pipeline for every run (made untimed: creating a Scrapy crawler is a
        one-time cost, not a per-page one) and the run over all pages."""

        def prepare() -> TemplatePipeline:
            values = {
                **DEFAULTS,
                "TEMPLATES_BOOTSTRAP_PAGES": 0,
                "TEMPLATES_PARSE_WORKERS": 0,
                **settings,
            }
            return TemplatePipeline.from_crawler(get_crawler(settings_dict=values))

        def run(pipeline: TemplatePipeline) -> None:
            async def go() -> None:
                for url, html in pages:
                    await pipeline.process_item({"url": url, "html": html})

            asyncio.run(go())

        return run, prepare

    def crawl_thread_with_worker() -> float:
        """CPU seconds this process spends marking every page with one parse worker, pages
        handed over 16 at a time as a crawl's concurrent responses would be."""
        values = {**DEFAULTS, "TEMPLATES_BOOTSTRAP_PAGES": 0, "TEMPLATES_PARSE_WORKERS": 1}
        pipeline = TemplatePipeline.from_crawler(get_crawler(settings_dict=values))

        async def go() -> float:
            await pipeline.open_spider()
            gate = asyncio.Semaphore(16)

            async def one(url: str, html: bytes) -> None:
                async with gate:
                    await pipeline.process_item({"url": url, "html": html})

            await one(*pages[0])  # the worker has started and imported the parser
            gc.collect()
            t0 = time.process_time()
            await asyncio.gather(*(one(url, html) for url, html in pages))
            spent = time.process_time() - t0
            await pipeline.close_spider()
            return spent

        return asyncio.run(go())

    def simhash_package() -> None:
        for text in texts:
            # The package raises OverflowError on long pages (uint8 weights); timed all the same.
            with contextlib.suppress(OverflowError):
                Simhash(text)

    tools: dict[str, Callable[[], Any] | tuple[Callable[..., None], Callable[[], Any]]] = {
        "lxml.html.fromstring": each(lambda u, h: lxml.html.fromstring(h), pages),
        "trafilatura.extract": each(lambda u, h: trafilatura.extract(h), pages),
        "parse_page": each(lambda u, h: parse_page(h, u), pages),
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
        "simhash package (page text)": simhash_package,
    }

    def run_once(tool: Callable[[], Any] | tuple[Callable[..., None], Callable[[], Any]]) -> float:
        return timed(*tool) if isinstance(tool, tuple) else timed(tool)

    for tool in tools.values():
        run_once(tool)
    rounds: list[dict[str, float]] = []
    for _ in range(args.repeat):
        rounds.append({name: run_once(tool) / n * 1000 for name, tool in tools.items()})
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
        "them in one run (median of several rounds), mean milliseconds per page. The pipeline "
        "runs with default settings (layout model on), with exact counting only and with the "
        "global algorithm (links kept and components updated in the store, per page); each "
        "run gets a fresh pipeline, made before the clock starts. "
        f"Compiled partition walk and fingerprints: {'yes' if compiled_ else 'no'}.",
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
        "parse runs in a child process and the crawl's thread keeps the rest: CPU time of this "
        f"process while the pipeline marks the same pages, 16 in flight: **{worker_ms:.2f} ms** "
        f"per page, {worker_ms / lxml_ms:.2f}× the bare lxml parse (median of 3 runs; the "
        "worker's own CPU, on another core, is not in it). The total work per page is the "
        "pipeline row above.",
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
