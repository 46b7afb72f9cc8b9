"""Block variability: DiffScore over bounded samples, and the blocks it calls static."""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_templates.templates.region import navigation_links
from scrapy_templates.templates.repeats import RepeatCache
from scrapy_templates.templates.text import WORD
from scrapy_templates.templates.variability import (
    BAR,
    COMPARISONS,
    DYNAMIC,
    FRAME,
    SHIFTING,
    STATIC,
    BlockSamples,
    LayoutBlocks,
    block_keys,
    common_weight,
    layout_may_flag,
    link_label,
    words,
)
from tests.texts import STORIES


def is_navigation(text: str, hrefs: Sequence[str], anchors: Sequence[str], host: str) -> bool:
    return navigation_links(text, hrefs, anchors, host) >= 2


def _add(block: BlockSamples, text: tuple[str, ...], rng: random.Random) -> None:
    slot = block.offer(rng)
    if slot is not None:
        block.store(slot, text)


def test_words_and_weights() -> None:
    assert words("Home › Products, 2024-05-31!", 10) == ("home", "products", "2024", "05", "31")
    assert words("a b c d", 2) == ("a", "b")
    a, b = words("you are here home sport", 9), words("you are here home world", 9)
    assert common_weight(a, b) == len("youareherehome")
    assert common_weight(words("updated 2024 05 31", 9), words("updated 2025 01 02", 9)) == 7


def test_block_keys_rank_blocks_of_one_path() -> None:
    paths = ["body/nav", "body/main/p", "body/main/p", "body/footer", "body/main/p"]
    assert block_keys(paths) == [
        ("body/nav", 0),
        ("body/main/p", 0),
        ("body/main/p", 1),
        ("body/footer", 0),
        ("body/main/p", 2),
    ]


@pytest.mark.parametrize("comparison", sorted(COMPARISONS))
def test_diff_score_is_zero_for_copies_and_near_one_for_articles(comparison: str) -> None:
    rng = random.Random(1)
    same = BlockSamples(6, COMPARISONS[comparison])
    varied = BlockSamples(6, COMPARISONS[comparison])
    for text in STORIES:
        _add(same, words("About Contact Privacy policy", 40), rng)
        _add(varied, words(text, 40), rng)
    assert same.diff_score() == 0.0
    assert (varied.diff_score() or 0) > 0.8
    assert len(varied.samples) == 6 and varied.pages == len(STORIES)


@pytest.mark.parametrize("comparison", sorted(COMPARISONS))
def test_a_block_without_letters_has_no_score(comparison: str) -> None:
    block = BlockSamples(4, COMPARISONS[comparison])
    for n in range(5):
        _add(block, words(f"{n} / {n + 1}", 40), random.Random(n))
    assert block.diff_score() is None


def _pages(
    *blocks_per_page: list[tuple[str, str]], comparison: str = "bits", min_share: float = 0.0
) -> LayoutBlocks:
    layout = LayoutBlocks(comparison=comparison, min_share=min_share)
    for blocks in blocks_per_page:
        layout.add([p for p, _ in blocks], [t for _, t in blocks])
    return layout


def _static(layout: LayoutBlocks, paths: list[str]) -> list[bool]:
    return [level == STATIC for level in layout.levels(paths)]


@pytest.mark.parametrize("comparison", sorted(COMPARISONS))
def test_breadcrumb_that_names_the_page_is_static_and_the_article_is_not(comparison: str) -> None:
    pages = [
        [
            ("body/div.crumbs", f"You are here: Home › News › World › {text.split()[1].title()}"),
            ("body/main/p", text),
        ]
        for text in STORIES
    ]
    layout = _pages(*pages, comparison=comparison)
    assert _static(layout, ["body/div.crumbs", "body/main/p"]) == [True, False]


