from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from scrapy_templates.templates.text import letters


def test_letters_leave_out_digits_underscores_and_punctuation() -> None:
    assert letters("Page 12: the_end!") == 10
    assert letters("Überblick, ½ Seite ²") == 14
    assert letters("") == 0


@given(st.text())
def test_letters_are_the_characters_python_calls_alphabetic(text: str) -> None:
    assert letters(text) == sum(c.isalpha() for c in text)


@given(st.text(alphabet=st.characters(max_codepoint=127)))
def test_ascii_letters_are_counted_as_python_counts_them(text: str) -> None:
    assert letters(text) == sum(c.isalpha() for c in text)
