"""UrlRules on its own (no crawl): what a refuted ``rel=canonical`` claim changes in learning."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

from scrapy import Request
from scrapy.http import HtmlResponse

from scrapy_templates.crawl.urlrules import UrlRules
from scrapy_templates.store.memory import MemoryStore
from scrapy_templates.urlnorm.checks import Check
from scrapy_templates.urlnorm.jobs import UrlJob
from scrapy_templates.urlnorm.rules import RuleSet
from tests.crawl.conftest import runtime, templates_crawler
from tests.crawl.test_middlewares import _html

HOST = "http://h.example"
LIST = f"{HOST}/list"


def _rules(store: MemoryStore | None = None, owner: str = "test") -> tuple[Any, UrlRules]:
    """URL rules learning in a thread, on a host whose pages name other URLs canonical,
    with the first page of a list downloaded and made an item."""
    crawler = templates_crawler(TEMPLATES_PARSE_WORKERS=0)
    rules: UrlRules = runtime(crawler).urls
    rules.attach(MemoryStore() if store is None else store, owner)
    home = _html(f"{HOST}/", "Welcome")
    rules.note_response(f"{HOST}/?from=ad", f"{HOST}/?from=ad", home, (), True)
    entries = [f"Entry {n}: a lamp of brass and glass" for n in range(10)]
    rules.note_response(LIST, LIST, _html(LIST, " ".join(entries)), (), True)
    rules.add_page(LIST, 1, None, entries)
    return crawler, rules


def _refute(rules: UrlRules) -> None:
    """Page 2 of the list names page 1 canonical; its entries are others."""
    url = f"{LIST}?page=2"
    text = " ".join(f"Entry {n}: a rug of wool" for n in range(10, 20))
    check = Check(Request(url), url, LIST, LIST, "rule")
    assert rules.check_fetched(check, HtmlResponse(url, body=_html(LIST, text))) == "open"
    rules.add_page(url, 2, None, [text])


def _jobs(rules: UrlRules) -> list[bool]:
    """Whether each learning job of ``rules`` took canonical links as evidence; each job
    takes half a second, so that a check can end while one runs."""
    seen: list[bool] = []
    run = rules.keyring.run

    def slow(job: UrlJob) -> Any:
        seen.append(job.canonical)
        time.sleep(0.5)
        return run(job)

    rules.keyring.run = slow  # type: ignore[method-assign]
    return seen


async def test_a_refuted_claim_starts_a_relearn_without_canonical_links() -> None:
    crawler, rules = _rules()
    jobs = _jobs(rules)
    _refute(rules)
    assert rules.guards.host("h.example").checks.claims_refuted
    await rules.wait_learning()
    await rules.close()
    assert jobs == [False]
    assert crawler.stats.get_value("templates/urls/checks/canonical_refuted") == 1


async def test_a_claim_refuted_while_a_learning_runs_makes_it_learn_again() -> None:
    _, rules = _rules()
    await rules.flush(force=True)
    jobs = _jobs(rules)
    rules.relearn("h.example")
    for _ in range(100):
        if jobs:
            break
        await asyncio.sleep(0.01)
    _refute(rules)  # while the job learns with the site's canonical links
    await rules.wait_learning()
    await rules.close()
    assert jobs[0] is True
    assert False in jobs


async def test_a_refuted_claim_travels_with_the_rules_to_other_processes() -> None:
    store = MemoryStore()
    _, first = _rules(store, "first")
    _refute(first)
    await first.wait_learning()
    await first.close()
    # a process that never saw the check adopts the distrust with the rules it installs
    _, second = _rules(store, "second")
    assert not second.guards.host("h.example").checks.claims_refuted
    await second.sync(["h.example"])
    ruleset = second.guards.host("h.example").ruleset
    assert ruleset is not None and ruleset.claims_refuted
    assert second.guards.host("h.example").checks.claims_refuted
    jobs = _jobs(second)
    second.relearn("h.example")
    await second.wait_learning()
    await second.close()
    assert jobs and not any(jobs)


async def _published(store: MemoryStore, site: str = "h.example") -> RuleSet | None:
    found = await store.published(site, "rules")
    return None if found is None else RuleSet.loads(found[1])


async def test_a_refutation_reaches_the_store_when_another_process_learned_meanwhile() -> None:
    store = MemoryStore()
    assert await store.acquire("urls:h.example", "second", 30)  # the other one is learning
    _, first = _rules(store, "first")
    _refute(first)
    await asyncio.sleep(0.1)
    # the other process never saw the check: it learns from the claims and publishes
    _, second = _rules(store, "second")
    await store.release("urls:h.example", "second")
    second.relearn("h.example")
    await second.wait_learning()
    await second.close()
    published = await _published(store)
    assert published is not None and not published.claims_refuted
    # the first adopts that publication, and learns again to say what it knows
    for _ in range(50):
        published = await _published(store)
        if published is not None and published.claims_refuted:
            break
        await asyncio.sleep(0.1)
    await first.wait_learning()
    await first.close()
    assert published is not None and published.claims_refuted


async def test_a_refutation_while_rules_are_published_is_published_next() -> None:
    store = MemoryStore()
    _, rules = _rules(store)
    publish = store.publish

    async def slow_publish(*args: Any) -> Any:
        if not rules.guards.host("h.example").checks.claims_refuted:
            _refute(rules)  # a check ends while the rules travel to the store
        await asyncio.sleep(0.05)
        return await publish(*args)

    store.publish = slow_publish  # type: ignore[method-assign]
    await rules.flush(force=True)
    rules.relearn("h.example")
    await rules.wait_learning()  # the learning that publishes the refutation included
    assert not rules._learning
    await rules.close()
    published = await _published(store)
    assert published is not None and published.claims_refuted


async def test_nothing_is_learned_or_published_after_close() -> None:
    # the other process holds the lock at close: this one, knowing the claims refuted,
    # waits for its publication; closing stops that wait, and no learning follows
    store = MemoryStore()
    assert await store.acquire("urls:h.example", "second", 30)
    _, first = _rules(store, "first")
    publish = store.publish
    after_close: list[int] = []

    async def watched(*args: Any) -> Any:
        if first._closed:
            after_close.append(args[2])
        return await publish(*args)

    store.publish = watched  # type: ignore[method-assign]
    _refute(first)
    await first.wait_learning()
    await first.close()
    assert not first._learning and not first._waiting
    await store.release("urls:h.example", "second")
    await asyncio.sleep(0.5)
    first.relearn("h.example")
    assert not first._learning and after_close == []


async def test_rules_from_a_file_that_say_claims_were_refuted_are_believed(
    tmp_path: Path,
) -> None:
    store = MemoryStore()
    _, rules = _rules(store)
    _refute(rules)
    await rules.wait_learning()
    await rules.close()
    published = await _published(store)
    assert published is not None and published.claims_refuted
    path = tmp_path / "rules.json"
    path.write_text(json.dumps([published.to_json()]))
    crawler = templates_crawler(TEMPLATES_PARSE_WORKERS=0, TEMPLATES_URL_RULES_FILE=str(path))
    assert runtime(crawler).urls.guards.host("h.example").checks.claims_refuted
