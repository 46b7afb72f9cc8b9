from __future__ import annotations

from scrapy_templates.templates.offsets import SIGNATURE_BITS, offset_signature, shared_bits
from scrapy_templates.templates.variability import words
from tests.texts import STORIES


def test_signature_is_stable_and_bounded() -> None:
    text = words(" ".join(STORIES), 60)
    a = offset_signature(text)
    assert a == offset_signature(text)
    assert 0 < a < 1 << SIGNATURE_BITS
    pairs = {(w, n) for n, w in enumerate(text)}  # ≥ the distinct (word, offset) pairs
    assert 40 <= a.bit_count() <= len(pairs)  # about one bit per pair, a few collisions


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
