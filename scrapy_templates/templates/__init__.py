"""Which pagelets are template: the counting decision and the batch algorithms of ``000_…``."""

from scrapy_templates.templates.decide import Thresholds, is_template, mark_pagelets
from scrapy_templates.templates.detect import global_templates, local_templates

__all__ = ["Thresholds", "global_templates", "is_template", "local_templates", "mark_pagelets"]
