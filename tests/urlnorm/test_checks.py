"""Which requests a rule turned away are checked, and how a check ends, on plain data."""

from __future__ import annotations

import math
import random

from scrapy_templates.urlnorm.checks import (
    DIRECTORY_BUDGET,
    FAILED,
    HELD,
    OPEN,
    SAME_CONTENT,
    TEXT_SKETCH,
    UNKNOWN,
    Check,
    RuleChecks,
    contained,
    content_sketch,
    resemblance,
    text_sketch,
)
from scrapy_templates.urlnorm.url import url_key

RULE = "http://a/item?id=* -> http://a/item?id=*: drop ?view"
SHOP = "http://a/shop/item?id=1"
PAGE_HASH = "00000000000000aa"
OTHER_HASH = "00000000000000bb"
VIEW = f"{SHOP}&view=1"
ARTICLE = [
    "A long article body that carries most of the page's own words, " * 20,
    "Related: three more stories",
]
_VOCABULARY = [f"{w}{n}" for w in ("river", "bank", "vote", "coach", "field") for n in range(8)]


def _story(seed: int, words: int = 400) -> list[str]:
    """Paragraphs of a story: far more distinct word pairs than a text sketch keeps."""
    rng = random.Random(seed)
    text = [rng.choice(_VOCABULARY) for _ in range(words)]
    return [" ".join(text[n : n + 50]) for n in range(0, words, 50)]


def _downloaded(checks: RuleChecks[str], url: str, page_hash: str = PAGE_HASH) -> None:
    checks.downloaded(url, url_key(url), page_hash)


def _turn(checks: RuleChecks[str], url: str, witness: str | None = SHOP) -> None:
    checks.turned(url, url, SHOP, RULE, witness)


def test_the_first_requests_of_a_rule_are_checked_then_none_without_a_share() -> None:
    checks: RuleChecks[str] = RuleChecks(first=3, share=0.0)
    _downloaded(checks, SHOP)
    for view in range(5):
        _turn(checks, f"{SHOP}&view={view}")
    taken = checks.take()
    assert [c.url for c in taken] == [f"{SHOP}&view={v}" for v in range(3)]
    assert all(c.witness == SHOP and c.target == SHOP and c.rule == RULE for c in taken)
    assert checks.take() == []


def test_new_directories_are_checked_as_the_downloads_allow() -> None:
    checks: RuleChecks[str] = RuleChecks(first=1, share=0.0)
    _downloaded(checks, SHOP)
    _turn(checks, f"{SHOP}&view=a")  # the rule's first check
    _turn(checks, f"{SHOP}&view=b")  # its directory had its one
    sections = ("docs", "blog")
    for section in sections:
        page = f"http://a/{section}/item?id=1"
        _downloaded(checks, page)
        checks.turned(section, f"{page}&view=a", page, RULE, page)
    # one check in a new directory fits in a tenth of 3 downloads, the second waits
    assert [c.token for c in checks.take()] == [f"{SHOP}&view=a", "docs"]
    for n in range(round(1 / DIRECTORY_BUDGET)):
        _downloaded(checks, f"http://a/other/{n}")
    assert [c.token for c in checks.take()] == ["blog"]


def test_random_checks_stay_within_their_share_of_the_downloads() -> None:
    checks: RuleChecks[str] = RuleChecks(first=0, share=0.5, seed=1)
    for n in range(10):
        _downloaded(checks, f"http://a/page/{n}")
    _downloaded(checks, SHOP)
    for view in range(200):
        _turn(checks, f"{SHOP}&view={view}")
    assert 1 <= len(checks.take()) <= math.ceil(0.5 * 11)


def test_a_check_waits_for_its_witness_to_be_downloaded() -> None:
    checks: RuleChecks[str] = RuleChecks(first=3, share=0.0)
    _turn(checks, f"{SHOP}&view=1", witness=None)
    assert checks.take() == []
    _downloaded(checks, SHOP)
    (check,) = checks.take()
    assert (check.url, check.witness) == (f"{SHOP}&view=1", SHOP)


