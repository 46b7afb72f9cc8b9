import dataclasses
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_templates.urlnorm import rules as rules_module
from scrapy_templates.urlnorm.learn import learn_rules
from scrapy_templates.urlnorm.rules import MAX_DEPTH, MAX_EXAMPLES, Op, RuleSet, RuleSetError
from scrapy_templates.urlnorm.url import split_url
from tests.mutations import mutated_json
from tests.urlnorm.url_sets import listing_site, mirror_site, query_site

_MIRROR = learn_rules(*mirror_site(), site="www.example.com").ruleset
_QUERY = learn_rules(*query_site(), site="q.example").ruleset
_LISTING = learn_rules(*listing_site(), site="l.example").ruleset


def test_json_round_trip_keeps_behaviour() -> None:
    urls, _ = mirror_site()
    loaded = RuleSet.loads(_MIRROR.dumps())
    assert loaded.dumps() == _MIRROR.dumps()
    assert [loaded.apply(u) for u in urls] == [_MIRROR.apply(u) for u in urls]


def test_explain_names_the_rule() -> None:
    url = "http://www.example.com/archive2/17/display?sid=abc"
    explained = _MIRROR.explain(url)
    assert explained.result == _MIRROR.apply(url) != url
    assert explained.rule is not None and explained.reason == "rewritten"
    assert _MIRROR.explain("http://www.example.com/about").reason == "no rule for this pattern"


def test_describe_rules_lists_what_each_rule_changes() -> None:
    [row] = _QUERY.describe_rules()
    assert row["source"] == "http://q.example/page?k1=a&k2=*&k3=*&k4=c&k5=*"
    assert row["changes"] == ["drop ?k3", "drop ?k5"]  # not the keys the rule leaves alone
    assert "?k2 := ?k2" in row["operations"] and row["chain"] == 1
    before, after = row["example"]
    assert _QUERY.apply(before) == after


def test_describe_rules_follows_a_chain_and_names_each_change_once() -> None:
    rows = {row["source"]: row for row in _MIRROR.describe_rules()}
    chained = rows["http://www.example.com/*/show.php?pageid=*&sid=*"]
    assert chained["chain"] == 2
    assert chained["changes"] == [
        "ignore path_0 (use 'archive1')",
        "path_1 := ?pageid",
        "keep path_2='display'",
        "drop ?sid",
        "drop ?pageid",
        "drop ext",
    ]
    supports = [row["support"] for row in _MIRROR.describe_rules()]
    assert supports == sorted(supports, reverse=True)


def test_a_pinned_rule_applies_to_its_value_and_its_fallback_to_the_others() -> None:
    first = _LISTING.explain("http://l.example/category/c1/?page=1&sid=7")
    later = _LISTING.explain("http://l.example/category/c1/?page=2&sid=7")
    assert first.rule is not None and first.rule.when == (("?page", "1"),)
    assert first.result == "http://l.example/category/c1/?sort=date"
    assert later.rule is not None and later.rule is first.rule.fallback
    assert later.result == "http://l.example/category/c1/?page=2"
    # a parameter dropped for one value only is not one the site adds at will
    assert "?sid" in _LISTING.dropped_query_keys
    assert "?page" not in _LISTING.dropped_query_keys


def test_json_round_trip_keeps_a_pinned_rule_and_its_fallback() -> None:
    urls, _ = listing_site()
    urls += ["http://l.example/category/c1/?page=5&sid=1", "http://l.example/category/c1/"]
    loaded = RuleSet.loads(_LISTING.dumps())
    assert loaded.dumps() == _LISTING.dumps()
    assert [loaded.apply(u) for u in urls] == [_LISTING.apply(u) for u in urls]


def test_describe_rules_says_which_value_a_rule_is_pinned_to() -> None:
    changes = [row["changes"] for row in _LISTING.describe_rules()]
    assert ["only where ?page='1'", "keep ?sort='date'", "drop ?page", "drop ?sid"] in changes
    assert ["drop ?sid"] in changes  # the fallback, a row of its own


def _tampered(change, ruleset: RuleSet = _MIRROR) -> str:
    data = json.loads(ruleset.dumps())
    change(data)
    return json.dumps(data)


