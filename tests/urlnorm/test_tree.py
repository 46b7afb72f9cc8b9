import math
import re
from collections import Counter

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_templates.urlnorm.tree import (
    ABSENT,
    MAX_DEPTH,
    Columns,
    _Builder,
    build_tree,
    entropy,
    is_identifier,
    salient_values,
)
from scrapy_templates.urlnorm.url import UrlKeys, split_url
from tests.urlnorm.url_sets import mirror_site


def test_entropy() -> None:
    assert entropy([5]) == 0
    assert math.isclose(entropy([1, 1]), math.log(2))


def test_salient_values_cut_at_the_largest_drop() -> None:
    counts = {"index": 500, "cfm": 400, **{f"id{i}": 1 for i in range(300)}}
    assert salient_values(counts, 0.05) == {"index", "cfm"}


def test_values_seen_once_are_trivial() -> None:
    assert salient_values({f"id{i}": 1 for i in range(50)}, 0.05) == set()


def test_equal_popular_values_are_all_salient() -> None:
    assert salient_values({"docs": 40, "blog": 40}, 0.05) == {"docs", "blog"}


def test_absent_is_always_salient() -> None:
    assert ABSENT in salient_values({ABSENT: 1, "x": 1}, 0.05)


def test_values_shaped_like_object_names_are_never_salient() -> None:
    """A repository browser's few commits are linked from every page: frequent, yet each
    names one object, never a section."""
    commits = {
        "3f786850e387550fdab836ed7e6dc881de23001b": 300,
        "a5a5ce8c31ba3fe8ee9aaf470ae1866788b6dbde": 290,
        "c056fc5053b2": 280,
    }
    assert salient_values({**commits, "blob": 300, "tree": 280}, 0.05) == {"blob", "tree"}
    assert salient_values({"c056fc5053b": 300, "blob": 300}, 0.05) == {"c056fc5053b", "blob"}
    assert is_identifier("123e4567-e89b-12d3-a456-426614174000")
    assert is_identifier("1700000000000")  # a millisecond timestamp
    assert not is_identifier("c056fc5053b")  # eleven digits: left to the frequency cut
    assert not is_identifier("blob_plain")
    assert not is_identifier("2024")


def _tree():
    urls, clusters = mirror_site()
    return urls, build_tree([split_url(u) for u in urls], clusters)


def test_figure_4_tree_separates_formats_and_generalises_ids() -> None:
    _urls, tree = _tree()
    globs = {tree.glob(n.id) for n in tree.nodes}
    assert "http://www.example.com/*/show.php?pageid=*&sid=*" in globs
    assert "http://www.example.com/*/*/display?sid=*" in globs
    # page ids repeat only inside their duplicate cluster: never a literal in a pattern
    for node in tree.nodes:
        assert "?pageid" not in node.fixed
        assert not any(v is not ABSENT and str(v).isdigit() for v in node.fixed.values())


def test_children_partition_their_parent() -> None:
    _, tree = _tree()
    for node in tree.nodes:
        kids = [*node.children.values(), *([node.wildcard] if node.wildcard is not None else [])]
        if kids:
            joined = np.sort(np.concatenate([tree.nodes[k].members for k in kids]))
            assert np.array_equal(joined, np.sort(node.members))


def test_members_match_their_node_regex_and_path() -> None:
    urls, tree = _tree()
    for i, url in enumerate(urls):
        leaf = int(tree.leaf_of[i])
        assert tree.match(split_url(url).as_dict())[-1] == leaf
        pattern = re.compile(tree.regex(leaf))
        # the regex follows the node example's key order, which every member here shares
        assert pattern.match(url), (url, tree.regex(leaf))


def test_unknown_url_stops_where_it_leaves_the_patterns() -> None:
    _, tree = _tree()
    assert tree.match(split_url("https://other.example/x").as_dict()) == []
    path = tree.match(split_url("http://www.example.com/x/y/z/w").as_dict())
    assert path == [0]


