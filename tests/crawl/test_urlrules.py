"""The stored form of URL samples: compact, and exactly what was sampled."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scrapy.utils.test import get_crawler

from scrapy_templates.crawl.state import CrawlState
from scrapy_templates.crawl.urlrules import UrlRules, decode_sample, encode_sample
from scrapy_templates.settings import DEFAULTS
from scrapy_templates.urlnorm.clusters import Sample

_hex = st.text("0123456789abcdef", min_size=16, max_size=16)
_urls = st.sampled_from(
    ["http://h.test:8080/a?b=1", "https://h.test:8080/x/", "http://other.test/p", "ftp://h/x"]
)


@given(
    url=_urls,
    simhash=st.none() | st.integers(0, 2**64 - 1),
    text_hash=st.none() | _hex,
    body_hash=st.none() | _hex,
    canonical=st.none() | _urls,
    redirects=st.lists(_urls, max_size=2).map(tuple),
)
def test_samples_round_trip(
    url: str,
    simhash: int | None,
    text_hash: str | None,
    body_hash: str | None,
    canonical: str | None,
    redirects: tuple[str, ...],
) -> None:
    sample = Sample(url, simhash, text_hash, body_hash, canonical, redirects)
    assert decode_sample("h.test:8080", encode_sample("h.test:8080", sample)) == sample


def test_stored_form_is_compact_and_old_objects_still_read() -> None:
    sample = Sample("https://h.test/docs/a.html", body_hash="ffd43f649cd72a3c")
    stored = encode_sample("h.test", sample)
    assert stored == '["s/docs/a.html",null,null,"ffd43f649cd72a3c"]'
    assert len(stored) < len(sample.to_json()) * 0.7
    assert decode_sample("h.test", sample.to_json()) == sample


@pytest.mark.parametrize("bad", ["[]", "[1]", '"x"', '["/a",null,null,null,null,null,"x"]', "{"])
def test_foreign_values_are_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        decode_sample("h.test", bad)


async def learn_from_distinct_pages(host: str, pages: int) -> UrlRules:
    """URL rules on the memory store, fed one distinct page at a time (no duplicates, so
    never any rule), learning whenever a relearn is due."""
    crawler = get_crawler(settings_dict=dict(DEFAULTS))
    crawler.stats.open_spider()
    state = CrawlState.of(crawler)
    await state.open()
    rules = UrlRules.of(crawler)
    rules.attach(state.store, state.owner)
    for i in range(pages):
        rules.add_page(f"http://{host}/p{i}", simhash=i * 0x9E3779B1, text_hash=f"h{i}")
        await rules.flush()
        await rules.wait_learning()
    return rules


async def test_a_host_without_rules_is_relearned_as_its_sample_grows_not_on_every_page() -> None:
    rules = await learn_from_distinct_pages("distinct.test", 200)
    assert rules.stats is not None
    runs = rules.stats.get_value("templates/urls/learn_count")
    assert all(not ruleset.rules for ruleset in rules.rulesets())
    # first at 20 samples, then as the sample grows by a tenth: not 180 runs, one per page
    assert 10 <= runs <= 40


async def test_relearns_that_change_nothing_space_out() -> None:
    rules = await learn_from_distinct_pages("calm.test", 1500)  # the same empty rules each time
    assert rules.stats is not None
    runs = rules.stats.get_value("templates/urls/learn_count")
    # every 25 samples past 250 would be about 80 runs; doubling the step while nothing
    # changes leaves the tenth of the sample as the pace
    assert 20 <= runs <= 55
    assert rules._host("calm.test").backoff == 64
