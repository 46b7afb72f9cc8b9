"""A plain site spider: follow every same-host link, yield one item per HTML page."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import scrapy
from scrapy.http import HtmlResponse, Response
from scrapy.linkextractors import LinkExtractor


class SiteSpider(scrapy.Spider):
    name = "site"

    def __init__(self, base_url: str = "", max_pages: str = "0", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not base_url:
            raise ValueError("pass -a base_url=http://127.0.0.1:PORT/")
        self.start_urls = [base_url]
        self.allowed_domains = [urlsplit(base_url).hostname or ""]
        self.netloc = urlsplit(base_url).netloc
        self.links = LinkExtractor()

    def parse(self, response: Response) -> Iterator[Any]:
        if not isinstance(response, HtmlResponse):
            return
        yield {
            "url": response.url,
            "title": response.css("title::text").get(default=""),
            "html": response.text,
        }
        for link in self.links.extract_links(response):
            if urlsplit(link.url).netloc == self.netloc:
                yield response.follow(link.url, callback=self.parse)
