"""Relearning against a store: what it installs, refuses and publishes."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from scrapy_templates.crawl.relearn import Relearner
from scrapy_templates.templates.model import TemplateModel
from scrapy_templates.urlnorm.learn import learn_rules
from scrapy_templates.urlnorm.rules import RuleSet
from tests.crawl.conftest import runtime, templates_crawler
from tests.urlnorm.url_sets import mirror_site

SITE = "www.example.com"


def _ruleset(version: int) -> RuleSet:
    urls, clusters = mirror_site()
    return learn_rules(urls, clusters, site=SITE, version=version).ruleset


async def _extension(**settings: Any) -> tuple[Relearner, Any]:
    """The relearning of a crawler whose store is open (its ticks not started)."""
    crawler = templates_crawler(**settings)
    owner = runtime(crawler)
    await owner.store.open()
    owner.urls.attach(owner.store, owner.owner)
    return owner.relearner, crawler


async def test_sync_installs_newer_publications_and_refuses_bad_ones(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ext, crawler = await _extension()
    store, rules = ext.store, runtime(crawler).urls
    good = _ruleset(3)
    await store.publish(SITE, "rules", 3, good.dumps())
    model = TemplateModel(SITE, 2, 40, "body/div#page/main#content", 40, ((7, 40),))
    await store.publish(SITE, "model", 2, model.dumps())
    await ext._sync()
    assert [r.version for r in rules.guards.rulesets()] == [3]
    assert ext.evidence.models[SITE] == model
    assert crawler.stats.get_value("templates/urls/rules_version") == 3

    # a newer but corrupt rule set, a foreign one and a bad model: all refused, last good kept
    await store.publish(SITE, "rules", 4, '{"site": "www.example.com", "rules": "nope"}')
    await store.publish(SITE, "model", 3, '{"format": "something else"}')
    with caplog.at_level(logging.ERROR):
        await ext._sync()
        await ext._sync(force=True)  # refused once, logged once
    assert [r.version for r in rules.guards.rulesets()] == [3]
    assert ext.evidence.models[SITE] == model
    assert caplog.text.count("URL rules v4") == 1 and caplog.text.count("model v3") == 1
    foreign = _ruleset(5).dumps().replace(SITE, "evil.example")
    await store.publish(SITE, "rules", 5, foreign)
    await ext._sync()
    assert [r.version for r in rules.guards.rulesets()] == [3]
    assert crawler.stats.get_value("templates/urls/rules_refused") == 2
    assert crawler.stats.get_value("templates/relearn/models_refused") == 1


async def test_a_model_relearn_publishes_the_next_version_and_prunes() -> None:
    ext, crawler = await _extension(TEMPLATES_PRUNE_PAGES=1)
    store = ext.store
    for i in range(40):  # fingerprint 1 on every page, 2 on a few, 1000+i on one each
        fps = [1, 1000 + i] + ([2] if i < 3 else [])
        await store.observe(SITE, f"p{i}", fps, content_key=f"c{i}")
    await store.publish(SITE, "model", 6, TemplateModel(SITE, 6, 1, None, 0).dumps())
    ext.new_pages[SITE] = 40
    await ext._relearn_models([SITE])
    found = await store.published(SITE, "model")
    assert found is not None and found[0] == 7
    model = TemplateModel.loads(found[1])
    assert model.templates == ((1, 40),) and model.pages == 40
    assert await store.counts(SITE) == (40, {1: 40, 2: 3})  # counters at 1 pruned
    assert crawler.stats.get_value("templates/relearn_count") == 1
    assert crawler.stats.get_value("templates/relearn/counters_pruned") == 40


async def test_a_learner_that_raises_leaves_the_rules_in_force(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    ext, crawler = await _extension()
    rules = runtime(crawler).urls
    rules.guards.install(_ruleset(2), source="test")
    for i in range(30):
        await ext.store.add_url_samples(SITE, [f'["/p{i}"]'], 100, [0.5])

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("learner exploded")

    monkeypatch.setattr("scrapy_templates.urlnorm.jobs.learn_from_samples", broken)
    rules.pool = None  # learn in this process, where the learner is broken
    with caplog.at_level(logging.ERROR):
        rules.relearn(SITE)
        await rules.wait_learning()
    assert [r.version for r in rules.guards.rulesets()] == [2]
    assert "learning URL rules of www.example.com failed" in caplog.text
    assert crawler.stats.get_value("templates/urls/learn_errors") == 1
    assert runtime(crawler).store.down is False


async def test_a_relearn_settles_the_layout_clusters_of_sites_this_process_saw() -> None:
    ext, crawler = await _extension()
    blocks = ext.evidence.blocks(SITE)
    for n in range(6):
        blocks.observe(["body/nav", "body/main/article"], ["Home News", f"Story {n}"])
        blocks.observe(["body/nav", "body/main/ul.results"], ["Home News", f"Results {n}"])
    await ext._relearn_models([SITE, "unseen.example"])
    assert "unseen.example" not in ext.evidence.site_blocks  # nothing made up for other sites
    clusters = len(blocks.layouts.clusters)
    assert clusters >= 2
    assert crawler.stats.get_value("templates/layout/clusters") == clusters
    found = await ext.store.published(SITE, "model")
    assert found is not None and TemplateModel.loads(found[1]).layout_clusters == clusters


async def _redis_extension(server: Any, prefix: str) -> tuple[Relearner, Any]:
    return await _extension(
        TEMPLATES_STORE="redis", TEMPLATES_REDIS_URL=server.url, TEMPLATES_REDIS_PREFIX=prefix
    )


async def test_an_unreadable_epoch_is_logged_once_and_syncing_goes_on(
    redis_server: Any, caplog: pytest.LogCaptureFixture
) -> None:
    ext, crawler = await _redis_extension(redis_server, "epoch1")
    model = TemplateModel(SITE, 2, 40, "body/main", 40, ((7, 40),))
    await ext.store.publish(SITE, "model", 2, model.dumps())
    client = ext.store.primary._client
    await client.set("epoch1:epoch", "banana")
    with caplog.at_level(logging.ERROR):
        for _ in range(3):
            await ext._sync()
    assert ext.evidence.models[SITE] == model  # synced although the epoch says nothing
    assert caplog.text.count("not a number") == 1
    assert crawler.stats.get_value("templates/relearn/epoch_unreadable") == 3
    newer = TemplateModel(SITE, 3, 50, "body/main", 50, ((7, 50),))
    assert await ext.store.publish(SITE, "model", 3, newer.dumps())  # resets the epoch
    assert await ext.store.epoch() == 1
    await ext._sync()
    assert ext.evidence.models[SITE] == newer
    await ext.store.close()


async def test_a_site_whose_version_is_unreadable_does_not_stop_the_others(
    redis_server: Any, caplog: pytest.LogCaptureFixture
) -> None:
    ext, crawler = await _redis_extension(redis_server, "epoch2")
    other = "other.example"
    await ext.store.publish(SITE, "model", 1, TemplateModel(SITE, 1, 9, None, 0, ()).dumps())
    good = TemplateModel(other, 4, 40, "body/main", 40, ((7, 40),))
    await ext.store.publish(other, "model", 4, good.dumps())
    client = ext.store.primary._client
    await client.hset(f"epoch2:{SITE}:pub", "model:v", "1e300")
    with caplog.at_level(logging.ERROR):
        await ext._sync(force=True)
        await ext._sync(force=True)
    assert ext.evidence.models[other] == good
    assert SITE not in ext.evidence.models
    assert caplog.text.count("(unreadable version)") == 1
    assert crawler.stats.get_value("templates/relearn/models_refused") == 1
    # the site's next publication replaces the unreadable version
    assert await ext.store.publish(SITE, "model", 2, TemplateModel(SITE, 2, 9, None, 0, ()).dumps())
    await ext._sync()
    assert ext.evidence.models[SITE].version == 2
    await ext.store.close()