def test_behaviour_ignores_evidence_and_version_but_not_operations() -> None:
    def evidence(data: dict) -> None:
        data["version"] += 7
        data["learned_from"] = 999
        for node in data["nodes"]:
            node["dup_rate"] = 0.25
        for rule in data["rules"]:
            rule["support"] += 3
            rule["fpr"] = 0.01
            if rule.get("fallback"):
                rule["fallback"]["support"] += 1

    assert RuleSet.loads(_tampered(evidence, _LISTING)).behaves_like(_LISTING)

    def fallback_op(data: dict) -> None:
        steps = next(r for r in data["rules"] if r.get("fallback"))["fallback"]["steps"]
        kept = next(op for op in steps[-1] if op["op"] == "keep")
        kept["value"] = "elsewhere"

    def node_split(data: dict) -> None:
        data["nodes"][1]["wildcard"] = None

    for change in (fallback_op, node_split):
        data = json.loads(_tampered(change, _LISTING))
        for rule in data["rules"]:  # examples would no longer hold: behaviour, not validity
            rule["examples"] = []
            if rule.get("fallback"):
                rule["fallback"]["examples"] = []
        assert not RuleSet.from_json(data).behaves_like(_LISTING)
    assert not _MIRROR.behaves_like(_LISTING)


def test_refuses_a_rule_that_changes_the_host() -> None:
    def change(data: dict) -> None:
        data["rules"][0]["steps"][0].append({"op": "keep", "key": "host_0", "value": "evil"})

    with pytest.raises(RuleSetError, match="host"):
        RuleSet.loads(_tampered(change))


def test_refuses_a_cycle() -> None:
    def change(data: dict) -> None:
        rules = data["rules"]
        a = next(r for r in rules if r["source"] != r["target"])
        rules.append({**a, "source": a["target"], "target": a["source"], "examples": []})

    with pytest.raises(RuleSetError, match=r"itself rewritten|share a source"):
        RuleSet.loads(_tampered(change))


def test_refuses_an_example_that_does_not_hold() -> None:
    def change(data: dict) -> None:
        before, _ = data["rules"][0]["examples"][0]
        data["rules"][0]["examples"][0] = [before, "http://www.example.com/elsewhere"]

    with pytest.raises(RuleSetError, match="does not give"):
        RuleSet.loads(_tampered(change))


def test_refuses_a_pinned_or_nested_fallback() -> None:
    def change(data: dict) -> None:
        pinned = next(r for r in data["rules"] if "fallback" in r)
        pinned["fallback"]["when"] = [["?sid", "1"]]

    with pytest.raises(RuleSetError, match="fallback"):
        RuleSet.loads(_tampered(change, _LISTING))


@pytest.mark.parametrize(
    "text",
    ["", "[]", '{"format": "other"}', '{"format": "scrapy-templates/url-rules"}', "{bad json"],
)
def test_refuses_malformed_input(text: str) -> None:
    with pytest.raises(RuleSetError):
        RuleSet.loads(text)


def test_refuses_unknown_operation() -> None:
    def change(data: dict) -> None:
        data["rules"][0]["steps"][0][0]["op"] = "delete-everything"

    with pytest.raises(RuleSetError, match="unknown operation"):
        RuleSet.loads(_tampered(change))


_segment = st.from_regex(r"[a-z0-9]{0,6}", fullmatch=True)
_urls = st.one_of(
    st.builds(
        "http://www.example.com/{}/show.php?pageid={}&sid={}".format, _segment, _segment, _segment
    ),
    st.builds("http://www.example.com/{}/{}/display?sid={}".format, _segment, _segment, _segment),
    st.builds(
        "http://q.example/page?k1=a&k2={}&k3={}&k4=c&k5={}".format, _segment, _segment, _segment
    ),
    st.builds("http://{}.example/{}?{}={}".format, _segment, _segment, _segment, _segment),
)


@settings(max_examples=300)
@given(_urls)
def test_apply_is_idempotent_and_keeps_scheme_and_host(url: str) -> None:
    for ruleset in (_MIRROR, _QUERY):
        once = ruleset.apply(url)
        assert ruleset.apply(once) == once
        before = [(k, v) for k, v in split_url(url).pairs if k == "scheme" or k.startswith("host_")]
        after = [(k, v) for k, v in split_url(once).pairs if k == "scheme" or k.startswith("host_")]
        assert before == after


