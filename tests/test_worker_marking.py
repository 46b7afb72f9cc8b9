from __future__ import annotations

import pytest

from scrapy_templates.marker import page_fingerprints
from scrapy_templates.page import PageError, parse_page
from scrapy_templates.sites import page_id
from scrapy_templates.store.base import Observation
from scrapy_templates.store.memory import MemoryStore
from scrapy_templates.templates.model import TemplateModel
from scrapy_templates.worker_marking import SiteNews, WorkerMarking
from tests.test_marker import config, pages, run


async def test_a_worker_marks_a_site_as_the_replay_does() -> None:
    crawl = pages(30)
    cfg = config(TEMPLATES_BOOTSTRAP_PAGES=0, TEMPLATES_RELEARN_PAGES=0)
    replayed = await run(crawl, cfg)
    worker = WorkerMarking(cfg)
    (url, html), *rest = crawl
    held = worker.mark(html, url, "press.test", ident=7)
    assert held.marks is None, "a site it never saw: held, for the store's counters"
    ((ident, first),), _ = worker.release("press.test", review=False)
    assert ident == 7
    marked = [held, *(worker.mark(html, url, "press.test") for url, html in rest)]
    assert [first, *(m.marks for m in marked[1:])] == [r.marks for r in replayed]
    last = marked[-1].marks
    assert last is not None and "Topic number" not in last.content
    first = parse_page(crawl[0][1], crawl[0][0])
    assert marked[0].fingerprints == page_fingerprints(first)
    assert (marked[0].text_hash, marked[0].simhash) == (first.text_hash, first.simhash)
    assert not marked[0].known and marked[1].known


async def test_the_shared_stores_answer_brings_other_processes_pages() -> None:
    crawl = pages(12)
    store = MemoryStore()
    await store.open()
    cfg = config(TEMPLATES_BOOTSTRAP_PAGES=0)
    here, there = WorkerMarking(cfg), WorkerMarking(cfg)
    answers: list[tuple[list[int], Observation]] = []
    for n, (url, html) in enumerate(crawl):
        worker = here if n < 2 else there
        marked = worker.mark(html, url, "press.test")
        if marked.marks is None:
            worker.release("press.test", review=False)
        shared = await store.observe(
            "press.test", page_id(url), marked.fingerprints, content_key=marked.text_hash
        )
        answers.append((marked.fingerprints, shared))
    assert here.copy.site("press.test").counted == 2
    url, html = pages(13)[12]
    marked = here.mark(html, url, "press.test", news=SiteNews(merges=answers[2:]))
    counts = here.copy.site("press.test")
    assert counts.counted == 13
    assert max(counts.counts.values()) == 13, "the menu, on every page of both processes"
    assert marked.marks is not None and marked.marks.info["pages_seen"] == 13


def test_held_pages_are_decided_together_on_what_all_of_them_taught() -> None:
    crawl = pages(6)
    worker = WorkerMarking(config(TEMPLATES_BOOTSTRAP_PAGES=3))
    held = [
        worker.mark(html, url, "press.test", hold=True, ident=n)
        for n, (url, html) in enumerate(crawl[:4], start=10)
    ]
    assert [m.marks for m in held] == [None] * 4
    decided, summary = worker.release("press.test")
    assert [ident for ident, _ in decided] == [10, 11, 12, 13]
    for _, marks in decided:
        assert not isinstance(marks, Exception)
        assert "Topic number" not in marks.content and "Report" in marks.content
    assert summary.region_pages == 4
    assert worker.release("press.test") == ([], summary), "nothing held twice"
    url, html = crawl[4]
    later = worker.mark(html, url, "press.test")
    assert later.marks is not None and later.marks.info["pages_seen"] == 5


def test_a_site_the_worker_never_saw_is_held_while_cold_starts_are_on() -> None:
    (url, html), (url2, html2) = pages(2)
    worker = WorkerMarking(config(TEMPLATES_BOOTSTRAP_PAGES=3))
    first = worker.mark(html, url, "press.test", ident=1)
    assert first.marks is None and not first.known
    second = worker.mark(html2, url2, "press.test", ident=2)
    assert second.marks is None and second.known, "behind the held page, in crawl order"
    assert [i for i, _ in worker.release("press.test")[0]] == [1, 2]


def test_news_seeds_prunes_and_installs_a_model() -> None:
    crawl = pages(8)
    worker = WorkerMarking(config(TEMPLATES_BOOTSTRAP_PAGES=0))
    first = parse_page(crawl[0][1], crawl[0][0])
    fingerprints = page_fingerprints(first)
    seed = (50, {fp: 50 for fp in fingerprints} | {1: 1})
    assert worker.mark(crawl[0][1], crawl[0][0], "press.test", ident=7).marks is None
    ((_, marks),), _ = worker.release("press.test", SiteNews(seed=seed), review=False)
    counts = worker.copy.site("press.test")
    assert counts.counted == 50 and counts.counts[1] == 1, "the seed holds the page"
    assert not isinstance(marks, Exception) and marks.info["pages_seen"] == 50
    assert marks.flags and all(marks.flags[:1]), "the menu, on all 50 pages"
    model = TemplateModel("press.test", 3, 50, None, 0)
    news = SiteNews(prune_below=2, model=model, recompute=True)
    blocks = worker.marker.evidence.site_blocks["press.test"]
    settled: list[bool] = []
    blocks.recompute = lambda: settled.append(True)  # type: ignore[method-assign]
    worker.mark(crawl[1][1], crawl[1][0], "press.test", news=news)
    assert 1 not in counts.counts
    assert worker.marker.evidence.models["press.test"] is model
    assert settled == [True], "the layout clusters settled"


def test_a_release_that_fails_answers_each_held_page_with_the_failure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    worker = WorkerMarking(config(TEMPLATES_BOOTSTRAP_PAGES=2))
    for n, (url, html) in enumerate(pages(2)):
        worker.mark(html, url, "press.test", hold=True, ident=n)

    async def broken(*args: object) -> None:
        raise ValueError("no decision")

    monkeypatch.setattr(worker.marker, "decide_held", broken)
    decided, _ = worker.release("press.test")
    assert [(i, type(d)) for i, d in decided] == [(0, ValueError), (1, ValueError)]
    assert worker.release("press.test")[0] == []


def test_a_page_that_cannot_be_parsed_raises_as_the_parse_does() -> None:
    worker = WorkerMarking(config())
    with pytest.raises(PageError):
        worker.mark(b"\x00" * 10, "http://press.test/x", "press.test")
