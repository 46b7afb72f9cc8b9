"""A template pipeline outside a crawl, wired as the add-on wires it in one."""

from __future__ import annotations

from typing import Any

from scrapy.utils.test import get_crawler

from scrapy_templates import Addon
from scrapy_templates.crawl.pipeline import TemplatePipeline


def template_pipeline(settings: dict[str, Any]) -> TemplatePipeline:
    """The pipeline of a crawler with the add-on and ``settings`` (its runtime built, no
    engine): what ``process_item`` costs with nothing else of a crawl around it."""
    crawler = get_crawler(settings_dict={"ADDONS": {Addon: 500}, **settings})
    return TemplatePipeline.from_crawler(crawler)