@settings(max_examples=200)
@given(_urls)
def test_apply_with_rate_answers_as_apply_does(url: str) -> None:
    for ruleset in (_MIRROR, _QUERY):
        canonical, rate = ruleset.apply_with_rate(url)
        assert canonical == ruleset.apply(url)
        assert 0.0 <= rate <= 1.0
        if canonical != url:
            assert rate == 0.0  # a rewritten URL is never deferred


def test_a_canonical_url_carries_the_duplicate_rate_of_its_form() -> None:
    urls, _ = mirror_site()
    canonical, rate = _MIRROR.apply_with_rate(urls[0])
    assert canonical != urls[0] and rate == 0.0
    again, rate = _MIRROR.apply_with_rate(canonical)
    assert again == canonical and 0.0 < rate <= 1.0
    assert _MIRROR.apply_with_rate("http://www.example.com/unseen/form") == (
        "http://www.example.com/unseen/form",
        0.0,
    )


def test_rules_proved_stable_need_no_second_look() -> None:
    assert _MIRROR._settled, "the proof applies to the figure 4 rules"
    checked = RuleSet.loads(_MIRROR.dumps())
    checked._settled = frozenset()  # always apply twice and compare
    urls, _ = mirror_site()
    for url in [*urls, SID := "http://www.example.com/archive9/77/display?sid=q"]:
        assert _MIRROR.apply(url) == checked.apply(url)
    assert checked.apply(SID) != SID


def _host(url: str) -> list[tuple[str, Any]]:
    """Scheme, user, host labels and port of ``url``."""
    return [
        (k, v) for k, v in split_url(url).pairs if k in ("scheme", "user", "port") or "host_" in k
    ]


def _one_rule_doc(key: str, value: str) -> dict[str, Any]:
    """A rule set for ``c.example`` whose one rule writes ``key = value`` on every URL."""
    return {
        "format": "scrapy-templates/url-rules",
        "site": "c.example",
        "version": 5,
        "learned_from": 1,
        "destinations": [0],
        "nodes": [
            {
                "parent": None,
                "fixed": [["scheme", "http"], ["host_0", "c"], ["host_1", "example"]],
                "split": None,
                "children": [],
                "wildcard": None,
                "required": [],
                "optional": ["path_0"],
                "glob": "",
                "dup_rate": 0,
            }
        ],
        "rules": [
            {
                "source": 0,
                "target": 0,
                "steps": [[{"op": "keep", "key": key, "value": value, "source": None}]],
                "support": 9,
                "fpr": 0,
                "examples": [],
            }
        ],
    }


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("path", "@evil.test"),  # read as user information, then another host
        ("path", ".evil.test"),  # read as more host labels
        ("path", ":6379"),  # read as a port
        ("path_0", "b/c"),  # one segment written, two read back: not idempotent
        ("path_0", "x?y=1"),
        ("ext", "html#top"),
        ("?page", "1&sid=2"),
    ],
)
def test_a_written_value_that_would_read_as_other_keys_is_refused_and_never_applied(
    key: str, value: str
) -> None:
    with pytest.raises(RuleSetError):
        RuleSet.from_json(_one_rule_doc(key, value))  # loading validates
    # built without validation (as a rule set in memory could be), it still rewrites nothing
    # it cannot read back
    safe = RuleSet.from_json(_one_rule_doc("path_0", "b"))
    rule = dataclasses.replace(safe.rules[0], steps=((Op("keep", key, value),),))
    unsafe = RuleSet(safe.site, safe.version, safe.nodes, {0: rule})
    for url in ("http://c.example/x", "http://c.example/a?page=3"):
        result = unsafe.apply(url)
        assert _host(result) == _host(url) and unsafe.apply(result) == result
        assert unsafe.apply_with_rate(url)[0] == result == unsafe.explain(url).result
    assert unsafe.refused_results > 0  # counted, for the crawl's stats
    assert safe.refused_results == 0


def test_a_safe_constant_is_still_written() -> None:
    ruleset = RuleSet.from_json(_one_rule_doc("path_0", "b"))
    ruleset.validate()
    assert ruleset.apply("http://c.example/x") == "http://c.example/b"


