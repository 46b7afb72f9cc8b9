from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from scrapy.crawler import Crawler
from scrapy.settings import Settings
from scrapy.spiders import Spider
from scrapy.utils.conf import build_component_list
from scrapy.utils.misc import load_object
from scrapy.utils.test import get_crawler

from scrapy_templates import Addon
from scrapy_templates.addon import HELD_RESPONSE_BYTES
from scrapy_templates.config import SettingError
from scrapy_templates.crawl.middlewares import (
    UrlRulesDownloaderMiddleware,
    UrlRulesSpiderMiddleware,
)
from scrapy_templates.crawl.pipeline import TemplatePipeline
from scrapy_templates.crawl.progress import ProgressLog
from scrapy_templates.crawl.runtime import TemplatesRuntime
from scrapy_templates.settings import DEFAULTS, SETTINGS, render_markdown
from tests.conftest import ROOT

ADDON = {"ADDONS": {"scrapy_templates.Addon": 500}}
ALLOWED = {s.name: s.allowed for s in SETTINGS}
# the component setting each component of the add-on is enabled in
COMPONENTS = {
    "ITEM_PIPELINES": TemplatePipeline,
    "EXTENSIONS": TemplatesRuntime,
    "SPIDER_MIDDLEWARES": UrlRulesSpiderMiddleware,
    "DOWNLOADER_MIDDLEWARES": UrlRulesDownloaderMiddleware,
}


def enabled(crawler: Crawler, name: str) -> set[Any]:
    """The components a crawler's component setting ``name`` (with its base) enables."""
    return {load_object(path) for path in build_component_list(crawler.settings.getwithbase(name))}


class LokalSpider(Spider):
    name = "lokal"
    custom_settings = {"TEMPLATES_ALGORITHM": "lokal"}  # noqa: RUF012  (Scrapy reads the class)


def test_addon_enables_the_pipeline_and_sets_defaults() -> None:
    settings = Settings()
    Addon().update_settings(settings)
    assert settings.getdict("ITEM_PIPELINES")[TemplatePipeline] == 300
    assert settings.get("TEMPLATES_ALGORITHM") == "local"


def test_project_settings_win_over_addon_defaults() -> None:
    settings = Settings({"TEMPLATES_MIN_PAGES": 5, "TEMPLATES_PIPELINE_PRIORITY": 800})
    Addon().update_settings(settings)
    assert settings.getint("TEMPLATES_MIN_PAGES") == 5
    assert settings.getdict("ITEM_PIPELINES")[TemplatePipeline] == 800


def test_the_scraper_makes_room_for_the_cold_starts_held_items() -> None:
    """Scrapy stops downloading when the responses of items in its pipelines pass
    SCRAPER_SLOT_MAX_ACTIVE_SIZE; the cold start holds 50 of them."""
    settings = Settings()
    Addon().update_settings(settings)
    assert settings.getint("SCRAPER_SLOT_MAX_ACTIVE_SIZE") == 50 * HELD_RESPONSE_BYTES > 5_000_000
    mine = Settings({"SCRAPER_SLOT_MAX_ACTIVE_SIZE": 1_000_000})
    Addon().update_settings(mine)
    assert mine.getint("SCRAPER_SLOT_MAX_ACTIVE_SIZE") == 1_000_000
    off = Settings({"TEMPLATES_BOOTSTRAP_PAGES": 0})
    Addon().update_settings(off)
    assert off.getint("SCRAPER_SLOT_MAX_ACTIVE_SIZE") == 5_000_000


def test_disabled_addon_adds_no_pipeline() -> None:
    settings = Settings({"TEMPLATES_ENABLED": False})
    Addon().update_settings(settings)
    assert TemplatePipeline not in settings.getdict("ITEM_PIPELINES")


# -- checked when the crawler starts -------------------------------------------------------


