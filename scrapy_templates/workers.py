"""Parse workers: child processes that parse pages off the crawl's thread.

A Scrapy crawl runs its engine, downloads and item pipelines on one thread, and parsing a page
(lxml, the pagelet partition, fingerprints, simhash) is most of what the template pipeline
costs there. A worker is a fresh interpreter (:mod:`scrapy_templates.worker_process`) that
reads requests on its stdin and answers on its stdout, one length-prefixed pickle each way:
the crawl's thread pays for sending the HTML and reading a small answer, and the parse runs on
another core. This module is the crawl's side: the pool, its workers' pipes and their
deadline.

Workers are new interpreters, never forks of the crawl (a fork of a process with a running
reactor and threads may inherit a held lock) and never started by :mod:`multiprocessing`'s
spawn, which imports the main script again: a crawl script without a ``__main__`` guard would
start a second crawl. A worker that cannot start or dies costs speed only: its pages raise
:class:`WorkerUnavailable` and the caller parses them itself. A worker that spends more than
the pool's deadline on one page is killed and replaced: that page fails with
:class:`~scrapy_templates.page.PageError` (``"parse-timeout"``), the pages queued behind it with
:class:`WorkerUnavailable`. A worker whose crawl is gone (killed, so it never closed the
worker's input) exits by itself within a second, even in the middle of a page.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import pickle
import sys
import time
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy_templates.page import Page, PageError, Pagelet
from scrapy_templates.worker_process import HEADER, PARENT_ENV, ParseOptions, frame

if TYPE_CHECKING:
    from scrapy_templates.config import TemplatesConfig
    from scrapy_templates.templates.marking import PageMarks
    from scrapy_templates.worker_marking import Marked, SiteNews, SiteSummary

logger = logging.getLogger(__name__)

_PACKAGE_ROOT = str(Path(__file__).resolve().parent.parent)


def worker_count(value: int | None) -> int:
    """``TEMPLATES_PARSE_WORKERS``: ``None`` is one worker when this process may run on more
    than one CPU."""
    if value is not None:
        return value
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return 1 if (cpus or 1) > 1 else 0


class WorkerUnavailable(RuntimeError):
    """No worker could parse the page (none running, or it died or failed on the page)."""


class WorkerStarting(WorkerUnavailable):
    """Every running worker is still loading the parser: the page is better parsed by the
    caller than queued behind an interpreter's start (a few tenths of a second)."""


def from_wire(wire: tuple[Any, ...]) -> Page:
    """A page as :func:`~scrapy_templates.worker_process.to_wire` sent it."""
    url, pagelets, title, simhash, text_hash, notes, canonical, h1, sequence, *rest = wire
    below, blocks, hidden = rest
    return Page(
        url,
        list(map(Pagelet._make, pagelets)),
        title,
        simhash,
        text_hash,
        notes,
        [],
        canonical,
        h1,
        sequence,
        detached=True,
        below=below,
        block_texts=blocks,
        hidden=hidden,
    )


