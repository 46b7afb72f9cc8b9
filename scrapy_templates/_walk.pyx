# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The pagelet partition walk over libxml2's nodes (compiled).

Same output as :func:`scrapy_templates.page.python_partition` (``000_…`` §3.1), without a
Python object per element visited: link counts, the split test and the text of each pagelet
are read from the C tree that lxml holds. Python objects are made only for what a pagelet
keeps (its path, text, hrefs, anchor texts and element). The tree is not modified: a block
element's start and end are word breaks in the text, as the pure-Python walk gets by putting a
newline before block texts and tails.
"""

from cpython.unicode cimport (
    Py_UNICODE_ISDECIMAL,
    Py_UNICODE_ISSPACE,
    PyUnicode_DATA,
    PyUnicode_DecodeUTF8,
    PyUnicode_KIND,
    PyUnicode_READ,
)
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy, strcmp, strlen

cimport lxml.includes.etreepublic as cetree
from lxml.includes cimport tree
from lxml.includes.tree cimport xmlAttr, xmlNode

cetree.import_lxml__etree()

# Names of the elements a browser lays out as blocks (``page.BLOCK_TAGS``, set once by
# :func:`set_block_tags`), sorted, with the range of names starting with each byte; the bytes
# objects stay alive in ``_block_names``.
cdef const char** _blocks = NULL
cdef int _first[257]
_block_names: list = []


def set_block_tags(tags) -> None:
    """Take the names of the block elements (their end is a word break in the text)."""
    global _blocks, _block_names
    names = sorted({str(tag).encode("utf-8") for tag in tags if str(tag)})
    cdef const char** array = <const char**>malloc(max(len(names), 1) * sizeof(char*))
    if array is NULL:
        raise MemoryError()
    cdef int i, byte = 0
    for i in range(len(names)):
        array[i] = <bytes>names[i]
    for byte in range(257):
        _first[byte] = len(names)
    for i in range(len(names) - 1, -1, -1):
        _first[(<bytes>names[i])[0]] = i
    for byte in range(255, -1, -1):
        _first[byte] = min(_first[byte], _first[byte + 1])
    free(_blocks)
    _blocks, _block_names = array, names


cdef inline bint _is_element(xmlNode* n) noexcept nogil:
    return n.type == tree.XML_ELEMENT_NODE


cdef inline bint _is_text(xmlNode* n) noexcept nogil:
    return n.type == tree.XML_TEXT_NODE or n.type == tree.XML_CDATA_SECTION_NODE


cdef inline bint _is_child(xmlNode* n) noexcept nogil:
    """What lxml iterates as a child: elements, comments, processing instructions, entities."""
    return (
        n.type == tree.XML_ELEMENT_NODE
        or n.type == tree.XML_COMMENT_NODE
        or n.type == tree.XML_PI_NODE
        or n.type == tree.XML_ENTITY_REF_NODE
    )


cdef bint _is_block(xmlNode* n) noexcept nogil:
    """Is ``n`` a block element? Only the names that share its first byte are compared."""
    cdef const char* name = <const char*>n.name
    cdef unsigned char first = <unsigned char>name[0]
    cdef int i
    if n.ns is not NULL:
        return False
    for i in range(_first[first], _first[first + 1]):
        if strcmp(name, _blocks[i]) == 0:
            return True
    return False


cdef xmlAttr* _attribute(xmlNode* n, const char* name) noexcept nogil:
    cdef xmlAttr* attr = n.properties
    while attr is not NULL:
        if attr.ns is NULL and strcmp(<const char*>attr.name, name) == 0:
            return attr
        attr = attr.next
    return NULL


cdef inline bint _is_link(xmlNode* n) noexcept nogil:
    """An ``a`` element with an ``href`` attribute."""
    return (
        n.ns is NULL
        and strcmp(<const char*>n.name, "a") == 0
        and _attribute(n, "href") is not NULL
    )


cdef str _attribute_value(xmlAttr* attr):
    """The attribute's value as lxml's ``get`` gives it (its text children joined)."""
    cdef xmlNode* child = attr.children
    cdef _Buffer buf
    if child is not NULL and child.next is NULL and child.content is not NULL:
        return _decode(<const char*>child.content, strlen(<const char*>child.content))
    _init(&buf)
    while child is not NULL:
        if child.content is not NULL:
            _append(&buf, <const char*>child.content)
        child = child.next
    try:
        return _decode(buf.data, buf.size)
    finally:
        free(buf.data)


cdef struct _Buffer:
    char* data
    size_t size
    size_t capacity


cdef void _init(_Buffer* buf) noexcept nogil:
    buf.data = NULL
    buf.size = 0
    buf.capacity = 0


cdef int _reserve(_Buffer* buf, size_t more) except -1 nogil:
    cdef size_t want = buf.size + more
    cdef char* grown
    if want <= buf.capacity:
        return 0
    want = max(want, 2 * buf.capacity, 256)
    grown = <char*>realloc(buf.data, want)
    if grown is NULL:
        with gil:
            raise MemoryError()
    buf.data = grown
    buf.capacity = want
    return 0


cdef int _append(_Buffer* buf, const char* text) except -1 nogil:
    cdef size_t n = strlen(text)
    _reserve(buf, n)
    memcpy(buf.data + buf.size, text, n)
    buf.size += n
    return 0


cdef int _append_char(_Buffer* buf, char c) except -1 nogil:
    _reserve(buf, 1)
    buf.data[buf.size] = c
    buf.size += 1
    return 0


cdef inline str _decode(const char* data, size_t size):
    if size == 0:
        return ""
    return PyUnicode_DecodeUTF8(data, size, "replace")


# The walks recurse on the C stack; a deeper tree (lxml's HTML parser stops at 256 levels, a
# tree built by hand need not) is left to the Python walk.
cdef enum:
    MAX_DEPTH = 2000


cdef int _collect(xmlNode* n, _Buffer* buf, bint every_break, int depth) except -1 nogil:
    """Append the text below ``n`` (not its tail). A block element's start and end are
    breaks (a newline); with ``every_break`` every element's start and end is (a space), as
    joining ``itertext()`` with spaces gives. Raises RecursionError below MAX_DEPTH levels."""
    cdef xmlNode* child = n.children
    cdef bint block
    if depth > MAX_DEPTH:
        with gil:
            raise RecursionError("element tree too deep for the compiled walk")
    while child is not NULL:
        if _is_text(child):
            if child.content is not NULL:
                _append(buf, <const char*>child.content)
        elif _is_element(child):
            block = not every_break and _is_block(child)
            if every_break:
                _append_char(buf, 32)
            elif block:
                _append_char(buf, 10)
            _collect(child, buf, every_break, depth + 1)
            if every_break:
                _append_char(buf, 32)
            elif block:
                _append_char(buf, 10)
        elif every_break:
            _append_char(buf, 32)
        child = child.next
    return 0


cdef size_t _collapse(char* data, size_t size) noexcept:
    """Collapse the white space of the UTF-8 text ``data`` in place, as ``" ".join(
    text.split())`` does: runs of what ``str.isspace`` accepts become one space, none at
    either end. Returns the new size. (libxml2 hands over valid UTF-8; a stray byte is copied
    as it is, for the decoder to replace.)"""
    cdef size_t i = 0, n = 0, width, j
    cdef unsigned char c
    cdef unsigned int cp
    cdef bint space = False
    while i < size:
        c = <unsigned char>data[i]
        if c < 0x80:
            width, cp = 1, c
        elif c < 0xC0:  # a stray continuation byte, which the decoder replaces
            width, cp = 1, 0xFFFD
        else:
            width = min(4 if c >= 0xF0 else 3 if c >= 0xE0 else 2, size - i)
            cp = c & (0x3F >> (width - 1))
        for j in range(1, width):
            cp = (cp << 6) | (<unsigned char>data[i + j] & 0x3F)
        if Py_UNICODE_ISSPACE(cp):
            space = n > 0
        else:
            if space:
                data[n] = 32
                n += 1
                space = False
            for j in range(width):
                data[n + j] = data[i + j]
            n += width
        i += width
    return n


cdef str _clean_text(xmlNode* n, bint every_break, _Buffer* buf):
    """The collapsed text below ``n``, collected in ``buf`` (emptied first, kept allocated)."""
    buf.size = 0
    _collect(n, buf, every_break, 0)
    return _decode(buf.data, _collapse(buf.data, buf.size))


def visible_text(cetree._Element element not None) -> str:
    """The visible text of ``element`` (without its tail), white space collapsed, a block
    element's start and end counting as word breaks; RecursionError for a tree deeper than MAX_DEPTH."""
    cdef _Buffer buf
    _init(&buf)
    try:
        return _clean_text(element._c_node, False, &buf)
    finally:
        free(buf.data)


