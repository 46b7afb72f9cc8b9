"""A host's guard on plain data: one verdict per request, and what an install sends again."""

from __future__ import annotations

from pytest import MonkeyPatch

from scrapy_templates.urlnorm.checks import RuleChecks
from scrapy_templates.urlnorm.guard import DROP, KEEP, REWRITE, HostGuard, Verdict, url_key
from scrapy_templates.urlnorm.learn import learn_rules
from scrapy_templates.urlnorm.rules import RuleSet
from tests.urlnorm.url_sets import mirror_site

SITE = "www.example.com"
SID_URL = "http://www.example.com/archive2/17/display?sid=abc"
ODD_URL = "http://www.example.com/archive1/17/display?sid=1&page=2"


def _ruleset() -> RuleSet:
    urls, clusters = mirror_site()
    return learn_rules(urls, clusters, site=SITE).ruleset


def _sent(guard: HostGuard[str], url: str, token: str) -> Verdict:
    """The spider middleware's verdict on a request, and — as when a request it lets go
    reaches the scheduler — the request noted as requested."""
    verdict = guard.decide(url, token, queued=False)
    if verdict.action != DROP:
        guard.note_requested(verdict.url)
    return verdict


def _guard() -> HostGuard[str]:
    guard: HostGuard[str] = HostGuard()
    assert guard.install(_ruleset(), resend=True) == []
    return guard


def test_without_rules_every_url_is_kept_and_requested_once_it_is_scheduled() -> None:
    guard: HostGuard[str] = HostGuard()
    verdict = guard.decide(SID_URL, "r1", queued=False, defer=(100, 0.0))
    assert (verdict.action, verdict.url, verdict.defer) == (KEEP, SID_URL, 0)
    # a middleware after the guard may still drop it (DEPTH_LIMIT): not requested yet
    assert not guard.is_pending(url_key(SID_URL))
    guard.note_requested(SID_URL)
    assert guard.is_pending(url_key(SID_URL))


def test_two_urls_are_one_page_when_the_rules_in_force_say_so() -> None:
    guard: HostGuard[str] = HostGuard()
    other_sid = SID_URL.replace("abc", "xyz")
    assert not guard.same_page(SID_URL, other_sid)  # no rules: every URL its own page
    guard.install(_ruleset(), resend=False)
    assert guard.same_page(SID_URL, other_sid)
    assert not guard.same_page(SID_URL, SID_URL.replace("/17/", "/18/"))


def test_a_rewritten_request_dropped_before_the_scheduler_keeps_no_url_out() -> None:
    guard = _guard()
    deep = guard.decide(SID_URL, "r1", queued=False)
    assert deep.action == REWRITE  # and then dropped by another middleware: never scheduled
    other = guard.decide(SID_URL.replace("abc", "zzz"), "r2", queued=False)
    assert (other.action, other.url) == (REWRITE, deep.url)


def test_a_variant_is_rewritten_once_and_dropped_while_its_page_is_pending() -> None:
    guard = _guard()
    first = _sent(guard, SID_URL, "r1")
    assert first.action == REWRITE and first.url != SID_URL
    assert first.url == guard.canonical(SID_URL)
    second = _sent(guard, SID_URL.replace("abc", "zzz"), "r2")
    assert (second.action, second.url) == (DROP, first.url)


def test_a_page_whose_request_failed_is_tried_under_its_other_urls() -> None:
    guard = _guard()
    first = _sent(guard, SID_URL, "r1")
    assert first.action == REWRITE
    assert guard.is_pending(url_key(first.url))
    # a 503 after the retries: the URL it was rewritten from is fetched now, as its try
    assert guard.note_failed(first.url, resend=True, fallback=SID_URL) == []
    other, third = SID_URL.replace("abc", "zzz"), SID_URL.replace("abc", "yyy")
    assert guard.decide(other, "r2", queued=False).action == DROP  # waits for the try
    assert guard.note_failed(SID_URL, resend=False) == []  # the try fails too
    assert not guard.is_pending(url_key(first.url))
    assert guard.decide(other, "r2", queued=True).action == KEEP  # the next try, as it is
    assert guard.decide(third, "r3", queued=False).action == DROP  # waits for that one
    guard.note_download([other], 100, page=True)  # it came under the other URL
    assert guard.decide(third, "r3", queued=False).action == DROP
    assert guard.was_fetched(first.url)