@settings(max_examples=300)
@given(
    key=st.sampled_from(["path_0", "path_1", "ext", ";v", "?page", "?k", "#"]),
    value=st.text(alphabet="ab./?#;&=@:[]%", max_size=8),
    url=st.sampled_from(
        ["http://c.example/x", "http://c.example/a/b.html;v=1?page=2&k#f", "http://c.example/"]
    ),
)
def test_no_written_value_changes_where_a_url_points_or_its_stability(
    key: str, value: str, url: str
) -> None:
    safe = RuleSet.from_json(_one_rule_doc("path_0", "b"))
    rule = dataclasses.replace(safe.rules[0], steps=((Op("keep", key, value),),))
    unchecked = RuleSet(safe.site, safe.version, safe.nodes, {0: rule})
    result = unchecked.apply(url)
    assert _host(result) == _host(url)
    assert unchecked.apply(result) == result


@pytest.mark.parametrize("version", [1e300, 5.0, True, "5", -1, 2**63])
def test_a_version_that_is_not_a_whole_number_is_refused(version: object) -> None:
    def change(data: dict) -> None:
        data["version"] = version

    with pytest.raises(RuleSetError, match="whole number"):
        RuleSet.loads(_tampered(change))


def test_a_tree_that_loops_back_to_its_root_is_refused() -> None:
    """Loading works out which rules settle before it checks the tree: a child that is its
    own parent must not send that walk round forever."""

    def change(data: dict) -> None:
        data["nodes"][0]["children"][0][1] = 0

    with pytest.raises(RuleSetError, match="node 0: bad child"):
        RuleSet.loads(_tampered(change))


def test_a_tree_larger_than_its_samples_can_make_is_refused_before_it_is_built() -> None:
    def change(data: dict) -> None:
        data["nodes"] += [{"bogus": i} for i in range(100_000)]

    text = _tampered(change)
    with pytest.raises(RuleSetError, match="more than 10000"):
        RuleSet.loads(text, max_nodes=10_000)
    with pytest.raises(RuleSetError, match="malformed"):  # without the bound: built, then refused
        RuleSet.loads(text)
    assert RuleSet.loads(_MIRROR.dumps(), max_nodes=len(_MIRROR.nodes)) == RuleSet.loads(
        _MIRROR.dumps()
    )


_SITES = {
    "mirror": (_MIRROR, mirror_site()[0][::10]),
    "query": (_QUERY, query_site()[0][::10]),
    "listing": (_LISTING, listing_site()[0][::10]),
}


@settings(max_examples=150, deadline=None)
@given(data=st.data(), name=st.sampled_from(sorted(_SITES)))
def test_any_mutation_of_a_rule_set_is_refused_or_safe_to_apply(
    data: st.DataObject, name: str
) -> None:
    ruleset, urls = _SITES[name]
    text = data.draw(mutated_json(ruleset.dumps(), edits=2, damage=False))
    try:
        loaded = RuleSet.loads(text)
    except RuleSetError:
        return
    for url in urls:
        result = loaded.apply(url)
        assert _host(result) == _host(url)
        assert loaded.apply(result) == result


def test_rules_are_counted_as_they_are_shown() -> None:
    assert len(_LISTING.rules) == 1  # one node with a pinned rule and its fallback
    assert _LISTING.rule_count == len(_LISTING.describe_rules()) == 2
    assert _MIRROR.rule_count == len(_MIRROR.describe_rules()) == len(_MIRROR.rules)


def test_keeping_two_urls_apart_retracts_the_rule_that_merged_them() -> None:
    first = "http://www.example.com/archive2/17/display?sid=abc"
    second = "http://www.example.com/archive2/17/display?sid=xyz"
    assert _MIRROR.apply(first) == _MIRROR.apply(second)
    kept = _MIRROR.keeping_apart([(first, second)])
    assert kept.apply(first) != kept.apply(second)
    assert kept.apart == ((first, second),) and kept.retracted
    _, _, nid = _MIRROR.resolve(first)
    assert nid in kept.retracted
    # the retracted rule still decides for its pattern: an ancestor's rule does not take over
    assert kept.apply(first) == first
    assert kept.rule_count == _MIRROR.rule_count - len(kept.retracted)
    assert sum(r["retracted"] for r in kept.describe_rules()) == len(kept.retracted)
    assert not kept.behaves_like(_MIRROR)
    # a pair no rule merges changes nothing but the record
    about = ("http://www.example.com/about", "http://www.example.com/contact")
    assert _MIRROR.keeping_apart([about]).retracted == frozenset()


