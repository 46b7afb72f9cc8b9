"""The crawl's URL guards: rule sets installed per host, and what they report."""

from __future__ import annotations

import dataclasses

from scrapy_templates.urlnorm.rules import Op, RuleSet
from tests.crawl.conftest import runtime, templates_crawler
from tests.urlnorm.test_rules import _one_rule_doc


async def test_results_a_rule_set_refused_are_counted_across_its_replacements() -> None:
    crawler = templates_crawler()
    owner = runtime(crawler)
    guards = owner.urls.guards
    safe = RuleSet.from_json(_one_rule_doc("path_0", "b"))
    rule = dataclasses.replace(safe.rules[0], steps=((Op("keep", "path", "@evil.test"),),))
    unsafe = RuleSet(safe.site, safe.version, safe.nodes, {0: rule})
    guards.host("c.example").install(unsafe, resend=False)  # as one that passed validation could
    for i in range(3):
        url = f"http://c.example/{i}"
        assert guards.host("c.example").decide(url, None, queued=False).url == url
    assert guards.results_refused() == 3
    assert guards.install(dataclasses.replace(safe, version=6), source="test")
    assert guards.results_refused() == 3  # the replaced rule set's count stays
    await owner.open()
    await owner.spider_closed()
    assert crawler.stats.get_value("templates/urls/results_refused") == 3
