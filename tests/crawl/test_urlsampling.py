"""When URL rules are learned as a host's sample grows (samples fed through UrlRules)."""

from __future__ import annotations

import pytest

from scrapy_templates.crawl.urlrules import UrlRules
from scrapy_templates.urlnorm.clusters import Sample
from scrapy_templates.urlnorm.rules import RuleSet
from scrapy_templates.urlnorm.samples import decode_sample, encode_sample
from tests.crawl.conftest import runtime, templates_crawler
from tests.urlnorm.test_guard import SITE, _ruleset


async def learn_from_distinct_pages(host: str, pages: int, *, foreign: bool = True) -> UrlRules:
    """URL rules on the memory store, fed one distinct page at a time (no duplicates, so
    never any rule), learning whenever a relearn is due. ``foreign``: the store holds a
    sample another process stored first (what it saw is unknown here, so the host is
    learned as its sample grows)."""
    crawler = templates_crawler()
    owner = runtime(crawler)
    await owner.store.open()
    rules: UrlRules = owner.urls
    rules.attach(owner.store, owner.owner)
    if foreign:
        sample = encode_sample(host, Sample(f"http://{host}/elsewhere", text_hash="f" * 16))
        await owner.store.add_url_samples(host, [sample], 5000, [0.5])
    for i in range(pages):
        rules.add_page(f"http://{host}/p{i}", simhash=i * 0x9E3779B1, text_hash=f"{i:016x}")
        await rules.flush()
        await rules.wait_learning()
    return rules


async def test_a_host_without_rules_is_relearned_as_its_sample_grows_not_on_every_page() -> None:
    rules = await learn_from_distinct_pages("distinct.test", 200)
    assert rules.stats is not None
    runs = rules.stats.get_value("templates/urls/learn_count")
    assert all(not ruleset.rules for ruleset in rules.guards.rulesets())
    # first at 20 samples, then as the sample grows by a tenth: not 180 runs, one per page
    assert 10 <= runs <= 40


async def test_a_host_whose_samples_show_no_two_urls_of_one_page_is_not_learned() -> None:
    """Learning from distinct pages only gives no rule: a site without duplicate URLs is
    never learned, and the URL-rule worker never starts."""
    rules = await learn_from_distinct_pages("docs.test", 200, foreign=False)
    assert rules.stats is not None
    assert rules.stats.get_value("templates/urls/learn_count") is None
    assert rules.pool is None or not rules.pool.workers


@pytest.mark.parametrize(
    "duplicate",
    [
        Sample("http://docs.test/p3?from=menu", text_hash=f"{3:016x}"),
        Sample("http://docs.test/p3?from=menu", page_hash=f"{3:016x}"),
        Sample("http://docs.test/print/p3", canonical="http://docs.test/p3"),
        Sample("http://docs.test/p3", redirects=("http://docs.test/old/p3",)),
    ],
    ids=["same text", "same page hash", "canonical", "redirect"],
)
async def test_one_sample_showing_two_urls_of_one_page_makes_a_host_learned(
    duplicate: Sample,
) -> None:
    """The same evidence :func:`duplicate_clusters` joins URLs by: a text hash, a page hash
    (a download that repeats another's page), a ``rel=canonical`` or a redirect naming
    another URL of the host."""
    crawler = templates_crawler()
    owner = runtime(crawler)
    await owner.store.open()
    rules: UrlRules = owner.urls
    rules.attach(owner.store, owner.owner)

    async def sampled(sample: Sample) -> None:
        if sample.page_hash:
            rules.sampling.add_download("docs.test", sample, hold=False, named=False)
        else:
            rules.sampling.add(sample)
        await rules.flush()
        await rules.wait_learning()

    for i in range(30):
        url = f"http://docs.test/p{i}"
        await sampled(Sample(url, text_hash=f"{i:016x}"))
        await sampled(Sample(url, page_hash=f"{i:016x}"))
    assert rules.stats is not None
    assert rules.stats.get_value("templates/urls/learn_count") is None
    await sampled(duplicate)
    for i in range(30, 40):
        await sampled(Sample(f"http://docs.test/p{i}", text_hash=f"{i:016x}"))
    assert rules.stats.get_value("templates/urls/learn_count")


async def test_with_page_simhashes_as_evidence_every_host_is_learned() -> None:
    """``TEMPLATES_URL_SIMHASH_DISTANCE`` joins near-duplicate pages, which distinct page
    hashes do not show."""
    crawler = templates_crawler(TEMPLATES_URL_SIMHASH_DISTANCE=0)
    owner = runtime(crawler)
    await owner.store.open()
    rules: UrlRules = owner.urls
    rules.attach(owner.store, owner.owner)
    for i in range(30):
        rules.add_page(f"http://near.test/p{i}", simhash=i * 0x9E3779B1, text_hash=f"{i:016x}")
        await rules.flush()
        await rules.wait_learning()
    assert rules.stats is not None
    assert rules.stats.get_value("templates/urls/learn_count")


