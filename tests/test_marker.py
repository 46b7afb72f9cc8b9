"""The marking flow without Scrapy, and the replay of a stored crawl through it."""

from __future__ import annotations

import functools
from typing import Any

import pytest
from scrapy.settings import BaseSettings

import scrapy_templates.marker as marker_module
from scrapy_templates.config import TemplatesConfig
from scrapy_templates.marker import Marker, Replayed, page_fingerprints, replay
from scrapy_templates.page import Detached, Page, parse_elements, parse_page
from scrapy_templates.settings import DEFAULTS
from scrapy_templates.store.memory import MemoryStore
from scrapy_templates.templates import marking
from scrapy_templates.templates.marking import PageMarks
from tests.crawl.test_pipeline import demo_items, make_pipeline, mark_all
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


APPS = ["observer", "kernel", "stdlib", "mnesia", "crypto", "inets", "ssl", "xmerl", "eunit"]


def short_page(n: int, short: int = 3) -> str:
    """An application's index page (the first ``short``): too link-poor to split, its footer
    inside its only pagelet; the long pages after it have the footer as a pagelet of its
    own."""
    footer = f"<div class=footer>Copyright © {1990 + n}-2026 Example AB. All Rights Reserved.</div>"
    if n < short:
        body = f"<h1>Guide {n} {APPS[n]}</h1><p>Version {n}.0</p>"
    else:
        links = "".join(f"<li><a href='/f{n}_{j}.html'>function_{n}_{j}</a></li>" for j in range(4))
        body = f"<h1>Module {n}</h1><p>{STORIES[n % len(STORIES)]}</p><ul>{links}</ul>"
    return f"<html><body><div id=content>{body}{footer}</div></body></html>"


async def test_held_pages_are_marked_on_what_all_of_them_taught() -> None:
    """The first pages wait for the cold start and are marked again once all of them were
    learned from: the footer inside the first short pages is cut, as it is from later ones."""
    crawl = [(f"http://app.test/{n}.html", short_page(n)) for n in range(12)]
    held = await run(crawl, config(TEMPLATES_BOOTSTRAP_PAGES=11))
    assert all(r.marks is not None for r in held)
    contents = [r.marks.content for r in held if r.marks]
    assert "Guide 0" in contents[0] and "Version 0.0" in contents[0]
    assert not any("Copyright" in c for c in contents)
    once = await run(crawl, config(TEMPLATES_BOOTSTRAP_PAGES=0))
    assert once[0].marks is not None and "Copyright" in once[0].marks.content


def manual_page(n: int, short: int = 6) -> str:
    """A page of a manual with a bar naming the manual above its content (the same on no two
    pages here) and a menu beside it: the first ``short`` are index pages, where the bar is
    as long as the content."""
    name = " ".join(STORIES[(n + k) % len(STORIES)].split()[n % 5] for k in range(3))
    menu = "".join(f"<li><a href='/m/{j}.html'>Chapter number {j}</a></li>" for j in range(6))
    content = (
        f"<h1>Index {n}</h1><p>Version {n}.0 of {APPS[n % len(APPS)]}</p>"
        if n < short
        else "".join(f"<p>{STORIES[(n + k) % len(STORIES)]}</p>" for k in range(4))
        + "<ul>"
        + "".join(f"<li><a href='/f/{n}_{j}.html'>function_{n}_{j}</a></li>" for j in range(4))
        + "</ul>"
    )
    return (
        f"<html><body><div id=box><div class=bar><h1>{name} manual {n}</h1></div>"
        f"<nav><ul>{menu}</ul></nav><div id=content>{content}</div></div></body></html>"
    )


async def test_held_pages_are_reviewed_on_the_region_all_of_them_give() -> None:
    """The site's main region is recomputed every few pages while a crawl goes on; held pages
    are reviewed on the region of all of them. Here the first index pages hold the region at
    the box until the longer pages outweigh them, after the last periodic recomputation."""
    crawl = [(f"http://manual.test/{n}.html", manual_page(n)) for n in range(40)]
    held = await run(crawl, config(TEMPLATES_BOOTSTRAP_PAGES=27))
    first = held[0].marks
    assert first is not None and first.info["pages_seen"] == 28
    assert first.main_path == "body/div#box/div#content"
    assert "Index 0" in first.content and "manual 0" not in first.content


async def test_a_footer_hidden_in_most_pages_counts_on_all_of_them() -> None:
    """Most of the first pages are too short to split: their footer hides in their only
    pagelet, and the pages that show it as a pagelet of its own are a minority. Counted
    where it hides too, it is template on every page, cut from the short ones."""
    crawl = [(f"http://app.test/{n}.html", short_page(n, short=9)) for n in range(14)]
    held = await run(crawl, config(TEMPLATES_BOOTSTRAP_PAGES=13))
    contents = [r.marks.content for r in held if r.marks]
    assert len(contents) == 14
    assert "Guide 0" in contents[0] and "Module 13" in contents[13]
    assert not any("Copyright" in c for c in contents)


