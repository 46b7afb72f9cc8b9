"""The runtime: one owner per crawler that the other components find, open once, close last."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
from typing import Any

import pytest
from scrapy.exceptions import NotConfigured
from scrapy.utils.test import get_crawler

from scrapy_templates.crawl.middlewares import UrlRulesDownloaderMiddleware
from scrapy_templates.crawl.pipeline import TemplatePipeline
from scrapy_templates.crawl.runtime import TemplatesRuntime
from scrapy_templates.settings import DEFAULTS
from scrapy_templates.store.base import StoreUnavailable
from scrapy_templates.store.memory import MemoryStore
from tests.crawl.conftest import runtime, templates_crawler


class CountingStore(MemoryStore):
    """A memory store that counts how often it is opened and closed."""

    opened = 0
    closed = 0

    @classmethod
    def from_settings(cls, settings: Any) -> CountingStore:
        return cls()

    async def open(self) -> None:
        type(self).opened += 1
        await super().open()

    async def close(self) -> None:
        type(self).closed += 1
        await super().close()


def test_every_component_gets_the_one_runtime_and_its_config() -> None:
    crawler = templates_crawler(TEMPLATES_MIN_PAGES=7)
    pipeline = TemplatePipeline.from_crawler(crawler)
    middleware = UrlRulesDownloaderMiddleware.from_crawler(crawler)
    owner = runtime(crawler)
    assert pipeline.runtime is owner and middleware.rules is owner.urls
    assert pipeline.store is owner.store and pipeline.urls is owner.urls
    assert owner.config.min_pages == 7
    assert pipeline.marking.thresholds.min_pages == 7


def test_components_without_the_runtime_say_how_to_enable_it() -> None:
    crawler = get_crawler(settings_dict=dict(DEFAULTS))
    with pytest.raises(RuntimeError, match=r"ADDONS = \{'scrapy_templates.Addon': 500\}"):
        UrlRulesDownloaderMiddleware.from_crawler(crawler)
    off = get_crawler(settings_dict={**DEFAULTS, "TEMPLATES_ENABLED": False})
    with pytest.raises(NotConfigured, match="TEMPLATES_ENABLED"):
        TemplatesRuntime.of(off, "a test")


async def test_the_store_is_opened_once_and_closed_at_spider_close() -> None:
    CountingStore.opened = CountingStore.closed = 0
    crawler = templates_crawler(TEMPLATES_STORE=f"{__name__}.CountingStore")
    pipeline = TemplatePipeline.from_crawler(crawler)
    owner = runtime(crawler)
    # the pipeline opens before the spider_opened signal; both wait for the same opening
    await asyncio.gather(pipeline.open_spider(), owner.spider_opened())
    assert CountingStore.opened == 1
    await pipeline.close_spider()
    assert CountingStore.closed == 0, "the URL rules may still need it"
    await owner.spider_closed()
    assert CountingStore.closed == 1


class DownStore(MemoryStore):
    """A store whose counting calls fail as an unreachable Redis does."""

    @classmethod
    def from_settings(cls, settings: Any) -> DownStore:
        return cls()

    async def observe(self, *args: Any, **kwargs: Any) -> Any:
        raise StoreUnavailable("connection refused")


async def test_writes_an_outage_could_not_keep_are_reported(
    caplog: pytest.LogCaptureFixture,
) -> None:
    crawler = templates_crawler(
        TEMPLATES_STORE=f"{__name__}.DownStore", TEMPLATES_STORE_JOURNAL=2, TEMPLATES_STORE_RETRY=60
    )
    owner = runtime(crawler)
    await owner.open()
    for n in range(5):
        await owner.store.observe("s.test", f"p{n}", [1, 2])
    with caplog.at_level(logging.ERROR):
        await owner.spider_closed()
    assert crawler.stats.get_value("templates/store/writes_lost") == 3
    assert crawler.stats.get_value("templates/store/writes_unmerged") == 2
    assert "2 writes of this crawl were not merged" in caplog.text


def test_the_start_line_names_the_store_without_its_password() -> None:
    from scrapy_templates.crawl.runtime import _where
    from scrapy_templates.store.redis import RedisStore

    shown = _where(RedisStore("redis://user:secret@h.example:6379/2", prefix="p"))
    assert shown.startswith("in Redis at redis://h.example:6379/2 (prefix 'p')")
    assert "secret" not in shown
    assert "this process's memory" in _where(MemoryStore())


def test_the_crawl_layer_with_the_embedded_store_does_not_import_redis() -> None:
    code = (
        "import pkgutil, importlib, sys\n"
        "from scrapy.settings import Settings\n"
        "import scrapy_templates.addon, scrapy_templates.crawl as crawl\n"
        "from scrapy_templates.settings import DEFAULTS\n"
        "for info in pkgutil.iter_modules(crawl.__path__):\n"
        "    importlib.import_module('scrapy_templates.crawl.' + info.name)\n"
        "from scrapy_templates.config import TemplatesConfig\n"
        "from scrapy_templates.crawl.runtime import _where\n"
        "from scrapy_templates.crawl.stores import build_store\n"
        "settings = Settings(DEFAULTS)\n"
        "print(_where(build_store(TemplatesConfig.from_settings(settings), settings)))\n"
        "print('redis' in sys.modules)\n"
    )
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert shown.stdout.splitlines()[-2].startswith("in this process's memory")
    assert shown.stdout.splitlines()[-1] == "False"
