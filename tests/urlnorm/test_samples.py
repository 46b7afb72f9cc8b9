"""URL samples: the stored form (compact, and exactly what was sampled), the canonical link
of a page's head, the content hash."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_templates.urlnorm.clusters import Sample
from scrapy_templates.urlnorm.samples import (
    canonical_link,
    content_hash,
    decode_sample,
    encode_sample,
    head_canonical,
    page_hash,
)
from tests.mutations import mutated_json

_hex = st.text("0123456789abcdef", min_size=16, max_size=16)
_urls = st.sampled_from(
    ["http://h.test:8080/a?b=1", "https://h.test:8080/x/", "http://other.test/p", "ftp://h/x"]
)


@given(
    url=_urls,
    simhash=st.none() | st.integers(0, 2**64 - 1),
    text_hash=st.none() | _hex,
    page_hash=st.none() | _hex,
    canonical=st.none() | _urls,
    redirects=st.lists(_urls, max_size=2).map(tuple),
)
def test_samples_round_trip(
    url: str,
    simhash: int | None,
    text_hash: str | None,
    page_hash: str | None,
    canonical: str | None,
    redirects: tuple[str, ...],
) -> None:
    sample = Sample(url, simhash, text_hash, page_hash, canonical, redirects)
    assert decode_sample("h.test:8080", encode_sample("h.test:8080", sample)) == sample


def test_stored_form_is_compact_and_old_objects_still_read() -> None:
    sample = Sample("https://h.test/docs/a.html", page_hash="ffd43f649cd72a3c")
    stored = encode_sample("h.test", sample)
    assert stored == '["s/docs/a.html",null,null,"ffd43f649cd72a3c"]'
    assert len(stored) < len(sample.to_json()) * 0.7
    assert decode_sample("h.test", sample.to_json()) == sample


@pytest.mark.parametrize(
    "bad",
    [
        "[]",
        "[1]",
        '"x"',
        '["/a",null,null,null,null,null,"x"]',
        "{",
        "[" * 100_000,  # nesting that overflows the parser
        '["/a","' + "f" * 100_000 + '"]',  # longer than a sample can be
        '["/a","1ffffffffffffffff"]',  # a simhash of more than 64 bits
        '{"url": "/a", "simhash": true}',
        '["/a",1e400]',
    ],
)
def test_foreign_values_are_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        decode_sample("h.test", bad)


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (b'<link rel="canonical" href="/x">', "http://h.example/x"),
        (
            b"<LINK REL='Canonical' HREF='http://h.example/y?a=1&amp;b=2'>",
            "http://h.example/y?a=1&b=2",
        ),
        (b'<link href="/z" rel="canonical">', "http://h.example/z"),
        (b'<link rel="stylesheet" href="/s.css">', None),
    ],
)
def test_head_canonical(head: bytes, expected: str | None) -> None:
    assert head_canonical(b"<html><head>" + head + b"</head>", "http://h.example/p") == expected


# the definition of the canonical link tag (it backtracks over every ``rel`` of an unclosed tag)
_CANONICAL = re.compile(
    rb"""<link\b[^>]*\brel\s*=\s*["']?[^"'>]*\bcanonical\b[^>]*>""", re.IGNORECASE
)
_HEAD_PIECES = [
    *(b"<link", b"<LINK", b"<links", b" rel", b"rel", b"REL", b"=", b" = ", b'"', b"'"),
    *(b">", b"canonical", b"Canonical", b"canonicals", b"xcanonical", b"-canonical", b" "),
    *(b"\t", b"href=", b"/x", b"stylesheet", b"_", b"<", b"\n"),
]


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(_HEAD_PIECES), max_size=25), st.data())
def test_the_canonical_link_is_the_one_its_pattern_finds(
    pieces: list[bytes], data: st.DataObject
) -> None:
    head = b"".join(pieces)
    end = data.draw(st.integers(0, len(head)))
    for window in (end, len(head)):
        match = _CANONICAL.search(head, 0, window)
        assert canonical_link(head, window) == (None if match is None else match.group(0))


@pytest.mark.parametrize(
    "head",
    [
        b"<link rel=stylesheet " * 1000,  # minutes for the pattern
        b'<link rel="x ' * 1000,
        b"<link " + b"rel=x " * 3000,
    ],
    ids=["stylesheets", "open quotes", "many rels"],
)
def test_a_head_of_unclosed_links_is_read_in_one_scan(head: bytes) -> None:
    assert head_canonical(head, "http://h.example/") is None
    # the unclosed tags end where the canonical link does: the first of them holds its rel
    found = head_canonical(head + b'<link rel=canonical href="/c">', "http://h.example/")
    assert found == "http://h.example/c"


def test_short_content_has_no_hash_and_equal_content_one_hash() -> None:
    assert content_hash("too short") is None
    text = "A page's own words, long enough to tell it from any other page."
    assert content_hash(text) == content_hash(str(text))
    assert content_hash(text) != content_hash(text + "!")


def test_page_hash_reads_the_text_not_the_markup() -> None:
    said = "The harbour council met on Tuesday to discuss ferries."

    def page(sid: str, words: str = said) -> bytes:
        return (
            f'<html><head><script>var sid="{sid}";</script><style>a{{}}</style></head><body>'
            f'<!-- served for {sid} --><nav><a href="/?sid={sid}">Home</a></nav>'
            f"<p class='{sid}'>{words}</p></body></html>"
        ).encode()

    limit = 5_000_000
    assert page_hash(page("a1"), limit) == page_hash(page("b2"), limit)  # ids in attributes
    assert page_hash(page("a1"), limit) != page_hash(
        page("a1", "The harbour council met on Monday."), limit
    )
    assert page_hash(b"<html><body><p>Loading</p></body></html>", limit) is None


def test_the_page_hash_reads_the_first_bytes_of_a_page_only() -> None:
    head = b"<html><body><p>" + b"The harbour council met on Tuesday. " * 10
    limit = len(head)
    assert page_hash(head + b"More.</p></body></html>", limit) == page_hash(
        head + b"Other words.</p></body></html>", limit
    )
    assert page_hash(head + b"More.", limit + 5) != page_hash(head + b"Other", limit + 5)


_STORED = encode_sample(
    "h.test",
    Sample(
        "http://h.test/a?b=1",
        0x1234,
        text_hash="ab",
        page_hash="cd",
        canonical="http://h.test/a",
        redirects=("http://h.test/r",),
    ),
)


@settings(max_examples=300)
@given(st.one_of(mutated_json(_STORED), st.text(max_size=100)))
def test_any_stored_sample_decodes_or_is_refused_with_a_value_error(text: str) -> None:
    try:
        sample = decode_sample("h.test", text)
    except ValueError:
        return
    assert decode_sample("h.test", encode_sample("h.test", sample)) == sample