cdef struct _Counts:
    # Per element of the walked subtree, in document order: links held, elements in its subtree.
    int* links
    int* size
    int n
    int capacity
    bint too_deep


cdef int _count(xmlNode* n, _Counts* c, int depth) except -1 nogil:
    """Number the elements below ``n`` (and ``n``) in document order with their link counts
    and subtree sizes; returns ``n``'s link count (stops, flagged, below MAX_DEPTH levels)."""
    cdef int index = c.n
    cdef int links = 1 if _is_link(n) else 0
    cdef xmlNode* child
    cdef int* grown
    if depth > MAX_DEPTH:
        c.too_deep = True
        return 0
    if c.n == c.capacity:
        c.capacity = max(2 * c.capacity, 1024)
        grown = <int*>realloc(c.links, c.capacity * sizeof(int))
        if grown is NULL:
            with gil:
                raise MemoryError()
        c.links = grown
        grown = <int*>realloc(c.size, c.capacity * sizeof(int))
        if grown is NULL:
            with gil:
                raise MemoryError()
        c.size = grown
    c.n += 1
    child = n.children
    while child is not NULL:
        if _is_element(child):
            links += _count(child, c, depth + 1)
        child = child.next
    c.links[index] = links
    c.size[index] = c.n - index
    return links


cdef class _Walk:
    """State of one partition: the numbered elements and what has been found."""

    cdef _Counts counts
    cdef int k
    cdef Py_ssize_t split_depth  # elements this many levels below the root are not split
    cdef cetree._Document doc
    cdef list found
    cdef list elements
    cdef _Buffer loose  # a split element's own text since its last child element
    cdef _Buffer text  # reused for every text the walk collects

    def __dealloc__(self):
        free(self.counts.links)
        free(self.counts.size)
        free(self.loose.data)
        free(self.text.data)

    cdef bint splits(self, xmlNode* n, int index) noexcept nogil:
        """Does a child element of ``n`` (numbered ``index``) hold at least k links?"""
        cdef int child = index + 1
        cdef int end = index + self.counts.size[index]
        while child < end:
            if self.counts.links[child] >= self.k:
                return True
            child += self.counts.size[child]
        return False

    cdef flush(self, xmlNode* owner, str path, tuple position):
        if not self.loose.size:
            return
        text = _decode(self.loose.data, _collapse(self.loose.data, self.loose.size))
        self.loose.size = 0
        if text:
            self.found.append((path + "/text()", text, (), position, ()))
            self.elements.append(cetree.elementFactory(self.doc, owner))

    cdef int visit(self, xmlNode* n, int index, str path, tuple position) except -1:
        cdef xmlNode* child
        cdef int child_index
        cdef int i
        if len(position) < self.split_depth and self.splits(n, index):
            child = n.children
            child_index = index + 1
            i = 0
            while child is not NULL:
                if _is_text(child):
                    if child.content is not NULL:
                        _append(&self.loose, <const char*>child.content)
                elif _is_element(child):
                    self.flush(n, path, position)
                    self.visit(
                        child, child_index, f"{path}/{_tag_step(child)}", position + (i,)
                    )
                    child_index += self.counts.size[child_index]
                else:
                    _append_char(&self.loose, 32)  # a comment or entity between texts
                if _is_child(child):
                    i += 1
                child = child.next
            self.flush(n, path, position)
            return 0
        text = _clean_text(n, False, &self.text)
        hrefs = []
        anchors = []
        self.links(n, hrefs, anchors)
        if text or hrefs:
            self.found.append((path, text, tuple(hrefs), position, tuple(anchors)))
            self.elements.append(cetree.elementFactory(self.doc, n))
        return 0

    cdef int links(self, xmlNode* n, list hrefs, list anchors) except -1:
        cdef xmlNode* child
        if _is_link(n):
            hrefs.append(_attribute_value(_attribute(n, "href")))
            anchors.append(_clean_text(n, True, &self.text))
        child = n.children
        while child is not NULL:
            if _is_element(child):
                self.links(child, hrefs, anchors)
            child = child.next
        return 0


