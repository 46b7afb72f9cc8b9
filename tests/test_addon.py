from __future__ import annotations

from scrapy.settings import Settings

from scrapy_templates import Addon
from scrapy_templates.crawl.pipeline import TemplatePipeline
from scrapy_templates.settings import DEFAULTS, SETTINGS


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


def test_disabled_addon_adds_no_pipeline() -> None:
    settings = Settings({"TEMPLATES_ENABLED": False})
    Addon().update_settings(settings)
    assert TemplatePipeline not in settings.getdict("ITEM_PIPELINES")


def test_every_setting_is_documented_and_prefixed() -> None:
    names = [s.name for s in SETTINGS]
    assert len(names) == len(set(names)) == len(DEFAULTS)
    for setting in SETTINGS:
        assert setting.name.startswith("TEMPLATES_")
        assert setting.doc.strip()


def test_settings_reference_in_docs_is_current() -> None:
    from pathlib import Path

    from scrapy_templates.settings import render_markdown

    doc = Path(__file__).resolve().parent.parent / "docs" / "settings.md"
    assert doc.read_text() == render_markdown(), (
        "regenerate: python -m scrapy_templates.settings > docs/settings.md"
    )
