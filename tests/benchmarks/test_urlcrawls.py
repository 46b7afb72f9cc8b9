"""The side-by-side crawl benchmark's bookkeeping on hand-made records."""

from __future__ import annotations

import gzip
import zlib
from typing import Any

from scrapy.http import HtmlResponse

from benchmarks.recorder import decoded_body, page_identity
from benchmarks.urlcrawls import WINDOW, Crawl


def test_a_page_is_what_a_reader_sees() -> None:
    page = b"<html><body><h1>Ticket 7</h1><p>Opened 5 minutes ago</p>%s</body></html>"
    same = page_identity(page % b"<script>var t = 1;</script>")
    assert same == page_identity(page % b"<script>var t = 2;</script><!-- x -->")
    # what a page says of time passing changes while the crawl runs
    later = page.replace(b"5 minutes ago", b"an hour ago")
    assert page_identity(later % b"") == page_identity(page % b"")
    assert page_identity(page.replace(b"Ticket 7", b"Ticket 8") % b"") != same
    assert page_identity(b"a,b\n1,2\n", "text/csv") != page_identity(b"a,b\n1,3\n", "text/csv")


def _response(url: str, page: str, t: float = 0.0) -> dict[str, Any]:
    return {"t": t, "kind": "response", "url": url, "status": 200, "page": page, "bytes": 10}


def test_duplicates_pages_and_rates() -> None:
    events = [_response(f"http://h/{i}", str(i % 3), t=i) for i in range(6)]
    errors = [{**_response(f"http://h/e{i}", "404:x"), "status": 404} for i in range(3)]
    crawl = Crawl(events + errors, {"elapsed_time_seconds": 6.0})
    assert crawl.duplicates == 3 and crawl.pages == {"0", "1", "2"}
    assert crawl.late_over_early() is None  # too short a crawl
    slow_end = [
        _response(f"http://h/{i}", str(i), t=i if i < WINDOW else 2 * i) for i in range(2 * WINDOW)
    ]
    assert Crawl(slow_end, {}).late_over_early() < 0.6


def test_duplicates_by_what_tells_their_urls_apart() -> None:
    """A session id never tells pages apart: its duplicates come from the URL. A sort order
    does on a long list, so its duplicates on a one-item list come from the data."""
    events = [
        _response("http://h/a?sid=1", "a"),
        _response("http://h/a?sid=2", "a"),
        _response("http://h/list?n=9", "long"),
        _response("http://h/list?n=9&order=down", "long down"),
        _response("http://h/list?n=1&order=up", "short"),
        _response("http://h/list?order=down&n=1", "short"),
        _response("http://h/b", "a"),
        _response("http://h/a?sid=1", "a"),
    ]
    causes = Crawl(events, {}).duplicate_causes()
    assert causes == {
        (("sid",), False): 1,
        (("order",), True): 1,  # its presence reorders the long list
        (("(path)",), False): 1,
        ((), False): 1,  # the same URL downloaded again
    }
    assert sum(causes.values()) == Crawl(events, {}).duplicates


def test_what_each_tool_turned_away() -> None:
    """A URL counts when the tool turned it away and Scrapy's own dupefilter would not have:
    for scrapy-templates a drop or rewrite of a URL never downloaded, for the peer a drop of a
    URL the scheduler never took."""
    events = [
        {"t": 0, "kind": "scheduled", "url": "http://h/a?sid=1"},
        _response("http://h/a?sid=1", "A"),
        {"t": 1, "kind": "dropped", "url": "http://h/a?sid=2", "canonical": "http://h/a"},
        {"t": 2, "kind": "rewrote", "url": "http://h/b?sid=3", "canonical": "http://h/b"},
        {"t": 3, "kind": "scheduled", "url": "http://h/b"},
        # queued, then dropped by the downloader middleware: never downloaded
        {"t": 4, "kind": "scheduled", "url": "http://h/c?sid=4"},
        {"t": 5, "kind": "dropped", "url": "http://h/c?sid=4", "canonical": "http://h/c"},
        # downloaded, dropped again later: Scrapy would not have fetched it twice either
        {"t": 6, "kind": "dropped", "url": "http://h/a?sid=1", "canonical": "http://h/a"},
        {"t": 7, "kind": "dupefilter", "url": "http://h/a?sid=1"},
    ]
    assert Crawl(events, {}).turned_away("scrapy-templates") == {
        "http://h/a?sid=2": "http://h/a",
        "http://h/b?sid=3": "http://h/b",
        "http://h/c?sid=4": "http://h/c",
    }
    assert Crawl(events, {}).turned_away("plain Scrapy") == {}


def test_the_recorder_reads_a_compressed_download_as_the_spider_would() -> None:
    page = b"<html><body><p>Ticket 7: the bridge closed before dawn.</p></body></html>"
    plain = HtmlResponse("http://h.example/t/7", body=page)
    packed = HtmlResponse(
        "http://h.example/t/7",
        body=gzip.compress(page),
        headers={"Content-Encoding": "gzip"},
    )
    assert decoded_body(packed) == page == decoded_body(plain)
    squeezed = zlib.compress(page)
    deflated = HtmlResponse(
        "http://h.example/t/7", body=squeezed, headers={"Content-Encoding": "deflate"}
    )
    assert decoded_body(deflated) == page
    broken = HtmlResponse(
        "http://h.example/t/7", body=b"not gzip", headers={"Content-Encoding": "gzip"}
    )
    assert decoded_body(broken) == b"not gzip"
