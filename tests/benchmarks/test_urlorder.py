"""The crawl-order bound of URL rules on hand-made download sequences."""

from __future__ import annotations

from benchmarks.urlorder import in_crawl_order


def _session_site(articles: int, copies: int) -> list[tuple[str, str]]:
    """Each article fetched under ``copies`` session ids in a row, as a crawl that finds its
    links together would."""
    return [
        (f"http://h/article/{a}?sid={s}", f"article {a}")
        for a in range(articles)
        for s in range(copies)
    ]


def test_rules_learned_in_crawl_order_catch_only_what_comes_after_the_evidence() -> None:
    fetched = _session_site(articles=40, copies=3)
    after = in_crawl_order(fetched, None)
    assert after.duplicates == 80 and after.caught == 80 and after.wrong == 0
    ordered = in_crawl_order(fetched, 30)
    # nothing is caught before the first relearn; later copies are
    assert 0 < ordered.caught < after.caught and ordered.wrong == 0


def test_a_rule_in_force_that_merges_distinct_pages_is_a_wrong_merge() -> None:
    # ?sid= is a session id on the first thirty articles; on the next one it names the page
    fetched = _session_site(articles=30, copies=2)
    fetched += [("http://h/article/99?sid=a", "first"), ("http://h/article/99?sid=b", "second")]
    ordered = in_crawl_order(fetched, 60)
    assert (ordered.duplicates, ordered.caught, ordered.wrong) == (30, 0, 1)
    # learned from every download, the rule is kept off the page it would merge
    after = in_crawl_order(fetched, None)
    assert (after.caught, after.wrong) == (30, 0)