def test_a_crawler_with_allowed_settings_gets_every_component() -> None:
    crawler = get_crawler(
        settings_dict={**ADDON, "TEMPLATES_MIN_SHARE": "0.5", "TEMPLATES_PIPELINE_PRIORITY": "700"}
    )
    for name, component in COMPONENTS.items():
        assert component in enabled(crawler, name), name
    assert crawler.settings.getdict("ITEM_PIPELINES")[TemplatePipeline] == 700
    assert isinstance(crawler.get_extension(ProgressLog), ProgressLog)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("TEMPLATES_MIN_SHARE", 1.5),
        ("TEMPLATES_ALGORITHM", "lokal"),
        ("TEMPLATES_MIN_PAGES", "three"),
        ("TEMPLATES_PIPELINE_PRIORITY", "high"),
        ("TEMPLATES_ENABLED", "maybe"),
    ],
)
def test_a_setting_not_allowed_stops_the_crawler(
    name: str, value: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with pytest.raises(SettingError) as caught:
        get_crawler(settings_dict={**ADDON, name: value})
    assert str(caught.value) == f"{name} = {value!r} is not allowed: {ALLOWED[name]}"
    # one plain log line says it, before the traceback of the failed start
    assert f"scrapy-templates: the crawl cannot start: {caught.value}" in caplog.text


def test_a_spider_setting_not_allowed_stops_the_crawler() -> None:
    with pytest.raises(SettingError) as caught:
        get_crawler(LokalSpider, ADDON)
    assert (
        str(caught.value)
        == f"TEMPLATES_ALGORITHM = 'lokal' is not allowed: {ALLOWED['TEMPLATES_ALGORITHM']}"
    )


def test_every_setting_not_allowed_is_named_in_one_error() -> None:
    with pytest.raises(SettingError) as caught:
        get_crawler(
            settings_dict={**ADDON, "TEMPLATES_MIN_SHARE": 1.5, "TEMPLATES_ALGORITHM": "lokal"}
        )
    assert [(p.name, p.value) for p in caught.value.problems] == [
        ("TEMPLATES_ALGORITHM", "lokal"),
        ("TEMPLATES_MIN_SHARE", 1.5),
    ]


@pytest.mark.parametrize("off", [False, "False", "0"])
def test_the_off_switch_checks_and_enables_nothing(off: Any) -> None:
    crawler = get_crawler(
        settings_dict={
            **ADDON,
            "TEMPLATES_ENABLED": off,
            "TEMPLATES_MIN_SHARE": 1.5,
            "TEMPLATES_ALGORITHM": "lokal",
        }
    )
    for name, component in COMPONENTS.items():
        assert component not in enabled(crawler, name), name
    assert crawler.get_extension(ProgressLog) is None


def test_scrapy_crawl_stops_before_its_first_request(tmp_path: Path) -> None:
    """A project whose spider sets one value not allowed, run with another on the command
    line: ``scrapy crawl`` fails with both in its message and never opens the spider (its
    start URL, on the discard port, is never requested)."""
    project = tmp_path / "proj"
    (project / "spiders").mkdir(parents=True)
    (tmp_path / "scrapy.cfg").write_text("[settings]\ndefault = proj.settings\n")
    (project / "__init__.py").write_text("")
    (project / "spiders" / "__init__.py").write_text("")
    (project / "settings.py").write_text(
        textwrap.dedent(
            """\
            SPIDER_MODULES = ["proj.spiders"]
            ADDONS = {"scrapy_templates.Addon": 500}
            TELNETCONSOLE_ENABLED = False
            LOG_LEVEL = "DEBUG"
            """
        )
    )
    (project / "spiders" / "lokal.py").write_text(
        textwrap.dedent(
            """\
            import scrapy


            class LokalSpider(scrapy.Spider):
                name = "lokal"
                start_urls = ["http://127.0.0.1:9/"]
                custom_settings = {"TEMPLATES_ALGORITHM": "lokal"}
            """
        )
    )
    env = {k: v for k, v in os.environ.items() if k != "SCRAPY_SETTINGS_MODULE"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.run(
        [sys.executable, "-m", "scrapy", "crawl", "lokal", "-s", "TEMPLATES_MIN_SHARE=1.5"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode != 0
    assert "2 scrapy-templates settings are not allowed:" in proc.stderr
    allowed = ALLOWED["TEMPLATES_ALGORITHM"]
    assert f"  TEMPLATES_ALGORITHM = 'lokal' is not allowed: {allowed}\n" in proc.stderr
    allowed = ALLOWED["TEMPLATES_MIN_SHARE"]
    assert f"  TEMPLATES_MIN_SHARE = '1.5' is not allowed: {allowed}\n" in proc.stderr
    assert "Spider opened" not in proc.stderr
    assert "Crawled" not in proc.stderr


# -- docs ----------------------------------------------------------------------------------


def test_every_setting_is_documented_and_prefixed() -> None:
    names = [s.name for s in SETTINGS]
    assert len(names) == len(set(names)) == len(DEFAULTS)
    for setting in SETTINGS:
        assert setting.name.startswith("TEMPLATES_")
        assert setting.doc.strip()


def test_settings_reference_in_docs_is_current() -> None:
    doc = ROOT / "docs" / "settings.md"
    assert doc.read_text() == render_markdown(), (
        "regenerate: python -m scrapy_templates.settings > docs/settings.md"
    )


def test_the_settings_page_shows_the_error_a_crawl_stops_with() -> None:
    with pytest.raises(SettingError) as caught:
        get_crawler(settings_dict={**ADDON, "TEMPLATES_MIN_SHARE": 1.5})
    assert f"\n{type(caught.value).__module__}.SettingError: {caught.value}\n" in render_markdown()
