"""The progress line: what it says, read from the crawl's stats."""

from __future__ import annotations

import logging

import pytest
from scrapy.exceptions import NotConfigured
from scrapy.utils.test import get_crawler

from scrapy_templates.crawl.progress import ProgressLog


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _progress(**settings: object) -> ProgressLog:
    crawler = get_crawler(settings_dict={"TEMPLATES_LOGSTATS_INTERVAL": 30.0, **settings})
    return ProgressLog.from_crawler(crawler)


def test_message_reads_the_stats() -> None:
    clock = Clock()
    progress = ProgressLog(get_crawler().stats, 30.0, url_rules=True, clock=clock)  # type: ignore[arg-type]
    clock.now += 30
    stats = progress.stats
    stats.set_value("templates/items_marked", 40)
    stats.set_value("templates/text_chars", 1000)
    stats.set_value("templates/template_chars", 250)
    stats.set_value("templates/items_skipped/not-html", 2)
    stats.set_value("templates/items_skipped/too-big", 1)
    stats.set_value("templates/urls/rules", 3)
    stats.set_value("templates/urls/rewritten", 12)
    stats.set_value("templates/urls/dropped", 5)
    line, args = progress.message()
    assert line % args == (
        "Templates: marked 40 pages (at 80 pages/min), 25.0% of page text in templates, "
        "3 items not marked; URL rules in force 3, requests rewritten 12, dropped 5"
    )
    stats.set_value("templates/items_marked", 55)
    clock.now += 10  # the closing line comes before a whole interval has passed
    line, args = progress.message()
    assert "marked 55 pages (at 90 pages/min)" in line % args


def test_before_any_page_and_without_url_rules() -> None:
    line, args = _progress(TEMPLATES_URL_RULES=False).message()
    assert line % args == (
        "Templates: marked 0 pages (at 0 pages/min), 0.0% of page text in templates, "
        "0 items not marked"
    )


def test_log_writes_one_info_line(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="scrapy_templates.crawl.progress"):
        _progress().log()
    [record] = caplog.records
    assert record.levelno == logging.INFO and record.getMessage().startswith("Templates: marked 0")


def test_interval_zero_turns_it_off() -> None:
    with pytest.raises(NotConfigured):
        _progress(TEMPLATES_LOGSTATS_INTERVAL=0)