def test_a_failed_page_sends_again_one_request_turned_away_for_it_at_a_time() -> None:
    guard = _guard()
    canonical = guard.canonical(SID_URL)
    assert _sent(guard, canonical, "r1").action == KEEP  # linked under its own URL first
    variants = [SID_URL.replace("abc", v) for v in ("v1", "v2")]
    assert [_sent(guard, v, f"t{n}").action for n, v in enumerate(variants)] == [DROP, DROP]
    again = guard.note_failed(canonical, resend=True)
    assert [(r.token, r.url) for r in again] == [("t0", variants[0])]
    assert guard.decide(variants[0], "t0", queued=True).action == KEEP  # fetched as it is
    assert [r.url for r in guard.note_failed(variants[0], resend=True)] == [variants[1]]
    assert guard.note_failed(variants[1], resend=True) == []


def test_a_variant_of_a_downloaded_page_is_dropped_and_the_saving_estimated() -> None:
    guard = _guard()
    canonical = guard.canonical(SID_URL)
    guard.note_download([canonical], 1000, page=True)
    assert guard.was_fetched(canonical)
    assert guard.decide(SID_URL, "r1", queued=True).action == DROP
    assert guard.mean_size == 1000


def test_a_drop_says_why_and_whether_the_dupefilter_would_have_dropped_it_anyway() -> None:
    guard = _guard()
    canonical = guard.canonical(SID_URL)
    pending = _sent(guard, SID_URL, "r1")
    assert pending.action == REWRITE
    other = SID_URL.replace("abc", "zzz")
    waiting = _sent(guard, other, "r2")
    assert (waiting.action, waiting.fetched, waiting.repeat) == (DROP, False, False)
    guard.note_download([canonical], 1000, page=True)
    third = SID_URL.replace("abc", "yyy")
    fetched = _sent(guard, third, "r3")
    assert (fetched.action, fetched.fetched, fetched.repeat) == (DROP, True, False)
    again = _sent(guard, third, "r4")  # the same link once more
    assert (again.action, again.fetched, again.repeat) == (DROP, True, True)


def test_a_download_the_spider_never_sees_does_not_make_its_page_downloaded() -> None:
    guard = _guard()
    canonical = guard.canonical(SID_URL)
    guard.note_download([canonical], 500, page=False)
    assert not guard.was_fetched(canonical)
    assert guard.decide(SID_URL, "r1", queued=True).action == REWRITE


def test_a_queued_request_rewritten_elsewhere_is_withdrawn() -> None:
    guard = _guard()
    guard.note_requested(SID_URL)
    assert guard.decide(SID_URL, "r1", queued=True).action == REWRITE
    assert not guard.is_pending(url_key(SID_URL))


def test_duplicate_prone_forms_without_a_rule_are_deferred() -> None:
    guard = _guard()
    assert guard.canonical(ODD_URL) == ODD_URL
    assert guard.decide(ODD_URL, "r1", queued=False, defer=(100, 0.5)).defer == 100
    assert guard.decide(ODD_URL, "r1", queued=False, defer=(0, 0.5)).defer == 0
    assert guard.decide(ODD_URL, "r1", queued=False).defer == 0


def test_a_rule_set_without_rules_is_walked_only_to_defer(monkeypatch: MonkeyPatch) -> None:
    """Every link a spider extracts passes the guard: with no rule in force and nothing to
    defer, a request costs no walk of the pattern tree."""
    empty = RuleSet(SITE, 2, _ruleset().nodes, {})
    walks: list[str] = []
    resolve = empty.resolve

    def counting(url: str) -> tuple[str, float, int | None]:
        walks.append(url)
        return resolve(url)

    monkeypatch.setattr(empty, "resolve", counting)
    guard: HostGuard[str] = HostGuard()
    guard.install(empty, resend=True)
    assert guard.decide(ODD_URL, "r1", queued=False).action == KEEP
    assert guard.decide(ODD_URL, "r2", queued=False, defer=(0, 0.5)).action == KEEP
    assert walks == []
    assert guard.decide(ODD_URL, "r3", queued=False, defer=(100, 0.5)).defer == 100
    assert walks == [ODD_URL]


