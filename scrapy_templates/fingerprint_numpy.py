"""The fingerprints of :mod:`scrapy_templates.fingerprint` with numpy: the path where the
compiled module was not built, and the page simhash of texts with letters beyond the Basic
Multilingual Plane (which that module leaves to the exact slow path here).

Same values as the compiled pass: the simhash is bit for bit ``simhash.Simhash(text).value``
(64 bits, md5 of lowercased 4-character windows over the word characters), computed with a
cache of window hashes and one numpy reduction; the pagelet fingerprints hash the kept code
points as little-endian UTF-32.
"""

from __future__ import annotations

import hashlib
import re

import numpy as np

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


def numpy_fingerprints(lowered: str, lengths: list[int]) -> tuple[list[int], list[int], int]:
    """:func:`~scrapy_templates.fingerprint.text_fingerprints` of the texts whose lowercased
    concatenation is ``lowered`` (``lengths`` code points each), with numpy: the exact
    fingerprints, the number-blind ones and the simhash."""
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
    return exact, patterns, value


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