@pytest.mark.parametrize("comparison", sorted(COMPARISONS))
def test_menu_with_a_current_item_and_a_dated_footer_are_static(comparison: str) -> None:
    sections = ["World", "Science", "Culture", "Sport", "Travel", "Money"]
    pages = []
    for n, text in enumerate(STORIES[:6]):
        menu = " ".join(f"{s} (current)" if i == n else s for i, s in enumerate(sections))
        pages.append(
            [
                ("body/nav/ul", f"Home {menu} About us"),
                ("body/main/p", text),
                ("body/footer/p", f"© The Daily Demo. Page updated 2026-0{n + 1}-1{n} 10:0{n}"),
            ]
        )
    layout = _pages(*pages, comparison=comparison)
    assert _static(layout, ["body/nav/ul", "body/main/p", "body/footer/p"]) == [True, False, True]


def test_evidence_thresholds() -> None:
    pages = [[("body/aside", f"Newsletter every Sunday {n}")] for n in range(4)]
    assert _static(_pages(*pages), ["body/aside"]) == [False], "4 pages: under min_pages"
    rare = [[("body/p", f"Page {n}")] for n in range(20)] + [
        [("body/p", f"Page {n}"), ("body/aside", f"Newsletter every Sunday {n}")] for n in range(6)
    ]
    layout = _pages(*rare)
    assert _static(layout, ["body/p", "body/aside"]) == [True, True], "6 pages of 26 are enough"
    assert _static(layout, ["body/new"]) == [False]
    shared = _pages(*rare, min_share=0.5)
    assert _static(shared, ["body/p", "body/aside"]) == [True, False], "aside: 6 of 26 pages only"


def test_identical_copies_are_left_to_exact_counting() -> None:
    layout = _pages(*[[("body/footer", "About Contact Privacy")] for _ in range(10)])
    assert layout.blocks[("body/footer", 0)].diff_score() == 0.0
    assert _static(layout, ["body/footer"]) == [False]


def test_blocks_are_bounded() -> None:
    layout = LayoutBlocks(max_blocks=3)
    layout.add([f"body/p{i}" for i in range(10)], ["text"] * 10)
    assert layout.tracked == len(layout.once) == 3
    layout.add([f"body/p{i}" for i in range(10)], ["text"] * 10)
    assert layout.tracked == len(layout.blocks) == 3, "seen twice: sampled, still 3"


def test_a_block_seen_once_is_its_text_until_a_second_page_has_it() -> None:
    layout = LayoutBlocks(words=2)
    text = "A first page's text, longer than two words may need " * 3
    layout.add(["body/p", "body/nav"], [text, "Home About"])
    assert layout.once == {("body/p", 0): text[:48], ("body/nav", 0): "Home About"}
    assert layout.blocks == {}
    layout.add(["body/nav"], ["Home About"])
    assert set(layout.once) == {("body/p", 0)} and set(layout.blocks) == {("body/nav", 0)}
    layout.add(["body/nav"], ["Home Contact"])
    block = layout.blocks[("body/nav", 0)]
    assert (block.pages, block.varies) == (3, True), "the first page's copy is a sample"


@pytest.mark.parametrize("comparison", sorted(COMPARISONS))
@pytest.mark.parametrize("seed", range(3))
def test_reservoir_replacements_keep_the_score_consistent(seed: int, comparison: str) -> None:
    rng = random.Random(seed)
    block = BlockSamples(3, COMPARISONS[comparison])
    held: dict[int, tuple[str, ...]] = {}
    for text in STORIES * 3:
        sample = words(text, 40)
        slot = block.offer(rng)
        if slot is not None:
            block.store(slot, sample)
            held[slot] = sample
        block.diff_score()  # cached, and dropped as samples are replaced
    fresh = BlockSamples(3, COMPARISONS[comparison])
    for slot in sorted(held):
        _add(fresh, held[slot], random.Random(0))
    assert block.diff_score() == pytest.approx(fresh.diff_score())


