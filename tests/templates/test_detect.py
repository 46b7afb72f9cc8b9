from __future__ import annotations

from scrapy_templates.templates.detect import global_templates, local_templates


def test_local_groups_pagelets_on_two_or_more_pages() -> None:
    pages = {"a": [1, 2], "b": [1, 3], "c": [1, 2, 4]}
    assert local_templates(pages) == {1: {"a", "b", "c"}, 2: {"a", "c"}}
    assert local_templates(pages, min_pages=3) == {1: {"a", "b", "c"}}


def test_global_splits_groups_by_link_connected_owners() -> None:
    # Fingerprint 1 is on four pages, but only a-b and c-d are linked: two templates.
    # Fingerprint 2 is on a and e which are not linked: an accidental match, not a template.
    pages = {"a": [1, 2], "b": [1], "c": [1], "d": [1], "e": [2]}
    links = {"a": ["b"], "d": ["c"], "e": ["x"]}
    result = global_templates(pages, links)
    assert sorted(map(sorted, result[1])) == [["a", "b"], ["c", "d"]]
    assert 2 not in result


def test_zero_fingerprint_is_never_grouped() -> None:
    assert local_templates({"a": [0], "b": [0]}) == {}