def test_a_pattern_of_a_query_written_with_semicolons_reads_as_a_url() -> None:
    """A lone search page among a repository browser's views is a node of its own whose
    keys are all generalised: its pattern keeps the ``;`` it is written with."""
    urls = [f"http://g.example/gitweb.cgi?p=r{i}.git;a=log" for i in range(40)]
    urls += [f"http://g.example/gitweb.cgi?a=opml{i}" for i in range(10)]
    urls.append("http://g.example/gitweb.cgi?p=r.git;a=search;s=Ann;st=author")
    tree = build_tree([split_url(u) for u in urls], list(range(51)))
    globs = [tree.glob(n.id) for n in tree.nodes]
    assert "http://g.example/gitweb.cgi?p=*;a=*;s=*;st=*" in globs


def test_a_parameter_name_per_page_grows_the_tree_no_deeper_than_the_limit() -> None:
    """``/item?1234``: each URL's query is a key of its own, present in that URL alone; split
    on one key after the other, the tree was a chain as long as the site."""
    urls = [f"http://h.example/item?{1000 + i}" for i in range(3 * MAX_DEPTH)]
    tree = build_tree([split_url(u) for u in urls])
    assert max(len(tree.ancestors(n.id)) for n in tree.nodes) - 1 == MAX_DEPTH
    for i, url in enumerate(urls):
        assert tree.match(split_url(url).as_dict())[-1] == tree.leaf_of[i]
    bottom = tree.nodes[int(tree.leaf_of[-1])]
    assert bottom.volume == len(urls) - MAX_DEPTH
    assert bottom.optional == {f"?{1000 + i}" for i in range(MAX_DEPTH, len(urls))}
    # a column over all URLs is made for the keys split on, not for every key: one per
    # key is quadratic in the URLs
    assert len(tree.columns._columns) <= MAX_DEPTH + 4 < len(tree.columns.names)


_KEYS = ["path_0", "path_1", "?a", "?b", "?c"]
_url_keys = st.dictionaries(st.sampled_from(_KEYS), st.sampled_from(["x", "y", "z", None]))


def _lowest_by_counting(
    urls: list[dict[str, str | None]], members: list[int], done: set[str]
) -> tuple[str, set[object]] | None:
    """The key of lowest entropy over ``members`` measured key by key (ties by name), and
    its values: the definition the builder's measure of all keys at once must meet."""
    best: tuple[float, str, set[object]] | None = None
    for key in sorted({k for i in members for k in urls[i]} - done):
        counts = Counter(urls[i].get(key, ABSENT) for i in members)
        h = entropy(sorted(counts.values()))
        if best is None or (h, key) < (best[0], best[1]):
            best = (h, key, set(counts))
    return None if best is None else (best[1], best[2])


@settings(max_examples=400, deadline=None)
@given(
    st.lists(_url_keys, min_size=1, max_size=30),
    st.data(),
)
def test_the_lowest_entropy_key_is_the_one_counted_key_by_key(
    urls: list[dict[str, str | None]], data: st.DataObject
) -> None:
    members = sorted(
        data.draw(st.sets(st.integers(0, len(urls) - 1), min_size=1, max_size=len(urls)))
    )
    done = data.draw(st.sets(st.sampled_from(_KEYS)))
    keys = [UrlKeys(tuple(u.items())) for u in urls]
    cols = Columns(keys)
    builder = _Builder(cols, np.arange(len(urls)), 0.05, 0.5, np.arange(len(urls)))
    found = builder._lowest_entropy_key(np.asarray(members), frozenset(done))
    expected = _lowest_by_counting(urls, members, done)
    if expected is None:
        assert found is None
    else:
        assert found is not None
        assert (found[0], {cols.tokens[v] for v in found[1].tolist()}) == expected
        column = cols.column(found[0])
        assert [cols.tokens[v] for v in column.tolist()] == [u.get(found[0], ABSENT) for u in urls]
