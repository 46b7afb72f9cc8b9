from __future__ import annotations

from scrapy_templates.templates.pathcache import PathCache


def test_a_value_is_made_once_per_path() -> None:
    made: list[str] = []

    def make(path: str) -> str:
        made.append(path)
        return path.upper()

    cache = PathCache(1_000, make, len)
    assert cache("body/div") == "BODY/DIV"
    assert cache("body/div") == "BODY/DIV"
    assert made == ["body/div"]
    assert cache.chars == 16


def test_the_cache_is_emptied_before_it_holds_more_than_its_bound() -> None:
    cache = PathCache(100, str.upper, len)
    for n in range(50):
        path = f"body/div#n{n}"
        assert cache(path) == path.upper()
        assert cache.chars <= 100
        assert cache.chars == sum(len(k) + len(v) for k, v in cache.entries.items())
    assert 0 < len(cache.entries) < 50
