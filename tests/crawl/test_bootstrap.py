"""The cold start: which sites wait, and what ends a wait."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from scrapy_templates.crawl.bootstrap import IDLE_SECONDS, MAX_WAITS, Bootstrap
from tests.crawl.conftest import templates_crawler


def _bootstrap(pages: int, timeout: float = 5.0, downloading: bool = False) -> Bootstrap:
    crawler = templates_crawler()
    crawler.engine = SimpleNamespace(
        downloader=SimpleNamespace(active={"r"} if downloading else set())
    )
    stats: dict[str, int] = {}
    bootstrap = Bootstrap(
        crawler,
        pages=pages,
        timeout=timeout,
        count=lambda key: stats.__setitem__(key, stats.get(key, 0) + 1),
    )
    bootstrap.stats = stats  # type: ignore[attr-defined]
    return bootstrap


def test_a_site_waits_while_the_store_knows_no_more_pages_than_the_sample() -> None:
    assert _bootstrap(8).wanted(1) and _bootstrap(8).wanted(8)
    assert not _bootstrap(8).wanted(9)
    assert not _bootstrap(0).wanted(1)


async def test_waiting_items_are_released_when_enough_pages_are_counted() -> None:
    bootstrap = _bootstrap(3, downloading=True)
    first = asyncio.ensure_future(bootstrap.wait("s.test"))
    second = asyncio.ensure_future(bootstrap.wait("s.test"))
    await asyncio.sleep(0.1)
    bootstrap.counted("s.test", 3)  # not yet: the first page and two more
    await asyncio.sleep(0.1)
    assert not first.done() and not second.done()
    bootstrap.counted("s.test", 4)
    await asyncio.wait_for(asyncio.gather(first, second), 1)
    stats: dict[str, Any] = bootstrap.stats  # type: ignore[attr-defined]
    assert stats == {"templates/bootstrap_sites": 1, "templates/bootstrap_waits": 2}
    await asyncio.wait_for(bootstrap.wait("s.test"), 0.01)  # the site waits no more


async def test_a_crawl_with_nothing_in_flight_ends_the_wait() -> None:
    bootstrap = _bootstrap(6, timeout=30)
    loop = asyncio.get_running_loop()
    started = loop.time()
    await asyncio.wait_for(bootstrap.wait("s.test"), 5)
    assert IDLE_SECONDS <= loop.time() - started < 5
    assert bootstrap.stats["templates/bootstrap_idle"] == 1  # type: ignore[attr-defined]


async def test_a_wait_ends_at_the_timeout_while_other_sites_download() -> None:
    bootstrap = _bootstrap(6, timeout=0.3, downloading=True)
    await asyncio.wait_for(bootstrap.wait("s.test"), 5)
    assert bootstrap.stats["templates/bootstrap_timeouts"] == 1  # type: ignore[attr-defined]


async def test_a_wait_goes_on_while_the_sites_pages_keep_coming() -> None:
    """A slow spider brings a page every little while: each restarts the timeout."""
    bootstrap = _bootstrap(6, timeout=0.5, downloading=True)
    waiting = asyncio.ensure_future(bootstrap.wait("s.test"))
    for known in range(2, 6):
        await asyncio.sleep(0.2)
        bootstrap.counted("s.test", known)
    assert not waiting.done()
    bootstrap.counted("s.test", 7)
    await asyncio.wait_for(waiting, 1)
    assert "templates/bootstrap_timeouts" not in bootstrap.stats  # type: ignore[attr-defined]


async def test_pages_on_their_way_to_be_counted_keep_their_own_sites_wait_going() -> None:
    """The spider's work can leave the pipeline little of the crawl's thread: items that
    arrive uncounted still say that the site's pages are coming — that site's, not another's."""
    bootstrap = _bootstrap(6, timeout=0.5, downloading=True)
    loop = asyncio.get_running_loop()
    started = loop.time()
    waiting = asyncio.ensure_future(bootstrap.wait("s.test"))
    other = asyncio.ensure_future(bootstrap.wait("other.test"))
    for _ in range(4):
        await asyncio.sleep(0.2)
        bootstrap.arriving("s.test")
    assert other.done() and not waiting.done()
    await asyncio.wait_for(waiting, 2)
    assert loop.time() - started >= 0.8 + 0.5
    assert bootstrap.stats["templates/bootstrap_timeouts"] == 2  # type: ignore[attr-defined]


async def test_a_sites_items_never_wait_longer_than_its_cap() -> None:
    """Pages keep coming but never enough: the first batch is released at the cap, and the
    next items of the site get no new budget."""
    bootstrap = _bootstrap(100, timeout=0.05, downloading=True)
    loop = asyncio.get_running_loop()
    started = loop.time()
    waiting = asyncio.ensure_future(bootstrap.wait("s.test"))
    known = 1
    while not waiting.done():
        known += 1
        bootstrap.counted("s.test", known)
        await asyncio.sleep(0.01)
    assert MAX_WAITS * 0.05 <= loop.time() - started < 5
    later = loop.time()
    await asyncio.wait_for(bootstrap.wait("s.test"), 1)
    assert loop.time() - later < 0.05
    assert bootstrap.stats["templates/bootstrap_timeouts"] == 2  # type: ignore[attr-defined]