cdef bint _has_digit(str text):
    """Does ``text`` hold a decimal digit (what ``\\d`` matches)?"""
    cdef int kind = PyUnicode_KIND(text)
    cdef void* data = PyUnicode_DATA(text)
    cdef Py_ssize_t i
    for i in range(len(text)):
        if Py_UNICODE_ISDECIMAL(PyUnicode_READ(kind, data, i)):
            return True
    return False


cdef str _tag_step(xmlNode* n):
    """``tag#id`` or ``tag.first-class``, leaving out ids and classes with digits (as
    ``page._tag_step``)."""
    step = _decode(<const char*>n.name, strlen(<const char*>n.name))
    cdef xmlAttr* attr = _attribute(n, "id")
    cdef str el_id
    if attr is not NULL:
        el_id = _attribute_value(attr)
        if el_id and not _has_digit(el_id):
            return f"{step}#{el_id}"
    attr = _attribute(n, "class")
    if attr is not NULL:
        parts = _attribute_value(attr).split(None, 1)
        if parts and not _has_digit(parts[0]):
            return f"{step}.{parts[0]}"
    return step


def partition(cetree._Element root not None, int k, Py_ssize_t split_depth):
    """Pagelets of ``root`` as ``(path, text, hrefs, position, anchors)`` tuples in document
    order, and the element of each (the split element for loose text), elements
    ``split_depth`` levels below ``root`` left whole; ``None`` for a tree deeper than
    MAX_DEPTH."""
    cdef _Walk walk = _Walk()
    cdef xmlNode* c_root = root._c_node
    walk.k = k
    walk.split_depth = split_depth
    walk.doc = root._doc
    walk.found = []
    walk.elements = []
    _init(&walk.loose)
    walk.counts.links = NULL
    walk.counts.size = NULL
    walk.counts.n = 0
    walk.counts.capacity = 0
    walk.counts.too_deep = False
    _init(&walk.text)
    _count(c_root, &walk.counts, 0)
    if walk.counts.too_deep:
        return None
    walk.visit(c_root, 0, _decode(<const char*>c_root.name, strlen(<const char*>c_root.name)), ())
    return walk.found, walk.elements


