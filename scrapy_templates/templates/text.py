"""Words and letters of a block's text, as the block comparisons and the navigation test see
them: a word weighs by its letters (Webstemmer, ``001_…`` step 4), so digits weigh nothing."""

from __future__ import annotations

import re

WORD = re.compile(r"\w+")


_ASCII_NON_LETTERS = bytes(i for i in range(128) if not chr(i).isalpha())


def letters(text: str) -> int:
    """Letters in ``text`` (``str.isalpha``); digits, underscores and punctuation are not
    letters. ASCII text is counted by deleting its other bytes, twenty times faster than
    testing character by character: the navigation test counts every block's letters."""
    if text.isascii():
        return len(text.encode("ascii").translate(None, _ASCII_NON_LETTERS))
    return sum(map(str.isalpha, text))
