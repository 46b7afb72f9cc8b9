# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Pagelet fingerprints and the page simhash in one pass over the code points (compiled).

Same values as :mod:`scrapy_templates.fingerprint_numpy`, the path without this module. The
character classes are tables over every code point, built here (:func:`tables`) from the
Unicode database that ``str.isalnum`` and ``str.isdigit`` read, so both paths agree on what a
letter is. Window hashes of the simhash are md5-derived as in the ``simhash`` package: a
window is at most 12 bytes of UTF-8, one MD5 block, hashed here without a Python call, and
kept in an open-addressing table across pages so that a window is hashed once per process; a
page's windows are looked up in order, each table line fetched a few windows ahead.
"""

from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.unicode cimport PyUnicode_DATA, PyUnicode_KIND, PyUnicode_READ
from libc.stdint cimport uint8_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memset

import hashlib
import sys

# Hashers set up once (size and personalisation); each digest starts from a copy.
_EXACT = hashlib.blake2b(digest_size=8, person=b"exact")
_NUMBER_BLIND = hashlib.blake2b(digest_size=8, person=b"numblind")
_from_bytes = int.from_bytes
# The kept code points are hashed as little-endian UTF-32, as the numpy path hashes them.
cdef bint _LITTLE_ENDIAN = sys.byteorder == "little"


cdef inline uint32_t _byte_swap(uint32_t x) noexcept nogil:
    return ((x & 0xFF) << 24) | ((x & 0xFF00) << 8) | ((x >> 8) & 0xFF00) | (x >> 24)


cdef inline uint32_t _little_endian(uint32_t ch) noexcept nogil:
    return ch if _LITTLE_ENDIAN else _byte_swap(ch)


cdef extern from "Python.h":
    int Py_UNICODE_ISALNUM(Py_UCS4 ch) nogil
    int Py_UNICODE_ISDIGIT(Py_UCS4 ch) nogil


cdef enum:
    _CODE_POINTS = 0x110000
    _BMP = 0x10000


def tables() -> tuple:
    """The fingerprints' character classes, a byte (0 or 1) per code point: what a pagelet
    fingerprint keeps (``[^\\W_]``, which is ``str.isalnum``), the digits among those
    (``str.isdigit``), and the ``simhash`` package's letters (``[\\w\\u4e00-\\u9fcc]``,
    over the Basic Multilingual Plane: a letter beyond it sends the page's simhash to the exact
    slow path)."""
    alpha = PyBytes_FromStringAndSize(NULL, _CODE_POINTS)
    digit = PyBytes_FromStringAndSize(NULL, _CODE_POINTS)
    letter = PyBytes_FromStringAndSize(NULL, _CODE_POINTS)
    cdef unsigned char* a = alpha
    cdef unsigned char* d = digit
    cdef unsigned char* s = letter
    cdef Py_UCS4 ch
    for ch in range(_CODE_POINTS):
        a[ch] = Py_UNICODE_ISALNUM(ch) != 0
        d[ch] = a[ch] != 0 and Py_UNICODE_ISDIGIT(ch) != 0
        s[ch] = ch < _BMP and (a[ch] != 0 or ch == 0x5F or 0x4E00 <= ch <= 0x9FCC)
    return alpha, digit, letter


# MD5 (RFC 1321, §3.4): the sine-derived constant and the left rotation of each of its 64 steps.
cdef uint32_t _MD5_SINES[64]
_MD5_SINES[:] = [
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee,
    0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
    0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be,
    0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
    0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa,
    0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
    0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed,
    0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
    0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c,
    0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
    0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05,
    0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
    0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039,
    0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
    0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1,
    0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391,
]
cdef int _MD5_ROTATIONS[64]
_MD5_ROTATIONS[:] = [7, 12, 17, 22] * 4 + [5, 9, 14, 20] * 4 + [4, 11, 16, 23] * 4 + [6, 10, 15, 21] * 4


cdef uint64_t _md5_tail(uint64_t key, int letters) noexcept nogil:
    """What the ``simhash`` package hashes a window to: the last 8 bytes of the md5 of its
    UTF-8, as a big-endian number. ``key`` holds the window's code points (four, or the
    fewer letters of a text too short for one window), 16 bits each, the last lowest; none is
    a surrogate (they are not letters), so the UTF-8 is at most 12 bytes and, padded with its
    length, one 64-byte block."""
    cdef unsigned char block[64]
    cdef uint32_t words[16]
    cdef uint32_t ch, f, rotated
    cdef uint32_t a = 0x67452301U, b = 0xEFCDAB89U, c = 0x98BADCFEU, d = 0x10325476U
    cdef int n = 0, i, g, shift
    memset(block, 0, sizeof(block))
    for shift in range(16 * (letters - 1), -1, -16):
        ch = (key >> shift) & 0xFFFF
        if ch < 0x80:
            block[n] = ch
            n += 1
        elif ch < 0x800:
            block[n] = 0xC0 | (ch >> 6)
            block[n + 1] = 0x80 | (ch & 0x3F)
            n += 2
        else:
            block[n] = 0xE0 | (ch >> 12)
            block[n + 1] = 0x80 | ((ch >> 6) & 0x3F)
            block[n + 2] = 0x80 | (ch & 0x3F)
            n += 3
    block[n] = 0x80
    block[56] = 8 * n  # the length in bits, little-endian: under 256
    for i in range(16):
        words[i] = (
            block[4 * i]
            | (<uint32_t>block[4 * i + 1] << 8)
            | (<uint32_t>block[4 * i + 2] << 16)
            | (<uint32_t>block[4 * i + 3] << 24)
        )
    for i in range(64):
        if i < 16:
            f = (b & c) | (~b & d)
            g = i
        elif i < 32:
            f = (d & b) | (~d & c)
            g = (5 * i + 1) & 15
        elif i < 48:
            f = b ^ c ^ d
            g = (3 * i + 5) & 15
        else:
            f = c ^ (b | ~d)
            g = (7 * i) & 15
        f = f + a + _MD5_SINES[i] + words[g]
        a = d
        d = c
        c = b
        rotated = (f << _MD5_ROTATIONS[i]) | (f >> (32 - _MD5_ROTATIONS[i]))
        b = b + rotated
    # the digest is a, b, c, d little-endian; its last 8 bytes are c's then d's
    c += 0x98BADCFEU
    d += 0x10325476U
    return (<uint64_t>_byte_swap(c) << 32) | _byte_swap(d)


# No window key is 0 (a window holds four letters, none of them NUL): 0 marks a free slot.
cdef enum:
    _FREE = 0


cdef struct _Entry:
    uint64_t key
    uint64_t value


cdef struct _Table:
    # Open addressing over 64-bit keys, 0 marking a free slot.
    _Entry* entries
    size_t mask
    size_t used


cdef int _table_init(_Table* t, size_t slots) except -1:
    t.entries = <_Entry*>calloc(slots, sizeof(_Entry))
    if t.entries is NULL:
        raise MemoryError()
    t.mask = slots - 1
    t.used = 0
    return 0


cdef inline size_t _home(const _Table* t, uint64_t key) noexcept nogil:
    return ((key * 0x9E3779B97F4A7C15ULL) >> 32) & t.mask


cdef inline size_t _slot(const _Table* t, uint64_t key) noexcept nogil:
    cdef size_t i = _home(t, key)
    while t.entries[i].key != _FREE and t.entries[i].key != key:
        i = (i + 1) & t.mask
    return i


cdef int _insert(_Table* t, uint64_t key, uint64_t value) except -1:
    """Add ``key`` (not in the table yet) with ``value``; the table doubles at half load."""
    cdef _Table bigger
    cdef size_t j
    if 2 * (t.used + 1) > t.mask + 1:
        _table_init(&bigger, 2 * (t.mask + 1))
        for j in range(t.mask + 1):
            if t.entries[j].key != _FREE:
                bigger.entries[_slot(&bigger, t.entries[j].key)] = t.entries[j]
        bigger.used = t.used
        free(t.entries)
        t[0] = bigger
    cdef size_t i = _slot(t, key)
    t.entries[i].key = key
    t.entries[i].value = value
    t.used += 1
    return 0


# Window hashes seen so far in this process, capped like the numpy path's cache.
cdef _Table _known
cdef size_t _KNOWN_MAX = 1 << 21
_table_init(&_known, 1 << 16)


cdef uint64_t _new_window_hash(uint64_t key) except? 0:
    """Hash a window not seen before and remember it."""
    cdef uint64_t value = _md5_tail(key, 4)
    if _known.used >= _KNOWN_MAX:  # start afresh, keeping the table's size
        memset(_known.entries, 0, (_known.mask + 1) * sizeof(_Entry))
        _known.used = 0
    _insert(&_known, key, value)
    return value


# The kept code points and the window keys of the text being hashed; reused from page to page.
cdef uint32_t* _exact_buf = NULL
cdef uint32_t* _letter_buf = NULL
cdef uint64_t* _window_buf = NULL
cdef Py_ssize_t _buf_size = 0


cdef Py_ssize_t _BUF_KEEP = 1 << 20  # code points kept between pages; a huge page's go


cdef void _release_code_points() noexcept nogil:
    global _exact_buf, _letter_buf, _window_buf, _buf_size
    free(_exact_buf)
    free(_letter_buf)
    free(_window_buf)
    _exact_buf = _letter_buf = NULL
    _window_buf = NULL
    _buf_size = 0


cdef int _reserve_code_points(Py_ssize_t n) except -1:
    global _exact_buf, _letter_buf, _window_buf, _buf_size
    if n < _buf_size:
        return 0
    n = max(n + 1, 2 * _buf_size, 1 << 14)
    _release_code_points()
    _exact_buf = <uint32_t*>malloc(n * sizeof(uint32_t))
    _letter_buf = <uint32_t*>malloc(n * sizeof(uint32_t))
    _window_buf = <uint64_t*>malloc(n * sizeof(uint64_t))
    if _exact_buf is NULL or _letter_buf is NULL or _window_buf is NULL:
        _release_code_points()
        raise MemoryError()
    _buf_size = n
    return 0


cdef object _digest(uint32_t* kept, Py_ssize_t n, object hasher):
    if n == 0:
        return 0
    hashing = hasher.copy()
    hashing.update(PyBytes_FromStringAndSize(<char*>kept, 4 * n))
    return _from_bytes(hashing.digest(), "big") or 1


def fingerprints(
    str lowered,
    list lengths,
    const uint8_t[::1] is_alpha,
    const uint8_t[::1] is_digit,
    const uint8_t[::1] is_simhash_letter,
) -> tuple:
    """Exact and number-blind fingerprints of the texts whose lowercased concatenation is
    ``lowered`` (``lengths`` code points each), and the simhash of all of it; the simhash is
    ``None`` when a letter lies outside the Basic Multilingual Plane (the caller takes the
    exact slow path; other characters there, emoji say, are no letters and are skipped)."""
    cdef Py_ssize_t total = len(lowered)
    _reserve_code_points(total)
    cdef uint32_t* exact_buf = _exact_buf
    cdef uint32_t* letter_buf = _letter_buf
    cdef uint64_t* window_buf = _window_buf
    cdef Py_ssize_t pos = 0, end, n_exact, n_letters, length
    cdef uint32_t ch
    cdef int kind = PyUnicode_KIND(lowered)
    cdef void* data = PyUnicode_DATA(lowered)
    cdef bint digits, bmp_letters = True
    cdef uint64_t key = 0
    cdef Py_ssize_t run = 0, windows = 0
    exact = []
    patterns = []
    try:
        for length in lengths:
            end = pos + length
            if length < 0 or end > total:
                raise ValueError("lengths do not add up to the text")
            n_exact = n_letters = 0
            digits = False
            while pos < end:
                ch = PyUnicode_READ(kind, data, pos)
                pos += 1
                if ch >= 0x10000:
                    # a letter there is alphanumeric: the simhash letters beyond ``\w`` are
                    # in the BMP
                    if is_alpha[ch]:
                        bmp_letters = False
                elif is_simhash_letter[ch]:
                    key = (key << 16) | ch
                    run += 1
                    if run >= 4:
                        window_buf[windows] = key
                        windows += 1
                if is_alpha[ch]:
                    exact_buf[n_exact] = _little_endian(ch)
                    n_exact += 1
                    if is_digit[ch]:
                        digits = True
                    else:
                        letter_buf[n_letters] = _little_endian(ch)
                        n_letters += 1
            exact.append(_digest(exact_buf, n_exact, _EXACT))
            patterns.append(_digest(letter_buf, n_letters, _NUMBER_BLIND) if digits else 0)
        if not bmp_letters:
            simhash = None
        elif run < 4:  # the package's one window is then the letters there are (maybe none)
            simhash = _md5_tail(key, run)
        else:
            simhash = _simhash(windows)
    finally:
        if _buf_size > _BUF_KEEP:
            _release_code_points()
    return exact, patterns, simhash


cdef extern from *:
    void __builtin_prefetch(const void* address) nogil


cdef enum:
    _AHEAD = 16  # windows between a table line's fetch and its look-up


cdef object _simhash(Py_ssize_t windows):
    """Weighted bit majority of the page's window hashes (a bit is set when the windows that
    set it outweigh the rest), each window counted as often as it occurs. The set bits are
    counted eight positions to a word, a byte per position (bit 8k + j of a hash adds one to
    byte k of ``lanes[j]``), and the bytes are emptied into ``ones`` before they overflow:
    eight additions per window, and a final sum of 64 counts however short the page."""
    cdef uint64_t lanes[8]
    cdef uint64_t ones[64]
    cdef uint64_t h, key, value = 0
    cdef uint64_t* keys = _window_buf
    cdef Py_ssize_t j
    cdef size_t slot
    cdef int b, k, pending = 0
    memset(lanes, 0, sizeof(lanes))
    memset(ones, 0, sizeof(ones))
    for j in range(min(windows, _AHEAD)):
        __builtin_prefetch(&_known.entries[_home(&_known, keys[j])])
    for j in range(windows):
        if j + _AHEAD < windows:
            __builtin_prefetch(&_known.entries[_home(&_known, keys[j + _AHEAD])])
        key = keys[j]
        slot = _slot(&_known, key)
        if _known.entries[slot].key == key:
            h = _known.entries[slot].value
        else:
            h = _new_window_hash(key)
        for b in range(8):
            lanes[b] += (h >> b) & 0x0101010101010101ULL
        pending += 1
        if pending == 255 or j == windows - 1:
            for b in range(8):
                for k in range(8):
                    ones[8 * k + b] += (lanes[b] >> (8 * k)) & 0xFF
                lanes[b] = 0
            pending = 0
    for b in range(64):
        if 2 * ones[b] > <uint64_t>windows:
            value |= (<uint64_t>1) << b
    return value
