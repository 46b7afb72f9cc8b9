"""Template blocks merged into a pagelet of a page too link-poor to be split there.

The partition of ``000_…`` §3.1 splits an element only where it holds enough links, so a short
page keeps its whole content column as one pagelet: "‹title› Version 8.5 Copyright © 1997-2026
Ericsson AB", "Caution: Python 2.7 is no longer supported. ‹the page's few lines›". On the
site's longer pages the same column is split, and its footer or its standing caution is a
pagelet of its own, flagged template. Aligning blocks across pages by their tag path, as
Webstemmer does (``001_…`` step 1), says what the short page's pagelet holds: the footer's
text at the footer's path. :class:`InnerTemplates` keeps, per site, the text of each template
pagelet by the paths above it, and :meth:`InnerTemplates.cut` takes that text out of a
content pagelet at one of those paths. Paths leave element ids out, as layout blocks do (a
texinfo node's or a Sphinx section's id names one page). Digits are compared as one digit, as
the number-blind pattern of a pagelet is (a copyright's years change from page to page).

Texts are known by their words alone, punctuation aside (each application of a manual signs
its footer "Ericsson AB. All Rights Reserved." or "Ericsson AB, All Rights Reserved": one
text), and cut wherever those words stand in a row with nothing but punctuation and white
space between them. A path's template may still come in a few wordings: each path keeps up to
:data:`VARIANTS` of them, each with its own count, so that alternating wordings do not start
each other's count again.

Bounded: a site keeps template texts of ``max_chars`` characters in all (number-blind); when a
new text does not fit, paths whose texts were each flagged fewer than :data:`MIN_COPIES` times
make room, oldest first.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from scrapy_templates.page import HIDDEN_MIN_CHARS
from scrapy_templates.templates.repeats import RepeatCache
from scrapy_templates.templates.variability import path_without_ids

# How far above a template pagelet its text is looked for: a footer inside the content
# column of a page inside a grid is a few steps below the pagelet that swallowed it.
DEPTH = 4
# Shorter template texts are left where they are: a heading's word or two ("Exports") may
# well be the page's own (the shortest edge block counted inside an unsplit pagelet, too).
MIN_CHARS = HIDDEN_MIN_CHARS
# A template text is looked for once it was flagged this many times at its path
# (number-blind): one page's flag is no habit of the site.
MIN_COPIES = 3
# Wordings kept per path; a new one takes the place of the one flagged least, unless every
# wording kept is a habit (flagged MIN_COPIES times).
VARIANTS = 4

_DIGIT = re.compile(r"\d")
_WORD = re.compile(r"\w+")


def _masked(text: str) -> str:
    """The words of ``text``, digits (of any script) as 0, one space apart: how a template
    text is known."""
    return " ".join(_WORD.findall(_DIGIT.sub("0", text)))


# template texts come back on every page that is learned from
_template_masked = RepeatCache[str, str](1_000_000, _masked, len, len)


@dataclass
class InnerTemplates:
    """A site's template pagelet texts, by the paths of the elements that hold them."""

    max_chars: int = 32_000
    chars: int = 0
    # path → number-blind text → times flagged; oldest path first
    texts: dict[str, dict[str, int]] = field(default_factory=dict)
    under: dict[str, set[str]] = field(default_factory=dict)

    def learn(self, paths: Sequence[str], texts: Sequence[str], flags: Sequence[bool]) -> None:
        """Keep the texts of a decided page's template pagelets (``flags``)."""
        for path, text, flag in zip(paths, texts, flags, strict=True):
            if not flag or len(text) < MIN_CHARS or "/" not in path:
                continue
            if "#" in path:
                path = path_without_ids(path)
            masked = _template_masked(text)
            if len(masked) < MIN_CHARS:  # mostly punctuation ("» » Home » »")
                continue
            wordings = self.texts.get(path)
            if wordings is not None and masked in wordings:
                wordings[masked] += 1
                continue
            rarest = None
            if wordings is not None and len(wordings) >= VARIANTS:
                passing = [t for t, n in wordings.items() if n < MIN_COPIES]
                if not passing:  # every wording kept is a habit: the new one is not
                    continue
                rarest = min(passing, key=wordings.__getitem__)
            needed = len(masked) - (len(rarest) if rarest is not None else 0)
            if self.chars + needed > self.max_chars and not self._make_room(needed, path):
                continue
            if wordings is None:
                wordings = self.texts[path] = {}
                steps = path.split("/")
                for depth in range(max(1, len(steps) - DEPTH), len(steps)):
                    self.under.setdefault("/".join(steps[:depth]), set()).add(path)
            if rarest is not None:
                del wordings[rarest]
            wordings[masked] = 1
            self.chars += needed

    def _make_room(self, needed: int, keep: str) -> bool:
        """Forget paths none of whose texts was flagged :data:`MIN_COPIES` times, oldest
        first, until ``needed`` more characters fit; whether they do."""
        passing = [p for p, w in self.texts.items() if p != keep and max(w.values()) < MIN_COPIES]
        for path in passing:
            if self.chars + needed <= self.max_chars:
                break
            self.chars -= sum(map(len, self.texts.pop(path)))
            steps = path.split("/")
            for depth in range(max(1, len(steps) - DEPTH), len(steps)):
                above = "/".join(steps[:depth])
                held = self.under.get(above)
                if held is not None:
                    held.discard(path)
                    if not held:
                        del self.under[above]
        return self.chars + needed <= self.max_chars

    def cut(self, path: str, text: str) -> str:
        """``text`` (a content pagelet's at ``path``) without the template texts found at
        paths below it on other pages, longest first, each taken out wherever it stands as
        whole words."""
        if "#" in path:
            path = path_without_ids(path)
        below = self.under.get(path)
        if not below or len(text) < MIN_CHARS:
            return text
        found = [t for p in below for t, n in self.texts[p].items() if n >= MIN_COPIES]
        masked = None
        for template in sorted(found, key=lambda t: (-len(t), t)):
            if _telling_word(template) not in text:
                continue
            if masked is None:
                masked = _masked(text)
            cut = _cut_words(text, masked, template)
            if cut is not text:
                text, masked = cut, None
        return text


