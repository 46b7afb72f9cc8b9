"""The marking flow without Scrapy, and the replay of a stored crawl through it."""

from __future__ import annotations

from typing import Any

from scrapy.settings import BaseSettings

from scrapy_templates.config import TemplatesConfig
from scrapy_templates.marker import Replayed, page_fingerprints, replay
from scrapy_templates.page import parse_page
from scrapy_templates.settings import DEFAULTS
from scrapy_templates.store.memory import MemoryStore
from tests.crawl.test_pipeline import make_pipeline, mark_all
from tests.texts import STORIES

MENU = "".join(f'<li><a href="/topic/{i}">Topic number {i}</a></li>' for i in range(6))


def page(n: int) -> str:
    story = STORIES[n % len(STORIES)]
    return (
        f"<html><body><div id=menu><ul>{MENU}</ul></div><main><h1>Report {n}</h1>"
        f"<p>{story} Page {n} tells it in full.</p><p>{STORIES[(n + 3) % len(STORIES)]}</p>"
        "</main><footer>Example press, all rights kept</footer></body></html>"
    )


def pages(n: int) -> list[tuple[str, str]]:
    return [(f"http://press.test/r/{i}.html", page(i)) for i in range(n)]


def config(**settings: Any) -> TemplatesConfig:
    return TemplatesConfig.from_settings(BaseSettings({**DEFAULTS, **settings}))


async def run(
    crawl: list[tuple[str, str]], cfg: TemplatesConfig, store: MemoryStore | None = None
) -> list[Replayed]:
    store = store or MemoryStore()
    await store.open()
    return [r async for r in replay(crawl, cfg, store)]


async def test_replay_marks_as_the_pipeline_does() -> None:
    crawl = pages(12)
    items = await mark_all(
        make_pipeline(TEMPLATES_PARSE_WORKERS=0), [{"url": u, "html": h} for u, h in crawl]
    )
    replayed = await run(crawl, config(TEMPLATES_BOOTSTRAP_PAGES=0))
    assert [r.url for r in replayed] == [u for u, _ in crawl]
    assert [r.marks.content for r in replayed if r.marks] == [i["content_text"] for i in items]
    assert [r.marks.marks for r in replayed if r.marks] == [i["pagelets"] for i in items]
    last = replayed[-1].marks
    assert last is not None and "Topic number" not in last.content


async def test_first_pages_wait_for_the_cold_start() -> None:
    replayed = await run(pages(10), config(TEMPLATES_BOOTSTRAP_PAGES=3))
    assert [r.url for r in replayed] == [u for u, _ in pages(10)]
    first = replayed[0].marks
    assert first is not None and first.info["pages_seen"] == 4
    assert "Topic number" not in first.content and "Report 0" in first.content
    cold = await run(pages(10), config(TEMPLATES_BOOTSTRAP_PAGES=0))
    assert cold[0].marks is not None and "Topic number" in cold[0].marks.content


async def test_pages_still_waiting_when_the_crawl_ends_are_decided() -> None:
    replayed = await run(pages(3), config(TEMPLATES_BOOTSTRAP_PAGES=6))
    assert [r.url for r in replayed] == [u for u, _ in pages(3)]
    assert all(r.marks is not None and r.marks.info["pages_seen"] == 3 for r in replayed)


async def test_a_page_that_is_no_html_is_reported_and_the_replay_goes_on() -> None:
    crawl = pages(8)
    crawl.insert(2, ("http://press.test/empty", ""))
    replayed = await run(crawl, config())
    bad = [r for r in replayed if r.marks is None]
    assert [(r.url, r.error) for r in bad] == [("http://press.test/empty", "empty")]
    assert len(replayed) == 9


async def test_relearning_by_page_count_prunes_single_counters() -> None:
    crawl = pages(12)
    kept, pruned = MemoryStore(), MemoryStore()
    await run(crawl, config(TEMPLATES_RELEARN_PAGES=0), kept)
    await run(crawl, config(TEMPLATES_RELEARN_PAGES=5, TEMPLATES_PRUNE_PAGES=5), pruned)
    _, all_counts = await kept.counts("press.test")
    _, left = await pruned.counts("press.test")
    assert 1 in all_counts.values()
    assert len(left) < len(all_counts)
    menu = page_fingerprints(parse_page(page(0), "http://press.test/r/0.html"))
    assert any(fp in left for fp in menu)
