"""The numpy path of the fingerprints: the simhash bit for bit as the ``simhash`` package."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from simhash import Simhash

from scrapy_templates.fingerprint_numpy import _simhash_slow, simhash


@pytest.mark.parametrize(
    "text",
    [
        "",
        "a",
        "abc",
        "abcd",
        "Hello, World! 42",
        "日本語のテキスト 中文",
        "𝐀𝐁𝐂𝐃𝐄 mixed astral",
        "x" * 40,
    ],
)
def test_simhash_equals_simhash_package(text: str) -> None:
    assert simhash(text) == Simhash(text).value


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=200))
def test_simhash_equals_package_on_any_text(text: str) -> None:
    try:
        expected = Simhash(text).value
    except OverflowError:  # the package overflows when a window repeats > 50 times
        return
    assert simhash(text) == expected


def test_simhash_of_long_text_matches_exact_reference() -> None:
    # The package raises OverflowError once a window repeats more than 50 times; the numpy
    # path must still agree with the plain per-window reference that keeps exact weights.
    text = " ".join(f"station {i} nation relation" for i in range(400))
    with pytest.raises(OverflowError):
        Simhash(text)
    letters = "".join(ch for ch in text.lower() if ch.isalnum())
    assert simhash(text) == _simhash_slow(letters)