class _Worker:
    """One child process and the futures of the pages it was sent."""

    def __init__(self, process: asyncio.subprocess.Process, slot: int) -> None:
        self.process = process
        self.slot = slot  # the keys routed to it (see WorkerPool.mark) stay while it is replaced
        self.pending: dict[int, asyncio.Future[Any]] = {}
        # pages it holds for their site's cold start (the site, the future of the marks):
        # their marks come with the site's release
        self.held: dict[int, tuple[str, asyncio.Future[PageMarks]]] = {}
        self.alive = True
        self.ready = False
        self.marking = False  # whether it was given the marking's settings
        # when the page at the head of ``pending`` reached the worker (as far as the crawl
        # can tell: its last reply, or the send when it had no page in hand)
        self.head_since = time.monotonic()
        self.reader = asyncio.ensure_future(self._read_replies())

    def send(self, ident: int, message: bytes) -> asyncio.Future[Any]:
        if not self.alive or self.process.stdin is None:
            raise WorkerUnavailable("worker exited")
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if not self.pending:
            self.head_since = time.monotonic()
        self.pending[ident] = future
        self.process.stdin.write(message)
        return future

    def overdue(self, deadline: float, now: float) -> bool:
        """Whether the page at the head of the queue has taken more than ``deadline``."""
        return self.alive and bool(self.pending) and now - self.head_since > deadline

    def kill(self, deadline: float) -> None:
        """Stop a worker stuck on a request: a page fails with ``parse-timeout`` (any request
        at all with a :class:`~scrapy_templates.page.PageError` of that reason), the requests
        behind it go back to their callers."""
        with contextlib.suppress(ProcessLookupError):
            self.process.kill()
        if self.pending:
            head = next(iter(self.pending))
            future = self.pending.pop(head)
            if not future.done():
                future.set_exception(
                    PageError("parse-timeout", f"no parse after {deadline:g}s; worker replaced")
                )
        self._lose("worker killed on a page over the deadline")

    async def _read_replies(self) -> None:
        assert self.process.stdout is not None
        stdout = self.process.stdout
        try:
            while True:
                (size,) = HEADER.unpack(await stdout.readexactly(HEADER.size))
                ident, kind, *rest = pickle.loads(await stdout.readexactly(size))
                if kind == "ready":
                    self.ready = True
                    continue
                self.head_since = time.monotonic()
                future = self.pending.pop(ident, None)
                if kind == "released":  # the held pages are answered whoever waits
                    self._released(rest[0])
                if future is None or future.done():
                    continue
                if kind == "page":
                    future.set_result(from_wire(rest[0]))
                elif kind == "keyed":
                    future.set_result(rest[0])
                elif kind == "marked":
                    future.set_result((rest[0], self._hold(ident, rest[0])))
                elif kind == "released":
                    future.set_result(rest[1])
                elif kind == "page-error":
                    future.set_exception(PageError(rest[0], rest[1]))
                else:
                    future.set_exception(WorkerUnavailable(f"worker failed: {rest[0]}"))
        except (asyncio.IncompleteReadError, ConnectionError, pickle.UnpicklingError) as exc:
            self._lose(f"worker exited ({type(exc).__name__})")

    def _hold(self, ident: int, found: Marked) -> asyncio.Future[PageMarks] | None:
        """The future of a page's marks when the worker holds it, registered as its reply
        comes (its site's release may be the very next reply)."""
        if found.marks is not None:
            return None
        held: asyncio.Future[PageMarks] = asyncio.get_running_loop().create_future()
        self.held[ident] = (found.site, held)
        return held

    def holds(self, site: str) -> bool:
        """Whether it holds pages of ``site`` (as far as their replies were read)."""
        return any(held_site == site for held_site, _ in self.held.values())

    def _released(self, decided: list[tuple[int, Any]]) -> None:
        """Answer the held pages a release decided (a failure comes as its exception's name
        and text)."""
        for ident, found in decided:
            _, future = self.held.pop(ident, (None, None))
            if future is None or future.done():
                continue
            if isinstance(found, tuple):
                future.set_exception(RuntimeError(f"{found[0]}: {found[1]}"))
            else:
                future.set_result(found)

    def _lose(self, why: str) -> None:
        self.alive = False
        for future in [*self.pending.values(), *(f for _, f in self.held.values())]:
            if not future.done():
                future.set_exception(WorkerUnavailable(why))
        self.pending.clear()
        self.held.clear()

    async def close(self, timeout: float) -> None:
        self.alive = False
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            await asyncio.wait_for(self.process.wait(), timeout)
        except asyncio.TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
            await self.process.wait()
        self.reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.reader
        self._lose("pool closed")


