"""The Scrapy add-on: ``ADDONS = {"scrapy_templates.Addon": 500}`` wires everything."""

from __future__ import annotations

from scrapy.settings import BaseSettings

from scrapy_templates.crawl.pipeline import TemplatePipeline
from scrapy_templates.settings import DEFAULTS


class Addon:
    """Sets every ``TEMPLATES_*`` default at "addon" priority (a project or spider setting
    still wins) and enables the template pipeline."""

    def update_settings(self, settings: BaseSettings) -> None:
        for name, value in DEFAULTS.items():
            settings.set(name, value, priority="addon")
        if not settings.getbool("TEMPLATES_ENABLED"):
            return
        settings.setdefault_in_component_priority_dict(
            "ITEM_PIPELINES", TemplatePipeline, settings.getint("TEMPLATES_PIPELINE_PRIORITY")
        )
