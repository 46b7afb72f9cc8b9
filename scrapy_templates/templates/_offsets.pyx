# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Word-offset bit signatures (compiled): the same value as
:func:`scrapy_templates.templates.offsets.offset_signature`, which documents the method
(``002_…``); here the words' letters, CRC-32 and bits are computed without Python objects per
bit."""

from cpython.unicode cimport PyUnicode_DATA, PyUnicode_KIND, PyUnicode_READ
from libc.stdint cimport uint32_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memset

cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object text, Py_ssize_t* size) except NULL
    bint Py_UNICODE_ISALPHA(Py_UCS4 ch)

cdef uint32_t _CRC_TABLE[256]


cdef void _crc_table() noexcept nogil:
    """The table of the reflected CRC-32 polynomial (IEEE 802.3, as zlib's ``crc32``)."""
    cdef uint32_t value
    cdef int byte
    for byte in range(256):
        value = byte
        for _ in range(8):
            value = (value >> 1) ^ (0xEDB88320U if value & 1 else 0)
        _CRC_TABLE[byte] = value


_crc_table()


cdef inline uint32_t _crc32(const unsigned char* data, Py_ssize_t size) noexcept nogil:
    cdef uint32_t crc = 0xFFFFFFFFU
    cdef Py_ssize_t i
    for i in range(size):
        crc = _CRC_TABLE[(crc ^ data[i]) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFFU


cdef Py_ssize_t _letters(str word):
    cdef int kind = PyUnicode_KIND(word)
    cdef void* data = PyUnicode_DATA(word)
    cdef Py_ssize_t i, n = 0
    for i in range(len(word)):
        if Py_UNICODE_ISALPHA(PyUnicode_READ(kind, data, i)):
            n += 1
    return n


def offset_signature(words, Py_ssize_t bits, uint64_t offset_step, uint64_t bit_step,
                     Py_ssize_t letters_per_bit) -> int:
    """The signature of ``words`` as an int of ``bits`` bits (see ``offsets.py``)."""
    cdef Py_ssize_t chunks = (bits + 63) // 64
    cdef uint64_t* signature = <uint64_t*>malloc(chunks * sizeof(uint64_t))
    cdef Py_ssize_t i = 0, weight, rank, size = 0
    cdef uint64_t base, offset, bit
    cdef const char* utf8
    cdef dict last = {}
    if signature is NULL:
        raise MemoryError()
    memset(signature, 0, chunks * sizeof(uint64_t))
    try:
        for word in words:
            weight = _letters(word)
            if weight:
                previous = last.get(word)
                last[word] = i
                offset = 0 if previous is None else <uint64_t>(i - <Py_ssize_t>previous)
                utf8 = PyUnicode_AsUTF8AndSize(word, &size)
                base = _crc32(<const unsigned char*>utf8, size) + offset * offset_step
                for rank in range((weight + letters_per_bit - 1) // letters_per_bit):
                    bit = (base + <uint64_t>rank * bit_step) % <uint64_t>bits
                    signature[bit >> 6] |= (<uint64_t>1) << (bit & 63)
            i += 1
        value = 0
        for i in range(chunks):
            value |= (<object>signature[i]) << (64 * i)
        return value
    finally:
        free(signature)