def test_an_install_that_maps_otherwise_sends_again_what_went_elsewhere() -> None:
    guard = _guard()
    assert _sent(guard, SID_URL, "r1").action == REWRITE
    other = SID_URL.replace("abc", "zzz")
    assert _sent(guard, other, "r2").action == DROP
    same = RuleSet.loads(_ruleset().dumps())
    assert guard.install(same, resend=True) == [], "the same mapping sends nothing again"
    empty = RuleSet(site=SITE, version=same.version + 1, nodes={}, rules={})
    again = guard.install(empty, resend=True)
    # without the rule, both requests are for pages of their own that nobody requested
    assert [(r.token, r.url) for r in again] == [("r1", SID_URL), ("r2", other)]
    assert guard.is_pending(url_key(other))
    assert guard.install(empty, resend=True) == [], "nothing goes twice"
    assert guard.install(RuleSet.loads(_ruleset().dumps()), resend=True) == []


def test_an_install_before_the_crawl_sends_nothing_again() -> None:
    guard = _guard()
    guard.decide(SID_URL.replace("abc", "zzz"), "r2", queued=False)
    guard.decide(SID_URL, "r1", queued=False)
    empty = RuleSet(site=SITE, version=9, nodes={}, rules={})
    assert guard.install(empty, resend=False) == []


def test_new_rules_forget_what_old_rules_called_downloaded() -> None:
    guard = _guard()
    canonical = guard.canonical(SID_URL)
    variant = SID_URL.replace("abc", "x1")
    guard.note_download([variant], 10, page=True)
    assert guard.was_fetched(canonical)
    guard.install(RuleSet(SITE, 2, _ruleset().nodes, {}), resend=True)
    assert not guard.was_fetched(canonical)
    assert guard.was_fetched(variant)


def test_a_suspect_form_carries_a_parameter_the_rules_drop_elsewhere() -> None:
    guard = _guard()
    assert guard.suspect_form(ODD_URL) == (SITE, "/archive1/17/display", ("?page", "?sid"))
    assert guard.suspect_form(SID_URL) is None, "a rule rewrites it"
    assert guard.suspect_form("http://www.example.com/archive1/17/display") is None
    assert HostGuard[str]().suspect_form(ODD_URL) is None


def test_an_install_costs_what_changed_not_the_pages_fetched() -> None:
    """20,000 pages downloaded: the keyring keys them where it runs; the crawl's side of an
    install applies the new rules only to the pages downloaded while they were learned."""
    from scrapy_templates.urlnorm.jobs import Keyring, UrlJob

    ring = Keyring()
    rules = _ruleset()
    guard: HostGuard[str] = HostGuard()
    fetched = [f"http://www.example.com/archive2/{n}/display?sid=s{n}" for n in range(20_000)]
    for url in fetched:
        guard.note_download([url], 100, page=True)
    sent, held, mark = guard.job_input()
    assert len(sent) == 20_000 and held == 0
    keyed = ring.run(UrlJob(SITE, 1, [], sent, held, published=rules))
    late = [f"http://www.example.com/archive1/{n}/display?sid=late" for n in range(5)]
    for url in late:  # downloaded while the job ran
        guard.note_download([url], 100, page=True)

    applied: list[str] = []
    counting = RuleSet.loads(rules.dumps())
    apply = counting.apply

    def counted(url: str) -> str:
        applied.append(url)
        return apply(url)

    counting.apply = counted  # type: ignore[method-assign]
    assert guard.install_keyed(counting, keyed, mark, resend=True) == []
    assert sorted(applied) == sorted(late)
    for url in (fetched[0], fetched[-1], late[0]):
        assert guard.was_fetched(rules.apply(url)) and rules.apply(url) != url
    # the next job carries only what the keyring has not had
    sent, held, _ = guard.job_input()
    assert sent == late and held == 20_000