async def test_the_first_item_released_decides_all_held_with_it_once() -> None:
    """The deciding awaits the store: the items released with it wait for its answer
    rather than deciding the batch again."""
    bootstrap = _bootstrap(3, downloading=True)
    calls: list[list[str]] = []

    async def decide(site: str, held: list[str]) -> list[str | Exception]:
        calls.append(list(held))
        await asyncio.sleep(0.05)
        return [ValueError(h) if h == "bad" else f"marks of {h}" for h in held]

    items = [asyncio.ensure_future(bootstrap.hold("s.test", h, decide)) for h in ("a", "bad", "c")]
    await asyncio.sleep(0.1)
    bootstrap.counted("s.test", 4)
    done = await asyncio.wait_for(asyncio.gather(*items, return_exceptions=True), 2)
    assert calls == [["a", "bad", "c"]]
    assert done[0] == "marks of a" and done[2] == "marks of c"
    assert isinstance(done[1], ValueError)
    late = await asyncio.wait_for(bootstrap.hold("s.test", "d", decide), 1)
    assert late == "marks of d" and calls[-1] == ["d"]


async def test_a_failed_batch_is_each_held_items_failure() -> None:
    bootstrap = _bootstrap(3, timeout=0.2, downloading=True)

    async def decide(site: str, held: list[str]) -> list[str | Exception]:
        raise ConnectionError("the store went away")

    items = [asyncio.ensure_future(bootstrap.hold("s.test", h, decide)) for h in ("a", "b")]
    done = await asyncio.wait_for(asyncio.gather(*items, return_exceptions=True), 2)
    assert all(isinstance(d, ConnectionError) for d in done)


async def test_a_cancelled_item_leaves_no_other_waiting() -> None:
    bootstrap = _bootstrap(3, downloading=True)

    async def decide(site: str, held: list[str]) -> list[str | Exception]:
        await asyncio.sleep(0.05)
        return [f"marks of {h}" for h in held]

    items = [asyncio.ensure_future(bootstrap.hold("s.test", h, decide)) for h in ("a", "b", "c")]
    await asyncio.sleep(0.1)
    items[1].cancel()
    bootstrap.counted("s.test", 4)
    done = await asyncio.wait_for(asyncio.gather(*items, return_exceptions=True), 2)
    assert done[0] == "marks of a" and done[2] == "marks of c"


async def test_a_cancelled_decision_answers_every_held_item() -> None:
    bootstrap = _bootstrap(3, downloading=True)

    async def decide(site: str, held: list[str]) -> list[str | Exception]:
        await asyncio.sleep(10)
        return []

    items = [asyncio.ensure_future(bootstrap.hold("s.test", h, decide)) for h in ("a", "b")]
    await asyncio.sleep(0.1)
    bootstrap.counted("s.test", 4)
    await asyncio.sleep(0.1)  # the first released is deciding
    taker = next(i for i in items if not i.done())
    taker.cancel()
    done = await asyncio.wait_for(asyncio.gather(*items, return_exceptions=True), 2)
    assert all(isinstance(d, (RuntimeError, asyncio.CancelledError)) for d in done)


async def test_a_page_counted_as_the_wait_ends_comes_after_the_held_items() -> None:
    bootstrap = _bootstrap(3, downloading=True)
    order: list[str] = []

    async def decide(site: str, held: list[str]) -> list[str | Exception]:
        await asyncio.sleep(0.05)
        order.extend(held)
        return list(held)

    items = [asyncio.ensure_future(bootstrap.hold("s.test", h, decide)) for h in ("a", "b")]
    await asyncio.sleep(0.1)
    bootstrap.counted("s.test", 4)
    assert await asyncio.wait_for(bootstrap.after_held("s.test"), 2)
    order.append("next page")
    await asyncio.gather(*items)
    assert order == ["a", "b", "next page"]
    assert not await bootstrap.after_held("s.test")


async def test_a_crawler_that_never_started_has_nothing_downloading() -> None:
    # outside a crawl Scrapy raises for the engine; the wait goes on to its idle end
    bootstrap = Bootstrap(templates_crawler(), pages=3, timeout=5.0, count=lambda key: None)
    assert not bootstrap._downloading()


async def test_an_item_whose_wait_fails_is_no_longer_held() -> None:
    bootstrap = _bootstrap(3, downloading=True)
    calls: list[list[str]] = []

    async def decide(site: str, held: list[str]) -> list[str | Exception]:
        calls.append(list(held))
        return [f"marks of {h}" for h in held]

    first = asyncio.ensure_future(bootstrap.hold("s.test", "a", decide))
    await asyncio.sleep(0.05)
    polled = bootstrap._downloading

    def fails() -> bool:
        raise RuntimeError("the next poll of the wait fails")

    bootstrap._downloading = fails  # type: ignore[method-assign]
    await asyncio.wait_for(asyncio.gather(first, return_exceptions=True), 2)
    assert isinstance(first.exception(), RuntimeError)
    bootstrap._downloading = polled  # type: ignore[method-assign]
    # a later item is decided alone, and nothing waits on the failed one
    assert not await asyncio.wait_for(bootstrap.after_held("s.test"), 1)
    second = asyncio.ensure_future(bootstrap.hold("s.test", "b", decide))
    bootstrap.counted("s.test", 4)
    assert await asyncio.wait_for(second, 2) == "marks of b"
    assert calls == [["b"]]
