"""A periodic progress line in the style of Scrapy's LogStats: pages marked, template share,
URL rules in force, requests rewritten and dropped — read from ``crawler.stats`` only."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import AsyncioLoopingCall, create_looping_call
from twisted.internet.task import LoopingCall

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)


class ProgressLog:
    """Logs every ``TEMPLATES_LOGSTATS_INTERVAL`` seconds (0 turns it off) and once at close."""

    def __init__(
        self,
        stats: StatsCollector,
        interval: float,
        url_rules: bool,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stats = stats
        self.interval = interval
        self.url_rules = url_rules
        self.clock = clock
        self._marked_before = 0
        self._time_before = clock()
        self._task: AsyncioLoopingCall | LoopingCall | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ProgressLog:
        interval = crawler.settings.getfloat("TEMPLATES_LOGSTATS_INTERVAL")
        if interval <= 0 or crawler.stats is None:
            raise NotConfigured("TEMPLATES_LOGSTATS_INTERVAL is 0")
        extension = cls(crawler.stats, interval, crawler.settings.getbool("TEMPLATES_URL_RULES"))
        crawler.signals.connect(extension.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.engine_stopped, signal=signals.engine_stopped)
        return extension

    def spider_opened(self) -> None:
        self._time_before = self.clock()
        self._task = create_looping_call(self.log)
        self._task.start(self.interval, now=False)

    def engine_stopped(self) -> None:
        """The closing line, once every spider_closed handler (the last relearn too) is done."""
        if self._task is not None and self._task.running:
            self._task.stop()
        self.log()

    def message(self) -> tuple[str, dict[str, Any]]:
        """The line and its arguments (lazy %-formatting, as Scrapy's own log lines); the rate
        is over the time since the previous line."""
        get = self.stats.get_value
        marked = int(get("templates/items_marked", 0))
        text = int(get("templates/text_chars", 0))
        now = self.clock()
        elapsed = now - self._time_before
        args: dict[str, Any] = {
            "marked": marked,
            "rate": (marked - self._marked_before) * 60.0 / elapsed if elapsed > 0 else 0.0,
            "share": 100.0 * int(get("templates/template_chars", 0)) / text if text else 0.0,
            "skipped": sum(
                int(v)
                for k, v in self.stats.get_stats().items()
                if k.startswith("templates/items_skipped/")
            ),
        }
        self._marked_before, self._time_before = marked, now
        line = (
            "Templates: marked %(marked)d pages (at %(rate)d pages/min), "
            "%(share).1f%% of page text in templates, %(skipped)d items not marked"
        )
        if self.url_rules:
            args.update(
                rules=int(get("templates/urls/rules", 0)),
                rewritten=int(get("templates/urls/rewritten", 0)),
                dropped=int(get("templates/urls/dropped", 0)),
            )
            line += (
                "; URL rules in force %(rules)d, requests rewritten %(rewritten)d, "
                "dropped %(dropped)d"
            )
        return line, args

    def log(self) -> None:
        line, args = self.message()
        logger.info(line, args)
