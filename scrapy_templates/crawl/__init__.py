"""The thin layer that touches Scrapy: the runtime extension that owns a crawler's parts, the
item pipeline, the URL-rule middlewares and the progress line."""
