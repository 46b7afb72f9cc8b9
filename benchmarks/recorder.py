"""What a benchmark crawl did, request by request: a Scrapy extension for benchmark crawls.

Enabled by ``benchmarks.crawl --record FILE``. One JSON line per event:

- ``{"t", "kind": "response", "url", "status", "page", "bytes", "check", "dont_filter"}`` for
  every download, as the downloader got it (Scrapy's ``response_downloaded``: also the
  redirects, the checks of URL rules and the downloads a downloader middleware ends), where
  ``page`` is :func:`page_identity` of the body: two URLs are the same page when what a
  reader sees on them is the same; ``check`` says whether the download checked a URL rule,
  ``dont_filter`` whether it was sent past the dupefilter;
- ``{"t", "kind": "scheduled", "url"}`` for every request the scheduler took;
- ``{"t", "kind": "dupefilter", "url"}`` for every request the scheduler's dupefilter dropped;
- ``{"t", "kind": "dropped" | "rewrote", "url", "canonical"}`` for every request scrapy-templates
  turned away (read from its DEBUG lines).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
import re
import time
import zlib
from pathlib import Path
from typing import IO, Any

from lxml import html as lxml_html
from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.http import Response

from scrapy_templates.crawl.urlguards import CHECK as CHECK_META

_SPACE = re.compile(r"\s+")
# What a page says of time passing changes while the crawl runs: "5 minutes ago", "(less
# than one minute ago)". The same page read a minute apart must stay the same page.
_AGES = re.compile(
    r"\b(?:\d+|an?|one|less than (?:one|a))\s+(?:second|minute|hour|day|week|month|year)s?"
    r"(?:\s+ago)?",
    re.IGNORECASE,
)
_TURNED_AWAY = re.compile(r"^(Dropped|Rewrote) (\S+): the page of (\S+)$")


def decoded_body(response: Response) -> bytes:
    """The body as the spider gets it: a download is seen before Scrapy's
    ``HttpCompressionMiddleware`` undoes its ``Content-Encoding``."""
    body = response.body
    for coding in reversed(response.headers.getlist(b"Content-Encoding")):
        name = coding.strip().lower()
        try:
            if name in (b"gzip", b"x-gzip"):
                body = gzip.decompress(body)
            elif name == b"deflate":
                try:
                    body = zlib.decompress(body)
                except zlib.error:
                    body = zlib.decompress(body, -zlib.MAX_WBITS)
        except (OSError, EOFError, zlib.error):
            break  # as the spider would get it: the middleware would fail on it too
    return body


def page_identity(body: bytes, content_type: str = "text/html") -> str:
    """A short hash of what a reader sees: the HTML's text without scripts, styles or markup,
    spaces collapsed and ages masked; any other body as its bytes."""
    if "html" in content_type.lower() and body.strip():
        try:
            root = lxml_html.fromstring(body)
        except (ValueError, lxml_html.etree.ParserError):
            root = None
        if root is not None:
            for bad in root.xpath("//script|//style|//noscript|//template"):
                bad.drop_tree()
            text = _AGES.sub("AGE", _SPACE.sub(" ", root.text_content()).strip())
            return hashlib.blake2b(text.encode("utf-8"), digest_size=8).hexdigest()
    return hashlib.blake2b(body, digest_size=8).hexdigest()


class _TurnedAway(logging.Handler):
    def __init__(self, write: Any) -> None:
        super().__init__(logging.DEBUG)
        self.write = write

    def emit(self, record: logging.LogRecord) -> None:
        match = _TURNED_AWAY.match(record.getMessage())
        if match:
            kind, url, canonical = match.groups()
            self.write({"kind": kind.lower(), "url": url, "canonical": canonical})


class Recorder:
    def __init__(self, crawler: Crawler, path: Path) -> None:
        self.file: IO[str] = path.open("w", encoding="utf-8")
        self.handler = _TurnedAway(self.write)
        self.logger = logging.getLogger("scrapy_templates.crawl.middlewares")
        self.logger.addHandler(self.handler)
        self.logger.setLevel(logging.DEBUG)
        self.logger.propagate = False
        crawler.signals.connect(self.response, signals.response_downloaded)
        crawler.signals.connect(self.scheduled, signals.request_scheduled)
        crawler.signals.connect(self.dupefilter, signals.request_dropped)
        crawler.signals.connect(self.close, signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Recorder:
        return cls(crawler, Path(crawler.settings["BENCHMARK_RECORD"]))

    def write(self, event: dict[str, Any]) -> None:
        self.file.write(json.dumps({"t": time.monotonic(), **event}) + "\n")

    def response(self, response: Response, request: Request, spider: Any = None) -> None:
        kind = response.headers.get(b"Content-Type", b"").decode("latin-1")
        body = decoded_body(response)
        self.write(
            {
                "kind": "response",
                "url": request.url,
                "status": response.status,
                "page": page_identity(body, kind),
                "bytes": len(body),
                "check": CHECK_META in request.meta,
                "dont_filter": request.dont_filter,
            }
        )

    def scheduled(self, request: Request, spider: Any = None) -> None:
        self.write({"kind": "scheduled", "url": request.url})

    def dupefilter(self, request: Request, spider: Any = None) -> None:
        self.write({"kind": "dupefilter", "url": request.url})

    def close(self, spider: Any = None) -> None:
        self.logger.removeHandler(self.handler)
        self.file.close()
