import random
from collections import defaultdict
from pathlib import Path
from urllib.parse import urlsplit

from scrapy_templates.urlnorm.clusters import Sample
from scrapy_templates.urlnorm.learn import LearnConfig, learn_from_samples, learn_rules
from tests.urlnorm.url_sets import (
    article_samples,
    circle_site,
    listing_site,
    mirror_site,
    query_site,
    semicolon_site,
)


def _groups(ruleset, urls, clusters):
    by_result: dict[str, set[int]] = defaultdict(set)
    for url, cluster in zip(urls, clusters, strict=True):
        by_result[ruleset.apply(url)].add(cluster)
    return by_result


def test_figure_4_every_page_gets_one_canonical_url() -> None:
    urls, clusters = mirror_site()
    report = learn_rules(urls, clusters, site="www.example.com")
    groups = _groups(report.ruleset, urls, clusters)
    assert all(len(c) == 1 for c in groups.values()), "two pages merged"
    assert len(groups) == len(set(clusters)), "a page kept several URLs"


def test_figure_4_operations() -> None:
    urls, clusters = mirror_site()
    rules = learn_rules(urls, clusters).ruleset.rules.values()
    ops = {(op.kind, op.key, op.source) for rule in rules for step in rule.steps for op in step}
    assert ("ignore", "?sid", None) in ops
    assert ("ignore", "path_0", None) in ops  # the mirror
    assert ("replace", "?pageid", "path_1") in ops or ("replace", "path_1", "?pageid") in ops


def test_figure_3_irrelevant_keys_ignored_relevant_key_replaced() -> None:
    urls, clusters = query_site()
    report = learn_rules(urls, clusters)
    canonical = report.ruleset.apply("http://q.example/page?k1=a&k2=7&k3=1&k4=c&k5=2")
    assert canonical == report.ruleset.apply("http://q.example/page?k1=a&k2=7&k3=99&k4=c&k5=3")
    assert canonical != report.ruleset.apply("http://q.example/page?k1=a&k2=8&k3=1&k4=c&k5=2")
    assert "k2=7" in canonical and "k3" not in canonical and "k5" not in canonical


def _move_pins(urls: list[str], clusters: list[int], confirmed: list[int]) -> object:
    """The pins of the move (a rule between two nodes) out of the node of ``urls[0]``, as
    :func:`~scrapy_templates.urlnorm.learn._pins` gives them for ``confirmed`` sources."""
    import numpy as np

    from scrapy_templates.urlnorm import learn

    report = learn_rules(urls, clusters)
    data = learn._Training(urls, report.tree, np.asarray(clusters))
    nodes = report.tree.nodes
    move = next(
        c for c in report.candidates if c.target != c.source and 0 in nodes[c.source].members
    )
    members = nodes[move.source].members
    return learn._pins(data, move, members, confirmed, ())


def _log_site() -> tuple[list[str], list[int]]:
    """Twelve views, each under ``?a=…&h=…`` and a copy under ``?a=…&hb=…``."""
    urls = [f"http://g.example/w?a=a{i}&h=c{i}" for i in range(12)]
    urls += [f"http://g.example/w?a=a{i}&hb=c{i}" for i in range(12)]
    return urls, [*range(12), *range(12)]


def test_a_move_carries_a_generalised_key_only_as_far_as_its_evidence() -> None:
    """The move keeps ``a`` and writes ``h`` as ``hb``: confirmed on one view only, it says
    nothing of the others and holds for that one's values; confirmed on all, everywhere."""
    urls, clusters = _log_site()
    assert _move_pins(urls, clusters, [0]) == (("?a", "a0"), ("?h", "c0"))
    assert _move_pins(urls, clusters, list(range(12))) == ()


def test_names_of_one_page_say_nothing_of_other_pages() -> None:
    """Two values of a dropped key confirmed on one page only (a tag and its commit id) are
    names of that page, not evidence that the key does not matter: no rule."""
    urls, clusters = _log_site()
    urls += ["http://g.example/w?a=a0&h=v1"]
    clusters += [0]
    assert _move_pins(urls, clusters, [0, 24]) is None


def test_no_results_pages_do_not_make_the_query_irrelevant() -> None:
    urls, clusters = query_site()
    ruleset = learn_rules(urls, clusters).ruleset
    searches = [u for u in urls if "/search" in u]
    assert len({ruleset.apply(u) for u in searches}) == len(searches) == 16


def test_fpr_filter_removes_candidates_that_merge_distinct_pages() -> None:
    urls, clusters = query_site()
    report = learn_rules(urls, clusters)
    rejected = [c for c in report.candidates if c not in report.qualified]
    assert rejected and all(c.fpr > LearnConfig().fpr_max or not c.support for c in rejected)
    assert all(rule.fpr <= LearnConfig().fpr_max for rule in report.ruleset.rules.values())


