from __future__ import annotations

import pytest

from scrapy_templates.templates import region as region_module
from scrapy_templates.templates.region import (
    MAX_PREFIX_STEPS,
    SiteRegion,
    block_navigation,
    in_region,
    names_itself,
    navigation_links,
    same_site,
)

HEADER, CONTENT, FOOTER = "body/div#header", "body/div#content", "body/div#footer"


def _page(region: SiteRegion, content: int, header: int = 40, split: bool = True) -> None:
    if split:
        region.add(
            [HEADER, f"{CONTENT}/h2", f"{CONTENT}/div", FOOTER],
            [header, 10, content, 0],
            [False, False, False, True],
        )
    else:  # a link-poor page: the whole body is one pagelet
        region.add(["body"], [header + content], [False])


def test_learns_the_content_container_across_pages() -> None:
    region = SiteRegion(share=0.8)
    for size in (400, 900, 150, 2000, 60):
        _page(region, size)
    assert region.main_path() == CONTENT


def test_one_huge_page_of_another_layout_does_not_outvote_the_rest() -> None:
    region = SiteRegion(share=0.8)
    for _ in range(20):
        _page(region, 500)
    region.add(["body/div.book/p"], [500_000], [False])
    assert region.main_path() == CONTENT


def test_unsplit_pages_do_not_vote_below_their_pagelet() -> None:
    region = SiteRegion(share=0.8)
    for i in range(30):
        _page(region, 300, split=i % 2 == 0)
    assert region.main_path() == CONTENT


def test_headings_beside_the_content_are_not_cut() -> None:
    region = SiteRegion(share=0.8)
    for _ in range(10):
        _page(region, 5000)
    # div holds far more than 80% of the content, but its sibling h2 carries no template.
    assert region.main_path() == CONTENT


def test_what_a_sidebar_leaves_unflagged_does_not_vote() -> None:
    # a per-page table of contents in the sidebar stays unflagged beside its template menu:
    # a fifth of each page's text, yet the sidebar is a template region
    region = SiteRegion(share=0.9)
    side = "body/div#side"
    for _ in range(20):
        region.add(
            [f"{side}/ul.menu", f"{side}/ul.toc", f"{CONTENT}/h1", f"{CONTENT}/div"],
            [0, 200, 20, 780],
            [True, False, False, False],
        )
    assert region.main_path() == CONTENT


def test_another_page_types_chrome_is_a_template_region_beside_the_content() -> None:
    # most pages put content and sidebar in div#box; a few pages of another generator have
    # their own chrome (template wherever it is) beside it, on a few pages of the site only
    region = SiteRegion(share=0.9)
    box = "body/div#box"
    for n in range(40):
        if n % 10 == 0:
            region.add(["body/div.other/nav", "body/div.other/p"], [0, 100], [True, False])
        else:
            region.add([f"{box}/nav", f"{box}/div#content/p"], [0, 500], [True, False])
    assert region.main_path() == f"{box}/div#content"


@pytest.mark.parametrize(("beside", "main"), [("few", "body/div#box/div#content"), ("all", "body")])
def test_plain_pages_of_another_layout_do_not_hold_the_region_back(beside: str, main: str) -> None:
    # three index pages without the site's chrome (no template at all) put their text in
    # body/ul; the site's own pages have their sidebar beside the content. Text beside the
    # box on every page is the site's own, and keeps the region at the body.
    region = SiteRegion(share=0.9)
    box = "body/div#box"
    for n in range(100):
        if n < 3:
            region.add(["body/h1", "body/ul"], [20, 300], [False, False])
            continue
        paths, weights = [f"{box}/nav", f"{box}/div#content/p"], [0, 500]
        if beside == "all":
            paths, weights = ["body/p", *paths], [5, *weights]
        region.add(paths, weights, [False, True, False][-len(paths) :])
    assert region.main_path() == main


def test_a_template_seen_on_one_page_does_not_cut_the_preamble_of_every_page() -> None:
    region = SiteRegion(share=0.9)
    for n in range(100):
        paths, weights, flags = ["body/p", "body/div.main/p"], [5, 95], [False, False]
        if n == 50:
            paths, weights, flags = [*paths, "body/div.ad"], [*weights, 0], [*flags, True]
        region.add(paths, weights, flags)
    assert region.main_path() == "body"


def test_flat_site_keeps_the_root() -> None:
    region = SiteRegion(share=0.8)
    for _ in range(10):
        region.add(
            ["body/div.nav", "body/h2", "body/p", "body/p"],
            [0, 20, 300, 200],
            [True, False, False, False],
        )
    assert region.main_path() == "body"


