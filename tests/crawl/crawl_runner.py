"""Runs one real Scrapy crawl in its own process (a Twisted reactor starts once per process).

    python tests/crawl/crawl_runner.py OUT_DIR (--start URL | --urls FILE | --redis-key NAME)
        [--items-under PATH] [--offsite-from PATH] [--crawl-spider] [--set NAME=JSON ...]

With ``--redis-key`` the spider is a scrapy-redis ``RedisSpider`` named NAME: it reads its start
URLs from Redis and follows links through the shared scheduler (pass the scrapy-redis settings
with ``--set``). ``--items-under`` makes items of the pages under PATH only (links are
followed on every page). With ``--offsite-from`` the spider's ``allowed_domains`` is the start
URL's host and links to other hosts are followed too, so Scrapy's offsite filter turns them
away, save those found on pages under PATH, which carry ``allow_offsite``. With
``--crawl-spider`` the spider is a ``CrawlSpider`` (:class:`RulesSpider`). Writes
OUT_DIR/items.jsonl and OUT_DIR/stats.json.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

os.environ.setdefault("TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS", "")

import scrapy
from scrapy.crawler import CrawlerProcess
from scrapy.http import HtmlResponse, Response
from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule


class RunnerSpider(scrapy.Spider):
    name = "runner"

    def __init__(
        self,
        start: str = "",
        urls: str = "",
        items_under: str = "",
        offsite_from: str = "",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.items_under = items_under
        self.follow = bool(start)
        self.start_urls = [start] if start else Path(urls).read_text().split()
        self.netloc = urlsplit(self.start_urls[0]).netloc
        self.extractor = LinkExtractor()
        self.offsite_from = offsite_from
        if offsite_from:
            self.allowed_domains = [urlsplit(self.start_urls[0]).hostname]

    def parse(self, response: Response) -> Iterator[Any]:
        if not isinstance(response, HtmlResponse):
            return
        if urlsplit(response.url).path.startswith(self.items_under):
            yield {"url": response.url, "html": response.text}
        if self.follow:
            path = urlsplit(response.url).path
            allow = bool(self.offsite_from) and path.startswith(self.offsite_from)
            for link in self.extractor.extract_links(response):
                if urlsplit(link.url).netloc == self.netloc:
                    yield response.follow(link.url, callback=self.parse)
                elif self.offsite_from:
                    meta = {"allow_offsite": True} if allow else {}
                    yield response.follow(link.url, callback=self.parse, meta=meta)


class RulesSpider(CrawlSpider):
    """A ``CrawlSpider`` as its documentation shows one: every same-host link followed, an
    item made by the rule's callback — so not of the start response, which goes to
    ``parse_start_url``."""

    name = "rules"
    rules = (Rule(LinkExtractor(), callback="parse_item", follow=True),)

    def __init__(self, start: str, **kwargs: Any) -> None:
        self.start_urls = [start]
        self.allowed_domains = [urlsplit(start).hostname or ""]
        super().__init__(**kwargs)

    def parse_item(self, response: Response) -> Iterator[Any]:
        if isinstance(response, HtmlResponse):
            yield {"url": response.url, "html": response.text}


def _redis_spider(name: str) -> type[scrapy.Spider]:
    """A RedisSpider that follows same-host links like :class:`RunnerSpider`."""
    from scrapy_redis.spiders import RedisSpider

    class SharedSpider(RedisSpider):  # type: ignore[misc]
        def parse(self, response: Response) -> Iterator[Any]:
            if not isinstance(response, HtmlResponse):
                return
            yield {"url": response.url, "html": response.text}
            netloc = urlsplit(response.url).netloc
            for link in LinkExtractor().extract_links(response):
                if urlsplit(link.url).netloc == netloc:
                    yield response.follow(link.url, callback=self.parse)

    SharedSpider.name = name
    return SharedSpider


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--start", default="")
    parser.add_argument("--urls", default="")
    parser.add_argument("--redis-key", default="")
    parser.add_argument("--items-under", default="")
    parser.add_argument("--offsite-from", default="")
    parser.add_argument("--crawl-spider", action="store_true")
    parser.add_argument("--set", action="append", default=[])
    args = parser.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    settings: dict[str, Any] = {
        "ADDONS": {"scrapy_templates.Addon": 500},
        "TWISTED_REACTOR": "twisted.internet.asyncioreactor.AsyncioSelectorReactor",
        "ROBOTSTXT_OBEY": False,
        "COOKIES_ENABLED": False,
        "TELNETCONSOLE_ENABLED": False,
        "LOG_LEVEL": "INFO",
        "FEEDS": {str(args.out_dir / "items.jsonl"): {"format": "jsonlines", "overwrite": True}},
    }
    for pair in args.set:
        name, _, value = pair.partition("=")
        settings[name] = json.loads(value)
    process = CrawlerProcess(settings)
    if args.redis_key:
        crawler = process.create_crawler(_redis_spider(args.redis_key))
        process.crawl(crawler)
    elif args.crawl_spider:
        crawler = process.create_crawler(RulesSpider)
        process.crawl(crawler, start=args.start)
    else:
        crawler = process.create_crawler(RunnerSpider)
        process.crawl(
            crawler,
            start=args.start,
            urls=args.urls,
            items_under=args.items_under,
            offsite_from=args.offsite_from,
        )
    process.start()
    stats = crawler.stats.get_stats() if crawler.stats else {}
    (args.out_dir / "stats.json").write_text(json.dumps(stats, default=str))


if __name__ == "__main__":
    main()
