from __future__ import annotations

import pytest

from scrapy_templates.templates.decide import (
    Thresholds,
    is_heading,
    is_template,
    main_region,
    mark_pagelets,
    peel_edges,
    sequence_bar,
    spare_content_headings,
    spare_region_content,
)
from scrapy_templates.templates.region import MAX_PREFIX_STEPS


def test_papers_rule_is_any_repeat() -> None:
    assert is_template(2, 1000, Thresholds(min_pages=2, min_share=0.0))
    assert not is_template(1, 1000, Thresholds(min_pages=2, min_share=0.0))


def test_share_keeps_rarely_shared_paragraphs_as_content() -> None:
    th = Thresholds(min_pages=2, min_share=0.1)
    assert not is_template(5, 200, th)
    assert is_template(20, 200, th)
    assert is_template(2, 6, th)  # early in a site's crawl, min_pages decides


def test_mark_pagelets_never_flags_empty_fingerprint() -> None:
    flags = mark_pagelets([0, 11, 12], [0, 0, 0], {0: 99, 11: 9, 12: 1}, 10, Thresholds(2, 0.0))
    assert flags == [False, True, False]


def test_patterns_flag_dated_templates_only_when_site_wide() -> None:
    # fingerprints 21/22 each on one page; their number-blind patterns 31 on 9 of 10 pages
    # (a dated footer) and 32 on 2 of 10 (release titles of one section).
    support = {21: 1, 22: 1, 31: 9, 32: 2}
    th = Thresholds(min_pages=2, min_share=0.25, pattern_share=0.5)
    assert mark_pagelets([21, 22], [31, 32], support, 10, th) == [True, False]


def test_main_region_cuts_header_and_sidebar_but_not_headings() -> None:
    # body(0) > header(0,0) [title, content-ish], main(0,1) [h2, text], footer(0,2) [template]
    positions = [(0, 0), (0, 1, 0), (0, 1, 1), (0, 2)]
    weights = [30, 20, 900, 0]
    flags = [False, False, False, True]
    assert main_region(positions, weights, flags, 0.8) == (0, 1)
    # Inside main nothing is template: the heading beside the text keeps the region at main.
    assert main_region(positions, weights, flags, 0.8)[:2] == (0, 1)


def test_main_region_stays_at_root_without_template_beside() -> None:
    positions = [(0,), (1,), (2,)]
    assert main_region(positions, [10, 900, 5], [False, False, False], 0.8) == ()
    assert main_region(positions, [10, 900, 0], [False, False, True], 0.8) == (1,)


def test_main_region_of_a_page_nested_thousands_deep_stops_at_the_main_path_depth() -> None:
    # a chain of 2,000 single children above the content: each step used to look at every
    # pagelet again
    chain = (0,) * 2000
    positions = [(*chain, 0), *((*chain, 1, i) for i in range(1000))]
    weights = [0, *([10] * 1000)]
    flags = [True, *([False] * 1000)]
    assert main_region(positions, weights, flags, 0.8) == (0,) * MAX_PREFIX_STEPS


def test_region_spares_a_sections_standing_sentence_but_not_site_wide_blocks() -> None:
    # pagelets: a sentence every page of one section repeats (3 of 10 pages), a tagline on
    # every page, the section's menu (3 of 10): the first two lie in the main region without
    # being navigation, the menu is navigation.
    th = Thresholds(min_pages=2, min_share=0.25, region_min_share=0.5)
    flags = [True, True, True]
    asked: list[int] = []

    def plain(i: int) -> bool:
        asked.append(i)
        return i != 2

    assert spare_region_content(flags, [3, 10, 3], 10, th, plain) == [False, True, True]
    assert asked == [0, 2]  # the site-wide tagline is never examined
    assert spare_region_content(flags, [3, 10, 3], 10, Thresholds(2, 0.25), plain) == flags


def test_heading_paths() -> None:
    assert is_heading("body/div.refentry/div/h2")
    assert is_heading("body/main/h3#usage") and is_heading("body/h1.title")
    assert not is_heading("body/div.h2") and not is_heading("body/header")


def test_a_shared_heading_that_opens_content_is_content() -> None:
    paths = ["body/nav", "body/main/h2", "body/main/table", "body/main/h2", "body/main/ul"]
    positions = [(0,), (1, 0), (1, 1), (1, 2), (1, 3)]
    texts = ["Home Docs", "Functions", "gtk_init gtk_main", "See also", "Site map News"]
    flags = [True, True, False, True, True]
    spared = spare_content_headings(flags, paths, positions, texts, lambda i: True)
    # "Functions" opens the page's table; "See also" heads a template list; the nav stays
    assert spared == [True, False, False, True, True]
    # outside the main region (or navigation) nothing is spared
    assert spare_content_headings(flags, paths, positions, texts, lambda i: False) == flags