def _check(url: str = f"{SHOP}&view=1") -> Check[str]:
    return Check(url, url, SHOP, SHOP, RULE)


def test_the_same_text_holds_and_the_tally_says_so() -> None:
    checks: RuleChecks[str] = RuleChecks()
    _downloaded(checks, SHOP)
    assert checks.fetched(_check(), PAGE_HASH, VIEW, None).status == HELD
    assert checks.counts() == {RULE: (1, 1)}


def test_a_redirect_to_the_rules_url_holds_whatever_the_text() -> None:
    checks: RuleChecks[str] = RuleChecks()
    _downloaded(checks, SHOP)
    assert checks.fetched(_check(), OTHER_HASH, SHOP, None).status == HELD


def test_an_open_check_waits_for_its_witness_to_be_an_item() -> None:
    """The checked page's item came first: the check ends when the witness's does."""
    checks: RuleChecks[str] = RuleChecks()
    _downloaded(checks, SHOP)
    assert checks.fetched(_check(), OTHER_HASH, VIEW, None).status == OPEN
    assert checks.content(VIEW, ARTICLE) == []
    assert checks.counts() == {}
    (outcome,) = checks.content(SHOP, ["Another chapter altogether " * 20])
    assert (outcome.status, outcome.url, outcome.witness) == (FAILED, VIEW, SHOP)
    assert checks.counts() == {RULE: (1, 0)}


def test_a_retracted_rules_waiting_checks_are_cancelled() -> None:
    checks: RuleChecks[str] = RuleChecks(first=3, share=0.0)
    _turn(checks, f"{SHOP}&view=1", witness=None)
    checks.cancel({RULE})
    _downloaded(checks, SHOP)
    assert checks.take() == []


def test_without_a_text_to_compare_a_check_is_unknown_and_not_counted() -> None:
    checks: RuleChecks[str] = RuleChecks()
    _downloaded(checks, SHOP)
    assert checks.fetched(_check(), None, VIEW, None).status == UNKNOWN
    assert checks.counts() == {}


def test_an_open_check_holds_when_the_content_is_the_same_but_for_a_template_line() -> None:
    checks: RuleChecks[str] = RuleChecks()
    _downloaded(checks, SHOP)
    assert checks.content(SHOP, ["Home > Shop", *ARTICLE]) == []
    assert checks.fetched(_check(), OTHER_HASH, VIEW, None).status == OPEN
    (outcome,) = checks.content(VIEW, ARTICLE)
    assert outcome.status == HELD


def test_an_open_check_fails_when_the_content_differs() -> None:
    checks: RuleChecks[str] = RuleChecks()
    _downloaded(checks, SHOP)
    checks.content(SHOP, ARTICLE)
    assert checks.fetched(_check(), OTHER_HASH, VIEW, None).status == OPEN
    (outcome,) = checks.content(VIEW, ["Another chapter altogether " * 20])
    assert (outcome.status, outcome.witness, outcome.claimed) == (FAILED, SHOP, False)


def test_rules_checked_elsewhere_need_no_first_checks_here() -> None:
    checks: RuleChecks[str] = RuleChecks(first=1, share=0.0)
    checks.proven({RULE: (3, 3)})
    _downloaded(checks, SHOP)
    _turn(checks, f"{SHOP}&view=1")  # one check in this directory, as in any new one
    _turn(checks, f"{SHOP}&view=2")
    assert [c.url for c in checks.take()] == [f"{SHOP}&view=1"]
    assert checks.counts() == {RULE: (3, 3)}


def test_resemblance_is_the_shared_share_of_the_larger_content() -> None:
    results = [f"result {n}: a line of teaser text for entry {n}" for n in range(10)]
    same = resemblance(content_sketch(results), content_sketch(results))
    shifted = resemblance(content_sketch(results[:8]), content_sketch(results[2:]))
    assert same == 1.0
    assert shifted < SAME_CONTENT  # a result list sharing most entries is another page
    assert resemblance(content_sketch([]), content_sketch([])) == 1.0
    assert resemblance(content_sketch(["  a  b "]), content_sketch(["a b"])) == 1.0
    # any white space, the ASCII space's kin included, is one space
    spaced = content_sketch(["lamp\u00a0of\tbrass\u2009and\u3000glass\n"])
    assert resemblance(spaced, content_sketch(["lamp of brass and glass"])) == 1.0
    assert resemblance(spaced, content_sketch(["lamp of brass or glass"])) == 0.0


