"""Title detection: anchor texts that name the page, then <h1>, then <title>."""

from __future__ import annotations

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
