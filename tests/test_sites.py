from __future__ import annotations

from urllib.parse import urljoin, urlsplit

from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_templates.sites import LinkTargets, domain_site, host_site, page_id


def test_host_site_keeps_port_and_drops_userinfo() -> None:
    assert host_site("http://User:pw@Example.COM:8080/a?b#c") == "example.com:8080"


def _netloc_host(url: str) -> str | None:
    """``host_site`` by way of ``urlsplit`` (``None`` where that raises)."""
    try:
        return urlsplit(url).netloc.rpartition("@")[2].lower()
    except ValueError:
        return None


def _host_or_none(url: str) -> str | None:
    try:
        return host_site(url)
    except ValueError:
        return None


@given(
    st.sampled_from(["http://", "https://", "HTTP://", "ftp://", "//", "http:/", "", "https://u@"]),
    st.text(alphabet="hH:/?#@[]\t\n\r .aZ%-_s0x\u00e9\u00a0\uff0f\u2100\ufe6b", max_size=16),
)
@settings(max_examples=2000)
def test_host_site_reads_the_host_urlsplit_reads(scheme: str, rest: str) -> None:
    # the fast reading of plain http(s) URLs agrees with urlsplit everywhere, errors included
    assert _host_or_none(scheme + rest) == _netloc_host(scheme + rest)


def test_host_site_of_urls_urlsplit_cleans_or_rejects() -> None:
    assert host_site("http://exa\tmple.com/a") == "example.com"
    assert host_site("HTTPS://Example.com?q") == "example.com"
    assert host_site("http://[::1]:8080/") == "[::1]:8080"
    assert _host_or_none("http://[::1/") is None
    # a host NFKC reads with a delimiter in it
    assert _host_or_none("http://a\uff0fb/") is None
    assert _host_or_none("http://user\ufe6bevil.com/") is None
    assert host_site("http://b\u00fccher.example/") == "b\u00fccher.example"


def test_domain_site_groups_sister_hosts_offline() -> None:
    assert domain_site("https://blog.example.co.uk/x") == "example.co.uk"
    assert domain_site("https://shop.example.co.uk/") == "example.co.uk"
    assert domain_site("http://127.0.0.1:8000/") == "127.0.0.1"


def test_page_id_ignores_fragment_only() -> None:
    assert page_id("http://s/a#top") == page_id("http://s/a")
    assert page_id("http://s/a?x=1") != page_id("http://s/a")


_BASES = [
    "http://a.test/x/y.html?q=1",
    "http://a.test/x/z.html",
    "http://a.test/x/",
    "http://a.test/x",
    "http://a.test",
    "https://a.test:8443/",
    "http://b.test/deep/er/page",
    "http://b.test/deep/er/page;v=2",
    "http://b.test/a//b/c",
    "http://b.test/a/./b/../c/d",
    "http://b.test/é/x",
]
_HREFS = [
    "/p",
    "/p?s=1#f",
    "//c.test/p",
    "http://d.test/q",
    "https://d.test/q",
    "rel.html",
    "rel.html?x=1#y",
    "./rel.html",
    "../up",
    "?page=2",
    "#top",
    "#other",
    "#a#b",
    "#",
    "",
    "mailto:someone@a.test",
    "a//b",
    "a/./b",
    "a/../b",
    "x y/é.html",
]


def test_link_targets_resolve_as_urljoin_does() -> None:
    # One cache for pages in the same and in other directories: every answer, remembered or
    # not, is what urljoin gives for that page.
    targets = LinkTargets()
    for _ in range(2):  # the second round answers from what was remembered
        for base in _BASES:
            target = targets.resolver(base)
            assert [target(h) for h in _HREFS] == [page_id(urljoin(base, h)) for h in _HREFS]
    # hrefs that depend on the whole URL of the page ("?page=2", "#top", "") are not kept
    fresh = LinkTargets()
    target = fresh.resolver(_BASES[0])
    for href in ("?page=2", "#top", "", "//c.test/p", "mailto:x@a.test", "rel.html", "/p"):
        target(href)
    assert sorted(fresh.known) == ["http://a.test/p", "http://a.test/x/\0rel.html"]


def test_link_targets_forget_everything_at_their_limit() -> None:
    targets = LinkTargets(limit=2)
    target = targets.resolver("http://a.test/")
    for href in ("/1", "/2", "/3"):
        target(href)
    assert list(targets.known) == ["http://a.test/3"]


_PARTS = st.sampled_from(["a", "b.html", ".", "..", "", "x y", "%20", "?q=1", "#f", "é", "~u", "/"])


@settings(max_examples=500, deadline=None)
@given(
    st.lists(_PARTS, min_size=1, max_size=5).map("".join),
    st.lists(_PARTS, max_size=5).map(lambda p: "http://h.test/" + "".join(p)),
)
def test_any_relative_href_resolves_as_urljoin_does(href: str, base: str) -> None:
    assert LinkTargets().resolver(base)(href) == page_id(urljoin(base, href))
