import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_templates.urlnorm.learn import learn_rules
from scrapy_templates.urlnorm.rules import RuleSet, RuleSetError
from scrapy_templates.urlnorm.url import split_url
from tests.urlnorm.url_sets import mirror_site, query_site

_MIRROR = learn_rules(*mirror_site(), site="www.example.com").ruleset
_QUERY = learn_rules(*query_site(), site="q.example").ruleset


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


def _tampered(change) -> str:
    data = json.loads(_MIRROR.dumps())
    change(data)
    return json.dumps(data)


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


def test_rules_proved_stable_need_no_second_look() -> None:
    assert _MIRROR._settled, "the proof applies to the figure 4 rules"
    checked = RuleSet.loads(_MIRROR.dumps())
    checked._settled = frozenset()  # always apply twice and compare
    urls, _ = mirror_site()
    for url in [*urls, SID := "http://www.example.com/archive9/77/display?sid=q"]:
        assert _MIRROR.apply(url) == checked.apply(url)
    assert checked.apply(SID) != SID