def test_in_region_matches_whole_steps() -> None:
    assert in_region("body/div#content/p", CONTENT)
    assert in_region(CONTENT, CONTENT)
    assert not in_region("body/div#contents", CONTENT)


def test_template_region_beside_is_seen_whatever_the_order_pages_arrive_in() -> None:
    # The sidebar holds a template pagelet and a per-page table of contents; the content
    # container is never template. Both must be known as children of their parent.
    region = SiteRegion(share=0.8)
    for i in range(12):
        region.add(
            ["body/div#bd/div#main/div.body", "body/div#bd/div#side/h3", "body/div#bd/div#side/ul"],
            [800 + i, 0, 40],
            [False, True, False],
        )
    assert region.main_path() == "body/div#bd/div#main"


def test_paths_unique_to_one_page_are_pruned_without_changing_the_answer() -> None:
    bounded = SiteRegion(share=0.8, max_nodes=200)
    unbounded = SiteRegion(share=0.8, max_nodes=10**9)
    for i in range(400):
        for region in (bounded, unbounded):
            region.add(
                [HEADER, f"{CONTENT}/div#s-section-{chr(97 + i % 26)}{i // 26}x", FOOTER],
                [20, 500, 0],
                [False, False, True],
            )
    assert len(bounded.seen) < 300 < len(unbounded.seen)
    assert bounded.main_path() == unbounded.main_path() == CONTENT
    # the weights of the paths kept went on counting into the tables pruning left in place
    for parent, below in bounded.children.items():
        for node, weight in below.items():
            assert weight == unbounded.children[parent][node], node
    assert bounded.children[""]["body"] == pytest.approx(400)


@pytest.mark.parametrize(
    ("text", "links", "expected"),
    [
        ("Home › News", (("/", "Home"), ("/news", "News")), True),
        ("« previous | up", (("/a", "previous"), ("/", "up")), True),
        ("Uses of Pair in org.tuple", (("pkg.html", "org.tuple"),), False),  # one reference
        ("Home › News › Bridge", (("/", "Home"), ("/news", "News")), True),  # the page's name
        (
            "Uses of Pair in org.tuple",
            (("../Pair.html", "Pair"), ("pkg.html", "org.tuple")),
            False,
        ),  # words join the links: a sentence
        (
            "Methods in org.tuple that return MutablePair",
            (("pkg.html", "org.tuple"), ("../MutablePair.html", "MutablePair")),
            False,
        ),
        (
            "See the changes page and the chronology",
            (("/c", "changes"), ("/h", "chronology")),
            False,
        ),
        (
            "Object Number",
            (("https://docs.test/Object", "Object"), ("//docs.test/N", "Number")),
            False,
        ),
        ("Top Intro", (("#top", "Top"), ("#intro", "Intro")), False),
        ("Home News", (("http://SITE.test/", "Home"), ("//site.test/news", "News")), True),
    ],
)
def test_navigation_is_links_to_two_pages_of_the_site_with_little_else(
    text: str, links: tuple[tuple[str, str], ...], expected: bool
) -> None:
    hrefs = [h for h, _ in links]
    anchors = [a for _, a in links]
    assert (navigation_links(text, hrefs, anchors, "site.test") >= 2) is expected


def test_navigation_links_count_the_pages_a_menu_leads_to() -> None:
    menu = ("Home News News", ["/", "/news", "/news"], ["Home", "News", "News"])
    assert navigation_links(*menu, "site.test") == 2
    assert navigation_links("Home", ["/"], ["Home"], "site.test") == 1
    sentence = ("See the full list of releases here.", ["/releases"], ["releases"])
    assert navigation_links(*sentence, "site.test") == 0


def test_a_path_pruned_then_seen_again_counts_from_then_on() -> None:
    region = SiteRegion(max_nodes=50)
    late = "body/div#late/p"
    region.add([late], [10], [False])
    for i in range(150):  # unique paths: the late one is rare when pruning starts
        region.add([f"body/div#u{chr(97 + i % 26)}{chr(97 + i // 26)}"], [10], [False])
    assert late not in region.seen
    for _ in range(50):
        region.add([late], [10], [False])
    assert region.children["body/div#late"][late] == pytest.approx(50)
    assert region.whole[late] == pytest.approx(50)


def test_a_page_nested_thousands_deep_costs_what_a_page_64_deep_does() -> None:
    region = SiteRegion(share=0.8)
    for size in (400, 900, 150):
        _page(region, size)
    deep = "body/div#content" + "/div" * 2000
    paths = [deep[: len("body/div#content") + 4 * depth] for depth in range(1, 2000, 7)]
    region.add(paths, [10] * len(paths), [False] * len(paths))
    longest = max(len(prefix.split("/")) for prefix in region.seen)
    assert longest == MAX_PREFIX_STEPS
    assert sum(len(prefix) for prefix in region.seen) < 64 * 64 * 8
    assert region.main_path() == CONTENT