LISTING = "http://a/shop/shoes"
PAGE_SEVEN = f"{LISTING}?page=7"


def _entries(first: int) -> list[str]:
    return [
        f"Shoe {n}: a leather shoe, size {30 + n}, colour {n * 7 % 11}"
        for n in range(first, first + 10)
    ]


def test_a_page_naming_the_witness_canonical_holds_when_its_words_are_the_witnesses() -> None:
    """A print view holds the article's words in one block where the article has a
    pagelet per part: no pagelet is shared, the words are."""
    checks: RuleChecks[str] = RuleChecks()
    checks.names_canonical()
    _downloaded(checks, SHOP)
    story = _story(1)
    checks.content(SHOP, ["Record import league", "Published in May in World", *story, "Related"])
    assert checks.fetched(_check(), OTHER_HASH, VIEW, SHOP).status == OPEN
    (outcome,) = checks.content(VIEW, [" ".join(["Record import league", *story])])
    assert (outcome.status, outcome.claimed) == (HELD, True)
    assert checks.counts() == {RULE: (1, 1)}


def test_a_listing_page_naming_page_one_canonical_is_another_page() -> None:
    """Page 7 names page 1 canonical and shares its heading and layout, not its entries:
    the claim alone does not make it page 1."""
    checks: RuleChecks[str] = RuleChecks()
    checks.names_canonical()
    _downloaded(checks, LISTING)
    checks.content(LISTING, ["Shoes", "Sort by price or name", *_entries(0)])
    check = Check(PAGE_SEVEN, PAGE_SEVEN, LISTING, LISTING, RULE)
    assert checks.fetched(check, OTHER_HASH, PAGE_SEVEN, LISTING).status == OPEN
    (outcome,) = checks.content(PAGE_SEVEN, ["Shoes", "Sort by price or name", *_entries(60)])
    assert (outcome.status, outcome.witness, outcome.claimed) == (FAILED, LISTING, True)


def test_a_claim_is_neither_borne_out_nor_refuted_without_the_witnesses_words() -> None:
    """The witness became an item before the host named a canonical elsewhere: its words
    were not sketched, and the check counts neither way."""
    checks: RuleChecks[str] = RuleChecks()
    _downloaded(checks, SHOP)
    checks.content(SHOP, ["Title", *_story(1)])
    assert checks.fetched(_check(), OTHER_HASH, VIEW, SHOP).status == OPEN
    (outcome,) = checks.content(VIEW, [" ".join(["Title", *_story(1)])])
    assert (outcome.status, outcome.claimed) == (UNKNOWN, True)
    assert checks.counts() == {}


def test_a_page_the_spider_makes_no_item_of_is_judged_by_where_it_leads() -> None:
    """A listing page in a spider whose items are products: page 7 leads to products no
    other page links, a sort order of page 1 to pages met before."""
    checks: RuleChecks[str] = RuleChecks(share=0.0)
    _downloaded(checks, LISTING)
    listing = Check(PAGE_SEVEN, PAGE_SEVEN, LISTING, LISTING, RULE)
    assert checks.fetched(listing, OTHER_HASH, PAGE_SEVEN, LISTING).status == OPEN
    sorted_url = f"{LISTING}?sort=price"
    by_price = Check(sorted_url, sorted_url, LISTING, LISTING, RULE)
    assert checks.fetched(by_price, OTHER_HASH, sorted_url, LISTING).status == OPEN
    failed = checks.no_item(PAGE_SEVEN, requests=23, new=8)
    assert failed is not None
    assert (failed.status, failed.links, failed.claimed) == (FAILED, True, True)
    held = checks.no_item(sorted_url, requests=23, new=0)
    assert held is not None and held.status == HELD
    assert checks.counts() == {RULE: (2, 1)}
    assert checks.no_item(PAGE_SEVEN, requests=23, new=8) is None  # ended once


