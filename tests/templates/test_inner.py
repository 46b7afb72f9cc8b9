"""Template texts found inside a pagelet that a link-poor page left unsplit."""

from __future__ import annotations

import re

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from scrapy_templates.templates.inner import (
    MIN_COPIES,
    VARIANTS,
    InnerTemplates,
    _cut_words,
    _masked,
)
from scrapy_templates.templates.variability import path_without_ids

COLUMN = "body/div#content"
FOOTER = f"{COLUMN}/div.footer"
NOTICE = "Copyright © {} Example AB. All Rights Reserved."


def _learned(copies: int = MIN_COPIES) -> InnerTemplates:
    inner = InnerTemplates()
    for n in range(copies):
        inner.learn(
            [f"{COLUMN}/p", FOOTER, "body/nav"],
            ["Text of a long page.", NOTICE.format(f"{1990 + n}-2026"), "Home About Contact us"],
            [False, True, True],
        )
    return inner


def test_a_footer_swallowed_by_the_content_column_is_cut_whatever_its_years() -> None:
    inner = _learned()
    short = f"Kernel User's Guide Version 8.5 {NOTICE.format('1997-2026')}"
    assert inner.cut(COLUMN, short) == "Kernel User's Guide Version 8.5"
    inside = f"Intro. {NOTICE.format('2001-2026')} More text after it."
    assert inner.cut(COLUMN, inside) == "Intro. More text after it."


def test_the_text_is_cut_only_below_the_path_it_was_template_at() -> None:
    inner = _learned()
    text = f"A quoted notice: {NOTICE.format('1997-2026')}"
    assert inner.cut("body/aside", text) == text
    assert inner.cut("body", text) == "A quoted notice:"  # the column lies below the body


def test_a_text_flagged_on_too_few_pages_is_left() -> None:
    inner = _learned(copies=MIN_COPIES - 1)
    text = f"Guide {NOTICE.format('1997-2026')}"
    assert inner.cut(COLUMN, text) == text


def test_only_whole_words_are_cut() -> None:
    inner = _learned()
    glued = f"Guide x{NOTICE.format('1997-2026')}"
    assert inner.cut(COLUMN, glued) == glued


def test_short_texts_and_content_are_not_learned() -> None:
    inner = InnerTemplates()
    for _ in range(5):
        inner.learn(
            [f"{COLUMN}/h2", f"{COLUMN}/p"],
            ["Exports", "A paragraph of this page's own content text."],
            [True, False],
        )
    assert inner.texts == {}
    assert inner.cut(COLUMN, "Exports A paragraph of this page's own content text.").startswith(
        "Exports"
    )


def test_the_texts_kept_are_bounded() -> None:
    inner = InnerTemplates(max_chars=1_000)
    for n in range(200):
        paths = [f"{COLUMN}/div.box{n}"]
        inner.learn(paths, [f"A standing box number {n} of the site"], [True])
        inner.learn(paths, [f"A standing box number {n} of the site, now much longer " * 5], [True])
    assert inner.chars <= 1_000
    assert sum(len(t) for w in inner.texts.values() for t in w) == inner.chars


def test_paths_leave_element_ids_out() -> None:
    # texinfo names each node's element after the node: the footer's path is one path
    inner = InnerTemplates()
    for node in ("Threads", "Mutexes", "Atomics"):
        inner.learn([f"body/div#{node}/div.footer"], [NOTICE.format("1997-2026")], [True])
    assert inner.cut("body/div#Conditions", f"Conditions. {NOTICE.format('2003-2026')}") == (
        "Conditions."
    )


def test_a_full_budget_forgets_paths_seen_once_and_keeps_the_habits() -> None:
    inner = InnerTemplates(max_chars=200)
    for _ in range(MIN_COPIES):
        inner.learn([FOOTER], [NOTICE.format("1990-2026")], [True])
    for n in range(40):  # one-off template blocks, each on one page
        inner.learn([f"{COLUMN}/div.note{n}"], [f"A one-off standing note number {n}."], [True])
    assert inner.chars <= 200
    assert path_without_ids(FOOTER) in inner.texts, "a habit is never what makes room"
    assert path_without_ids(f"{COLUMN}/div.note39") in inner.texts, "the newest found room"
    assert inner.cut(COLUMN, f"Guide {NOTICE.format('1997-2026')}") == "Guide"


def test_alternating_wordings_each_keep_their_count() -> None:
    """Each application of a manual words its footer its own way: pages alternate between
    the wordings, and each becomes a habit of its own."""
    inner = InnerTemplates()
    other = "Copyright © {} Example Inc. All rights kept."
    for n in range(MIN_COPIES):
        inner.learn([FOOTER], [NOTICE.format(f"{1990 + n}-2026")], [True])
        inner.learn([FOOTER], [other.format(f"{2000 + n}-2026")], [True])
    assert inner.cut(COLUMN, f"Guide {NOTICE.format('1997-2026')}") == "Guide"
    assert inner.cut(COLUMN, f"Guide {other.format('1997-2026')}") == "Guide"


