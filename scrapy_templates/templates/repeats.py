"""A cache of what is worked out from what a site's pages repeat, bounded by the characters
it holds (for keys of many short strings, their objects' overhead too).

Tag paths come back page after page, and so do the link blocks of menus and bars, so what is
derived from one (a path's prefixes, its form without ids, whether a block reads as
navigation) is worth keeping; pages with generated ids, deep nesting or links of their own
would make such a cache grow without end, so it is emptied when its keys and values reach
``max_chars``.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Generic, TypeVar, cast

_K = TypeVar("_K", bound=Hashable)
_V = TypeVar("_V")
_MISSING = object()
# what a str object holds beyond its characters (CPython, 64-bit): keys made of many short
# strings (a menu's links) are sized by both
STRING_OVERHEAD = 56


def strings_size(strings: Sequence[str]) -> int:
    """The characters of ``strings`` and their objects' overhead: what keeping them costs."""
    return sum(map(len, strings)) + STRING_OVERHEAD * len(strings)


class RepeatCache(Generic[_K, _V]):
    """``make(key)`` for each key asked, kept until ``max_chars`` characters are held
    (``size``: a value's characters; ``key_size``: a key's); a key and value larger than that
    are not kept at all."""

    def __init__(
        self,
        max_chars: int,
        make: Callable[[_K], _V],
        size: Callable[[_V], int],
        key_size: Callable[[_K], int],
    ) -> None:
        self.max_chars = max_chars
        self.make = make
        self.size = size
        self.key_size = key_size
        self.entries: dict[_K, _V] = {}
        self.chars = 0

    def __call__(self, key: _K) -> _V:
        found = self.entries.get(key, _MISSING)
        if found is not _MISSING:
            return cast(_V, found)
        made = self.make(key)
        cost = self.key_size(key) + self.size(made)
        if cost > self.max_chars:  # one page's own, larger than the whole cache may hold
            return made
        if self.chars + cost > self.max_chars:
            self.entries.clear()
            self.chars = 0
        self.entries[key] = made
        self.chars += cost
        return made
