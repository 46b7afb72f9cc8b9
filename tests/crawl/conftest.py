from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

RUNNER = Path(__file__).with_name("crawl_runner.py")


@pytest.fixture(autouse=True)
async def _pools_closed(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[None]:
    """Close, in the test's own event loop, the worker pools a test left open (one that
    drives URL learning without closing its rules starts a URL-rule worker, which would idle
    until the test run ends)."""
    from scrapy_templates.workers import WorkerPool

    pools: list[WorkerPool] = []
    init = WorkerPool.__init__

    def tracked(self: WorkerPool, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        pools.append(self)

    monkeypatch.setattr(WorkerPool, "__init__", tracked)
    yield
    # a pool a test started in a loop of its own (asyncio.run) is that test's to close
    await asyncio.gather(*(pool.close() for pool in pools), return_exceptions=True)


@dataclass
class CrawlResult:
    items: list[dict[str, Any]]
    stats: dict[str, Any]
    log: str


def run_crawl(
    out_dir: Path,
    *,
    start: str = "",
    urls: list[str] | None = None,
    items_under: str = "",
    offsite_from: str = "",
    crawl_spider: bool = False,
    **settings: Any,
) -> CrawlResult:
    """Run a real crawl in a subprocess and load what it exported (``items_under``: items
    of the pages under that path only; ``offsite_from``, ``crawl_spider``: see
    ``crawl_runner.py``)."""
    cmd = [sys.executable, str(RUNNER), str(out_dir)]
    if start:
        cmd += ["--start", start]
    if items_under:
        cmd += ["--items-under", items_under]
    if offsite_from:
        cmd += ["--offsite-from", offsite_from]
    if crawl_spider:
        cmd += ["--crawl-spider"]
    if urls is not None:
        url_file = out_dir.with_suffix(".urls")
        url_file.write_text("\n".join(urls))
        cmd += ["--urls", str(url_file)]
    for name, value in settings.items():
        cmd += ["--set", f"{name}={json.dumps(value)}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise AssertionError(f"crawl failed:\n{proc.stderr[-4000:]}")
    items = [json.loads(line) for line in (out_dir / "items.jsonl").read_text().splitlines()]
    stats = json.loads((out_dir / "stats.json").read_text())
    return CrawlResult(items, stats, proc.stderr)


def templates_crawler(**settings: Any) -> Any:
    """A crawler with the add-on and ``settings`` (project priority), its stats open: the
    runtime extension is built, the engine is not."""
    from scrapy.utils.test import get_crawler

    from scrapy_templates import Addon

    crawler = get_crawler(settings_dict={"ADDONS": {Addon: 500}, **settings})
    crawler.stats.open_spider()
    return crawler


def runtime(crawler: Any) -> Any:
    """The crawler's :class:`~scrapy_templates.crawl.runtime.TemplatesRuntime`."""
    from scrapy_templates.crawl.runtime import TemplatesRuntime

    return TemplatesRuntime.of(crawler, "a test")