def test_keys_of_rules_no_longer_in_force_go_with_them() -> None:
    """A canonical form that an earlier, wrong rule set produced must not keep a page
    "downloaded" that never was."""
    from scrapy_templates.urlnorm.jobs import Keyring, UrlJob

    ring = Keyring()
    rules = _ruleset()
    guard: HostGuard[str] = HostGuard()
    guard.note_download([SID_URL], 100, page=True)
    canonical = rules.apply(SID_URL)
    for ruleset in (rules, RuleSet(SITE, 2, rules.nodes, {})):
        sent, held, mark = guard.job_input()
        guard.install_keyed(
            ruleset, ring.run(UrlJob(SITE, 1, [], sent, held, published=ruleset)), mark, resend=True
        )
        assert guard.was_fetched(canonical) is (ruleset is rules)


def test_a_retraction_sends_again_what_the_rule_turned_away_but_not_the_checks() -> None:
    guard = _guard()
    guard.checks = RuleChecks(first=2, share=0.0)
    canonical = guard.canonical(SID_URL)
    guard.note_download([canonical], 100, page=True, page_hash="00000000000000aa")
    variants = [SID_URL.replace("abc", s) for s in ("x1", "x2", "x3")]
    for n, url in enumerate(variants):
        assert guard.decide(url, f"r{n}", queued=False).action == DROP
    # the first requests a rule turns away are chosen for checks, against a downloaded page
    checks = guard.take_checks()
    assert [c.url for c in checks] == variants[:2] and {c.witness for c in checks} == {canonical}
    again = guard.retract(variants[0], canonical)  # the check of the first one failed
    assert again is not None and guard.stale
    # checks sent are downloads under way: only the request never checked goes again
    assert [(r.token, r.url) for r in again] == [("r2", variants[2])]
    assert guard.canonical(variants[2]) == variants[2]
    # links to a URL sent again past the dupefilter are dropped, as the dupefilter would
    repeat = guard.decide(variants[2], "r9", queued=False)
    assert (repeat.action, repeat.repeat) == (DROP, True)
    # ...but not one the dupefilter would let through (dont_filter, a POST)
    assert guard.decide(variants[2], "r10", queued=False, filtered=False).action == KEEP
    assert guard.retract(variants[0], canonical) is None, "nothing left to retract"


def test_a_checked_url_is_not_downloaded_again_once_no_rule_turns_it_away() -> None:
    """A check goes past the dupefilter, which so never records its URL: when a relearn
    drops the rule, a later link to that URL must not fetch it a second time."""
    guard = _guard()
    guard.checks = RuleChecks(first=1, share=0.0)
    canonical = guard.canonical(SID_URL)
    guard.note_download([canonical], 100, page=True, page_hash="00000000000000aa")
    variant = SID_URL.replace("abc", "x1")
    assert guard.decide(variant, "r1", queued=False).action == DROP
    assert [c.url for c in guard.take_checks()] == [variant]
    guard.note_checked(variant)  # sent as a plain GET
    guard.install(RuleSet(site=SITE, version=9, nodes={}, rules={}), resend=False)
    repeat = guard.decide(variant, "r2", queued=False)
    assert (repeat.action, repeat.repeat) == (DROP, True)
    assert guard.decide(variant, "r3", queued=False, filtered=False).action == KEEP


def test_after_a_retraction_only_pages_downloaded_under_their_own_url_count() -> None:
    guard = _guard()
    variant = SID_URL.replace("abc", "x1")
    guard.note_download([variant], 10, page=True)
    canonical = guard.canonical(SID_URL)
    assert guard.was_fetched(canonical)  # keyed by the rule: a variant was downloaded
    guard.retract(SID_URL, variant)
    assert not guard.was_fetched(canonical)
    assert guard.was_fetched(variant)


def _proven_drops(guard: HostGuard[str]) -> tuple[str, list[str]]:
    """Three variants of a downloaded page dropped by a rule whose three checks held."""
    canonical = guard.canonical(SID_URL)
    guard.note_download([canonical], 100, page=True)
    variants = [SID_URL.replace("abc", s) for s in ("x1", "x2", "x3")]
    for n, url in enumerate(variants):
        assert guard.decide(url, f"r{n}", queued=False).action == DROP
    assert guard.ruleset is not None
    rule = guard.ruleset.signature(guard.ruleset.resolve(SID_URL)[2] or 0)
    guard.checks.proven({rule: (3, 3)})
    return rule, variants


def test_a_relearn_without_a_rule_whose_checks_held_sends_nothing_again() -> None:
    guard = _guard()
    _proven_drops(guard)
    empty = RuleSet(site=SITE, version=9, nodes={}, rules={})
    assert guard.install(empty, resend=True) == []


