"""Template blocks merged into a pagelet of a page too link-poor to be split there.

The partition of ``000_…`` §3.1 splits an element only where it holds enough links, so a short
page keeps its whole content column as one pagelet: "‹title› Version 8.5 Copyright © 1997-2026
Ericsson AB", "Caution: Python 2.7 is no longer supported. ‹the page's few lines›". On the
site's longer pages the same column is split, and its footer or its standing caution is a
pagelet of its own, flagged template. Aligning blocks across pages by their tag path, as
Webstemmer does (``001_…`` step 1), says what the short page's pagelet holds: the footer's
text at the footer's path. :class:`InnerTemplates` keeps, per site, the text of each template
pagelet by the paths above it, and :meth:`InnerTemplates.cut` takes that text out of a
content pagelet at one of those paths. Digits are compared as one digit, as the number-blind
pattern of a pagelet is (a copyright's years change from page to page).

Bounded: a site keeps template texts of ``max_chars`` characters in all (each twice: as read,
and number-blind); past that, new paths are not kept and a kept path's text does not grow.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

# How far above a template pagelet its text is looked for: a footer inside the content
# column of a page inside a grid is a few steps below the pagelet that swallowed it.
DEPTH = 4
# Shorter template texts are left where they are: a heading's word or two ("Exports") may
# well be the page's own.
MIN_CHARS = 24
# A template text is looked for once this many pages in a row had it (number-blind) at its
# path: one page's flag is no habit of the site.
MIN_COPIES = 3

_DIGITS = str.maketrans("123456789", "000000000")


def _masked(text: str) -> str:
    return text.translate(_DIGITS)


@dataclass
class InnerTemplates:
    """A site's template pagelet texts, by the paths of the elements that hold them."""

    max_chars: int = 32_000
    chars: int = 0
    last: dict[str, str] = field(default_factory=dict)  # as read
    texts: dict[str, str] = field(default_factory=dict)  # number-blind
    copies: dict[str, int] = field(default_factory=dict)
    under: dict[str, set[str]] = field(default_factory=dict)

    def learn(self, paths: Sequence[str], texts: Sequence[str], flags: Sequence[bool]) -> None:
        """Keep the texts of a decided page's template pagelets (``flags``)."""
        for path, text, flag in zip(paths, texts, flags, strict=True):
            if not flag or len(text) < MIN_CHARS or "/" not in path:
                continue
            last = self.last.get(path)
            if last == text:  # most pages: the text the last page had
                self.copies[path] += 1
                continue
            grown = len(text) - (len(last) if last is not None else 0)
            if self.chars + grown > self.max_chars:
                continue
            self.chars += grown
            if last is None:
                steps = path.split("/")
                for depth in range(max(1, len(steps) - DEPTH), len(steps)):
                    self.under.setdefault("/".join(steps[:depth]), set()).add(path)
            masked = _masked(text)
            same = self.texts.get(path) == masked
            self.last[path] = text
            self.texts[path] = masked
            self.copies[path] = self.copies.get(path, 0) + 1 if same else 1

    def cut(self, path: str, text: str) -> str:
        """``text`` (a content pagelet's at ``path``) without the template texts found at
        paths below it on other pages, each taken out where it stands as whole words."""
        below = self.under.get(path)
        if not below or len(text) < MIN_CHARS:
            return text
        masked = _masked(text)
        for inner in below:
            if self.copies[inner] < MIN_COPIES:
                continue
            template = self.texts[inner]
            at = masked.find(template)
            end = at + len(template)
            if at < 0 or (at and not masked[at - 1].isspace()):
                continue
            if end < len(masked) and not masked[end].isspace():
                continue
            text = (text[:at].rstrip() + " " + text[end:].lstrip()).strip()
            masked = _masked(text)
        return text