async def test_a_host_without_evidence_is_not_stale() -> None:
    """The relearner's periodic and final relearns skip a host learning could give no rule."""
    rules = await learn_from_distinct_pages("docs.test", 60, foreign=False)
    assert rules.stale() == []
    other = await learn_from_distinct_pages("shared.test", 60)
    other.add_page("http://shared.test/late", simhash=1, text_hash="e" * 16)
    await other.flush()
    assert other.stale() == ["shared.test"]


async def test_relearns_that_change_nothing_space_out() -> None:
    rules = await learn_from_distinct_pages("calm.test", 1500)  # the same empty rules each time
    assert rules.stats is not None
    runs = rules.stats.get_value("templates/urls/learn_count")
    # every 25 samples past 250 would be about 80 runs; doubling the step while nothing
    # changes leaves the tenth of the sample as the pace
    assert 20 <= runs <= 55
    assert rules.sampling._of("calm.test").backoff == 64


async def test_a_young_host_whose_downloads_repeat_a_page_is_learned_before_twenty_samples() -> (
    None
):
    """A crawl caught between two pages whose every link carries a fresh session id: three
    downloads that repeat a page already sampled are evidence enough for a first learning."""
    crawler = templates_crawler()
    owner = runtime(crawler)
    await owner.store.open()
    rules: UrlRules = owner.urls
    rules.attach(owner.store, owner.owner)
    pages = {
        n: b"<html><body>" + f"Article {n}: a report of its own. ".encode() * 4 + b"</body></html>"
        for n in (56, 58)
    }
    for i in range(6):
        n = (56, 58)[i % 2]
        url = f"http://loop.test/article/{n}?sid=s{i}"
        rules.note_response(url, url, pages[n], (), True)
        await rules.flush()
        await rules.wait_learning()
    assert rules.stats is not None
    assert rules.stats.get_value("templates/urls/learn_count", 0) >= 1
    quiet = await learn_from_distinct_pages("quiet.test", 7)  # no repeat: not before twenty
    assert quiet.stats is not None
    assert not quiet.stats.get_value("templates/urls/learn_count")


async def test_a_download_repeating_a_page_makes_a_grown_host_due_at_once() -> None:
    """Past its first learnings a host is relearned as its sample grows by a tenth; a download
    that repeats a page downloaded before is a duplicate the rules missed, and the learner
    gets it at once."""
    runs = {}
    for host, bodies in (("repeat.test", ("same", "same")), ("fresh.test", ("one", "two"))):
        rules = await learn_from_distinct_pages(host, 150)
        assert rules.stats is not None
        before = rules.stats.get_value("templates/urls/learn_count")
        for n, text in enumerate(bodies):
            body = f"<html><body>{f'The {text} page, told at length. ' * 4}</body></html>"
            url = f"http://{host}/x?sid={n}"
            rules.note_response(url, url, body.encode(), (), True)
            await rules.flush()
            await rules.wait_learning()
        runs[host] = rules.stats.get_value("templates/urls/learn_count") - before
    assert runs == {"repeat.test": 1, "fresh.test": 0}


async def test_one_url_downloaded_twice_is_no_repeat() -> None:
    """A start URL fetched again (``dont_filter``) repeats its own text: the rules missed
    nothing, and the host is not relearned for it."""
    rules = await learn_from_distinct_pages("again.test", 150)
    assert rules.stats is not None
    before = rules.stats.get_value("templates/urls/learn_count")
    body = b"<html><body>" + b"The home page, told at length. " * 4 + b"</body></html>"
    for _ in range(2):
        rules.note_response("http://again.test/", "http://again.test/", body, (), True)
        await rules.flush()
        await rules.wait_learning()
    assert rules.stats.get_value("templates/urls/learn_count") == before


async def test_a_sample_too_large_to_be_read_back_is_not_kept() -> None:
    """A download's long redirects and long canonical make a sample its store refuses when
    read: it is counted and left out, the others go on."""
    crawler = templates_crawler()
    owner = runtime(crawler)
    await owner.store.open()
    rules: UrlRules = owner.urls
    rules.attach(owner.store, owner.owner)
    long = "http://big.test/" + "a" * 16_000
    redirects = tuple(f"{long}?r={i}" for i in range(5))
    rules.sampling.add(Sample("http://big.test/page", canonical=long, redirects=redirects))
    rules.sampling.add(Sample("http://big.test/other", page_hash="0" * 16))
    await rules.flush(force=True)
    stored = await owner.store.url_samples("big.test")
    assert [decode_sample("big.test", s).url for s in stored] == ["http://big.test/other"]
    assert rules.stats is not None
    assert rules.stats.get_value("templates/urls/samples_too_large") == 1