def test_the_reservoir_is_a_uniform_draw_of_the_pages() -> None:
    """Skipping ahead to the next replacement (Algorithm L) keeps every page equally likely
    to be among the samples: 4 of 40 pages, each page held in about a tenth of 3,000 runs."""
    held = [0] * 40
    page_of = {hash((f"page{n}",)): n for n in range(40)}
    for seed in range(3000):
        rng = random.Random(seed)
        block = BlockSamples(4)
        for page in range(40):
            slot = block.offer(rng)
            if slot is not None:
                block.store(slot, (f"page{page}",))
        for _, _, _, key in block.samples:
            held[page_of[key]] += 1
    assert sum(held) == 4 * 3000
    assert all(240 <= n <= 360 for n in held), held


def test_site_blocks_keep_evidence_per_layout_cluster() -> None:
    from scrapy_templates.templates.layout import SiteLayouts
    from scrapy_templates.templates.variability import SiteBlocks

    site = SiteBlocks(SiteLayouts(), LayoutBlocks)
    article = ["body/nav", "body/main/article", "body/main/aside"]
    listing = ["body/nav", "body/main/ul.results", "body/main/div.pager"]
    for n, text in enumerate(STORIES):
        site.observe(article, [f"Home News {n}", text, f"Related to story {n}"])
        site.observe(listing, [f"Home News {n}", f"Results {text}", f"Page {n} of 9"])
    a_id, a_static = site.observe(article, ["Home News 9", STORIES[0], "Related to story 9"])
    l_id, l_static = site.observe(listing, ["Home News 9", "Results none", "Page 9 of 9"])
    assert a_id != l_id and set(site.blocks) == {a_id, l_id}
    assert a_static == [STATIC, DYNAMIC, STATIC] and l_static == [STATIC, DYNAMIC, STATIC]
    assert site.recompute() == 2 and set(site.blocks) == {a_id, l_id}


@pytest.mark.parametrize(
    ("path", "hrefs", "main_path", "expected"),
    [
        ("body/footer/p", (), "body/main", True),  # outside the region
        ("body/main/div.crumbs", ("/", "/a"), "body/main", True),  # inside, all links
        ("body/main/h2", ("/pkg",), "body/main", False),  # inside, one reference
        ("body/main/h2", (), "body/main", False),  # inside, without links
        ("body/main/h2", ("#intro",), "body/main", False),  # inside, a permalink only
        ("body/main/code", ("https://docs.example.org/api",), "body/main", False),  # off-site
        ("body/main/code", ("mailto:a@site.test",), "body/main", False),
        ("body/main/nav", ("http://SITE.test/a", "//site.test/b"), "body/main", True),
        ("body/div.wrap", ("/",), "body/div.wrap/main", False),  # contains the region
        ("body/nav", ("/", "/a"), None, True),  # no region yet: links decide
        ("body/p", (), None, False),
    ],
)
def test_where_the_layout_model_may_flag(
    path: str, hrefs: tuple[str, ...], main_path: str | None, expected: bool
) -> None:
    navigation = is_navigation("text", hrefs, tuple("text" for _ in hrefs), "site.test")
    assert layout_may_flag(STATIC, path, navigation, main_path) is expected


def test_inside_the_region_only_navigation_may_be_flagged() -> None:
    crumbs = ("Home › News › Story", ("/", "/news"), ("Home", "News"))
    sentence = (
        "A complete list of releases in a single page and a chronology are both available.",
        ("/changes", "/chronology"),
        ("complete list of releases", "chronology"),
    )
    assert layout_may_flag(STATIC, "body/main/p", is_navigation(*crumbs, "site.test"), "body/main")
    sentence_is_navigation = is_navigation(*sentence, "site.test")
    assert not layout_may_flag(STATIC, "body/main/p", sentence_is_navigation, "body/main")