def elements_named(cetree._Element root not None, names) -> list:
    """Elements of ``root``'s tree named one of ``names`` (no namespace), ``root`` included,
    in document order: what ``root.iter(*names)`` gives, found in one pass over the C tree
    (the page's title, heading and ``<link>`` elements are looked for in the whole page)."""
    return _named(root, names, False, -1)


def texts_named(cetree._Element root not None, names, Py_ssize_t limit) -> list:
    """The texts of the elements :func:`elements_named` finds, each as
    ``" ".join(element.itertext())`` with its white space collapsed, empty ones left out; at
    most ``limit`` of them. Raises RecursionError for a tree deeper than MAX_DEPTH."""
    return _named(root, names, True, limit)


cdef list _named(cetree._Element root, names, bint texts, Py_ssize_t limit):
    """The elements named one of ``names``, or their non-empty texts, at most ``limit``."""
    wanted = [str(name).encode("utf-8") for name in names]
    cdef Py_ssize_t n_wanted = len(wanted), i
    cdef const char** c_names = <const char**>malloc(max(n_wanted, 1) * sizeof(char*))
    if c_names is NULL:
        raise MemoryError()
    for i in range(n_wanted):
        c_names[i] = <bytes>wanted[i]
    found = []
    cdef xmlNode* top = root._c_node
    cdef xmlNode* n = top
    cdef _Buffer buf
    _init(&buf)
    try:
        while n is not NULL and len(found) != limit:
            if n.ns is NULL:
                for i in range(n_wanted):
                    if strcmp(<const char*>n.name, c_names[i]) == 0:
                        if not texts:
                            found.append(cetree.elementFactory(root._doc, n))
                        elif text := _clean_text(n, True, &buf):
                            found.append(text)
                        break
            n = _next_element(n, top)
    finally:
        free(c_names)
        free(buf.data)
    return found


cdef xmlNode* _next_element(xmlNode* n, xmlNode* top) noexcept nogil:
    """The element after ``n`` in document order inside ``top`` (``NULL`` past the end)."""
    cdef xmlNode* after = n.children
    while after is not NULL and not _is_element(after):
        after = after.next
    if after is not NULL:
        return after
    while n is not top and n is not NULL:
        after = n.next
        while after is not NULL and not _is_element(after):
            after = after.next
        if after is not NULL:
            return after
        n = n.parent
    return NULL
