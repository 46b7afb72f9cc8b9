"""Word-offset bit signatures: fast approximate comparison of a block's text (``002_…``).

Chen, Ye and Li compare the blocks of one layout style by the offset sequences of their words,
hashed into small bit arrays in the manner of a Bloom filter, so two blocks are compared with
a bitwise AND instead of word by word. Here a block's words are turned into one signature:
each word sets bits for (word, difference offset), where the difference offset is the
distance to the word's previous occurrence in the block (0 for its first), so an inserted
word moves only the offsets of later repeats, not every word after it. As in Webstemmer's
DiffScore a word weighs by its letters: it sets one bit per three letters (at least one), so
the name of a class counts for more than "of" or "org", and a word without letters sets none
(dates and counters weigh nothing). Two signatures are compared by the bits they share: the
Bloom-filter counterpart of the letter-weighted common subsequence.

Bits collide, and two unrelated blocks of two dozen words would share a fifth of their bits
by chance, making varying text look static. So sizes are read as Bloom-filter estimates of how
many bits were set, ``−m·ln(1 − X/m)`` for ``X`` of ``m`` bits set, and the shared part as
the estimated intersection ``n(A) + n(B) − n(A ∪ B)`` (Swamidass and Baldi's estimator).
"""

from __future__ import annotations

from collections.abc import Sequence
from math import log
from zlib import crc32

from scrapy_templates.compiled import compiled
from scrapy_templates.templates.text import letters

SIGNATURE_BITS = 256
_compiled = compiled("templates._offsets")


_OFFSET_STEP = 0x9E3779B1
_BIT_STEP = 0x85EBCA6B
LETTERS_PER_BIT = 3


def offset_signature(words: Sequence[str], bits: int = SIGNATURE_BITS) -> int:
    """The bit array (as an int of ``bits`` bits) of a block's words and difference offsets.

    Words are hashed with CRC-32, stable across processes and runs (unlike Python's
    ``hash``); the offset and the bit's rank move the word's bit by multiples of two odd
    constants. The compiled module computes the same value when it was built."""
    if _compiled is not None:
        return int(
            _compiled.offset_signature(words, bits, _OFFSET_STEP, _BIT_STEP, LETTERS_PER_BIT)
        )
    return python_offset_signature(words, bits)


def python_offset_signature(words: Sequence[str], bits: int = SIGNATURE_BITS) -> int:
    """:func:`offset_signature` in Python."""
    last: dict[str, int] = {}
    signature = 0
    for i, word in enumerate(words):
        weight = letters(word)
        if not weight:
            continue
        previous = last.get(word)
        last[word] = i
        offset = 0 if previous is None else i - previous
        base = crc32(word.encode()) + offset * _OFFSET_STEP
        for rank in range((weight + LETTERS_PER_BIT - 1) // LETTERS_PER_BIT):
            signature |= 1 << ((base + rank * _BIT_STEP) % bits)
    return signature


def _estimates(bits: int) -> tuple[float, ...]:
    """Bits set before collisions, for each count of bits seen set (a full array reads as
    ``m·ln m``, the count at which one is expected full)."""
    return (*(-bits * log(1 - seen / bits) for seen in range(bits)), bits * log(bits))


_ESTIMATE = _estimates(SIGNATURE_BITS)


def signature_weight(signature: int) -> float:
    """Estimated number of bits set into a signature, collisions undone."""
    return _ESTIMATE[signature.bit_count()]


def shared_weight(a: int, b: int) -> float:
    """Estimated number of bits two signatures set in common, chance collisions undone."""
    if a == b:
        return _ESTIMATE[a.bit_count()]
    common = _ESTIMATE[a.bit_count()] + _ESTIMATE[b.bit_count()] - _ESTIMATE[(a | b).bit_count()]
    return max(0.0, common)
