"""Token normalisation and fingerprints of pages and pagelets.

Pagelet fingerprints stand in for the shingles of ``000_…`` §3.2: two pagelets share a
fingerprint when their visible text has the same letters and digits in the same order. Case,
white space and punctuation are ignored. Digits are kept on purpose: versions, prices, dates and
scores are what tells one release note, product or match report from the next, and a pagelet
that differs between pages only by its numbers is more often content than template.

The page simhash is bit-for-bit the value of ``simhash.Simhash(text).value`` (64 bits, md5 of
lowercased 4-character windows over the word characters), so it stays comparable with anything
computed by that package.

The compiled module computes all of it in one pass over the code points; where it was not built,
:mod:`scrapy_templates.fingerprint_numpy` does, with numpy. This module imports neither numpy
nor that module until it needs them: with the compiled module, a parse worker starts without
numpy (a third of its start) and loads it only for a page with letters beyond the Basic
Multilingual Plane.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass

from scrapy_templates.compiled import compiled

_ALPHA = re.compile(r"[^\W_]+")


@dataclass(frozen=True, slots=True)
class TextFingerprints:
    """Fingerprints of a page's pagelet texts, computed in one pass (see
    :func:`text_fingerprints`)."""

    exact: list[int]
    patterns: list[int]
    simhash: int


_compiled = compiled("_fingerprint")
_compiled_lock = threading.Lock()
# The character classes, a byte per code point, from the compiled module (the numpy path builds
# its own with regular expressions, which take longer)
_TABLES = () if _compiled is None else _compiled.tables()


def normalise(text: str) -> str:
    """The characters of ``text`` that a pagelet fingerprint sees: letters and digits,
    lowercased, without punctuation or white space."""
    return "".join(_ALPHA.findall(text.lower()))


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
        from scrapy_templates.fingerprint_numpy import numpy_fingerprints

        return TextFingerprints(*numpy_fingerprints(lowered, lengths))
    with _compiled_lock:  # its tables and buffers are shared by the process's threads
        exact, patterns, value = _compiled.fingerprints(lowered, lengths, *_TABLES)
    return TextFingerprints(exact, patterns, simhash(lowered) if value is None else value)


def simhash(text: str) -> int:
    """64-bit simhash of ``text``: ``simhash.Simhash(text).value`` where that package can compute
    it (it overflows once a window occurs more than 50 times; here weights are exact)."""
    from scrapy_templates.fingerprint_numpy import simhash as numpy_simhash

    return numpy_simhash(text)


def hamming(a: int, b: int) -> int:
    """Number of differing bits of two 64-bit fingerprints."""
    return (a ^ b).bit_count()