def test_figure_7_circles_and_shared_sources_give_one_destination() -> None:
    urls, clusters = circle_site()
    report = learn_rules(urls, clusters)
    ruleset = report.ruleset
    ruleset.validate()  # no cycle, every example holds
    for i in range(30):
        forms = {
            ruleset.apply(f"http://c.example/item/{i}"),
            ruleset.apply(f"http://c.example/item.php?id={i}"),
            ruleset.apply(f"http://c.example/print/{i}/view"),
        }
        assert len(forms) == 1
        assert forms <= {f"http://c.example/item/{i}", f"http://c.example/item.php?id={i}"}
    # one destination; every other format has exactly one rule, which leads there
    assert len(ruleset.destinations) == 1
    assert all(r.target in ruleset.destinations for r in ruleset.rules.values())
    assert not set(ruleset.rules) & ruleset.destinations
    # pages seen in one format only are generalised to, and kept apart in, the same format
    singles = {ruleset.apply(f"http://c.example/item/{i}") for i in range(30, 60)}
    assert len(singles) == 30


def test_a_query_separated_by_semicolons_is_learned_parameter_by_parameter() -> None:
    urls, clusters = semicolon_site()
    ruleset = learn_rules(urls, clusters).ruleset
    base = "http://git.example/cgi-bin/gitweb.cgi?p=project.git"
    for pid in range(30, 40):  # files never seen: the rule carries
        diff = f"{base};a=blobdiff;f=src/mod{pid}.py"
        assert ruleset.apply(diff + ";ds=inline") == ruleset.apply(diff)
        assert ruleset.apply(diff).count(";") == 2  # still written with ';'
    assert len({ruleset.apply(u) for u in urls}) == len(set(clusters))


def test_a_rule_keeping_a_value_with_a_semicolon_in_an_ampersand_query_is_valid() -> None:
    """``;`` ends a value only in a ``;``-separated query: a rule that keeps ``x=1;2`` of an
    ``&``-query is deployable, and its rule set validates."""
    urls = [f"http://s.example/p/{i}?fmt=z&x=1;2" for i in range(20)]
    urls += [f"http://s.example/p/{i}?fmt=z&x=1;2&sid={i * 7}" for i in range(20)]
    ruleset = learn_rules(urls, [i % 20 for i in range(40)]).ruleset
    ruleset.validate()
    assert ruleset.apply("http://s.example/p/3?fmt=z&x=1;2&sid=99") == (
        "http://s.example/p/3?fmt=z&x=1;2"
    )


def test_a_key_that_matters_on_its_path_is_not_dropped_for_one_file() -> None:
    """A repository browser's blob views: one file did not change over the eight commits it
    was seen at, the others did. Dropping the commit for that file alone would turn its later
    versions away unseen: the commit matters on this path."""
    urls: list[str] = []
    clusters: list[int] = []
    base = "http://g.example/gitweb.cgi?p=r.git;a=blob"
    for f in range(6):
        for c in range(8):
            urls.append(f"{base};f=file{f}.py;hb=c{5 * f + c:03d}")
            clusters.append(0 if f == 0 else len(urls))
    ruleset = learn_rules(urls, clusters).ruleset
    later = f"{base};f=file0.py;hb=c999"
    assert ruleset.apply(later) == later


def _blob_views(changed: set[int]) -> tuple[list[str], list[int]]:
    """A repository browser's raw file views at eight commits, linked with the blob id
    (``h``) and without it. Files in ``changed`` differ at every commit; the others are one
    page under all eight commit ids."""
    urls: list[str] = []
    clusters: list[int] = []
    base = "http://g.example/gitweb.cgi?p=r.git;a=blob_plain"
    for f in range(8):
        for c in range(8):
            commit = f"{(c + 1) * 0x1111:040x}"
            blob = f"{f * 8 + (c if f in changed else 0):040x}"
            page = f * 100 + (c if f in changed else 0)
            urls.append(f"{base};f=file{f}.py;h={blob};hb={commit}")
            urls.append(f"{base};f=file{f}.py;hb={commit}")
            clusters += [page, page]
    return urls, clusters


def test_a_key_that_coincidences_make_look_irrelevant_is_copied() -> None:
    """Unchanged files make the commit id vary between duplicates (§5.2.2 calls it
    irrelevant), and a rule dropping it merges the versions of the changed files; the rule
    that drops the blob id and copies the commit id holds."""
    urls, clusters = _blob_views(changed={0, 1, 2, 3})
    ruleset = learn_rules(urls, clusters).ruleset
    groups = _groups(ruleset, urls, clusters)
    assert all(len(c) == 1 for c in groups.values()), "two versions of a file merged"
    assert len(groups) == len(set(clusters)) + 4 * 7, "the blob id was not dropped"
    base = "http://g.example/gitweb.cgi?p=r.git;a=blob_plain;f=file5.py"
    assert ruleset.apply(f"{base};h={'9' * 40};hb={'a' * 40}") == f"{base};hb={'a' * 40}"


