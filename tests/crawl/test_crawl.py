"""Real Scrapy crawls of the bundled demo site, with the add-on enabled by its one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.crawl.conftest import run_crawl


@pytest.fixture(scope="module")
def demo_crawl(tmp_path_factory: pytest.TempPathFactory) -> object:
    from demo.site import DemoSite

    with DemoSite() as site:
        return run_crawl(
            tmp_path_factory.mktemp("demo"), start=site.url, TEMPLATES_LOGSTATS_INTERVAL=0.5
        )


def test_every_page_gives_one_marked_item(demo_crawl) -> None:  # type: ignore[no-untyped-def]
    items, stats = demo_crawl.items, demo_crawl.stats
    assert len(items) == stats["response_received_count"] - stats.get(
        "httperror/response_ignored_count", 0
    )
    assert all("content_text" in item for item in items)
    assert stats["templates/items_marked"] == len(items)
    assert stats["templates/bootstrap_waits"] > 0


def test_shared_blocks_are_flagged_from_the_first_item_on(demo_crawl) -> None:  # type: ignore[no-untyped-def]
    templated = [
        i for i in demo_crawl.items if "/articles/" in i["url"] and "print" not in i["url"]
    ]
    assert templated, "the crawl reached article pages"
    # a print view carries no shared block at all: the first item that can have them
    first = next(i for i in demo_crawl.items if "print=1" not in i["url"])
    for item in [first, *templated[:3], templated[-1]]:
        flagged = " ".join(p["text"] for p in item["pagelets"] if p["template"])
        assert "All rights reserved" in flagged, item["url"]
        assert "Most read" in flagged, item["url"]
        assert "All rights reserved" not in item["content_text"]
    for item in [*templated[:3], templated[-1]]:  # the first item may be the newsletter page
        assert "Newsletter" not in item["content_text"]


def test_progress_lines_during_and_at_the_end_of_the_crawl(demo_crawl) -> None:  # type: ignore[no-untyped-def]
    lines = [line for line in demo_crawl.log.splitlines() if "Templates: marked" in line]
    assert len(lines) >= 2, "a periodic line and the closing one"
    marked = demo_crawl.stats["templates/items_marked"]
    assert f"Templates: marked {marked} pages" in lines[-1]
    assert f"requests rewritten {demo_crawl.stats.get('templates/urls/rewritten', 0)}" in lines[-1]


def test_article_text_is_content(demo_crawl) -> None:  # type: ignore[no-untyped-def]
    from demo.site import BY_ID

    for item in demo_crawl.items:
        if "/articles/" in item["url"] and "print" not in item["url"]:
            art_id = int(item["url"].split("/articles/")[1].split("-")[0])
            article = BY_ID[art_id]
            assert article.paragraphs[0][:60] in item["content_text"]
            assert article.title in item["content_text"]


def test_crawl_without_the_addon_leaves_items_alone(tmp_path: Path) -> None:
    from demo.site import DemoSite

    with DemoSite() as site:
        result = run_crawl(tmp_path, start=site.url, TEMPLATES_ENABLED=False)
    assert result.items
    assert all("content_text" not in item for item in result.items)
    assert not any(key.startswith("templates/") for key in result.stats)


def test_jobdir_keeps_what_the_first_crawl_learned(tmp_path: Path) -> None:
    import json

    from demo.site import DemoSite

    jobdir = tmp_path / "job"
    with DemoSite() as site:
        first = run_crawl(tmp_path / "first", start=site.url, JOBDIR=str(jobdir))
        saved = json.loads((jobdir / "scrapy-templates.json").read_text())
        [state] = saved["sites"].values()
        # pruned at close: what is left repeats on at least 5% of the pages (and on 2 or more)
        assert state["counts"] and min(state["counts"].values()) >= max(
            2, int(0.05 * state["counted"])
        )
        assert {"rules", "model"} <= set(state["published"])
        second = run_crawl(tmp_path / "second", start=site.url, JOBDIR=str(jobdir))
    assert first.stats["templates/bootstrap_waits"] > 0
    assert second.stats.get("templates/bootstrap_waits", 0) == 0
    assert "from the store" in second.log
    assert second.stats["templates/urls/rules_version"] >= state["published"]["rules"][0]
    assert second.items and all(
        i["templates"]["pages_seen"] >= state["counted"] for i in second.items[:5]
    )


@pytest.mark.parametrize(
    ("limit", "slack"),
    [({"DEPTH_LIMIT": 1}, 0), ({"CLOSESPIDER_PAGECOUNT": 10}, 1)],
    ids=["depth", "pages"],
)
def test_the_cold_start_keeps_to_the_crawls_limits(
    tmp_path: Path, limit: dict[str, int], slack: int
) -> None:
    # slack: a page limit closes the spider with one request possibly in flight
    from demo.site import DemoSite

    common = {"CONCURRENT_REQUESTS": 1, **limit}
    with DemoSite() as site:
        plain = run_crawl(tmp_path / "plain", start=site.url, TEMPLATES_ENABLED=False, **common)
        ours = run_crawl(tmp_path / "ours", start=site.url, TEMPLATES_URL_RULES=False, **common)
    assert ours.stats["templates/bootstrap_waits"] > 0
    downloads = "downloader/response_count"
    assert abs(ours.stats[downloads] - plain.stats[downloads]) <= slack
    assert abs(len(ours.items) - len(plain.items)) <= slack
