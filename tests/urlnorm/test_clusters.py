import pytest

from scrapy_templates.urlnorm.clusters import (
    Sample,
    canonical_votes,
    duplicate_clusters,
    near_duplicate_pairs,
)


def _same(urls: list[str], clusters: list[int], a: str, b: str) -> bool:
    return clusters[urls.index(a)] == clusters[urls.index(b)]


def test_near_duplicate_simhashes_join_distant_ones_do_not() -> None:
    base = 0x0123456789ABCDEF
    samples = [
        Sample("http://h/a", simhash=base),
        Sample("http://h/b", simhash=base ^ 0b111),  # 3 bits apart
        Sample("http://h/c", simhash=base ^ 0b1111000),  # 4 bits from a, 7 from b
    ]
    urls, clusters = duplicate_clusters(samples, distance=3)
    assert _same(urls, clusters, "http://h/a", "http://h/b")
    assert not _same(urls, clusters, "http://h/a", "http://h/c")


def test_page_simhashes_are_no_evidence_unless_asked() -> None:
    """Whole-page near-duplicates are often distinct pages under one large template; equal
    simhashes too (a hash of the words' weights, not of the words)."""
    base = 0x0123456789ABCDEF
    samples = [
        Sample("http://h/ref/max.html", simhash=base, text_hash="max"),
        Sample("http://h/ref/min.html", simhash=base ^ 0b1, text_hash="min"),
        Sample("http://h/ref/size.html", simhash=base, text_hash="size"),
    ]
    _, clusters = duplicate_clusters(samples)
    assert len(set(clusters)) == 3
    _, clusters = duplicate_clusters(samples, distance=1)
    assert len(set(clusters)) == 1


def test_near_pairs_found_across_every_block() -> None:
    base = 0xFFFF_0000_FFFF_0000
    hashes = [base, base ^ (1 << 63), base ^ 1 ^ (1 << 20) ^ (1 << 40)]
    assert set(near_duplicate_pairs(hashes, 3)) == {(0, 1), (0, 2)}


def test_exact_text_body_canonical_and_redirects() -> None:
    samples = [
        Sample("http://h/a?sid=1", text_hash="t1"),
        Sample("http://h/a?sid=2", text_hash="t1"),
        Sample("http://h/p/1", page_hash="b9"),
        Sample("http://h/p/1/", page_hash="b9"),
        Sample("http://h/print/x", canonical="http://h/x"),
        Sample("http://h/new", redirects=("http://h/old",)),
        Sample("http://h/y", canonical="http://other.example/y"),
    ]
    urls, clusters = duplicate_clusters(samples)
    assert _same(urls, clusters, "http://h/a?sid=1", "http://h/a?sid=2")
    assert _same(urls, clusters, "http://h/p/1", "http://h/p/1/")
    assert _same(urls, clusters, "http://h/print/x", "http://h/x")  # the canonical joins the set
    assert _same(urls, clusters, "http://h/new", "http://h/old")
    assert "http://other.example/y" not in urls  # other hosts never teach a rule
    assert len(set(clusters)) == 5


def test_sample_json_round_trip() -> None:
    sample = Sample("http://h/a", 0xABC, "t", "b", "http://h/c", ("http://h/r",), "k")
    assert Sample.from_json(sample.to_json()) == sample


@pytest.mark.parametrize(
    "line", ['{"simhash": "00"}', '{"url": 3}', '{"url": "u", "redirects": "x"}', "[1]"]
)
def test_bad_sample_lines_are_refused(line: str) -> None:
    with pytest.raises(ValueError):
        Sample.from_json(line)


def test_distance_too_large_is_refused() -> None:
    with pytest.raises(ValueError):
        list(near_duplicate_pairs([1, 2], 4))


def test_exported_items_are_samples() -> None:
    item = {
        "url": "http://h/a?sid=1",
        "templates": {
            "simhash": "00000000000000ff",
            "content_hash": "c1",
            "canonical": "http://h/a",
        },
        "content_text": "…",
    }
    assert Sample.from_record(item) == Sample(
        "http://h/a?sid=1", 0xFF, text_hash="c1", canonical="http://h/a"
    )


def test_samples_of_one_url_merge_into_one() -> None:
    download = Sample(
        "http://h/a", page_hash="b1", canonical="http://h/a", redirects=("http://h/x",)
    )
    item = Sample("http://h/a", simhash=0, text_hash="t1")
    both = download.merged(item)
    assert both == Sample("http://h/a", 0, "t1", "b1", "http://h/a", ("http://h/x",))
    assert item.merged(download) == both


def test_canonical_votes_count_rel_canonical_and_same_host_redirects() -> None:
    samples = [
        Sample("http://h/x?print=1", canonical="http://h/x"),
        Sample("http://h/x?sid=7", canonical="http://h/x"),
        Sample("http://h/new", redirects=("http://h/old", "http://h/older")),
        Sample("http://h/far", redirects=("http://elsewhere.example/far",)),
        Sample("http://h/y", canonical="http://h/not-sampled"),
    ]
    urls = ["http://h/x", "http://h/x?print=1", "http://h/new", "http://h/old", "http://h/far"]
    assert canonical_votes(samples, urls) == [2, 0, 2, 0, 0]


def test_canonical_links_join_pages_only_while_they_are_trusted() -> None:
    samples = [
        Sample("http://a/list", text_hash="01"),
        Sample("http://a/list?page=7", text_hash="07", canonical="http://a/list"),
        Sample("http://a/list?page=7&ref=menu", redirects=("http://a/list?page=7",)),
    ]
    urls, clusters = duplicate_clusters(samples)
    assert len(set(clusters)) == 1
    urls, clusters = duplicate_clusters(samples, canonical=False)
    by_url = dict(zip(urls, clusters, strict=True))
    assert by_url["http://a/list"] != by_url["http://a/list?page=7"]
    assert by_url["http://a/list?page=7"] == by_url["http://a/list?page=7&ref=menu"]
    trusted = dict(zip(urls, canonical_votes(samples, urls), strict=True))
    untrusted = dict(zip(urls, canonical_votes(samples, urls, canonical=False), strict=True))
    assert (trusted["http://a/list"], untrusted["http://a/list"]) == (1, 0)
    assert trusted["http://a/list?page=7&ref=menu"] == untrusted["http://a/list?page=7&ref=menu"]