@functools.lru_cache(maxsize=4096)
def _telling_word(template: str) -> str:
    """The template's longest word without a digit (any text holding the template holds
    it as it stands): the quick test that passes over most content pagelets."""
    return max((word for word in template.split(" ") if "0" not in word), key=len, default="")


def _word_char(char: str) -> bool:
    return char.isalnum() or char == "_"


def _cut_words(text: str, masked: str, template: str) -> str:
    """``text`` without each whole-word occurrence of ``template`` (its :func:`_masked`
    words; ``masked`` is the text's): the words in a row with anything but letters and
    digits between them, standing between white space or the text's ends, taken out with
    the punctuation that clings to them and one mark standing apart at either end ("©
    2002-2026 …", "… Home |"). Leftmost occurrences first, none overlapping, as a regular
    expression's search would take them; linear in the text and the template, so a long
    content column of repeated words costs no more than any other (an expression tried
    from every word took seconds there)."""
    if f" {template} " not in f" {masked} ":
        return text
    spans = [found.span() for found in _WORD.finditer(text)]
    kept: list[str] = []
    done = 0  # where the text not yet taken out starts
    for first, last in _occurrences(masked.split(" "), template.split(" ")):
        start = _start(text, spans[first][0], done)
        stop = _stop(text, spans[last][1])
        if start is None or stop is None:
            continue
        kept.append(text[done:start])
        done = stop
    if not kept:
        return text
    kept.append(text[done:])
    return " ".join(part.strip() for part in kept if part.strip())


def _start(text: str, word: int, done: int) -> int | None:
    """Where a cut of the words starting at ``word`` starts, at or after ``done``: after
    white space (or at the text's start), over the marks clinging to the first word and one
    run of marks standing apart before it; None when the word follows a letter or digit
    through marks alone, or every such start lies before ``done``."""
    clinging = word
    while clinging > 0 and not text[clinging - 1].isspace() and not _word_char(text[clinging - 1]):
        clinging -= 1
    if clinging > 0 and not text[clinging - 1].isspace():
        return None
    apart = clinging
    while apart > 0 and text[apart - 1].isspace():
        apart -= 1
    space = apart
    while apart > 0 and not text[apart - 1].isspace() and not _word_char(text[apart - 1]):
        apart -= 1
    if apart < space and apart >= done and (apart == 0 or text[apart - 1].isspace()):
        return apart
    return clinging if clinging >= done else None


def _stop(text: str, word: int) -> int | None:
    """Where a cut of words ending at ``word`` stops: over the marks clinging to the last
    word, and one run of marks standing apart after white space when white space or the
    text's end follows it; None when a letter or digit follows through marks alone."""
    end = len(text)
    clinging = word
    while clinging < end and not text[clinging].isspace() and not _word_char(text[clinging]):
        clinging += 1
    if clinging == end:
        return end
    if not text[clinging].isspace():
        return None
    space = clinging
    while space < end and text[space].isspace():
        space += 1
    apart = space
    while apart < end and not text[apart].isspace() and not _word_char(text[apart]):
        apart += 1
    if apart > space and (apart == end or text[apart].isspace()):
        return apart
    return clinging


def _occurrences(words: list[str], template: list[str]) -> list[tuple[int, int]]:
    """The first and last index of every run of ``words`` equal to ``template``, overlapping
    runs included, in order (Knuth–Morris–Pratt: one pass over each)."""
    fallback = [0] * len(template)
    matched = 0
    for at in range(1, len(template)):
        while matched and template[at] != template[matched]:
            matched = fallback[matched - 1]
        if template[at] == template[matched]:
            matched += 1
        fallback[at] = matched
    found = []
    matched = 0
    for at, word in enumerate(words):
        while matched and word != template[matched]:
            matched = fallback[matched - 1]
        if word == template[matched]:
            matched += 1
            if matched == len(template):
                found.append((at - matched + 1, at))
                matched = fallback[matched - 1]
    return found
