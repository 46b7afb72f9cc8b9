"""Token normalisation and fingerprints of pages and pagelets.

Pagelet fingerprints stand in for the shingles of ``000_…`` §3.2: two pagelets share a
fingerprint when their visible text has the same letters and digits in the same order. Case,
white space and punctuation are ignored. Digits are kept on purpose: versions, prices, dates and
scores are what tells one release note, product or match report from the next, and a pagelet
that differs between pages only by its numbers is more often content than template.

The page simhash is bit-for-bit the value of ``simhash.Simhash(text).value`` (64 bits, md5 of
lowercased 4-character windows over the word characters), so it stays comparable with anything
computed by that package; it is computed here with a cache of window hashes and one numpy
reduction, which is several times faster on real pages.
"""

from __future__ import annotations

import hashlib
import re
import threading
from dataclasses import dataclass

import numpy as np

from scrapy_templates.compiled import compiled

_ALPHA = re.compile(r"[^\W_]+")
# The simhash package's notion of a letter: word characters plus CJK ideographs.
_SIMHASH_LETTERS = re.compile(r"[\w\u4e00-\u9fcc]+")
_WINDOW = 4
_HASH_CACHE_MAX = 1 << 21


def _all_code_points() -> str:
    """Every code point in order, as one string; surrogates (not encodable) become spaces."""
    points = np.arange(0x110000, dtype="<u4")
    points[0xD800:0xE000] = ord(" ")
    return points.tobytes().decode("utf-32-le")


def _table(pattern: re.Pattern[str], chars: str) -> np.ndarray:
    """Boolean table over ``chars``' code points: does ``pattern`` match this character?"""
    table = np.zeros(len(chars), dtype=bool)
    for match in pattern.finditer(chars):
        table[match.start() : match.end()] = True
    return table


_CODE_POINTS = _all_code_points()
# The simhash package's letters, over the Basic Multilingual Plane and over all code points.
_IS_LETTER = _table(_SIMHASH_LETTERS, _CODE_POINTS[:0x10000])
_IS_SIMHASH_LETTER = np.zeros(0x110000, dtype=bool)
_IS_SIMHASH_LETTER[: len(_IS_LETTER)] = _IS_LETTER
# What counts for pagelet fingerprints (word characters other than ``_``), split into digits
# (``str.isdigit``) and the rest.
_IS_ALPHA = _table(_ALPHA, _CODE_POINTS)
_IS_DIGIT = np.zeros(0x110000, dtype=bool)
_IS_DIGIT[[i for i in np.flatnonzero(_IS_ALPHA).tolist() if _CODE_POINTS[i].isdigit()]] = True
_IS_LETTER_ONLY = _IS_ALPHA & ~_IS_DIGIT
del _CODE_POINTS
_compiled = compiled("_fingerprint")
_compiled_lock = threading.Lock()
# The tables as bytes, for the compiled path.
_ALPHA_BYTES = _IS_ALPHA.view(np.uint8)
_DIGIT_BYTES = _IS_DIGIT.view(np.uint8)
_SIMHASH_LETTER_BYTES = _IS_SIMHASH_LETTER.view(np.uint8)


def normalise(text: str) -> str:
    """The characters of ``text`` that a pagelet fingerprint sees: letters and digits,
    lowercased, without punctuation or white space."""
    return "".join(_ALPHA.findall(text.lower()))


@dataclass(frozen=True, slots=True)
class TextFingerprints:
    """Fingerprints of a page's pagelet texts, computed in one pass (see
    :func:`text_fingerprints`)."""

    exact: list[int]
    patterns: list[int]
    simhash: int


def text_fingerprints(texts: list[str]) -> TextFingerprints:
    """Exact and number-blind fingerprints of several texts, and the simhash of all of them.

    The exact fingerprint is blake2b of :func:`normalise` ``(text)``, 0 when a text has no
    letter or digit. The number-blind one hashes the letters only, and is given only to texts
    that contain digits (0 otherwise): it makes "Last updated 2024-05-31 10:02" and "Last
    updated 2024-06-02 09:12" one pattern. The simhash is :func:`simhash` of the texts joined
    (separators are not letters, so how they are joined does not matter). All of it comes from
    one pass over the lowercased code points, which is why this takes the whole list; the
    compiled module makes that pass when it was built (same values).
    """
    lowered = "".join(texts).lower()
    lengths = [len(t) for t in texts]
    if len(lowered) != sum(lengths):  # lowercasing lengthened a character ("İ")
        lengths = [len(t.lower()) for t in texts]
    if _compiled is None:
        return numpy_fingerprints(lowered, lengths)
    with _compiled_lock:  # its tables and buffers are shared by the process's threads
        exact, patterns, value = _compiled.fingerprints(
            lowered, lengths, _ALPHA_BYTES, _DIGIT_BYTES, _SIMHASH_LETTER_BYTES, _md5_tail
        )
    return TextFingerprints(exact, patterns, simhash(lowered) if value is None else value)


def numpy_fingerprints(lowered: str, lengths: list[int]) -> TextFingerprints:
    """:func:`text_fingerprints` of the texts whose lowercased concatenation is ``lowered``
    (``lengths`` code points each), with numpy: the path without the compiled module."""
    units = np.frombuffer(lowered.encode("utf-32-le"), dtype="<u4")
    ends = np.cumsum(np.array(lengths, dtype=np.int64))
    starts = ends - np.array(lengths, dtype=np.int64)
    exact = _hash_slices(units, _IS_ALPHA[units], starts, ends, b"exact", None)
    digits_before = np.concatenate(([0], np.cumsum(_IS_DIGIT[units])))
    with_digits = (digits_before[ends] > digits_before[starts]).tolist()
    patterns = _hash_slices(units, _IS_LETTER_ONLY[units], starts, ends, b"numblind", with_digits)
    if units.size and int(units.max()) < 0x10000:
        value = _simhash_units(units[_IS_SIMHASH_LETTER[units]])
    else:
        value = simhash(lowered)
    return TextFingerprints(exact, patterns, value)