def test_wordings_apart_in_punctuation_alone_are_one_text() -> None:
    """ "Example AB. All Rights Reserved." and "Example AB, All Rights Reserved": their
    copies count together, and either is cut, its clinging punctuation with it."""
    inner = InnerTemplates()
    comma = "Copyright © {} Example AB, All Rights Reserved"
    inner.learn([FOOTER], [NOTICE.format("1990-2026")], [True])
    inner.learn([FOOTER], [comma.format("1991-2026")], [True])
    inner.learn([FOOTER], [NOTICE.format("1992-2026")], [True])
    assert len(inner.texts[path_without_ids(FOOTER)]) == 1
    assert inner.cut(COLUMN, f"Guide {comma.format('1997-2026')}") == "Guide"
    assert inner.cut(COLUMN, f"Guide {NOTICE.format('1997-2026')} More.") == "Guide More."
    assert inner.cut(COLUMN, f"Guide {NOTICE.format('1997-2026')}x") != "Guide"


def test_a_new_wording_takes_the_place_of_the_rarest() -> None:
    inner = _learned()
    for name in ("one", "two", "three", "four", "five")[:VARIANTS]:
        inner.learn([FOOTER], [f"A passing notice called {name} in the footer."], [True])
    kept = inner.texts[path_without_ids(FOOTER)]
    assert len(kept) == VARIANTS
    assert "Copyright 0000 0000 Example AB All Rights Reserved" in kept, "the habit stays"
    assert inner.chars == sum(map(len, kept))


def test_a_passing_wording_never_takes_a_habits_place() -> None:
    inner = InnerTemplates()
    names = ("one", "two", "three", "four")[:VARIANTS]
    for _ in range(MIN_COPIES):
        inner.learn(
            [FOOTER] * VARIANTS,
            [f"A standing notice called {n}." for n in names],
            [True] * VARIANTS,
        )
    inner.learn([FOOTER], ["A passing notice that came once."], [True])
    kept = inner.texts[path_without_ids(FOOTER)]
    assert "A passing notice that came once." not in kept and len(kept) == VARIANTS


def test_a_new_wording_that_does_not_fit_leaves_the_habits() -> None:
    inner = _learned()
    inner.max_chars = inner.chars  # full, and every path kept is a habit
    inner.learn([FOOTER], [NOTICE.format("1997-2026") + " Now with much more text."], [True])
    assert len(inner.texts[path_without_ids(FOOTER)]) == 1
    assert inner.cut(COLUMN, f"Guide {NOTICE.format('1997-2026')}") == "Guide"


def test_every_whole_word_copy_is_cut_longest_template_first() -> None:
    inner = InnerTemplates()
    short, long = "Back to the top of this page", "Back to the top of this page and the index"
    for _ in range(MIN_COPIES):
        inner.learn([f"{COLUMN}/p.a", f"{COLUMN}/p.b"], [short, long], [True, True])
    text = f"One. {long} Two. x{short} Three. {short}"
    assert inner.cut(COLUMN, text) == f"One. Two. x{short} Three."


def test_a_mark_standing_apart_at_an_edge_goes_with_the_text() -> None:
    inner = InnerTemplates()
    for n in range(MIN_COPIES):
        inner.learn([FOOTER], [f"© {1990 + n}-2026 Example AB. All Rights Reserved. |"], [True])
    assert inner.cut(COLUMN, "Guide 2.1 © 1997-2026 Example AB. All Rights Reserved. |") == (
        "Guide 2.1"
    )


def test_texts_that_are_mostly_punctuation_are_not_learned() -> None:
    inner = InnerTemplates()
    for _ in range(MIN_COPIES + 1):
        inner.learn([FOOTER, f"{COLUMN}/p"], ["- " * 20, "» » » » Home » » » » » »"], [True, True])
    assert inner.texts == {}
    assert inner.cut(COLUMN, "Home - - x » y") == "Home - - x » y"


def _cut_by_expression(text: str, template: str) -> str:
    """The cut's definition as a regular expression (tried from every word, so slow on
    long texts of repeated words): the oracle the linear cut is held to."""
    body = r"\W+".join(re.escape(word).replace("0", r"\d") for word in template.split())
    pattern = re.compile(rf"(?<!\S)(?:[^\w\s]+\s+)?[^\w\s]*{body}[^\w\s]*(?:\s+[^\w\s]+)?(?!\S)")
    if pattern.search(text) is None:
        return text
    return " ".join(part.strip() for part in pattern.split(text) if part.strip())


_PIECES = ["a", "b", "ab", "1", "٣", "_", " ", "  ", "\n", "-", ".", "|", "©", "x1"]


@settings(max_examples=3000, deadline=None)
@given(
    text=st.lists(st.sampled_from(_PIECES), max_size=40).map("".join),
    template=st.lists(st.sampled_from(_PIECES), min_size=1, max_size=12).map("".join),
)
def test_the_cut_takes_out_what_the_expression_matches(text: str, template: str) -> None:
    words = _masked(template)
    assume(words)
    assert _cut_words(text, _masked(text), words) == _cut_by_expression(text, words)


def test_a_long_column_of_the_template_words_is_cut_in_one_pass() -> None:
    # The expression, tried from every word, went 4,000 words deep from each of these
    # 40,000 (seconds); the cut's passes are linear, so this runs in milliseconds.
    template = _masked("a " * 4000 + "b")
    text = "a " * 40_000
    assert _cut_words(text, _masked(text), template) is text
    assert _cut_words(text + template, _masked(text + template), template) == text.strip()