def test_near_duplicate_pages_under_a_large_template_do_not_merge() -> None:
    """Two entries of a reference (``min`` and ``max`` of each class) read alike under the
    same section menu: their page simhashes are a bit apart, their content differs. Content
    is the evidence by default; with simhashes as evidence the learner merges the entries."""
    rng = random.Random(1)
    samples = []
    for cls in range(40):
        page = rng.getrandbits(64)
        for flip, name in enumerate(("min", "max")):
            url = f"http://ref.test/engine/{cls}/{name}.html"
            samples.append(Sample(url, simhash=page ^ flip, text_hash=f"{cls}-{name}"))
    url = "http://ref.test/engine/3/min.html"
    assert learn_from_samples(samples).ruleset.apply(url) == url
    hazard = learn_from_samples(samples, distance=3).ruleset
    assert hazard.apply(url) == "http://ref.test/engine/3/max.html"


def test_unrelated_urls_are_left_alone() -> None:
    urls, clusters = mirror_site()
    ruleset = learn_rules(urls, clusters).ruleset
    for url in [
        "http://www.example.com/about",
        "http://www.example.com/archive1/x/display?sid=1&page=2",
    ]:
        assert ruleset.apply(url) == url


def test_a_sample_without_duplicates_learns_no_rule_and_builds_no_tree() -> None:
    urls, _ = mirror_site()
    report = learn_rules(urls, list(range(len(urls))))
    assert report.ruleset.rules == {} and report.ruleset.nodes == []
    assert len(report.tree.nodes) <= 1
    assert all(report.ruleset.apply(url) == url for url in urls)
    # one pair of duplicates is enough for the tree to be built again
    assert len(learn_rules(urls, [0, 0, *range(1, len(urls) - 1)]).tree.nodes) > 1


def test_learning_is_deterministic() -> None:
    urls, clusters = mirror_site()
    assert (
        learn_rules(urls, clusters).ruleset.dumps() == learn_rules(urls, clusters).ruleset.dumps()
    )


def test_a_key_seen_irrelevant_for_one_value_is_pinned_to_it() -> None:
    # "Drop ?page" has a clean false-positive rate on these URLs and would turn every later
    # page away unseen; the rule holds for ?page=1 alone.
    ruleset = learn_rules(*listing_site()).ruleset
    assert ruleset.apply("http://l.example/category/c2/?page=1&sid=0009") == (
        "http://l.example/category/c2/?sort=date"
    )
    # later pages keep their number, and the session id, seen irrelevant under four values,
    # still goes (the pinned rule's fallback)
    assert ruleset.apply("http://l.example/category/c7/?page=3&sid=0002") == (
        "http://l.example/category/c7/?page=3"
    )


def test_a_value_seen_irrelevant_is_dropped_for_that_value_alone() -> None:
    # each tool's ?status=closed view is the tool's page; its other status views are not
    urls: list[str] = []
    clusters: list[int] = []
    for i in range(8):
        urls.append(f"http://t.example/tool{i}")
        clusters.append(i)
        for n, status in enumerate(("closed", "new", "open")):
            urls.append(f"http://t.example/tool{i}?status={status}&order=id")
            clusters.append(i if status == "closed" else 100 * (n + 1) + i)
    ruleset = learn_rules(urls, clusters).ruleset
    assert ruleset.apply("http://t.example/tool9?status=closed&order=id") == (
        "http://t.example/tool9"
    )
    for status in ("new", "open", "assigned"):
        url = f"http://t.example/tool9?status={status}&order=id"
        assert ruleset.apply(url) == url


def _demo_page(url: str) -> tuple[str, ...]:
    from demo.site import page_key

    return page_key(urlsplit(url)._replace(scheme="", netloc="").geturl())


def test_rules_from_a_demo_crawl_follow_rel_canonical_and_keep_page_types() -> None:
    # The URL samples of a two-process crawl of the demo site, as its store held them at the
    # end. Print views are linked from every article, so the random walk alone makes them the
    # destination; every article form names the plain URL as its rel=canonical. The root
    # pattern's URLs were also confirmed onto print views by its article URLs alone.
    path = Path(__file__).parent / "data" / "demo_crawl_samples.jsonl"
    samples = [Sample.from_json(line) for line in path.read_text().splitlines()]
    ruleset = learn_from_samples(samples, site="demo.example").ruleset
    urls = {s.url for s in samples} | {r for s in samples for r in s.redirects}
    urls |= {"http://demo.example/category/tech", "http://demo.example/about.html"}
    for url in urls:
        assert _demo_page(ruleset.apply(url)) == _demo_page(url), url
    article = "http://demo.example/articles/3-x.html"
    for form in (article, f"{article}?print=1", f"{article}?sid=0042"):
        assert ruleset.apply(form) == article