def test_shifting_blocks_may_be_flagged_when_they_are_navigation_only() -> None:
    crumbs = ("Home › News › Story", ("/", "/news"), ("Home", "News"))
    note = ("Updated daily by the desk", (), ())
    nav, plain = is_navigation(*crumbs, "site.test"), is_navigation(*note, "site.test")
    assert layout_may_flag(SHIFTING, "body/main/p", nav, "body/main")
    assert layout_may_flag(SHIFTING, "body/aside/p", nav, "body/main")
    assert not layout_may_flag(SHIFTING, "body/aside/p", plain, "body/main")
    assert not layout_may_flag(SHIFTING, "body", nav, "body/main")
    assert not layout_may_flag(DYNAMIC, "body/aside/p", nav, "body/main")


TITLES = [
    "Thread creation and joining",
    "Mutual exclusion with locks",
    "Condition variables and waiting",
    "Atomic operations on integers",
    "Thread-local storage keys",
    "Call once and initialisation",
]


def test_a_prev_next_bar_shifts_around_its_labels() -> None:
    pages = []
    for n, text in enumerate(STORIES[:6]):
        bar = f"Next: {TITLES[(n + 1) % 6]}, Previous: {TITLES[n - 1]}, Up: Guide [Contents][Index]"
        pages.append([("body/div.header/p", bar), ("body/main/p", text)])
    layout = _pages(*pages)
    assert layout.levels(["body/div.header/p", "body/main/p"]) == [SHIFTING, DYNAMIC]
    strict = LayoutBlocks(shift_diff=0.4)
    for blocks in pages:
        strict.add([p for p, _ in blocks], [t for _, t in blocks])
    assert strict.levels(["body/div.header/p"]) == [DYNAMIC]


def test_a_shifting_block_that_framed_most_pages_it_was_on_is_a_frame() -> None:
    pages = []
    for n, text in enumerate(STORIES[:6]):
        bar = f"Next: {TITLES[(n + 1) % 6]}, Previous: {TITLES[n - 1]}, Up: Guide [Contents][Index]"
        pages.append([("body/div.header/p", bar), ("body/main/p", text)])
    paths = ["body/div.header/p", "body/main/p"]
    framing = _pages(*pages)
    for _ in range(5):
        framing.frame(paths, framing.levels(paths), [True, True])  # content never counts
    assert framing.levels(paths) == [FRAME, DYNAMIC]
    seldom = _pages(*pages)
    for n in range(12):
        seldom.frame(paths, seldom.levels(paths), [n % 3 == 0, False])
    assert seldom.levels(paths) == [SHIFTING, DYNAMIC]


def test_a_shifting_block_whose_link_texts_stay_is_a_bar() -> None:
    # DocBook: "‹this page› Prev ‹chapter› Next", the titles plain text, the links labelled
    paths = ["body/div.navheader", "body/main/p"]
    steady, varying = LayoutBlocks(), LayoutBlocks()
    for n, text in enumerate(STORIES[:8]):
        texts = [f"{TITLES[n % 6]} Prev Concurrency Next", text]
        steady.add(paths, texts, [hash(("Prev", "Next")), 0])
        varying.add(paths, texts, [hash((TITLES[n % 6],)), 0])
    assert steady.levels(paths) == [BAR, DYNAMIC]
    assert varying.levels(paths) == [SHIFTING, DYNAMIC]


def test_a_bar_whose_titles_outweigh_its_labels_is_still_a_bar() -> None:
    # long page titles around "Prev" / "Next": the words shift more than shift_diff allows
    paths = ["body/div.navheader", "body/main/p"]
    steady, varying = LayoutBlocks(), LayoutBlocks()
    for n, text in enumerate(STORIES[:8]):
        texts = [f"{text[:60]} Prev {TITLES[n % 6]} Next", text]
        steady.add(paths, texts, [hash(("Prev", "Next")), 0])
        varying.add(paths, texts, [hash((text[:60],)), 0])
    score = steady.blocks[("body/div.navheader", 0)].diff_score()
    assert score is not None and score > steady.shift_diff
    assert steady.levels(paths) == [BAR, DYNAMIC]
    assert varying.levels(paths) == [DYNAMIC, DYNAMIC]


