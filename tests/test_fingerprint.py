from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from simhash import Simhash

from scrapy_templates import fingerprint_numpy
from scrapy_templates.compiled import compiled
from scrapy_templates.fingerprint import (
    TextFingerprints,
    hamming,
    normalise,
    simhash,
    text_fingerprints,
)
from scrapy_templates.fingerprint_numpy import numpy_fingerprints


def test_fingerprint_ignores_case_space_and_punctuation_but_not_digits() -> None:
    fps = text_fingerprints(
        [
            "© 2026 Acme Inc.  All rights reserved",
            "2026 ACME inc. all\nRIGHTS reserved!",
            "© 2026 Acme Ltd.",
            "SQLite Release 3.0.2",
        ]
    )
    a, b, c, d = fps.exact
    assert a == b
    assert a != c
    assert d != text_fingerprints(["SQLite Release 3.0.3"]).exact[0]


def test_number_blind_pattern_joins_dated_variants_only() -> None:
    fps = text_fingerprints(
        [
            "Last updated 2024-05-31 00:35",
            "Last updated 2024-06-02 11:10",
            "Last updated",
            "Last updated 7",
        ]
    )
    exact, patterns = fps.exact, fps.patterns
    assert exact[0] != exact[1]
    assert patterns[0] == patterns[1] == patterns[3] != 0
    assert patterns[2] == 0  # no digits: the exact fingerprint says it all
    assert patterns[0] != exact[2]  # patterns and exact fingerprints never collide


def test_fingerprint_zero_for_text_without_letters() -> None:
    assert text_fingerprints(["", "  ", "— ·", "12"]).exact[:3] == [0, 0, 0]
    assert text_fingerprints(["word"]).exact[0] != 0


def test_batch_equals_one_by_one() -> None:
    texts = ["Home | About", "", "Ünïcödé text 𝐀𝐁", "Last updated 2024-01-01"]
    fps = text_fingerprints(texts)
    assert fps.exact == [text_fingerprints([t]).exact[0] for t in texts]
    assert fps.patterns == [text_fingerprints([t]).patterns[0] for t in texts]


@pytest.mark.parametrize(
    "texts",
    [["Home", "News about the river", "© 2026"], ["日本語", "テキスト"], ["𝐀𝐁𝐂 astral", "x"], [""]],
)
def test_batch_simhash_equals_simhash_of_joined_text(texts: list[str]) -> None:
    assert text_fingerprints(texts).simhash == simhash("\n".join(texts))


def test_normalise_keeps_letters_only() -> None:
    assert normalise("Page 3 of 10 — Next »") == "page3of10next"


def test_near_duplicates_are_close_and_different_texts_far() -> None:
    base = " ".join(f"word{i} lorem ipsum dolor sit amet" for i in range(60))
    near = base.replace("word7", "word7x")
    other = " ".join(f"other{i} consectetur adipiscing elit" for i in range(60))
    assert hamming(simhash(base), simhash(near)) <= 3
    assert hamming(simhash(base), simhash(other)) > 10


def test_no_texts_at_all() -> None:
    fps = text_fingerprints([])
    assert (fps.exact, fps.patterns) == ([], [])
    assert fps.simhash == simhash("")


_ANY_TEXT = st.text(
    alphabet=st.one_of(
        st.sampled_from(list("aZ9 .\n\xa0İßǅ٣½²日本𝔘😀_-")), st.characters(codec="utf-8")
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_ANY_TEXT, max_size=8))
def test_compiled_fingerprints_equal_numpy_ones(texts: list[str]) -> None:
    compiled_ = text_fingerprints(texts)
    lowered = "".join(texts).lower()
    lengths = [len(t.lower()) for t in texts]
    assert compiled_ == TextFingerprints(*numpy_fingerprints(lowered, lengths))


def test_the_compiled_tables_equal_the_numpy_paths() -> None:
    # Built from the Unicode database in C and from regular expressions: one notion of a letter.
    twin = compiled("_fingerprint")
    assert twin is not None
    alpha, digit, letter = twin.tables()
    assert alpha == fingerprint_numpy._IS_ALPHA.tobytes()
    assert digit == fingerprint_numpy._IS_DIGIT.tobytes()
    assert letter == fingerprint_numpy._IS_SIMHASH_LETTER.tobytes()


@pytest.mark.parametrize(
    "text",
    [
        "abcd efgh",  # one byte of UTF-8 each
        "ßäöü éèêë ñçåø",  # two
        "日本語のテキスト 中文 한국어",  # three
        "aßc日 ßa日c 日日ßz",  # mixed within a window
        "_x_y_z",  # "_" is a letter of the simhash package's, not of the fingerprints'
        "\u4e00\u9fcc\u9fcd\u3400",  # CJK ideographs at and past the package's own range
        "",  # no window: the package hashes the letters there are, none here
        "OK",
        "abc",
        "smile 😀 here",  # an emoji is no letter, whatever its plane
    ],
)
def test_compiled_window_hashes_equal_the_package_for_every_utf8_length(text: str) -> None:
    # Each word makes windows that no other test hashed, so their md5 is computed here.
    assert text_fingerprints([text]).simhash == Simhash(text).value


def test_pages_without_letters_beyond_the_bmp_need_no_numpy() -> None:
    # A parse worker starts without numpy: short pages and emoji must not load it mid-crawl.
    script = (
        "import sys\n"
        "from scrapy_templates.fingerprint import text_fingerprints\n"
        "for texts in ([], [''], ['OK'], ['smile 😀'], ['Home', 'A longer text']):\n"
        "    text_fingerprints(texts)\n"
        "print('numpy' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.split() == ["False"]


def test_compiled_simhash_on_a_long_page_equals_the_package() -> None:
    # Thousands of distinct windows: the page table grows, most window hashes are new.
    words = [f"w{chr(0x61 + i % 26)}{chr(0x61 + i // 26 % 26)}x{i}" for i in range(3000)]
    text = " ".join(words)
    assert text_fingerprints([text[:5000], text[5000:]]).simhash == Simhash(text).value


def test_lowercasing_that_lengthens_a_text_keeps_each_fingerprint_its_own() -> None:
    # "İ".lower() is two code points: the texts after it must not shift.
    fps = text_fingerprints(["İİİ", "Menu", "Menu"])
    assert fps.exact[1] == fps.exact[2] == text_fingerprints(["Menu"]).exact[0]


def test_threads_hashing_at_once_get_each_their_own_values() -> None:
    # The compiled pass keeps its tables in the module; threads must not mix their pages.
    from concurrent.futures import ThreadPoolExecutor

    pages = [[f"page {i} " + " ".join(f"w{i}x{j}" for j in range(300))] for i in range(40)]
    expected = [TextFingerprints(*numpy_fingerprints(t[0].lower(), [len(t[0])])) for t in pages]
    with ThreadPoolExecutor(8) as pool:
        for _ in range(5):
            assert list(pool.map(text_fingerprints, pages)) == expected
