from __future__ import annotations

from scrapy_templates.sites import domain_site, host_site, page_id


def test_host_site_keeps_port_and_drops_userinfo() -> None:
    assert host_site("http://User:pw@Example.COM:8080/a?b#c") == "example.com:8080"


def test_domain_site_groups_sister_hosts_offline() -> None:
    assert domain_site("https://blog.example.co.uk/x") == "example.co.uk"
    assert domain_site("https://shop.example.co.uk/") == "example.co.uk"
    assert domain_site("http://127.0.0.1:8000/") == "127.0.0.1"


def test_page_id_ignores_fragment_only() -> None:
    assert page_id("http://s/a#top") == page_id("http://s/a")
    assert page_id("http://s/a?x=1") != page_id("http://s/a")