def test_a_failed_check_of_a_rule_no_longer_in_force_sends_its_requests_again() -> None:
    guard = _guard()
    rule, variants = _proven_drops(guard)
    guard.install(RuleSet(site=SITE, version=9, nodes={}, rules={}), resend=True)
    assert guard.retract(variants[0], guard.canonical(SID_URL)) is None, "no rule in force"
    assert guard.release("another rule") == []
    assert sorted(r.url for r in guard.release(rule)) == variants
    assert guard.release(rule) == [], "nothing goes twice"


def test_a_rule_whose_checks_did_not_all_hold_is_not_taken_at_its_word() -> None:
    guard = _guard()
    rule, variants = _proven_drops(guard)
    guard.checks.proven({rule: (4, 3)})
    again = guard.install(RuleSet(site=SITE, version=9, nodes={}, rules={}), resend=True)
    assert sorted(r.url for r in again) == variants


def test_a_request_another_rule_took_over_is_vouched_for_by_that_rule_alone() -> None:
    guard = _guard()
    _, variants = _proven_drops(guard)
    urls, clusters = mirror_site()
    votes = [5 if "show.php" in u else 0 for u in urls]
    other = learn_rules(urls, clusters, site=SITE, votes=votes).ruleset  # another form
    moved = other.apply(SID_URL)
    assert moved != guard.canonical(SID_URL)
    guard.note_download([moved], 100, page=True)
    assert guard.install(other, resend=True) == []  # its page is downloaded
    # the rule that took the requests over was never checked: without it, they go again
    again = guard.install(RuleSet(site=SITE, version=9, nodes={}, rules={}), resend=True)
    assert sorted(r.url for r in again) == variants


def test_a_relearn_silent_on_a_request_keeps_it_turned_away_while_the_old_rules_held() -> None:
    """New rules that leave a turned-away URL as it is say nothing of it; when the rules
    they replace merged no distinct pages of their sample, it stays turned away."""
    from scrapy_templates.urlnorm.jobs import Keyed

    sent_again = {}
    for held in (True, False):
        guard = _guard()
        canonical = guard.canonical(SID_URL)
        guard.note_download([canonical], 100, page=True)
        variants = [SID_URL.replace("abc", s) for s in ("x1", "x2")]
        for n, url in enumerate(variants):
            assert guard.decide(url, f"r{n}", queued=False).action == DROP
        _, count, mark = guard.job_input()
        silent = RuleSet(site=SITE, version=9, nodes=[], rules={})
        keyed = Keyed(silent, [], [], False, count, previous_held=held)
        sent_again[held] = [r.url for r in guard.install_keyed(silent, keyed, mark, resend=True)]
    assert sent_again == {True: [], False: variants}


def test_a_silent_relearn_sends_again_what_no_download_stands_for() -> None:
    """Turned away for a page that is neither downloaded nor on its way (its request was
    withdrawn), a request comes back even though the old rules held."""
    from scrapy_templates.urlnorm.jobs import Keyed

    guard = _guard()
    assert _sent(guard, SID_URL, "r0").action == REWRITE
    other = SID_URL.replace("abc", "x1")
    assert _sent(guard, other, "r1").action == DROP
    guard.note_withdrawn(guard.canonical(SID_URL))
    _, count, mark = guard.job_input()
    silent = RuleSet(site=SITE, version=9, nodes=[], rules={})
    keyed = Keyed(silent, [], [], False, count, previous_held=True)
    again = [r.url for r in guard.install_keyed(silent, keyed, mark, resend=True)]
    assert again == [SID_URL, other]


def test_a_request_kept_through_one_silent_relearn_comes_back_after_the_next_change() -> None:
    """Rules that held vouch for their own turned-away requests once: the next change of
    rules, whose replaced rules never turned them away, sends them again."""
    from scrapy_templates.urlnorm.jobs import Keyed

    guard = _guard()
    guard.note_download([guard.canonical(SID_URL)], 100, page=True)
    variant = SID_URL.replace("abc", "x1")
    assert guard.decide(variant, "r0", queued=False).action == DROP
    for version, nodes, expected in ((9, [], []), (10, _ruleset().nodes, [variant])):
        silent = RuleSet(site=SITE, version=version, nodes=nodes, rules={})
        _, count, mark = guard.job_input()
        keyed = Keyed(silent, [], [], False, count, previous_held=True)
        assert [r.url for r in guard.install_keyed(silent, keyed, mark, resend=True)] == expected


