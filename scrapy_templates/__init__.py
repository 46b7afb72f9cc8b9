"""scrapy-templates: template pagelets flagged on Scrapy items while the crawl runs."""

from scrapy_templates.addon import Addon

__version__ = "0.1.0"

__all__ = ["Addon", "__version__"]