def test_a_check_whose_content_never_comes_ends_unknown_when_none_is_left_to_come() -> None:
    """An item of the checked page dropped by another pipeline: neither borne out nor
    refuted, whatever its page claimed."""
    checks: RuleChecks[str] = RuleChecks()
    _downloaded(checks, SHOP)
    assert checks.fetched(_check(), OTHER_HASH, VIEW, SHOP).status == OPEN
    assert checks.expired() == []
    (outcome,) = checks.expired(everything=True)
    assert (outcome.url, outcome.status, outcome.expired) == (VIEW, UNKNOWN, True)
    assert checks.counts() == {}
    assert checks.content(VIEW, ["late"]) == []


def test_a_check_waiting_for_a_witness_that_never_becomes_an_item_ends_unknown() -> None:
    checks: RuleChecks[str] = RuleChecks()
    _downloaded(checks, SHOP)
    assert checks.fetched(_check(), OTHER_HASH, VIEW, SHOP).status == OPEN
    assert checks.content(VIEW, _story(2)) == []
    (outcome,) = checks.expired(everything=True)
    assert (outcome.url, outcome.status) == (VIEW, UNKNOWN)


def test_an_article_holds_with_a_print_view_downloaded_first() -> None:
    """The witness is the print view (the first URL of the page downloaded): the article's
    words are not within it, its words are within the article's."""
    checks: RuleChecks[str] = RuleChecks()
    checks.names_canonical()
    _downloaded(checks, SHOP)
    story = _story(5)
    checks.content(SHOP, [" ".join(story)])  # the print view, one block
    assert checks.fetched(_check(), OTHER_HASH, VIEW, SHOP).status == OPEN
    article = ["Home > World", *story, " ".join(_story(6, 120))]  # and related stories
    (outcome,) = checks.content(VIEW, article)
    assert outcome.status == HELD


def test_a_claim_waits_for_the_witnesses_words() -> None:
    """The print view's item came before its article's: the article's words, sketched when
    it becomes an item, decide."""
    checks: RuleChecks[str] = RuleChecks()
    checks.names_canonical()
    _downloaded(checks, SHOP)
    assert checks.fetched(_check(), OTHER_HASH, VIEW, SHOP).status == OPEN
    assert checks.content(VIEW, [" ".join(["Title", *_story(4)])]) == []
    (outcome,) = checks.content(SHOP, ["Title", *_story(4)])
    assert (outcome.status, outcome.url) == (HELD, VIEW)


def test_a_text_sketch_keeps_the_lowest_word_pairs_whatever_the_layout() -> None:
    words = [f"w{n}" for n in range(1000)]
    sketch = text_sketch([" ".join(words)])
    assert len(sketch) == 4 * TEXT_SKETCH
    assert text_sketch([" ".join(words[:500]), " ".join(words[500:])]) == sketch
    assert text_sketch(["  ".join(words)]) == sketch
    assert text_sketch(["lonely"]) == b""
    assert len(text_sketch(["a b c", "d"])) == 4 * 3


def test_containment_is_the_share_of_a_pages_word_pairs_the_other_has() -> None:
    words = [f"w{n}" for n in range(2000)]
    whole = text_sketch([" ".join(words)])
    assert contained(whole, whole) == 1.0
    # a part cut out of a larger page: all its pairs low enough to compare are there
    assert contained(text_sketch([" ".join(words[:1500])]), whole) == 1.0
    half = contained(whole, text_sketch([" ".join(words[:1000])]))
    assert 0.3 < half < 0.7
    # a page far larger than the part leaves too few of the part's pairs to compare
    assert contained(text_sketch([" ".join(words[:100])]), whole) is None
    other = text_sketch([" ".join(f"v{n}" for n in range(2000))])
    assert contained(other, whole) == 0.0
    assert contained(b"", whole) == 0.0
    short = text_sketch([" ".join(words[:20])])
    assert contained(short, text_sketch([" ".join(words[:20])])) == 1.0
