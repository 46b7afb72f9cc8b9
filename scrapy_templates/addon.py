"""The Scrapy add-on: ``ADDONS = {"scrapy_templates.Addon": 500}`` wires everything."""

from __future__ import annotations

import logging

from scrapy.settings import BaseSettings

from scrapy_templates.config import SettingError, TemplatesConfig, convert
from scrapy_templates.crawl.middlewares import (
    UrlRulesDownloaderMiddleware,
    UrlRulesSpiderMiddleware,
)
from scrapy_templates.crawl.pipeline import TemplatePipeline
from scrapy_templates.crawl.progress import ProgressLog
from scrapy_templates.crawl.runtime import TemplatesRuntime
from scrapy_templates.settings import DEFAULTS, SETTINGS

logger = logging.getLogger(__name__)

_ENABLED = next(s for s in SETTINGS if s.name == "TEMPLATES_ENABLED")


# The response size the cold start makes room for per held item in Scrapy's scraper (see
# ``SCRAPER_SLOT_MAX_ACTIVE_SIZE``): documentation pages run to a few hundred KB.
HELD_RESPONSE_BYTES = 512 * 1024


class Addon:
    """Sets every ``TEMPLATES_*`` default at "addon" priority (a project or spider setting
    still wins), checks every ``TEMPLATES_*`` setting and enables the runtime extension (the
    store, URL rules and relearning every other part uses), the template pipeline, the
    progress log line and, unless ``TEMPLATES_URL_RULES`` is false, the URL-rule middlewares.
    ``TEMPLATES_ENABLED = False`` checks and enables nothing."""

    def update_settings(self, settings: BaseSettings) -> None:
        """Apply the defaults, then, unless ``TEMPLATES_ENABLED`` is false, check every setting
        (a :class:`~scrapy_templates.config.SettingError` naming each value not allowed stops
        the crawl before its first request) and enable the components."""
        for name, value in DEFAULTS.items():
            settings.set(name, value, priority="addon")
        try:
            if not convert(_ENABLED, settings.get(_ENABLED.name)):
                return
            # Scrapy merges the spider's custom_settings into these settings when it creates
            # the crawler, before any add-on runs, so this checks the values the crawl will use.
            config = TemplatesConfig.from_settings(settings)
        except SettingError as exc:
            # one plain line before Scrapy's traceback of the failed start
            logger.error("scrapy-templates: the crawl cannot start: %s", exc)
            raise
        held = config.bootstrap_pages * HELD_RESPONSE_BYTES
        if held > settings.getint("SCRAPER_SLOT_MAX_ACTIVE_SIZE"):
            # the cold start holds a new site's first items, and Scrapy counts their responses
            # against this; at the limit it stops downloading, and the wait ends half-decided
            settings.set("SCRAPER_SLOT_MAX_ACTIVE_SIZE", held, priority="addon")
        settings.setdefault_in_component_priority_dict(
            "ITEM_PIPELINES", TemplatePipeline, config.pipeline_priority
        )
        settings.setdefault_in_component_priority_dict("EXTENSIONS", TemplatesRuntime, 500)
        settings.setdefault_in_component_priority_dict("EXTENSIONS", ProgressLog, 500)
        if config.url_rules:
            settings.setdefault_in_component_priority_dict(
                "SPIDER_MIDDLEWARES",
                UrlRulesSpiderMiddleware,
                config.url_spider_middleware_priority,
            )
            settings.setdefault_in_component_priority_dict(
                "DOWNLOADER_MIDDLEWARES",
                UrlRulesDownloaderMiddleware,
                config.url_downloader_middleware_priority,
            )