def test_a_relearn_keeps_the_rules_in_force_while_they_still_hold() -> None:
    """A reservoir that lost its print-view duplicates learns no print rule; the rules in
    force explain its sample as well as the new ones and stay (version renewed)."""
    previous = learn_from_samples(article_samples(range(30)), version=3).ruleset
    plain, print_url = "http://news.test/a/77.html", "http://news.test/a/77.html?print=1"
    assert previous.apply(print_url) == previous.apply(plain)
    thinner = article_samples(range(30), print_view=False)
    fresh = learn_from_samples(thinner).ruleset
    assert fresh.apply(print_url) != fresh.apply(plain)
    report = learn_from_samples(thinner, version=4, previous=previous)
    assert report.kept
    assert report.ruleset.version == 4 and report.ruleset.behaves_like(previous)
    assert report.ruleset.apply(print_url) == report.ruleset.apply(plain)


def test_a_relearn_drops_rules_in_force_that_merge_distinct_pages_of_the_sample() -> None:
    previous = learn_from_samples(article_samples(range(30)), version=3).ruleset
    samples = article_samples(range(30), print_view=False)
    # print views that are pages of their own now, under the rule in force
    samples += [Sample(f"http://news.test/a/{n}.html?print=1", text_hash=f"p{n}") for n in (1, 2)]
    report = learn_from_samples(samples, version=4, previous=previous)
    assert not report.kept
    ruleset = report.ruleset
    assert ruleset.apply("http://news.test/a/1.html?print=1") != ruleset.apply(
        "http://news.test/a/1.html"
    )


def test_a_relearn_replaces_rules_in_force_that_miss_a_new_kind_of_duplicate() -> None:
    previous = learn_from_samples(article_samples(range(30)), version=3).ruleset
    report = learn_from_samples(article_samples(range(30), utm=True), previous=previous)
    assert not report.kept
    ruleset = report.ruleset
    plain = "http://news.test/a/5.html"
    assert ruleset.apply(f"{plain}?utm_source=feed") == ruleset.apply(plain)


def test_a_mirror_seen_once_does_not_move_every_path() -> None:
    """``/mirror/`` is ``/``: the rule that moves the second segment into the first loses the
    first segment's value, which one mirror says nothing about (``/category/world`` is not
    ``/world``)."""
    tops = ("category", "tag", "author", "topic", "series", "desk", "region", "archive")
    urls = ["http://news.test/", "http://news.test/mirror/"]
    urls += [f"http://news.test/{top}/{name}" for top in tops for name in ("world", "local")]
    urls += [f"http://news.test/{name}" for name in ("about", "contact", "privacy")]
    clusters = [0, 0, *range(1, len(urls) - 1)]
    ruleset = learn_rules(urls, clusters).ruleset
    assert ruleset.apply("http://news.test/mirror/") == "http://news.test/"
    for url in ("http://news.test/category/world", "http://news.test/tag/science"):
        assert ruleset.apply(url) == url


def test_one_large_duplicate_cluster_does_not_hide_a_false_merge_of_the_rules_in_force() -> None:
    previous = learn_from_samples(article_samples(range(30)), version=3).ruleset
    samples = article_samples(range(30), print_view=False)
    samples += [Sample(f"http://news.test/a/{n}.html?print=1", text_hash=f"p{n}") for n in (1, 2)]
    samples += [
        Sample(f"http://news.test/a/5.html?sid={s}", text_hash="page-5") for s in range(300)
    ]
    report = learn_from_samples(samples, version=4, previous=previous)
    assert not report.kept and not report.previous_held
    assert report.ruleset.apply("http://news.test/a/1.html?print=1").endswith("?print=1")


def test_the_rules_in_force_give_way_to_the_address_the_site_names() -> None:
    """Rules learned before any ``rel=canonical`` sent each story to ``/story/N``; once the
    pages name ``/story.php?id=N`` their address, the relearnt rules follow the site."""
    plain = [
        Sample(url, text_hash=f"story-{n}")
        for n in range(20)
        for url in (f"http://news.test/story/{n}", f"http://news.test/story.php?id={n}")
    ]
    previous = learn_from_samples(plain, version=2).ruleset
    assert previous.apply("http://news.test/story.php?id=3") == "http://news.test/story/3"
    named = [
        Sample(s.url, text_hash=s.text_hash, canonical=f"http://news.test/story.php?id={n // 2}")
        for n, s in enumerate(plain)
    ]
    report = learn_from_samples(named, version=3, previous=previous)
    assert not report.kept and report.previous_held
    assert report.ruleset.apply("http://news.test/story/3") == "http://news.test/story.php?id=3"