def test_a_run_of_headings_above_content_is_spared_but_not_across_parents() -> None:
    paths = ["body/main/h2", "body/main/h3", "body/main/p", "body/aside/h3", "body/main/p"]
    positions = [(0, 0), (0, 1), (0, 2), (1, 0), (0, 3)]
    texts = ["Reference", "Parameters", "n: the count", "Related", "more text"]
    flags = [True, True, False, True, False]
    # "Related" is followed by content under another parent: it stays template
    assert spare_content_headings(flags, paths, positions, texts, lambda i: True) == [
        False,
        False,
        False,
        True,
        False,
    ]


def test_peel_edges_flags_candidates_that_frame_the_content() -> None:
    # header bar, heading, text, link block between paragraphs, text, footer bar, site footer
    considered = [True, True, True, True, True, True, False]
    candidates = [True, False, False, True, False, True, True]
    headings = [False, True, False, False, False, False, False]
    weights = [40, 10, 300, 60, 300, 40, 20]
    assert peel_edges([False] * 7, candidates, considered, headings, weights) == [
        True, False, False, False, False, True, False,
    ]  # fmt: skip


def test_peel_edges_walks_past_flagged_pagelets_only() -> None:
    considered = [True] * 4
    candidates = [False, True, False, True]
    headings = [False] * 4
    weights = [20, 20, 300, 20]
    assert peel_edges([True, False, False, False], candidates, considered, headings, weights) == [
        True, True, False, True,
    ]  # fmt: skip
    assert peel_edges([False] * 4, candidates, considered, headings, weights) == [
        False, False, False, True,
    ]  # fmt: skip


def test_peel_edges_leaves_a_page_more_than_its_frames() -> None:
    # a syntax page: its title and one block of "Used by:" links
    assert peel_edges([False] * 2, [False, True], [True] * 2, [True, False], [10, 80]) == [
        False, False,
    ]  # fmt: skip
    three = ([False] * 3, [False, False, True], [True] * 3, [True, False, False])
    assert peel_edges(*three, [10, 200, 50]) == [False, False, True]
    # a link-poor page whose content is one block, shifting like its neighbours' content
    assert peel_edges(*three, [10, 50, 200]) == [False, False, False]


def test_peel_edges_without_weights_peels_declared_frames_of_any_size() -> None:
    # a texinfo node: its bar above and below a heading and a short menu
    three = ([False] * 4, [True, False, False, True], [True] * 4, [False, True, False, False])
    assert peel_edges(*three, [120, 10, 40, 120]) == [False] * 4
    assert peel_edges(*three, None) == [True, False, False, True]
    # never down to the headings alone
    assert peel_edges([False] * 2, [True, False], [True] * 2, [False, True], None) == [
        False, False,
    ]  # fmt: skip


DECLARED = {"p.html": {"prev"}, "n.html": {"next"}, "u.html": {"up"}, "i.html": {"index"}}


@pytest.mark.parametrize(
    ("text", "hrefs", "anchors", "bar"),
    [
        ("Next: Bug Reports, Previous: Intro, Up: Top [Index]",
         ["n.html", "p.html", "u.html", "i.html"], ["Bug Reports", "Intro", "Top", "Index"], True),
        ("Prev Up Chapter 49. Logical Decoding Home Next", ["p.html", "n.html", "#top"],
         ["Prev", "Next", "Top"], True),
        ("ebnf.statement.terminator Home crop.marks", ["u.html"], ["Home"], True),
        # a chapter's first section: its previous page is its chapter, up
        ("Prev Up Next", ["c.html", "c.html", "n.html"], ["Prev", "Up", "Next"], True),
        # the next page and the index only: a table of contents's first entry
        ("1. Getting started Index", ["n.html", "i.html"], ["1. Getting started", "Index"], False),
        # a link to a page that is no neighbour: a sentence of the content
        ("See Intro and Bug Reports, or the Manual.", ["p.html", "n.html", "m.html"],
         ["Intro", "Bug Reports", "Manual"], False),
        # the next page twice: a short page's heading list and its bar in one pagelet
        ("Cast 7.13 previous Intro next 7.13", ["n.html", "p.html", "n.html"],
         ["7.13", "Intro", "7.13"], False),
        (" ".join(["word"] * 30) + " Intro Bug Reports", ["p.html", "n.html"],
         ["Intro", "Bug Reports"], False),
    ],
)  # fmt: skip
def test_a_sequence_bar_leads_to_declared_neighbours_alone(
    text: str, hrefs: list[str], anchors: list[str], bar: bool
) -> None:
    declared = {**DECLARED, "c.html": {"prev", "up"}}
    assert sequence_bar(text, hrefs, anchors, declared) is bar
