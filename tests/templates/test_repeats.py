from __future__ import annotations

from scrapy_templates.templates.repeats import STRING_OVERHEAD, RepeatCache, strings_size


def test_a_value_is_made_once_per_path() -> None:
    made: list[str] = []

    def make(path: str) -> str:
        made.append(path)
        return path.upper()

    cache = RepeatCache(1_000, make, len, len)
    assert cache("body/div") == "BODY/DIV"
    assert cache("body/div") == "BODY/DIV"
    assert made == ["body/div"]
    assert cache.chars == 16


def test_the_cache_is_emptied_before_it_holds_more_than_its_bound() -> None:
    cache = RepeatCache(100, str.upper, len, len)
    for n in range(50):
        path = f"body/div#n{n}"
        assert cache(path) == path.upper()
        assert cache.chars <= 100
        assert cache.chars == sum(len(k) + len(v) for k, v in cache.entries.items())
    assert 0 < len(cache.entries) < 50


def test_a_none_value_is_kept_like_any_other() -> None:
    made: list[str] = []

    def make(path: str) -> str | None:
        made.append(path)
        return None

    cache = RepeatCache(1_000, make, lambda found: 0, len)
    assert cache("body/p") is None
    assert cache("body/p") is None
    assert made == ["body/p"]


def test_keys_of_any_hashable_kind_are_sized_by_their_own_measure() -> None:
    cache = RepeatCache(1_000, lambda key: sum(map(len, key)), lambda found: 0, lambda k: 7)
    assert cache(("ab", "cde")) == 5
    assert cache.chars == 7


def test_many_short_strings_are_sized_by_their_objects_too() -> None:
    links = ("/a", "/b", "/c")
    assert strings_size(links) == 6 + 3 * STRING_OVERHEAD
    assert strings_size(()) == 0


def test_an_entry_larger_than_the_bound_is_made_but_not_kept() -> None:
    cache = RepeatCache(100, str.upper, len, len)
    assert cache("body/p") == "BODY/P"
    huge = "x" * 80
    assert cache(huge) == huge.upper()
    assert huge not in cache.entries and "body/p" in cache.entries
    assert cache.chars == 12