def test_a_failed_page_is_never_left_waiting_on_a_try_that_never_goes() -> None:
    """A link to a URL requested before is no try (the dupefilter drops it); a try the
    scheduler dropped, or whose key a rules change moved, is forgotten."""
    guard = _guard()
    canonical = guard.canonical(SID_URL)
    assert _sent(guard, canonical, "r0").action == KEEP
    guard.note_failed(canonical, resend=False)
    tried = SID_URL.replace("abc", "t1")
    assert _sent(guard, tried, "r1").action == KEEP  # the try, as it is
    guard.note_failed(tried, resend=False)  # fails too
    assert guard.decide(tried, "r2", queued=False).action != KEEP  # the same link again
    other = SID_URL.replace("abc", "t2")
    assert guard.decide(other, "r3", queued=False).action == KEEP
    guard.note_requested(other)
    guard.note_dropped(other)  # the scheduler dropped it after all
    assert not guard.is_pending(url_key(canonical))
    last = SID_URL.replace("abc", "t3")
    assert guard.decide(last, "r4", queued=True).action == KEEP
    guard.install(RuleSet(site=SITE, version=9, nodes={}, rules={}), resend=False)
    guard.note_failed(last, resend=False)  # its key moved with the rules
    assert guard.retrying == {}


def test_a_url_the_dupefilter_recorded_is_dropped_as_seen_fragment_aside() -> None:
    guard: HostGuard[str] = HostGuard()
    page, other = "http://a.example/guide/intro.html", "http://a.example/guide/setup.html"
    guard.note_seen(page)
    guard.note_seen(f"{other}#install")
    for url in (page, f"{page}#usage", other, f"{other}#install"):
        verdict = guard.decide(url, "r", queued=False, seen=True)
        assert (verdict.action, verdict.url, verdict.seen) == (DROP, url, True)
    assert guard.decide(f"{page}?v=2", "r", queued=False, seen=True).action == KEEP
    # with dont_filter, or fingerprinted otherwise (seen false), the dupefilter lets it go
    assert guard.decide(page, "r", queued=False, filtered=False, seen=True).action == KEEP
    assert guard.decide(page, "r", queued=False).action == KEEP
    # a queued request is past the dupefilter already
    assert guard.decide(page, "r", queued=True, seen=True).action == KEEP


def test_a_url_requested_past_the_dupefilter_is_not_dropped_as_seen() -> None:
    """A request with ``dont_filter`` (a start URL) leaves no trace in the dupefilter: a later
    link to its URL goes to the scheduler, which lets it through."""
    guard: HostGuard[str] = HostGuard()
    guard.note_requested(SID_URL)
    assert guard.decide(SID_URL, "r", queued=False, seen=True).action == KEEP
    assert guard.is_pending(url_key(SID_URL))


def test_a_repeat_seen_is_dropped_before_any_rule_judges_it() -> None:
    """A repeat of a URL scheduled as it is: no rule turned it away, so it is neither
    remembered nor a candidate for a check."""
    guard = _guard()
    canonical = guard.canonical(SID_URL)
    guard.note_seen(canonical)
    verdict = guard.decide(canonical, "r", queued=False, seen=True)
    assert (verdict.action, verdict.seen, verdict.repeat) == (DROP, True, False)
    assert not guard.decided


def test_a_repeat_of_a_failed_page_is_left_to_the_rules() -> None:
    """A URL scheduled before its rule existed failed; a rule now maps it to a URL never
    requested: the repeat is rewritten there, the page's other try, as without the drop."""
    guard: HostGuard[str] = HostGuard()
    guard.note_requested(SID_URL)
    guard.note_seen(SID_URL)
    guard.install(_ruleset(), resend=False)
    guard.note_failed(SID_URL, resend=False)
    verdict = guard.decide(SID_URL, "r", queued=False, seen=True)
    assert (verdict.action, verdict.url) == (REWRITE, guard.canonical(SID_URL))