class WorkerPool:
    """``size`` workers, each request sent to the one with the fewest in hand; ``work``: what
    they are started for, ``parse`` or ``urls`` (see :mod:`~scrapy_templates.worker_process`);
    ``role`` names them in the log (``parse``, ``URL-rule``).

    A worker that dies is replaced, at most ``max_restarts`` times in all; after that the
    pool has no workers and every :meth:`parse` raises :class:`WorkerUnavailable`. A worker
    killed for taking more than ``deadline`` seconds on a page is replaced without counting
    against ``max_restarts`` (``timeouts`` counts them)."""

    def __init__(
        self,
        size: int,
        max_restarts: int = 3,
        deadline: float = 30.0,
        role: str = "parse",
        work: str = "parse",
    ) -> None:
        self.size = size
        self.role = role
        self.work = work
        self.restarts_left = max_restarts
        self.deadline = deadline
        self.workers: list[_Worker] = []
        self.started = 0
        self.lost = 0
        self.timeouts = 0
        self._ident = 0
        self._closed = False
        self._watch: asyncio.Task[None] | None = None
        self._starting = asyncio.Lock()
        self._refilling: set[int] = set()  # slots whose new worker is being started

    async def start(self) -> None:
        """Start the workers (they import the parser while the crawl goes on) and the watch
        over their deadline; once, however many callers ask at the same time, and not after
        :meth:`close`."""
        async with self._starting:
            while len(self.workers) < self.size and not self._closed:
                worker = await self._spawn(len(self.workers))
                if worker is None:
                    break
                self.workers.append(worker)
            if self._watch is None and not self._closed:
                self._watch = asyncio.ensure_future(self._watch_deadline())

    async def _watch_deadline(self) -> None:
        """Kill a worker whose page at the head of its queue is over the deadline (checked
        four times per deadline, at least once a second)."""
        while True:
            await asyncio.sleep(min(1.0, self.deadline / 4))
            now = time.monotonic()
            for worker in self.workers:
                if worker.overdue(self.deadline, now):
                    logger.warning(
                        "scrapy-templates: a %s worker spent over %gs on one request; "
                        "killing it and starting another",
                        self.role,
                        self.deadline,
                    )
                    worker.kill(self.deadline)
                    self.timeouts += 1
                    self.restarts_left += 1  # a kill is not a crash: it costs no restart

    async def _spawn(self, slot: int) -> _Worker | None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (_PACKAGE_ROOT, env.get("PYTHONPATH", "")) if p
        )
        env[PARENT_ENV] = str(os.getpid())
        try:
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "scrapy_templates.worker_process",
                self.work,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                env=env,
            )
        except (OSError, NotImplementedError) as exc:
            # NotImplementedError: an event loop without subprocesses (a selector loop on
            # Windows); pages are then parsed in the crawl's thread
            logger.warning("scrapy-templates: could not start a %s worker: %r", self.role, exc)
            return None
        self.started += 1
        return _Worker(process, slot)

    async def _worker(self, key: str | None = None) -> _Worker:
        alive = [w for w in self.workers if w.alive]
        if len(alive) < len(self.workers):
            dead = [w for w in self.workers if not w.alive]
            self.lost += len(dead)
            self.workers = alive
            await asyncio.gather(*(w.close(1.0) for w in dead))
            logger.warning("scrapy-templates: a %s worker exited; starting another", self.role)
            await self._refill()
        if not self.workers:
            raise WorkerUnavailable(f"no {self.role} worker running")
        ready = [w for w in self.workers if w.ready]
        if not ready:
            raise WorkerStarting(f"the {self.role} workers are starting")
        if key is not None:  # one worker holds the key's state while the pool stands
            slot = zlib.crc32(key.encode("utf-8")) % self.size
            routed = next((w for w in self.workers if w.slot == slot), None)
            if routed is None and slot in self._refilling:
                raise WorkerStarting(f"the {self.role} worker of {key} is starting")
            if routed is not None and not routed.ready:
                raise WorkerStarting(f"the {self.role} worker of {key} is starting")
            # a slot that could not be refilled lends its keys to a worker that stands
            return routed or ready[slot % len(ready)]
        return min(ready, key=lambda w: len(w.pending))

    async def _refill(self) -> None:
        """Start a worker in each empty slot while restarts are left (a slot another caller
        is refilling, or has refilled meanwhile, is skipped)."""
        for slot in range(self.size):
            if self.restarts_left <= 0 or self._closed or len(self.workers) >= self.size:
                return
            if slot in self._refilling or any(w.slot == slot for w in self.workers):
                continue
            self.restarts_left -= 1
            self._refilling.add(slot)
            try:
                worker = await self._spawn(slot)
            finally:
                self._refilling.discard(slot)
            if worker is not None:
                self.workers.append(worker)

    async def until_ready(self) -> None:
        """Wait until every running worker has loaded the parser (pages sent before then are
        refused with :class:`WorkerStarting`)."""
        while any(w.alive and not w.ready for w in self.workers):
            await asyncio.sleep(0.01)

    async def parse(self, html: str | bytes, url: str, options: ParseOptions) -> Page:
        """The page, parsed and detached in a worker; raises :class:`PageError` as
        :func:`~scrapy_templates.page.parse_page` would, :class:`WorkerUnavailable` when no
        worker could answer (:class:`WorkerStarting` while none has started yet)."""
        page: Page = await self._call("parse", html, url, options)
        return page

    async def mark(
        self,
        html: str | bytes,
        url: str,
        site: str,
        config: TemplatesConfig,
        *,
        hold: bool,
        news: SiteNews | None,
    ) -> tuple[Marked, asyncio.Future[PageMarks] | None]:
        """The page parsed, counted and decided by the worker that holds ``site``'s counts
        and evidence (:class:`~scrapy_templates.worker_marking.WorkerMarking`), after it took
        in ``news``; a page it holds (``hold``, or a site it did not know) comes with the
        future of its marks, answered by the site's :meth:`release`. Raises as :meth:`parse`
        does."""
        worker = await self._worker(site)
        self._ident += 1
        ident = self._ident
        given = None if worker.marking else config
        message = frame((ident, "mark", html, url, site, hold, news, given))
        worker.marking = True
        answer: tuple[Marked, asyncio.Future[PageMarks] | None] = await worker.send(ident, message)
        return answer

    async def release(
        self, site: str, config: TemplatesConfig, news: SiteNews | None, *, review: bool
    ) -> SiteSummary:
        """Have ``site``'s worker decide the pages it holds (their futures from :meth:`mark`
        are answered; ``review``: on what all of them taught, as a cold start does, else each
        in turn), after it took in ``news``; the site's evidence after them. A worker the site
        was routed to before (its slot's worker was replaced, or lent) is asked as well. A
        worker that fails meanwhile raises :class:`WorkerUnavailable`."""
        holding = [w for w in self.workers if w.alive and w.holds(site)]
        worker = await self._worker(site)
        others = [w for w in holding if w is not worker]
        # another's failure answers its own held pages (WorkerUnavailable): not this release's
        await asyncio.gather(
            *(self._release_in(w, site, config, None, review) for w in others),
            return_exceptions=True,
        )
        return await self._release_in(worker, site, config, news, review)

    async def _release_in(
        self,
        worker: _Worker,
        site: str,
        config: TemplatesConfig,
        news: SiteNews | None,
        review: bool,
    ) -> SiteSummary:
        self._ident += 1
        given = None if worker.marking else config
        message = frame((self._ident, "release", site, review, news, given))
        worker.marking = True
        try:
            summary: SiteSummary = await worker.send(self._ident, message)
        except PageError as exc:  # killed over the deadline: its pages are marked elsewhere
            raise WorkerUnavailable(str(exc)) from exc
        return summary

    async def run_url_job(self, job: Any) -> Any:
        """A :class:`~scrapy_templates.urlnorm.jobs.UrlJob` done by a worker's keyring: its
        :class:`~scrapy_templates.urlnorm.jobs.Keyed` answer; raises
        :class:`WorkerUnavailable` as :meth:`parse` does (the caller does the job itself)."""
        return await self._call("urls", job)

    async def _call(self, kind: str, *args: Any) -> Any:
        worker = await self._worker()
        self._ident += 1
        return await worker.send(self._ident, frame((self._ident, kind, *args)))

    async def close(self, timeout: float = 5.0) -> None:
        self._closed = True
        if self._watch is not None:
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watch
        self.lost += sum(not w.alive for w in self.workers)
        await asyncio.gather(*(w.close(timeout) for w in self.workers))
        self.workers = []
