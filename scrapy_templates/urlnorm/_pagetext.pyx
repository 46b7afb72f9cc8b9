# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""A page's text with the markup left out, as the URL rules hash it (compiled).

Same bytes as :func:`scrapy_templates.urlnorm.samples.python_page_text`: scripts, styles,
``noscript`` and ``template`` elements and comments go first, then every tag, each leaving a
space, and runs of ASCII whitespace become one space. Two passes over the body as the two
regular expressions make them; a search for a closing tag or ``-->`` remembers where it
failed, so a body full of unclosed ``<script`` costs one scan, not one per opening.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.stdlib cimport free, malloc

# the hidden elements, in the order the pattern names them
cdef const char* _NAMES[4]
_NAMES[0] = b"script"
_NAMES[1] = b"style"
_NAMES[2] = b"noscript"
_NAMES[3] = b"template"
cdef Py_ssize_t _LENGTHS[4]
_LENGTHS[:] = [6, 5, 8, 8]


cdef inline bint _space(unsigned char c) noexcept nogil:
    # ASCII whitespace as bytes.split() and the patterns' \s know it
    return c == 32 or (9 <= c <= 13)


cdef inline bint _word(unsigned char c) noexcept nogil:
    return (48 <= c <= 57) or (65 <= c <= 90) or (97 <= c <= 122) or c == 95


cdef inline unsigned char _lower(unsigned char c) noexcept nogil:
    return c + 32 if 65 <= c <= 90 else c


cdef inline bint _named(const unsigned char* s, Py_ssize_t at, Py_ssize_t n, int name) noexcept nogil:
    """Whether ``s[at:]`` starts with hidden element ``name``, letter case aside."""
    cdef Py_ssize_t size = _LENGTHS[name], k
    cdef const char* word = _NAMES[name]
    if at + size > n:
        return False
    for k in range(size):
        if _lower(s[at + k]) != <unsigned char>word[k]:
            return False
    return True


cdef Py_ssize_t _closing(
    const unsigned char* s, Py_ssize_t start, Py_ssize_t n, int name
) noexcept nogil:
    """The end of the first ``</name\\s*>`` at or after ``start``, or -1."""
    cdef Py_ssize_t k = start, j
    while k + 1 < n:
        if s[k] == 60 and s[k + 1] == 47 and _named(s, k + 2, n, name):  # "</"
            j = k + 2 + _LENGTHS[name]
            while j < n and _space(s[j]):
                j += 1
            if j < n and s[j] == 62:  # ">"
                return j + 1
        k += 1
    return -1


cdef Py_ssize_t _comment_end(const unsigned char* s, Py_ssize_t start, Py_ssize_t n) noexcept nogil:
    """The end of the first ``-->`` at or after ``start``, or -1."""
    cdef Py_ssize_t k = start
    while k + 2 < n:
        if s[k] == 45 and s[k + 1] == 45 and s[k + 2] == 62:
            return k + 3
        k += 1
    return -1


cdef Py_ssize_t _unhide(const unsigned char* s, Py_ssize_t n, unsigned char* out) noexcept nogil:
    """The first pass: hidden elements and comments become a space; the length written."""
    # per closing searched for (the four names, then "-->"): the start of a search that found
    # none; every later search would find none either (a closing found is passed over)
    cdef Py_ssize_t missed[5]
    cdef Py_ssize_t i = 0, o = 0, j = 0, end
    cdef int name, hit
    for name in range(5):
        missed[name] = n + 1
    while i < n:
        if s[i] == 60:  # "<"
            hit = -1
            for name in range(4):
                if _named(s, i + 1, n, name):
                    j = i + 1 + _LENGTHS[name]
                    if j == n or not _word(s[j]):
                        hit = name
                    break
            end = -1
            if hit >= 0 and j < missed[hit]:
                end = _closing(s, j, n, hit)
                if end < 0:
                    missed[hit] = j
            elif hit < 0 and i + 3 < n and s[i + 1] == 33 and s[i + 2] == 45 and s[i + 3] == 45:
                j = i + 4  # after "<!--"
                if j < missed[4]:
                    end = _comment_end(s, j, n)
                    if end < 0:
                        missed[4] = j
            if end >= 0:
                out[o] = 32
                o += 1
                i = end
                continue
        out[o] = s[i]
        o += 1
        i += 1
    return o


cdef Py_ssize_t _untag(const unsigned char* s, Py_ssize_t n, unsigned char* out) noexcept nogil:
    """The second pass: every ``<…>`` becomes a space, whitespace runs one space, none at
    either end; the length written."""
    cdef Py_ssize_t i = 0, o = 0, k
    cdef Py_ssize_t no_close_after = n  # no ">" at or after this index
    cdef bint gap = False
    while i < n:
        if s[i] == 60 and i + 1 < no_close_after:  # "<"
            k = i + 1
            while k < n and s[k] != 62:
                k += 1
            if k < n:
                gap = True
                i = k + 1
                continue
            no_close_after = i + 1
        if _space(s[i]):
            gap = True
        else:
            if gap and o:
                out[o] = 32
                o += 1
            gap = False
            out[o] = s[i]
            o += 1
        i += 1
    return o


def page_text(bytes body not None) -> bytes:
    """``body``'s text: hidden elements, comments and tags left out, whitespace collapsed."""
    cdef Py_ssize_t n = PyBytes_GET_SIZE(body), first, second
    cdef const unsigned char* s = <const unsigned char*>PyBytes_AS_STRING(body)
    cdef unsigned char* unhidden = <unsigned char*>malloc(n + 1)
    cdef unsigned char* text = <unsigned char*>malloc(n + 1)
    if unhidden is NULL or text is NULL:
        free(unhidden)
        free(text)
        raise MemoryError()
    try:
        with nogil:
            first = _unhide(s, n, unhidden)
            second = _untag(unhidden, first, text)
        return PyBytes_FromStringAndSize(<char*>text, second)
    finally:
        free(unhidden)
        free(text)