def test_a_link_label_leaves_out_links_into_the_page_itself() -> None:
    assert link_label(("#threads",), ("¶",), "h") == 0
    assert link_label((), (), "h") == 0
    bar = link_label(("/i.html", "#top", "/m.html"), ("Prev", "Top", "Next"), "h")
    assert bar == link_label(("/j.html", "/n.html"), ("Prev", "Next"), "h")
    assert bar != link_label(("/j.html",), ("Prev",), "h")


def test_a_link_label_is_the_words_of_links_through_the_site() -> None:
    """Every function of an Erlang reference page has an "edit" icon linking to GitHub: no
    label that would make its blocks a bar."""
    edit = "https://github.com/erlang/otp/edit/maint/lib/x.xml#L1"
    assert link_label((edit, "/icon.html"), ("Edit", ""), "h") == 0
    assert link_label(("http://h/a.html", "//h/b.html"), ("A", "B"), "h") == link_label(
        ("/c.html", "d.html"), ("A", "B"), "h"
    )


def test_paths_without_ids_are_cached_within_a_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    from scrapy_templates.templates import variability as module

    cache = RepeatCache(2_000, module._without_ids.make, len, len)
    monkeypatch.setattr(module, "_without_ids", cache)
    for page in range(200):  # a generated id on every page
        assert block_keys([f"body/div#node{page}/div.header/p"]) == [("body/div/div.header/p", 0)]
    assert 0 < cache.chars <= 2_000
    assert sum(len(k) + len(v) for k, v in cache.entries.items()) == cache.chars


def test_ids_are_left_out_of_block_keys() -> None:
    # texinfo names each node's div after the node: its bar is at one place in the layout
    assert block_keys(["body/div#Threads/div.header/p", "body/div#Mutexes/div.header/p"]) == [
        ("body/div/div.header/p", 0),
        ("body/div/div.header/p", 1),
    ]


@settings(max_examples=400, deadline=None)
@given(
    st.text(alphabet=st.sampled_from(list("ab ΟΔΣ İ x9,.-\n日本")), max_size=400),
    st.sampled_from([1, 3, 24]),
)
def test_words_are_the_first_words_of_the_whole_prefix(text: str, limit: int) -> None:
    # The short prefix tried first must give what the whole 24·limit prefix gives, a Greek
    # capital sigma cut at its end (final or not, by what follows) included.
    assert words(text, limit) == tuple(WORD.findall(text[: limit * 24].lower())[:limit])


def test_a_block_seen_on_one_page_is_never_read(monkeypatch: pytest.MonkeyPatch) -> None:
    # Content blocks are new on almost every page: their words and signatures are computed
    # only once the block is judged, which a block seen on fewer than min_pages never is.
    import scrapy_templates.templates.variability as variability

    read: list[str] = []
    real_words = variability.words

    def counting(text: str, limit: int) -> tuple[str, ...]:
        read.append(text)
        return real_words(text, limit)

    monkeypatch.setattr(variability, "words", counting)
    layout = LayoutBlocks(min_pages=3)
    for page in range(6):
        flags = layout.add(["body/nav", f"body/p{page}"], ["Home News Sport", f"story {page}"])
        assert flags == [False, False]
    assert not any(text.startswith("story") for text in read)
    # the navigation, on every page, was read once it had been seen on min_pages pages
    assert read.count("Home News Sport") >= 3


def test_a_link_label_is_the_hosts_own() -> None:
    links = (("http://h/a.html", "http://h/b.html"), ("A", "B"))
    assert link_label(*links, "h") != 0
    assert link_label(*links, "other") == 0
    assert link_label(*links, "h") != 0, "the other host's answer is not the first's"