async def test_a_flush_visits_the_hosts_touched_since_the_last_one() -> None:
    """Held download samples wait for twenty more responses of their host. A crawl of many
    hosts leaves held samples on each quiet one; a flush after every response visits the
    host that responded, not all of them, and a quiet host's samples still reach the
    store when it responds again (a non-HTML response counts) or at the last flush."""
    rules = await learn_from_distinct_pages("seed.test", 1)
    sampling = rules.sampling
    ruleset = _ruleset()
    hosts = [f"quiet{i}.test" for i in range(50)]
    for site in [*hosts, "busy.test"]:
        guard = rules.guards.host(site)
        guard.install(ruleset, resend=False)
        sampling._of(site).offered = 1000  # past its young samples: downloads are held
        for n in range(10 if site == "busy.test" else 1):  # a batch on the busy host
            url = f"http://{site}/page{n}"
            body = f"<html><body>Page {n} of {site}, a page of its own.</body></html>"
            rules.note_response(url, url, body.encode(), (), True)
    await rules.flush()
    visited: list[str] = []
    batch = sampling._batch

    def counted(site: str, force: bool) -> list[str]:
        visited.append(site)
        return batch(site, force)

    sampling._batch = counted  # type: ignore[method-assign]
    for i in range(30):
        url = f"http://busy.test/file{i}.pdf"
        rules.note_response(url, url, b"%PDF", (), False)
        await rules.flush()
    assert set(visited) == {"busy.test"}
    stored = await rules._store.url_samples("busy.test")  # type: ignore[union-attr]
    assert len(stored) == 10
    assert not await rules._store.url_samples("quiet0.test")  # type: ignore[union-attr]
    await rules.flush(force=True)
    assert len(await rules._store.url_samples("quiet0.test")) == 1  # type: ignore[union-attr]


async def test_an_item_url_without_a_host_is_not_sampled() -> None:
    """A spider may write any URL on its item: one that names no host leaves no sample and
    raises nothing; the pages around it are sampled."""
    crawler = templates_crawler()
    owner = runtime(crawler)
    await owner.store.open()
    rules: UrlRules = owner.urls
    rules.attach(owner.store, owner.owner)
    rules.add_page("http://[::1/broken", simhash=1, text_hash="0" * 16)
    rules.add_page("http://ok.test/page", simhash=2, text_hash="1" * 16)
    await rules.flush(force=True)
    assert len(await owner.store.url_samples("ok.test")) == 1


async def test_samples_waiting_for_a_batch_go_once_the_host_has_no_rules() -> None:
    """A host with rules stores its samples ten at a time; when its rules go, the ones
    waiting are due one at a time, and the next flush stores them."""
    rules = await learn_from_distinct_pages("seed.test", 1)
    assert rules.guards.install(_ruleset(), source="test")
    rules.sampling._of(SITE).offered = 1000  # past its young samples
    for i in range(3):
        rules.add_page(f"http://{SITE}/page{i}", simhash=i, text_hash=f"{i:016x}")
    await rules.flush()
    store = rules._store
    assert store is not None
    assert not await store.url_samples(SITE)
    await rules._install_published(RuleSet(site=SITE, version=99, nodes=[], rules={}))
    assert not rules.guards.host(SITE).has_rules
    await rules.flush()
    assert len(await store.url_samples(SITE)) == 3


async def test_repeats_that_relearns_cannot_explain_stop_making_their_host_due() -> None:
    """A short list comes out the same in every sort order, a long one does not: no rule
    may drop ``order``, and each repeat of a short list leaves the rules as they were. After
    two relearns have left that form's repeats unexplained, its repeats wait for the
    sample's own pace instead of a learning run each."""
    rules = await learn_from_distinct_pages("lists.test", 150)
    assert rules.stats is not None

    async def download(url: str, text: str) -> None:
        body = f"<html><body>{f'{text}, one entry after another. ' * 4}</body></html>"
        rules.note_response(url, url, body.encode(), (), True)
        await rules.flush()
        await rules.wait_learning()

    for n in range(20):  # long lists: another page in each order
        for order in ("name", "date"):
            await download(f"http://lists.test/list?id={n}&order={order}", f"List {n} by {order}")
    before = rules.stats.get_value("templates/urls/learn_count")
    for n in range(100, 112):  # short lists: one page in both orders
        for order in ("name", "date"):
            await download(f"http://lists.test/list?id={n}&order={order}", f"List {n}")
    runs = rules.stats.get_value("templates/urls/learn_count") - before
    assert not any(ruleset.rules for ruleset in rules.guards.rulesets())
    # twelve repeats: the first two forms' worth of relearns, then the sample's pace
    assert 2 <= runs <= 5
