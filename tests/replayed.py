"""Marking a hand-made site through the replay, as the item pipeline would mark its crawl."""

from __future__ import annotations

import asyncio
from typing import Any

from scrapy.settings import BaseSettings

from scrapy_templates.config import TemplatesConfig
from scrapy_templates.marker import replay
from scrapy_templates.settings import DEFAULTS
from scrapy_templates.store.memory import MemoryStore


def replay_content(pages: list[tuple[str, str]], **settings: Any) -> dict[str, str]:
    """Each marked page's content text by URL, with the default settings but ``settings``."""
    config = TemplatesConfig.from_settings(BaseSettings({**DEFAULTS, **settings}))

    async def run() -> dict[str, str]:
        store = MemoryStore()
        await store.open()
        return {r.url: r.marks.content async for r in replay(pages, config, store) if r.marks}

    return asyncio.run(run())