def test_json_round_trip_keeps_pairs_apart_retractions_and_checks() -> None:
    first = "http://www.example.com/archive2/17/display?sid=abc"
    second = "http://www.example.com/archive2/17/display?sid=xyz"
    kept = _MIRROR.keeping_apart([(first, second)])
    checked = _MIRROR.with_checks({_MIRROR.signature(nid): (4, 3) for nid in _MIRROR.rules})
    assert set(checked.check_counts().values()) == {(4, 3)}
    assert {(r["checked"], r["held"]) for r in checked.describe_rules()} == {(4, 3)}
    kept = checked.keeping_apart([(first, second)])
    # a retracted rule's record is not passed on
    assert len(kept.check_counts()) == len(checked.check_counts()) - len(kept.retracted)
    loaded = RuleSet.loads(kept.dumps())
    assert loaded.apart == kept.apart and loaded.retracted == kept.retracted
    assert loaded.apply(first) == first
    assert RuleSet.loads(checked.dumps()).check_counts() == checked.check_counts()


def test_a_rule_set_says_whether_its_sites_canonical_links_proved_wrong() -> None:
    refuted = _MIRROR.refuting_claims()
    assert refuted.claims_refuted and not _MIRROR.claims_refuted
    assert refuted.behaves_like(_MIRROR)
    # kept through its copies and its JSON
    assert refuted.keeping_apart([("http://a/1", "http://a/2")]).claims_refuted
    assert RuleSet.loads(refuted.dumps()).claims_refuted
    assert not RuleSet.loads(_MIRROR.dumps()).claims_refuted
    assert "claims_refuted" not in _MIRROR.to_json()
    with pytest.raises(RuleSetError, match="claims_refuted is not true or false"):
        RuleSet.from_json({**_MIRROR.to_json(), "claims_refuted": "yes"})


def _chain_doc(depth: int) -> str:
    """The one-rule document with a chain of wildcard children ``depth`` levels deep."""
    data = _one_rule_doc("path_0", "x")
    nodes = data["nodes"]
    for level in range(1, depth + 1):
        nodes[level - 1]["wildcard"] = level
        nodes.append({**nodes[0], "parent": level - 1, "fixed": [], "wildcard": None})
    return json.dumps(data)


def test_a_tree_deeper_than_any_url_needs_is_refused_before_it_is_built() -> None:
    # a site giving each page a parameter name of its own grew chains 1,600 deep, and
    # every install of their rules took seconds of the crawl's thread
    assert len(RuleSet.loads(_chain_doc(MAX_DEPTH)).nodes) == MAX_DEPTH + 1
    with pytest.raises(RuleSetError, match=f"deeper than {MAX_DEPTH}"):
        RuleSet.loads(_chain_doc(MAX_DEPTH + 1))
    deep = RuleSet.loads(_chain_doc(MAX_DEPTH))
    deep.nodes.append(dataclasses.replace(deep.nodes[-1], parent=MAX_DEPTH, wildcard=None))
    deep.nodes[MAX_DEPTH] = dataclasses.replace(deep.nodes[MAX_DEPTH], wildcard=MAX_DEPTH + 1)
    with pytest.raises(RuleSetError, match="deeper"):  # a learned one, too
        deep.validate()


def test_a_rule_with_more_examples_than_the_learner_keeps_is_refused() -> None:
    data = _one_rule_doc("path_0", "x")
    data["rules"][0]["examples"] = [["http://c.example/a", "http://c.example/x"]] * 4
    with pytest.raises(RuleSetError, match=f"more than {MAX_EXAMPLES} examples"):
        RuleSet.loads(json.dumps(data))


def test_rules_left_unproved_past_the_visit_budget_apply_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(rules_module, "MAX_SETTLE_VISITS", 0)
    unproved = RuleSet.loads(_MIRROR.dumps())
    assert _MIRROR._settled and not unproved._settled
    urls, _ = mirror_site()
    for url in [*urls, "http://www.example.com/archive9/77/display?sid=q"]:
        assert unproved.apply(url) == _MIRROR.apply(url)
