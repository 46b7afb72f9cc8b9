"""The Scrapy add-on: ``ADDONS = {"scrapy_templates.Addon": 500}`` wires everything."""

from __future__ import annotations

from scrapy.settings import BaseSettings

from scrapy_templates.crawl.extension import RelearnExtension
from scrapy_templates.crawl.middlewares import (
    UrlRulesDownloaderMiddleware,
    UrlRulesSpiderMiddleware,
)
from scrapy_templates.crawl.pipeline import TemplatePipeline
from scrapy_templates.crawl.progress import ProgressLog
from scrapy_templates.settings import DEFAULTS


class Addon:
    """Sets every ``TEMPLATES_*`` default at "addon" priority (a project or spider setting
    still wins) and enables the template pipeline, the relearning extension, the progress
    log line and, unless ``TEMPLATES_URL_RULES`` is false, the URL-rule middlewares."""

    def update_settings(self, settings: BaseSettings) -> None:
        for name, value in DEFAULTS.items():
            settings.set(name, value, priority="addon")
        if not settings.getbool("TEMPLATES_ENABLED"):
            return
        settings.setdefault_in_component_priority_dict(
            "ITEM_PIPELINES", TemplatePipeline, settings.getint("TEMPLATES_PIPELINE_PRIORITY")
        )
        settings.setdefault_in_component_priority_dict("EXTENSIONS", RelearnExtension, 500)
        settings.setdefault_in_component_priority_dict("EXTENSIONS", ProgressLog, 500)
        if settings.getbool("TEMPLATES_URL_RULES"):
            settings.setdefault_in_component_priority_dict(
                "SPIDER_MIDDLEWARES",
                UrlRulesSpiderMiddleware,
                settings.getint("TEMPLATES_URL_SPIDER_MIDDLEWARE_PRIORITY"),
            )
            settings.setdefault_in_component_priority_dict(
                "DOWNLOADER_MIDDLEWARES",
                UrlRulesDownloaderMiddleware,
                settings.getint("TEMPLATES_URL_DOWNLOADER_MIDDLEWARE_PRIORITY"),
            )
