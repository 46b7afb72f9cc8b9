"""A cache of what is worked out from a tag path, bounded by the characters it holds.

A site's tag paths come back page after page, so what is derived from one (its prefixes, its
form without ids) is worth keeping; pages with generated ids or deep nesting would make such
a cache grow without end, so it is emptied when its keys and values reach ``max_chars``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

_V = TypeVar("_V")


class PathCache(Generic[_V]):
    """``make(path)`` for each tag path asked, kept until ``max_chars`` characters are held
    (``size``: a value's characters)."""

    def __init__(self, max_chars: int, make: Callable[[str], _V], size: Callable[[_V], int]):
        self.max_chars = max_chars
        self.make = make
        self.size = size
        self.entries: dict[str, _V] = {}
        self.chars = 0

    def __call__(self, path: str) -> _V:
        found = self.entries.get(path)
        if found is None:
            found = self.make(path)
            cost = len(path) + self.size(found)
            if self.chars + cost > self.max_chars:
                self.entries.clear()
                self.chars = 0
            self.entries[path] = found
            self.chars += cost
        return found
