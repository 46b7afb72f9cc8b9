"""The page text, compiled or not, gives the bytes of two regular expressions over the body
(hidden elements and comments, then tags) on any body, in time linear in it."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_templates.compiled import compiled
from scrapy_templates.urlnorm import samples
from scrapy_templates.urlnorm.samples import python_page_text

_twin = compiled("urlnorm._pagetext")
assert _twin is not None, "the suite runs on a build with the compiled twins"
page_text = _twin.page_text

# the definition: what a reader never sees, then every tag (quadratic on unclosed openings)
_HIDDEN = re.compile(
    rb"<(script|style|noscript|template)\b.*?</\1\s*>|<!--.*?-->", re.IGNORECASE | re.DOTALL
)
_TAG = re.compile(rb"<[^>]*>")


def defined_text(body: bytes) -> bytes:
    return b" ".join(_TAG.sub(b" ", _HIDDEN.sub(b" ", body)).split())


# pieces that make the patterns' edge cases likely: openings with and without a word
# boundary, closings in other letter cases and with spaces, comments, stray brackets, every
# kind of ASCII whitespace and a control byte that is none
_PIECES = [
    "<script>",
    "<SCRIPT type=x>",
    "<scripts>",
    "<script",
    "</script>",
    "</Script \n>",
    "</script x>",
    "<style>",
    "</STYLE>",
    "<noscript>",
    "</noscript\t>",
    "<template>",
    "</template>",
    "<!--",
    "-->",
    "--",
    "<!-->",
    "<",
    ">",
    "<p>",
    "</p>",
    "<a href='x>y'>",
    "word",
    "Wörd",
    " ",
    "\t",
    "\n",
    "\r",
    "\x0b",
    "\x0c",
    "\x1c",
    "_",
    "9",
]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=30))
def test_any_body_gives_the_bytes_of_the_patterns(pieces: list[str]) -> None:
    body = "".join(pieces).encode()
    assert page_text(body) == python_page_text(body) == defined_text(body)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes_give_the_bytes_of_the_patterns(body: bytes) -> None:
    assert page_text(body) == python_page_text(body) == defined_text(body)


@pytest.mark.parametrize(
    ("body", "text"),
    [
        (b"<p>One</p>\n<p>two  three</p>", b"One two three"),
        (b"a<script>var x = '<p>no</p>';</script>b", b"a b"),
        (b"a<SCRIPT>x</script >b", b"a b"),  # the closing in another case, with a space
        (b"a<scripts>x</scripts>b", b"a x b"),  # no element of the four: tags only
        (b"a<script>x", b"a x"),  # never closed: the opening is a tag, the rest is text
        (b"a<!-- c -->b<!-->c", b"a b c"),  # "<!-->" ends no comment: it is a tag
        (b"<a <!-- x --> b>c", b"c"),  # a comment inside a tag goes first
        (b"\x1cx\x0by", b"\x1cx y"),  # \x1c is no ASCII whitespace, \x0b is
        (b"", b""),
        (b" \t\n", b""),
    ],
)
def test_cases_of_the_patterns(body: bytes, text: bytes) -> None:
    assert page_text(body) == python_page_text(body) == defined_text(body) == text


def test_many_unclosed_openings_keep_the_text_between_them() -> None:
    # the patterns take about a minute on this body (each opening searches to the end)
    body = b"<script>x " * 20_000 + b"<!-- y " * 20_000 + b"<p " * 20_000 + b"end"
    text = b" ".join([b"x"] * 20_000 + [b"<!-- y"] * 20_000 + [b"<p"] * 20_000 + [b"end"])
    assert page_text(body) == python_page_text(body) == text


def test_page_hash_reads_the_compiled_text_when_built() -> None:
    assert samples.page_text is page_text


def test_a_body_that_is_no_bytes_is_refused() -> None:
    with pytest.raises(TypeError):
        page_text(None)