def _hash_slices(
    units: np.ndarray,
    keep: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    person: bytes,
    wanted: list[bool] | None,
) -> list[int]:
    """blake2b of the kept code points of each ``[start, end)`` slice (0 for an empty one or
    one not ``wanted``). Only the slice boundaries leave numpy."""
    kept_before = np.concatenate(([0], np.cumsum(keep)))
    firsts = (4 * kept_before[starts]).tolist()
    lasts = (4 * kept_before[ends]).tolist()
    data = units[keep].tobytes()
    blake2b = hashlib.blake2b
    out = []
    for i, (a, b) in enumerate(zip(firsts, lasts, strict=True)):
        if a == b or (wanted is not None and not wanted[i]):
            out.append(0)
        else:
            digest = blake2b(data[a:b], digest_size=8, person=person).digest()
            out.append(int.from_bytes(digest, "big") or 1)
    return out


def _md5_tail(window: str) -> int:
    return int.from_bytes(hashlib.md5(window.encode("utf-8")).digest()[-8:], "big")


class _WindowHashCache:
    """md5-derived hashes of the 4-letter windows seen so far, as two sorted numpy arrays keyed
    by the window's four UTF-16 code units, so a page's windows are looked up in one
    ``searchsorted`` and only unseen windows are hashed in Python."""

    def __init__(self) -> None:
        self.keys = np.zeros(0, dtype=np.uint64)
        self.values = np.zeros(0, dtype=np.uint64)

    def lookup(self, unique_keys: np.ndarray) -> np.ndarray:
        pos = np.searchsorted(self.keys, unique_keys)
        hit = pos < len(self.keys)
        hit[hit] = self.keys[pos[hit]] == unique_keys[hit]
        if not hit.all():
            self._add(unique_keys[~hit])
            pos = np.searchsorted(self.keys, unique_keys)
        return self.values[pos]

    def _add(self, new_keys: np.ndarray) -> None:
        new_values = np.array(
            [_md5_tail(k.to_bytes(8, "big").decode("utf-16-be")) for k in new_keys.tolist()],
            dtype=np.uint64,
        )
        if len(self.keys) + len(new_keys) > _HASH_CACHE_MAX:
            self.keys, self.values = new_keys, new_values
        else:
            self.keys = np.concatenate([self.keys, new_keys])
            self.values = np.concatenate([self.values, new_values])
        order = np.argsort(self.keys, kind="stable")
        self.keys, self.values = self.keys[order], self.values[order]


_window_hashes = _WindowHashCache().lookup


def _combine(hashes: np.ndarray, weights: np.ndarray, total: int) -> int:
    """Weighted bit majority of 64-bit hashes, packed most significant bit first.

    The weighted column sums are an ``einsum`` over 32-bit integers (a page has far fewer
    than 2³¹ windows): a float matrix product would go to BLAS, whose threads spin on
    another core after every call and cost several times the work itself."""
    bits = np.unpackbits(hashes.astype(">u8").view(np.uint8)).reshape(-1, 64)
    sums = np.einsum("i,ij->j", weights.astype(np.int32), bits.astype(np.int32))
    packed = np.packbits(sums > total / 2)
    return int.from_bytes(packed.tobytes(), "big")


def _simhash_slow(letters: str) -> int:
    n = max(len(letters) - _WINDOW + 1, 1)
    counts: dict[str, int] = {}
    for i in range(n):
        window = letters[i : i + _WINDOW]
        counts[window] = counts.get(window, 0) + 1
    hashes = np.array([_md5_tail(w) for w in counts], dtype=np.uint64)
    weights = np.fromiter(counts.values(), dtype=np.int64, count=len(counts))
    return _combine(hashes, weights, n)


def simhash(text: str) -> int:
    """64-bit simhash of ``text``: ``simhash.Simhash(text).value`` where that package can compute
    it (it overflows once a window occurs more than 50 times; here weights are exact).

    Letters are filtered and 4-letter windows counted with numpy; only windows never seen before
    are hashed with md5.
    """
    lowered = text.lower()
    units = np.frombuffer(lowered.encode("utf-16-le"), dtype="<u2")
    if len(units) != len(lowered):  # characters outside the BMP: take the exact slow path
        return _simhash_slow("".join(_SIMHASH_LETTERS.findall(lowered)))
    return _simhash_units(units[_IS_LETTER[units]])


def _simhash_units(letters_bmp: np.ndarray) -> int:
    """Simhash of a sequence of BMP code points that are all simhash letters."""
    letters = letters_bmp.astype(np.uint64)
    if len(letters) < _WINDOW + 1:
        return _simhash_slow(letters.astype("<u2").tobytes().decode("utf-16-le"))
    keys = (
        (letters[:-3] << np.uint64(48))
        | (letters[1:-2] << np.uint64(32))
        | (letters[2:-1] << np.uint64(16))
        | letters[3:]
    )
    unique, counts = np.unique(keys, return_counts=True)
    return _combine(_window_hashes(unique), counts, len(keys))


def hamming(a: int, b: int) -> int:
    """Number of differing bits of two 64-bit fingerprints."""
    return (a ^ b).bit_count()
