from __future__ import annotations

from scrapy_templates.templates.offsets import SIGNATURE_BITS, offset_signature, shared_bits
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


def test_shared_bits_follow_shared_words() -> None:
    crumb = offset_signature(("home", "news", "world", "bridge"))
    other = offset_signature(("home", "news", "world", "telescope"))
    article = offset_signature(words(STORIES[1], 24))
    assert shared_bits(crumb, crumb) == crumb.bit_count()
    assert shared_bits(crumb, other) >= 3
    assert shared_bits(crumb, article) <= 1


def test_difference_offsets_ignore_an_inserted_word_but_see_repeats_move() -> None:
    base = offset_signature(("see", "the", "list", "the", "end"))
    inserted = offset_signature(("so", "see", "the", "list", "the", "end"))
    moved = offset_signature(("see", "the", "long", "list", "the", "end"))
    assert shared_bits(base, inserted) == base.bit_count()
    assert shared_bits(base, moved) == base.bit_count() - 1  # the second "the" is 3 on, not 2
