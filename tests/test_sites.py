from __future__ import annotations

from urllib.parse import urljoin

import pytest

from scrapy_templates.sites import LinkTargets, domain_site, host_site, page_id


def test_host_site_keeps_port_and_drops_userinfo() -> None:
    assert host_site("http://User:pw@Example.COM:8080/a?b#c") == "example.com:8080"


def test_domain_site_groups_sister_hosts_offline() -> None:
    assert domain_site("https://blog.example.co.uk/x") == "example.co.uk"
    assert domain_site("https://shop.example.co.uk/") == "example.co.uk"
    assert domain_site("http://127.0.0.1:8000/") == "127.0.0.1"


def test_page_id_ignores_fragment_only() -> None:
    assert page_id("http://s/a#top") == page_id("http://s/a")
    assert page_id("http://s/a?x=1") != page_id("http://s/a")


@pytest.mark.parametrize(
    "base",
    ["http://a.test/x/y.html?q=1", "https://a.test:8443/", "http://b.test/deep/er/page"],
)
def test_link_targets_resolve_as_urljoin_does(base: str) -> None:
    hrefs = [
        "/p",
        "/p?s=1#f",
        "//c.test/p",
        "http://d.test/q",
        "https://d.test/q",
        "rel.html",
        "../up",
        "?page=2",
        "#top",
        "",
    ]
    targets = LinkTargets()
    for _ in range(2):  # the second round answers from what was remembered
        target = targets.resolver(base)
        assert [target(h) for h in hrefs] == [page_id(urljoin(base, h)) for h in hrefs]
    # only hrefs whose target does not depend on the page's path are remembered
    assert len(targets.known) == 4


def test_link_targets_forget_everything_at_their_limit() -> None:
    targets = LinkTargets(limit=2)
    target = targets.resolver("http://a.test/")
    for href in ("/1", "/2", "/3"):
        target(href)
    assert list(targets.known) == ["http://a.test/3"]
