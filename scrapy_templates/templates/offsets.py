"""Word-offset bit signatures: fast approximate comparison of a block's text (``002_…``).

Chen, Ye and Li compare the blocks of one layout style by the offset sequences of their words,
hashed into small bit arrays in the manner of a Bloom filter, so two blocks are compared with
a bitwise AND instead of word by word. Here a block's words are turned into one signature:
each word sets the bit of (word, difference offset), where the difference offset is the
distance to the word's previous occurrence in the block (0 for its first), so an inserted
word moves only the offsets of later repeats, not every word after it. Words without letters
set no bit (digits weigh nothing, as in Webstemmer's DiffScore). Two signatures are compared by
counting the bits they share: the Bloom-filter counterpart of the common subsequence.
"""

from __future__ import annotations

from collections.abc import Sequence
from zlib import crc32

SIGNATURE_BITS = 256


_GOLDEN = 0x9E3779B1


def offset_signature(words: Sequence[str], bits: int = SIGNATURE_BITS) -> int:
    """The bit array (as an int of ``bits`` bits) of a block's words and difference offsets.

    Words are hashed with CRC-32, stable across processes and runs (unlike Python's
    ``hash``); the offset moves the word's bit by a multiple of the golden-ratio constant."""
    last: dict[str, int] = {}
    signature = 0
    for i, word in enumerate(words):
        if not word.isalpha() and not any(c.isalpha() for c in word):
            continue
        previous = last.get(word)
        last[word] = i
        offset = 0 if previous is None else i - previous
        signature |= 1 << ((crc32(word.encode()) + offset * _GOLDEN) % bits)
    return signature


def shared_bits(a: int, b: int) -> int:
    """Bits two signatures have in common."""
    return (a & b).bit_count()
