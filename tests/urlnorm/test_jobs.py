"""The keyring: learning and keying a host's pages off the crawl's thread, answering with
what changed."""

from __future__ import annotations

from scrapy_templates.urlnorm.clusters import Sample
from scrapy_templates.urlnorm.jobs import Keyring, UrlJob
from scrapy_templates.urlnorm.learn import learn_rules
from scrapy_templates.urlnorm.rules import RuleSet
from scrapy_templates.urlnorm.samples import encode_sample
from scrapy_templates.urlnorm.url import url_key
from tests.urlnorm.url_sets import article_samples, mirror_site

SITE = "www.example.com"
SID_URL = "http://www.example.com/archive2/17/display?sid=abc"


def _ruleset() -> RuleSet:
    urls, clusters = mirror_site()
    return learn_rules(urls, clusters, site=SITE).ruleset


def test_first_job_keys_everything_later_ones_answer_what_changed() -> None:
    ring = Keyring()
    rules = _ruleset()
    first = ring.run(UrlJob(SITE, 1, [], [SID_URL], 0, published=rules))
    assert first.full and first.held == 1
    assert first.added == [(url_key(rules.apply(SID_URL)), SID_URL)] and first.removed == []
    empty = RuleSet(SITE, 2, rules.nodes, {})
    second = ring.run(UrlJob(SITE, 2, [], [], 1, published=empty))
    assert not second.full
    assert second.added == [(url_key(SID_URL), SID_URL)]
    assert second.removed == [url_key(rules.apply(SID_URL))]


def test_a_keyring_that_lost_its_urls_answers_in_full() -> None:
    ring = Keyring()
    answer = ring.run(UrlJob(SITE, 1, [], ["http://www.example.com/a"], 7))
    assert answer.full and answer.held == 1


def test_samples_are_decoded_here_pages_of_items_are_keyed_and_bad_lines_counted() -> None:
    ring = Keyring()
    item = Sample("http://www.example.com/item/1", text_hash="t1")
    download = Sample("http://www.example.com/item/2", page_hash="p2")
    lines = [encode_sample(SITE, item), encode_sample(SITE, download), "not json"]
    answer = ring.run(UrlJob(SITE, 1, lines, [], 0))
    assert (answer.samples, answer.bad_samples) == (2, 1)
    assert answer.ruleset is not None and answer.ruleset.version == 1
    # a page that became an item in some process counts as downloaded; a download sample
    # from another process's downloader does not say its page reached a spider
    assert answer.added == [(url_key(item.url), item.url)]


def test_a_rule_set_that_fails_validation_is_refused_with_the_reason() -> None:
    rules = _ruleset()
    source, rule = next(iter(rules.rules.items()))
    other = next(n for n in rules.rules if n != source) if len(rules.rules) > 1 else source + 1
    broken = RuleSet(SITE, 3, rules.nodes, {**rules.rules, other: rule})  # another's rule
    answer = Keyring().run(UrlJob(SITE, 3, [], [SID_URL], 0, published=broken))
    assert answer.ruleset is None and answer.error


def test_a_relearn_keeps_the_rules_in_force_while_they_hold() -> None:
    site = "news.test"

    def lines(samples: list[Sample]) -> list[str]:
        return [encode_sample(site, s) for s in samples]

    first = Keyring().run(UrlJob(site, 1, lines(article_samples(range(30))), [], 0))
    assert first.ruleset is not None and not first.kept
    thinner = lines(article_samples(range(30), print_view=False))
    alone = Keyring().run(UrlJob(site, 2, thinner, [], 0))
    assert not alone.kept and not alone.previous_held
    assert alone.ruleset is not None and not alone.ruleset.behaves_like(first.ruleset)
    # a keyring that never saw them (a worker started since) keeps them too
    second = Keyring().run(UrlJob(site, 2, thinner, [], 0, in_force=first.ruleset))
    assert second.kept and second.previous_held
    assert second.ruleset is not None and second.ruleset.behaves_like(first.ruleset)
    assert second.ruleset.version == 2
