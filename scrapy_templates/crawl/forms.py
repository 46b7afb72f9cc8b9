"""One download at a time for a suspect URL form, in this process and across processes.

A URL that no rule rewrites but that carries a query parameter its host's rules drop on other
forms (a session id on a page type not yet seen with one) is of a *suspect form*. Such URLs
go one at a time, with a relearn after each, so that the first download teaches the rule that
spares the rest. The downloader middleware holds a request here (:meth:`FormHolds.hold`); the
hold ends when the page's sample is in (:meth:`FormHolds.release`), or when its download gives
no item. Processes sharing the store take a store lock per form as well.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import Awaitable, Callable
from typing import Protocol

from scrapy_templates.sites import host_site
from scrapy_templates.store.base import StoreError, TemplateStore
from scrapy_templates.urlnorm.guard import Form

# how long a request of a suspect URL form waits for the one of its form in flight to be
# sampled before it goes anyway (a page that gives no item is never sampled)
FORM_WAIT = 3.0
# how often a request waiting on another process's URL of its form asks the store again
FORM_POLL = 0.05


class RuleSource(Protocol):
    """What a hold asks of the URL rules."""

    def suspect_form(self, url: str) -> Form | None: ...

    async def learn_now(self, site: str, timeout: float) -> None: ...

    async def sync(self, sites: list[str]) -> None: ...


class FormHolds:
    """The downloads of suspect forms in flight (see the module docstring). ``count`` adds
    to a stat."""

    def __init__(self, rules: RuleSource, count: Callable[[str], None]) -> None:
        self.rules = rules
        self.count = count
        self.store: TemplateStore | None = None
        self.owner = ""
        # suspect URL forms with a download in flight: the URL and what its sample resolves
        self._in_flight: dict[Form, tuple[str, asyncio.Future[None]]] = {}
        self._form_of: dict[str, Form] = {}
        # the store locks taken for them (name, owner), so other processes wait too
        self._locks: dict[str, tuple[str, str]] = {}
        self._unlocking: set[asyncio.Task[None]] = set()

    async def hold(self, url: str) -> None:
        """Let one URL of a suspect form be downloaded at a time: wait while another of its
        form is in flight, then relearn from that one's sample before going on — a relearnt
        rule may now rewrite ``url`` (the caller asks again). The wait per round is bounded
        by ``FORM_WAIT`` seconds."""
        rules = self.rules
        form = rules.suspect_form(url)
        if form is None:
            return
        waited = await self._wait_in_process(form)
        if waited:
            self.count("templates/urls/held")
            await rules.learn_now(host_site(url), FORM_WAIT)
            if rules.suspect_form(url) != form:
                return  # a rule rewrites it now
        self._in_flight[form] = (url, asyncio.get_running_loop().create_future())
        self._form_of[url] = form
        if await self._hold_shared(url, form):
            if not waited:  # a request that waited here too is counted once
                self.count("templates/urls/held")
            await rules.sync([host_site(url)])
            if rules.suspect_form(url) != form:
                self.release(url)  # a rule another process published rewrites it now

    async def _wait_in_process(self, form: Form) -> bool:
        """Wait while a URL of ``form`` is in flight here; whether it waited."""
        waited = False
        while (flight := self._in_flight.get(form)) is not None:
            waited = True
            try:
                await asyncio.wait_for(asyncio.shield(flight[1]), FORM_WAIT)
            except asyncio.TimeoutError:
                if self._in_flight.get(form) is flight:
                    self.release(flight[0])
        return waited

    async def _hold_shared(self, url: str, form: Form) -> bool:
        """Take the store's lock on ``url``'s form, so that crawler processes sharing the
        store download one URL of it at a time too; waits (at most ``FORM_WAIT`` seconds)
        while another process holds it. Returns whether it waited. Without a store, or with
        the store down, nothing waits."""
        store = self.store
        if store is None:
            return False
        name = "form:" + hashlib.blake2b(repr(form).encode(), digest_size=8).hexdigest()
        owner = f"{self.owner}|{url}"
        loop = asyncio.get_running_loop()
        deadline = loop.time() + FORM_WAIT
        waited = False
        while True:
            try:
                if await store.acquire(name, owner, FORM_WAIT):
                    self._locks[url] = (name, owner)
                    return waited
            except StoreError:
                return waited
            if getattr(store, "down", False) or loop.time() >= deadline:
                return waited
            waited = True
            await asyncio.sleep(FORM_POLL)

    def release(self, url: str) -> None:
        """The download of ``url`` is sampled (or failed): the next URL of its form may go,
        here and in the processes sharing the store."""
        form = self._form_of.pop(url, None)
        flight = None if form is None else self._in_flight.pop(form, None)
        done = None if flight is None else flight[1]
        lock = self._locks.pop(url, None)
        if lock is None or self.store is None:
            if done is not None and not done.done():
                done.set_result(None)
            return
        # the URL waiting here goes once the store's lock is free, not before
        task = asyncio.ensure_future(_unlock(self.store.release(*lock), done))
        self._unlocking.add(task)
        task.add_done_callback(self._unlocking.discard)


async def _unlock(release: Awaitable[None], done: asyncio.Future[None] | None) -> None:
    try:
        with contextlib.suppress(StoreError):  # the lock expires by itself
            await release
    finally:
        if done is not None and not done.done():
            done.set_result(None)
