"""Words and letters of a block's text, as the block comparisons and the navigation test see
them: a word weighs by its letters (Webstemmer, ``001_…`` step 4), so digits weigh nothing."""

from __future__ import annotations

import re

WORD = re.compile(r"\w+")


def letters(text: str) -> int:
    """Letters in ``text``; digits, underscores and punctuation are not letters."""
    if text.isalpha():
        return len(text)
    return sum(c.isalpha() for c in text)
