from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_templates.templates.offsets import (
    SIGNATURE_BITS,
    offset_signature,
    python_offset_signature,
    shared_weight,
    signature_weight,
)
from scrapy_templates.templates.variability import words
from tests.texts import STORIES


def test_signature_is_stable_and_bounded() -> None:
    text = words(" ".join(STORIES), 60)
    a = offset_signature(text)
    assert a == offset_signature(text)
    assert 0 < a < 1 << SIGNATURE_BITS
    most = sum((len(w) + 2) // 3 for w in text)  # bits asked for, repeats and collisions aside
    assert 0.6 * most <= a.bit_count() <= most


def test_a_word_weighs_one_bit_per_three_letters() -> None:
    assert offset_signature(("of",)).bit_count() == 1
    assert offset_signature(("commons",)).bit_count() == 3
    assert offset_signature(("contextedexception",)).bit_count() == 6
    assert offset_signature(("lang3",)).bit_count() == 2  # digits are not letters


def test_words_without_letters_set_no_bit() -> None:
    assert offset_signature(("2024", "05", "31")) == 0
    assert offset_signature(("updated", "2024")) == offset_signature(("updated", "2026"))


def test_shared_weight_follows_shared_words() -> None:
    crumb = offset_signature(("home", "news", "world", "bridge"))
    other = offset_signature(("home", "news", "world", "telescope"))
    article = offset_signature(words(STORIES[1], 24))
    assert shared_weight(crumb, crumb) == signature_weight(crumb)
    assert shared_weight(crumb, other) >= 3
    assert shared_weight(crumb, article) <= 1


def _diff(a: int, b: int) -> float:
    total = signature_weight(a) + signature_weight(b)
    return (total - 2 * shared_weight(a, b)) / total


def _raw_diff(a: int, b: int) -> float:
    return 1 - 2 * (a & b).bit_count() / (a.bit_count() + b.bit_count())


def _pairs(size: int) -> list[tuple[int, int, int]]:
    """Signatures of random blocks: one, an unrelated one, and one sharing its first half."""
    rng = random.Random(7)
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocabulary = ["".join(rng.choices(letters, k=rng.randint(2, 10))) for _ in range(5000)]
    out = []
    for _ in range(200):
        a = tuple(rng.choices(vocabulary, k=size))
        b = tuple(rng.choices(vocabulary, k=size))
        mixed = a[: size // 2] + b[size // 2 :]
        out.append((offset_signature(a), offset_signature(b), offset_signature(mixed)))
    return out


@pytest.mark.parametrize("size", [6, 24])
def test_chance_collisions_are_undone(size: int) -> None:
    """Read as estimates, unrelated blocks differ almost wholly and blocks sharing half their
    words differ by half, however many bits they fill."""
    pairs = _pairs(size)
    unrelated = [_diff(a, b) for a, b, _ in pairs]
    half = [_diff(a, mixed) for a, _, mixed in pairs]
    assert sum(unrelated) / len(unrelated) > 0.93
    assert 0.42 < sum(half) / len(half) < 0.58


def test_plain_bit_counts_would_make_unrelated_blocks_look_alike() -> None:
    raw = [_raw_diff(a, b) for a, b, _ in _pairs(24)]
    assert sum(raw) / len(raw) < 0.85


_WORDS = st.lists(
    st.one_of(
        st.sampled_from(["the", "of", "sqlite", "ünïcode", "日本語", "x9", "42", "_", "𝔘𝔫"]),
        st.text(min_size=1, max_size=6),
    ),
    max_size=30,
)


@settings(max_examples=300, deadline=None)
@given(_WORDS, st.sampled_from([SIGNATURE_BITS, 64, 100, 1000]))
def test_compiled_signature_equals_the_python_one(block: list[str], bits: int) -> None:
    assert offset_signature(block, bits) == python_offset_signature(block, bits)
