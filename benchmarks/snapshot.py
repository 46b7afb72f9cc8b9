"""The items the template pipeline makes of real pages, written as JSON lines, so that two
versions of the code can be compared item by item.

    python -m benchmarks.snapshot OUT.jsonl [--pages 600] [--sites sqlite,…]
    cmp OUT-before.jsonl OUT-after.jsonl

The pages are those of the speed benchmark (the Debian doc sites of the quality benchmark, in
one seeded order); each goes through ``TemplatePipeline.process_item`` with the default
settings (no parse worker, no cold-start sample: both depend on timing), once with the local
and once with the global algorithm. The HTML field is left out of the lines.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

from benchmarks.realsites import SITES, ensure_installed
from benchmarks.speed import load_pages


async def _items(pages: list[tuple[str, bytes]], algorithm: str) -> list[dict[str, Any]]:

    from benchmarks.harness import template_pipeline
    from scrapy_templates.settings import DEFAULTS

    values = {
        **DEFAULTS,
        "TEMPLATES_ALGORITHM": algorithm,
        "TEMPLATES_BOOTSTRAP_PAGES": 0,
        "TEMPLATES_PARSE_WORKERS": 0,
        "TEMPLATES_KEEP_HTML": False,
    }
    pipeline = template_pipeline(values)
    await pipeline.open_spider()
    items = []
    for url, html in pages:
        items.append(await pipeline.process_item({"url": url, "html": html}))
    await pipeline.close_spider()
    return items


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out", type=Path)
    parser.add_argument("--pages", type=int, default=600)
    parser.add_argument("--sites", default=",".join(SITES), help="sites to draw pages from")
    args = parser.parse_args()
    ensure_installed(list(SITES.values()))
    pages = load_pages(args.pages, sites=args.sites.split(","))
    with args.out.open("w", encoding="utf-8") as out:
        for algorithm in ("local", "global"):
            for item in asyncio.run(_items(pages, algorithm)):
                out.write(json.dumps(item, sort_keys=True) + "\n")
    print(f"{2 * len(pages)} items written to {args.out}")


if __name__ == "__main__":
    main()
