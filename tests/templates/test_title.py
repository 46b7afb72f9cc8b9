"""Title detection: anchor texts that name the page, then <h1>, then <title>."""

from __future__ import annotations

import random

import pytest

from scrapy_templates.templates.title import AnchorIndex, choose_title, similarity

BLOCKS = [
    "World",
    "Export credit network fails for an hour",
    "Credit networks failed for an hour across the northern region.",
]


def test_similarity() -> None:
    assert similarity("Export credit network", "export CREDIT network!") == 1.0
    assert similarity("Export credit network", "Library opens") == 0.0
    assert 0.5 < similarity("Export credit network fails", "Export credit network") < 1.0
    assert similarity("", "") == 0.0


def test_the_block_an_anchor_names_is_the_title() -> None:
    title = choose_title("Export credit network fails", BLOCKS, "Today's story", "Demo")
    assert title == ("Export credit network fails for an hour", "anchor")


def test_the_title_is_the_first_most_similar_block_of_all() -> None:
    # choose_title skips blocks that cannot win; the answer must be the one a full comparison
    # of every block gives.
    rng = random.Random(5)
    vocabulary = ["credit", "network", "fails", "hour", "an", "for", "the", "export", "x", "7"]
    for _ in range(300):
        anchor = " ".join(rng.choices(vocabulary, k=rng.randint(1, 8)))
        blocks = [" ".join(rng.choices(vocabulary, k=rng.randint(0, 12))) for _ in range(8)]
        # the anchor's words exactly and with one more, somewhere among the others
        for extra in (anchor.upper(), anchor + " network"):
            if rng.random() < 0.5:
                blocks.insert(rng.randrange(len(blocks) + 1), extra)
        best = max(blocks, key=lambda b: similarity(anchor, b))  # the first of equals
        expected = (best, "anchor") if similarity(anchor, best) >= 0.6 else ("h", "h1")
        assert choose_title(anchor, blocks, "h", "t") == expected


@pytest.mark.parametrize(
    ("anchor", "h1", "html_title", "expected"),
    [
        (None, "Today's story", "Demo", ("Today's story", "h1")),
        ("Nothing alike here", "Today's story", "Demo", ("Today's story", "h1")),
        (None, "", "Demo", ("Demo", "title")),
        (None, "", "", ("", "none")),
    ],
)
def test_fallbacks(anchor: str | None, h1: str, html_title: str, expected: tuple[str, str]) -> None:
    assert choose_title(anchor, BLOCKS, h1, html_title) == expected


def test_anchor_index_keeps_the_first_text_and_is_bounded() -> None:
    index = AnchorIndex(limit=2)
    index.add("a", "First anchor")
    index.add("a", "Second anchor")
    index.add("b", "")
    assert index.get("a") == "First anchor" and index.get("b") is None
    index.add("b", "B page")
    index.add("c", "C page")
    assert index.get("a") is None and index.get("c") == "C page"
