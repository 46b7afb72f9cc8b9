"""Parse workers: pages parsed in a child process come back as the parse here would give them."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import io
import os
import pickle
import signal
import subprocess
import sys
import time
import zlib
from collections.abc import AsyncIterator
from typing import Any

import lxml.etree
import pytest

from scrapy_templates.config import TemplatesConfig
from scrapy_templates.page import Detached, Page, PageError, parse_elements, parse_page
from scrapy_templates.worker_process import (
    PARENT_ENV,
    PIPE_BYTES,
    ParseOptions,
    frame,
    read_message,
    serve,
    widen_pipes,
)
from scrapy_templates.workers import WorkerPool, WorkerStarting, WorkerUnavailable

LINKS = "".join(f'<li><a href="/s{i}">Section {i}</a></li>' for i in range(4))
HTML = f"""<html><head><title>A page</title><link rel="canonical" href="/c">
<link rel="next" href="/n"></head><body>
<nav><ul>{LINKS}</ul></nav>
<div id="main"><h1>The heading</h1><p>First paragraph with <a href="/x">a link</a>.</p>
<div class="inner"><p>Inner text one.</p><p>Inner text two.</p></div>
<ul class="more">{LINKS}</ul></div>
<footer>© Example 2024</footer></body></html>"""


@contextlib.asynccontextmanager
async def running(
    size: int = 1, max_restarts: int = 3, deadline: float = 30.0
) -> AsyncIterator[WorkerPool]:
    pool = WorkerPool(size, max_restarts, deadline)
    await pool.start()
    try:
        await asyncio.wait_for(pool.until_ready(), 30)
        yield pool
    finally:
        await pool.close()


def same_page(a: Page, b: Page) -> None:
    assert a.pagelets == b.pagelets
    assert a.sequence == b.sequence
    assert a.hidden == b.hidden
    assert (a.url, a.title, a.h1, a.canonical, a.simhash, a.text_hash, a.notes) == (
        b.url,
        b.title,
        b.h1,
        b.canonical,
        b.simhash,
        b.text_hash,
        b.notes,
    )


def test_serve_answers_pages_and_page_errors_in_order() -> None:
    requests = io.BytesIO(
        frame((1, "parse", HTML, "http://s/p", ParseOptions()))
        + frame((2, "parse", b"%PDF-1.4 binary", "http://s/f.pdf", ParseOptions()))
    )
    replies = io.BytesIO()
    serve(requests, replies)
    replies.seek(0)
    first, second = read_message(replies), read_message(replies)
    assert first[:2] == (1, "page")
    assert first[2][0] == "http://s/p"
    assert second == (2, "page-error", "not-html", "body does not look like HTML")
    with pytest.raises(EOFError):
        read_message(replies)


async def test_a_worker_parses_as_the_crawl_thread_would() -> None:
    async with running(1) as pool:
        here = parse_page(HTML, "http://s/p")
        main_path = "body/div#main/div.inner/p"
        options = ParseOptions(main_path=main_path, blocks=True)
        there = await pool.parse(HTML.encode(), "http://s/p", options)
        same_page(there, here)
        assert there.detached and not there.elements
        # the questions asked when it was sent are answered without the elements
        index = next(i for i, p in enumerate(here.pagelets) if p.path == "body/div#main/div.inner")
        assert there.text_below(index, main_path) == here.text_below(index, main_path)
        assert there.text_below(index, main_path) == "Inner text one.\nInner text two."
        everything = range(len(here.pagelets))
        assert there.blocks(everything) == here.blocks(everything)
        assert "The heading" in there.blocks(everything)
        # another question needs the elements: none came back, and no way to parse again
        with pytest.raises(Detached):
            there.text_below(index, "body/div#main/div.inner/span")


async def test_the_blocks_hidden_in_an_unsplit_column_come_back_from_a_worker() -> None:
    short = (
        "<body><div id=content><div><h1>Observer Reference Manual</h1></div><div class=footer>"
        "Copyright © 2002-2026 Example AB. All Rights Reserved.</div></div></body>"
    )
    async with running(1) as pool:
        here = parse_page(short, "http://s/index.html")
        there = await pool.parse(short.encode(), "http://s/index.html", ParseOptions())
        assert here.hidden and there.hidden == here.hidden


async def test_a_detached_page_parses_again_when_asked_what_it_does_not_hold() -> None:
    async with running(1) as pool:
        page = await pool.parse(HTML, "http://s/p", ParseOptions())
    reloads = []

    def reload() -> list[lxml.etree._Element]:
        reloads.append(1)
        return parse_elements(HTML)

    page.reload = reload
    paths = [p.path for p in page.pagelets]
    inner = paths.index("body/div#main/div.inner")
    assert page.text_below(inner, f"{paths[inner]}/p") == "Inner text one.\nInner text two."
    assert page.blocks([paths.index("body/div#main/h1")]) == ["The heading"]
    assert len(reloads) == 1 and not page.detached


async def test_page_errors_come_back_with_their_reason() -> None:
    async with running(1) as pool:
        with pytest.raises(PageError) as caught:
            await pool.parse("   ", "http://s/empty", ParseOptions())
        assert caught.value.reason == "empty"
        many_tags = "<p>x</p>" * 50
        with pytest.raises(PageError) as caught:
            await pool.parse(many_tags, "http://s/big", ParseOptions(max_tags=10))
        assert caught.value.reason == "too-many-tags"
        # the worker goes on after an error
        page = await pool.parse(HTML, "http://s/p", ParseOptions())
        assert page.title == "A page"


async def test_many_pages_in_flight_each_get_their_own_answer() -> None:
    async with running(2) as pool:
        pages = [HTML.replace("The heading", f"Heading {i}") for i in range(40)]
        answers = await asyncio.gather(
            *(pool.parse(html, f"http://s/{i}", ParseOptions()) for i, html in enumerate(pages))
        )
        assert [a.h1 for a in answers] == [f"Heading {i}" for i in range(40)]
        assert [a.url for a in answers] == [f"http://s/{i}" for i in range(40)]
        assert pool.started == 2


async def test_a_dead_worker_fails_its_pages_and_is_replaced() -> None:
    async with running(1, max_restarts=1) as pool:
        first = pool.workers[0]
        await pool.parse(HTML, "http://s/p", ParseOptions())
        first.process.send_signal(signal.SIGKILL)
        with pytest.raises(WorkerUnavailable):
            # sent before the death was noticed, or to no worker: either way not lost silently
            await asyncio.wait_for(pool.parse(HTML, "http://s/q", ParseOptions()), 10)
        await asyncio.wait_for(first.reader, 10)
        with pytest.raises(WorkerStarting):  # its replacement is loading the parser
            await pool.parse(HTML, "http://s/r", ParseOptions())
        await asyncio.wait_for(pool.until_ready(), 30)
        page = await pool.parse(HTML, "http://s/r", ParseOptions())
        assert page.url == "http://s/r"
        assert pool.started == 2 and pool.lost == 1
        # no restarts left: the next death leaves the pool empty, and it says so
        pool.workers[0].process.send_signal(signal.SIGKILL)
        await asyncio.wait_for(pool.workers[0].reader, 10)
        with pytest.raises(WorkerUnavailable, match="no parse worker"):
            await pool.parse(HTML, "http://s/s", ParseOptions())


needs_pipe_sizes = pytest.mark.skipif(
    not hasattr(fcntl, "F_GETPIPE_SZ"), reason="pipe capacities are Linux's"
)


@needs_pipe_sizes
def test_pipes_are_widened_to_hold_many_pages() -> None:
    read, write = os.pipe()
    try:
        before = fcntl.fcntl(read, fcntl.F_GETPIPE_SZ)
        widen_pipes((read,))
        assert fcntl.fcntl(write, fcntl.F_GETPIPE_SZ) == PIPE_BYTES > before
    finally:
        os.close(read)
        os.close(write)


@needs_pipe_sizes
async def test_a_workers_request_pipe_holds_many_pages() -> None:
    async with running(1) as pool:
        stdin = pool.workers[0].process.stdin
        assert stdin is not None
        pipe = stdin.transport.get_extra_info("pipe")
        assert fcntl.fcntl(pipe.fileno(), fcntl.F_GETPIPE_SZ) == PIPE_BYTES


def test_wire_frames_are_length_prefixed_pickles() -> None:
    framed = frame(("x", 1))
    assert int.from_bytes(framed[:4], "little") == len(framed) - 4
    assert pickle.loads(framed[4:]) == ("x", 1)


async def test_a_worker_that_cannot_start_leaves_an_empty_pool(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def no_subprocesses(*args: object, **kwargs: object) -> None:
        raise NotImplementedError

    monkeypatch.setattr(asyncio, "create_subprocess_exec", no_subprocesses)
    pool = WorkerPool(1)
    await pool.start()
    assert pool.workers == [] and "could not start a parse worker" in caplog.text
    with pytest.raises(WorkerUnavailable, match="no parse worker"):
        await pool.parse(HTML, "http://s/p", ParseOptions())
    await pool.close()


async def test_ctrl_c_is_left_to_the_crawl() -> None:
    async with running(1) as pool:
        await pool.parse(HTML, "http://s/p", ParseOptions())  # started and serving
        pool.workers[0].process.send_signal(signal.SIGINT)
        page = await asyncio.wait_for(pool.parse(HTML, "http://s/q", ParseOptions()), 10)
        assert page.url == "http://s/q" and pool.started == 1


# About 8 MB: a parse of well over 0.1 s anywhere.
SLOW = "<html><body>" + "<p>w</p>" * 1_000_000 + "</body></html>"
SLOW_OPTIONS = ParseOptions(max_bytes=10**8, max_tags=10**8)


async def test_a_worker_over_the_deadline_is_killed_and_replaced() -> None:
    async with running(1, max_restarts=0, deadline=0.1) as pool:
        stuck = pool.workers[0]
        slow = asyncio.ensure_future(pool.parse(SLOW, "http://s/slow", SLOW_OPTIONS))
        behind = asyncio.ensure_future(pool.parse(HTML, "http://s/behind", ParseOptions()))
        with pytest.raises(PageError) as info:
            await asyncio.wait_for(slow, 20)
        assert info.value.reason == "parse-timeout"
        with pytest.raises(WorkerUnavailable):  # queued behind it: back to its caller
            await asyncio.wait_for(behind, 20)
        await asyncio.wait_for(stuck.process.wait(), 10)
        assert pool.timeouts == 1
        with pytest.raises(WorkerStarting):  # replaced although no restart was allowed
            await pool.parse(HTML, "http://s/next", ParseOptions())
        await asyncio.wait_for(pool.until_ready(), 30)
        page = await pool.parse(HTML, "http://s/next", ParseOptions())
        assert page.url == "http://s/next" and pool.started == 2


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="reads /proc")
def test_a_worker_whose_crawl_is_killed_exits() -> None:
    # The crawl here starts a worker and dies without closing its input (this test holds
    # it open), as a crawl killed with SIGKILL does: the worker must notice and exit.
    crawl = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import os, subprocess, sys\n"
            f"env = dict(os.environ, {PARENT_ENV}=str(os.getpid()))\n"
            "command = [sys.executable, '-m', 'scrapy_templates.worker_process']\n"
            "worker = subprocess.Popen(command, env=env)\n"
            "print(worker.pid, flush=True)\n"
            "os._exit(0)\n",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert crawl.stdout is not None
    worker = int(crawl.stdout.readline())
    crawl.wait(10)
    try:
        give_up = time.monotonic() + 15
        while _running(worker) and time.monotonic() < give_up:
            time.sleep(0.1)
        assert not _running(worker)
    finally:
        if _running(worker):
            os.kill(worker, signal.SIGKILL)
        assert crawl.stdin is not None
        crawl.stdin.close()
        crawl.stdout.close()


async def test_a_worker_does_url_rule_jobs_with_a_keyring_of_its_own() -> None:
    from scrapy_templates.urlnorm.jobs import Keyring, UrlJob
    from scrapy_templates.urlnorm.rules import RuleSet

    url = "http://h.test/a?sid=1"
    job = UrlJob("h.test", 1, [], [url], 0, published=RuleSet("h.test", 1, [], {}))
    here = Keyring().run(job)
    async with running(1) as pool:
        await pool.until_ready()
        there = await pool.run_url_job(job)
        assert (there.added, there.full, there.held) == (here.added, True, 1)
        # the worker kept the URL: the next job answers with what changed
        again = await pool.run_url_job(UrlJob("h.test", 2, [], [], 1, published=job.published))
        assert (again.full, again.added, again.removed) == (False, [], [])


async def test_a_pool_asked_to_start_by_many_at_once_starts_its_workers_once() -> None:
    """The URL-rule worker starts with the first learning job: the first jobs of several
    hosts ask at the same time, and a pool closed since starts nothing."""
    pool = WorkerPool(1, work="urls", role="URL-rule")
    try:
        await asyncio.gather(*(pool.start() for _ in range(4)))
        assert len(pool.workers) == 1
        assert pool.started == 1
    finally:
        await pool.close()
    await pool.start()
    assert not pool.workers


@pytest.mark.parametrize(
    ("work", "loaded", "left_out"),
    [
        # with the compiled fingerprints, a worker starts without numpy (a third of its start)
        ("parse", ["scrapy_templates.page"], "scrapy_templates.urlnorm.jobs"),
        ("urls", ["numpy", "scrapy_templates.urlnorm.jobs"], "scrapy_templates.page"),
        # the marking releases held pages through the marker's coroutines
        ("mark", ["asyncio", "scrapy_templates.worker_marking"], "scrapy_templates.urlnorm.jobs"),
    ],
)
def test_a_worker_imports_its_own_work_only(work: str, loaded: list[str], left_out: str) -> None:
    """Two workers start while the crawl's first pages download: on two cores, each module a
    worker imports is time taken from the crawl."""
    script = (
        "import sys\n"
        "from scrapy_templates import worker_process\n"
        f"worker_process.main({work!r})\n"  # serves until its input ends: at once
        "loaded = [m for m in ('asyncio', 'numpy', 'scrapy', 'twisted', "
        f"{loaded[-1]!r}, {left_out!r}) if m in sys.modules]\n"
        "print(' '.join(loaded), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
        check=True,
    )
    assert read_message(io.BytesIO(done.stdout)) == (0, "ready")
    assert done.stderr.decode().split() == loaded


def _press(n: int) -> list[tuple[str, str]]:
    from tests.test_marker import pages

    return pages(n)


def _marking_config() -> TemplatesConfig:
    from tests.test_marker import config

    return config(TEMPLATES_BOOTSTRAP_PAGES=0)


def test_serve_marks_pages_with_the_settings_of_the_first_request() -> None:
    from scrapy_templates.store.base import Observation
    from scrapy_templates.worker_marking import SiteNews, WorkerMarking

    cfg = _marking_config()
    crawl = _press(4)
    news = SiteNews(merges=[([1, 2], Observation(40, [30, 30]))])
    requests = io.BytesIO(
        frame((1, "mark", crawl[0][1], crawl[0][0], "press.test", False, None, cfg))
        + frame((2, "release", "press.test", False, None, None))
        + frame((3, "mark", crawl[1][1], crawl[1][0], "press.test", False, news, None))
        + frame(
            (4, "mark", b"%PDF-1.4", "http://press.test/f.pdf", "press.test", False, None, None)
        )
    )
    replies = io.BytesIO()
    serve(requests, replies)
    replies.seek(0)
    first, release, second, third = (read_message(replies) for _ in range(4))
    here = WorkerMarking(cfg)
    here.mark(crawl[0][1], crawl[0][0], "press.test", ident=1)
    assert first[:2] == (1, "marked") and first[2].marks is None, "a site new to it: held"
    assert release[:3] == (2, "released", here.release("press.test", review=False)[0])
    assert second[:2] == (3, "marked")
    assert second[2].marks == here.mark(crawl[1][1], crawl[1][0], "press.test", news=news).marks
    assert second[2].marks.info["pages_seen"] == 41, "the store's pages came in first"
    assert third == (4, "page-error", "not-html", "body does not look like HTML")


def test_serve_releases_held_pages_with_their_idents() -> None:
    from tests.test_marker import config

    cfg = config(TEMPLATES_BOOTSTRAP_PAGES=2)
    crawl = _press(3)
    requests = io.BytesIO(
        b"".join(
            frame((n, "mark", html, url, "press.test", True, None, cfg if n == 1 else None))
            for n, (url, html) in enumerate(crawl, start=1)
        )
        + frame((4, "release", "press.test", True, None, None))
    )
    replies = io.BytesIO()
    serve(requests, replies)
    replies.seek(0)
    marked = [read_message(replies) for _ in range(3)]
    assert [(m[0], m[1], m[2].marks) for m in marked] == [(n, "marked", None) for n in (1, 2, 3)]
    ident, kind, decided, summary = read_message(replies)
    assert (ident, kind, [i for i, _ in decided]) == (4, "released", [1, 2, 3])
    assert all("Topic number" not in marks.content for _, marks in decided)
    assert summary.region_pages == 3


async def test_each_site_is_marked_by_one_worker_that_keeps_its_counts() -> None:
    from scrapy_templates.worker_marking import WorkerMarking

    cfg = _marking_config()
    sites = {
        "press.test": _press(8),
        "other.test": [(u.replace("press.test", "other.test"), h) for u, h in _press(8)],
    }
    here = {site: WorkerMarking(cfg) for site in sites}
    async with running(2) as pool:
        for n in range(8):
            for site, crawl in sites.items():
                url, html = crawl[n]
                there, held = await pool.mark(html, url, site, cfg, hold=False, news=None)
                mine = here[site].mark(html, url, site)
                if n == 0:  # a site new to it: held until released
                    assert held is not None and mine.marks is None
                    await pool.release(site, cfg, None, review=False)
                    assert await held == here[site].release(site, review=False)[0][0][1]
                else:
                    assert held is None and there.marks == mine.marks
        assert {len(w.pending) for w in pool.workers} == {0}
        assert all(w.marking for w in pool.workers if w.ready)
    url, html = _press(9)[8]
    last = here["press.test"].mark(html, url, "press.test").marks
    assert last is not None and "Topic number" not in last.content


async def test_held_pages_are_answered_by_their_sites_release() -> None:
    from tests.test_marker import config

    cfg = config(TEMPLATES_BOOTSTRAP_PAGES=2)
    crawl = _press(3)
    async with running(1) as pool:
        answers = [
            await pool.mark(html, url, "press.test", cfg, hold=True, news=None)
            for url, html in crawl
        ]
        held = [future for _, future in answers]
        assert all(future is not None and not future.done() for future in held)
        summary = await pool.release("press.test", cfg, None, review=True)
        assert summary.region_pages == 3
        for future in held:
            assert future is not None
            assert "Topic number" not in (await future).content


async def test_a_lost_worker_fails_the_pages_it_held() -> None:
    from tests.test_marker import config

    cfg = config(TEMPLATES_BOOTSTRAP_PAGES=2)
    url, html = _press(1)[0]
    async with running(1) as pool:
        _, held = await pool.mark(html, url, "press.test", cfg, hold=True, news=None)
        assert held is not None
        pool.workers[0].process.kill()
        with pytest.raises(WorkerUnavailable):
            await asyncio.wait_for(held, 10)


async def test_a_release_reaches_pages_held_by_a_worker_the_site_no_longer_goes_to() -> None:
    from tests.test_marker import config

    cfg = config(TEMPLATES_BOOTSTRAP_PAGES=2)
    url, html = _press(1)[0]
    async with running(2) as pool:
        _, held = await pool.mark(html, url, "press.test", cfg, hold=True, news=None)
        assert held is not None
        first, second = pool.workers
        first.slot, second.slot = second.slot, first.slot  # the site now routes elsewhere
        await pool.release("press.test", cfg, None, review=True)
        assert "Report 0" in (await asyncio.wait_for(held, 10)).content


async def test_a_site_whose_slot_is_being_refilled_waits_for_its_worker() -> None:
    pool = WorkerPool(2)
    try:
        await pool.start()
        await asyncio.wait_for(pool.until_ready(), 30)
        slot = zlib.crc32(b"press.test") % 2
        routed = next(w for w in pool.workers if w.slot == slot)
        pool.workers.remove(routed)
        pool._refilling.add(slot)
        with pytest.raises(WorkerStarting):
            await pool._worker("press.test")
        pool.workers.append(routed)
        pool._refilling.discard(slot)
        assert await pool._worker("press.test") is routed
    finally:
        await pool.close()


async def test_a_release_goes_to_the_sites_worker_when_another_holder_died() -> None:
    from tests.test_marker import config

    cfg = config(TEMPLATES_BOOTSTRAP_PAGES=2)
    (url, html), (url2, html2) = _press(2)
    async with running(2) as pool:
        _, lost = await pool.mark(html, url, "press.test", cfg, hold=True, news=None)
        first, second = pool.workers
        holder = first if first.holds("press.test") else second
        first.slot, second.slot = second.slot, first.slot  # the site now routes elsewhere
        _, kept = await pool.mark(html2, url2, "press.test", cfg, hold=True, news=None)
        assert lost is not None and kept is not None
        send = holder.send

        def killed_on_release(ident: int, message: bytes) -> asyncio.Future[Any]:
            future = send(ident, message)
            asyncio.get_running_loop().call_soon(holder.kill, 30.0)  # over the deadline
            return future

        holder.send = killed_on_release  # type: ignore[method-assign]
        await pool.release("press.test", cfg, None, review=True)
        assert "Report 1" in (await asyncio.wait_for(kept, 10)).content
        with pytest.raises(WorkerUnavailable):
            await asyncio.wait_for(lost, 10)
