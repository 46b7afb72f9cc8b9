from __future__ import annotations

import pytest

from scrapy_templates.marker import page_fingerprints
from scrapy_templates.page import PageError, parse_page
from scrapy_templates.sites import page_id
from scrapy_templates.store.memory import MemoryStore
from scrapy_templates.worker_marking import WorkerMarking
from tests.test_marker import config, pages, run


async def test_a_worker_marks_a_site_as_the_replay_does() -> None:
    crawl = pages(30)
    cfg = config(TEMPLATES_BOOTSTRAP_PAGES=0, TEMPLATES_RELEARN_PAGES=0)
    replayed = await run(crawl, cfg)
    worker = WorkerMarking(cfg)
    marked = [worker.mark(html, url, "press.test") for url, html in crawl]
    assert [m.marks for m in marked] == [r.marks for r in replayed]
    assert "Topic number" not in marked[-1].marks.content
    first = parse_page(crawl[0][1], crawl[0][0])
    assert marked[0].fingerprints == page_fingerprints(first)
    assert (marked[0].text_hash, marked[0].simhash) == (first.text_hash, first.simhash)


async def test_the_shared_stores_answer_brings_other_processes_pages() -> None:
    crawl = pages(12)
    store = MemoryStore()
    await store.open()
    cfg = config(TEMPLATES_BOOTSTRAP_PAGES=0)
    here, there = WorkerMarking(cfg), WorkerMarking(cfg)
    for n, (url, html) in enumerate(crawl):
        worker = here if n < 2 else there
        marked = worker.mark(html, url, "press.test")
        shared = await store.observe(
            "press.test", page_id(url), marked.fingerprints, content_key=marked.text_hash
        )
        worker.merge("press.test", marked.fingerprints, shared)
    assert here.copy.site("press.test").counted == 2
    url, html = pages(13)[12]
    marked = here.mark(html, url, "press.test")
    shared = await store.observe(
        "press.test", page_id(url), marked.fingerprints, content_key=marked.text_hash
    )
    here.merge("press.test", marked.fingerprints, shared)
    counts = here.copy.site("press.test")
    assert counts.counted == 13
    assert max(counts.counts.values()) == 13, "the menu, on every page of both processes"


def test_a_page_that_cannot_be_parsed_raises_as_the_parse_does() -> None:
    worker = WorkerMarking(config())
    with pytest.raises(PageError):
        worker.mark(b"\x00" * 10, "http://press.test/x", "press.test")