def test_the_prefix_cache_holds_a_bounded_number_of_characters() -> None:
    from scrapy_templates.templates import region as module

    region = SiteRegion(share=0.8)
    for page in range(100):  # a generated id on every deep path: no two pages alike
        paths = [f"body/div#p{page}x{i}" + "/div" * 60 for i in range(20)]
        region.add(paths, [10] * len(paths), [False] * len(paths))
    cache = module._prefixes
    assert 0 < cache.chars <= cache.max_chars
    assert sum(len(p) + sum(map(len, f)) for p, f in cache.entries.items()) == cache.chars


def test_pages_of_generated_paths_keep_the_table_bounded_before_one_percent_is_a_page() -> None:
    bounded, unbounded = SiteRegion(share=0.8, max_nodes=1_000), SiteRegion(share=0.8)
    for page in range(60):
        paths = [f"body/div#p{page}x{i}/div/p" for i in range(200)]  # 600 new prefixes a page
        for region in (bounded, unbounded):
            _page(region, 500)
            region.add(paths, [0] * len(paths), [False] * len(paths))
        assert len(bounded.seen) <= 4 * bounded.max_nodes + 600
    assert len(unbounded.seen) > 30_000
    assert bounded.main_path() == unbounded.main_path() == CONTENT


def test_a_block_names_itself_when_every_link_leads_back_to_the_page() -> None:
    url = "http://wiki.test/w/Thread_support"
    assert names_itself(["http://wiki.test/index.php?title=Thread_support&oldid=90311"], url)
    assert names_itself(["#top", "/w/Thread_support"], url)
    assert names_itself(["/index.php?title=c/thread/Thread%5Fsupport"], url + ".html")


def test_a_block_with_a_link_elsewhere_does_not_name_itself() -> None:
    url = "http://wiki.test/w/Thread_support"
    assert not names_itself([], url)
    assert not names_itself(["/w/Thread_support", "/w/Mutexes"], url)
    assert not names_itself(["http://other.test/w/Thread_support"], url)
    assert not names_itself(["/index.php?title=Mutexes&oldid=1"], url)
    assert not names_itself(["/index.php?title=ab"], "http://wiki.test/w/ab")  # too short to tell
    # pages told apart by their query: another topic of the same script is another page
    topic = "http://forum.test/viewtopic.php?t=12"
    assert names_itself(["viewtopic.php?t=12", "#p3"], topic)
    assert not names_itself(["viewtopic.php?t=13"], topic)
    assert not names_itself(["/list?x=overview-tree"], "http://a.test/doc/tree.html")
    assert not names_itself(["http://[::1"], url)  # a link Python cannot split


@pytest.mark.parametrize(
    ("href", "expected"),
    [
        ("page.html", True),
        ("/docs/page.html", True),
        ("?page=2", True),
        ("dir/a:b.html", True),  # a colon after a slash is in the path
        ("#top", False),
        ("", True),
        ("http://site.test/a", True),
        ("HTTPS://Site.Test/a", True),
        ("//site.test/a", True),
        ("//other.test/a", False),
        ("http://other.test/a", False),
        ("mailto:someone@site.test", False),
        ("javascript:void(0)", False),
        ("http://[:PORT_NUMBER]/", False),
    ],
)
def test_same_site_tells_links_through_the_site_from_the_rest(href: str, expected: bool) -> None:
    assert same_site(href, "site.test") is expected


def test_a_block_that_comes_back_is_judged_once_and_alike(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    menu = ("Home | Guide | API", ("/", "/guide.html", "/api.html"), ("Home", "Guide", "API"))
    sentence = ("Uses of Pair in org.tuple", ("/org/tuple/Pair.html",), ("Pair",))
    hosted = ("Home | Guide", ("http://site.test/", "http://site.test/g.html"), ("Home", "Guide"))
    made: list[object] = []
    cache = region_module._navigation
    monkeypatch.setattr(cache, "entries", {})
    monkeypatch.setattr(cache, "chars", 0)
    make = cache.make
    monkeypatch.setattr(cache, "make", lambda block: made.append(block) or make(block))
    for text, hrefs, anchors in (menu, sentence, hosted, menu, sentence, hosted):
        for host in ("site.test", "other.test"):
            expected = navigation_links(text, list(hrefs), list(anchors), host)
            assert block_navigation(text, list(hrefs), anchors, host) == expected
    assert len(made) == len(set(made)) == 6, "each block on each host worked out once"
    assert block_navigation(*hosted, "site.test") == 2
    assert block_navigation(*hosted, "other.test") == 0, "another host's links lead elsewhere"