async def test_a_review_changes_no_evidence() -> None:
    """Two markers see the same pages; one reviews every page it decided: the next page's
    marks, and what either learned, are the same."""
    markers = [Marker.from_config(config(), MemoryStore()) for _ in range(2)]
    crawl = pages(9)
    for n, marker in enumerate(markers):
        await marker.store.open()
        for url, html in crawl[:8]:
            parsed = parse_page(html, url)
            fingerprints = page_fingerprints(parsed)
            obs = await marker.count("press.test", parsed, fingerprints)
            marker.decide("press.test", parsed, fingerprints, obs)
            if n == 1:
                again = marker.review("press.test", parsed, fingerprints, obs)
                assert "Report" in again.content
    last = []
    for marker in markers:
        parsed = parse_page(crawl[8][1], crawl[8][0])
        fingerprints = page_fingerprints(parsed)
        obs = await marker.count("press.test", parsed, fingerprints)
        last.append(marker.decide("press.test", parsed, fingerprints, obs))
    assert last[0] == last[1]
    plain, reviewed = (m.evidence for m in markers)
    assert plain.main_path("press.test") == reviewed.main_path("press.test")
    assert plain.blocks("press.test").layouts.pages == reviewed.blocks("press.test").layouts.pages
    assert plain.sections("press.test").pages == reviewed.sections("press.test").pages


async def test_a_held_page_that_fails_gets_its_error_and_the_others_their_marks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def decide_page(page: Page, *args: Any, **kwargs: Any) -> PageMarks:
        if page.url.endswith("/1.html"):
            raise ValueError("a page the decision cannot read")
        return marking.decide_page(page, *args, **kwargs)

    monkeypatch.setattr(marker_module, "decide_page", decide_page)
    marker = Marker.from_config(config(), MemoryStore())
    await marker.store.open()
    held = []
    for url, html in pages(3):
        parsed = parse_page(html, url)
        fingerprints = page_fingerprints(parsed)
        obs = await marker.count("press.test", parsed, fingerprints)
        held.append((parsed, fingerprints, obs.new))
    marked = await marker.decide_held("press.test", held)
    assert isinstance(marked[1], ValueError)
    assert all(isinstance(m, PageMarks) and "Report" in m.content for m in (marked[0], marked[2]))


async def _held(marker: Marker, crawl: list[tuple[str, str]], detached: bool) -> list[Any]:
    """The crawl's pages counted and held as the pipeline holds them: parsed here, or
    detached as a worker sends them before the site has any evidence."""
    held = []
    for url, html in crawl:
        parsed = parse_page(html, url)
        fingerprints = page_fingerprints(parsed)
        obs = await marker.count("demo.test", parsed, fingerprints)
        held.append((parsed.detach() if detached else parsed, fingerprints, obs.new))
    return held


async def test_held_pages_parsed_elsewhere_are_detached_anew_for_their_review() -> None:
    crawl = [(i["url"], i["html"]) for i in demo_items()[:12]]
    here = Marker.from_config(config(), MemoryStore())
    await here.store.open()
    expected = await here.decide_held("demo.test", await _held(here, crawl, False))
    asked: list[tuple[str, str | None, bool]] = []

    def refetch(html: str, url: str) -> Any:
        async def again(main_path: str | None, blocks: bool) -> Page:
            asked.append((url, main_path, blocks))
            return parse_page(html, url).detach(main_path, blocks)

        return again

    marker = Marker.from_config(config(), MemoryStore())
    await marker.store.open()
    held = await _held(marker, crawl, True)
    for (page, _, _), (_, html) in zip(held, crawl, strict=True):
        page.refetch = refetch(html, page.url)  # no reload: a question here would raise
    marked = await marker.decide_held("demo.test", held)
    assert marked == expected
    assert all(isinstance(m, PageMarks) for m in marked)
    main_path = marker.evidence.main_path("demo.test")
    assert main_path is not None and asked
    assert {a[1] for a in asked} == {main_path}
    assert any(blocks for _, _, blocks in asked)


async def test_a_held_page_that_cannot_be_had_again_is_asked_here() -> None:
    crawl = [(i["url"], i["html"]) for i in demo_items()[:12]]
    marker = Marker.from_config(config(), MemoryStore())
    await marker.store.open()
    held = await _held(marker, crawl, True)

    async def gone(main_path: str | None, blocks: bool) -> None:
        return None

    async def other(main_path: str | None, blocks: bool) -> Page:  # parses differently
        return parse_page("<body><p>Another page</p></body>", "http://press.test/x").detach()

    raised: list[str | None] = []

    def raises(main_path: str | None, blocks: bool) -> Any:
        raised.append(main_path)
        raise RuntimeError("no worker to ask")

    html = dict(crawl)
    for n, (page, _, _) in enumerate(held):
        page.refetch = (gone, other, raises)[n % 3]
        if n < 3:  # the others have no way to their elements
            page.reload = functools.partial(parse_elements, html[page.url])
    marked = await marker.decide_held("demo.test", held)
    here = Marker.from_config(config(), MemoryStore())
    await here.store.open()
    expected = await here.decide_held("demo.test", await _held(here, crawl, False))
    # a page parsed otherwise is not taken; one with a way to its elements parses here
    assert marked[:3] == expected[:3]
    # one with none fails if it is asked (its item passes unmarked); the others are marked
    assert all(m == e or isinstance(m, Detached) for m, e in zip(marked, expected, strict=True))
    assert any(isinstance(m, Detached) for m in marked[3:])
    assert raised  # a page whose way back raised was asked here


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
