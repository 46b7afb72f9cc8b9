"""The thin layer that touches Scrapy: the item pipeline (and, later, middlewares and the
relearning extension)."""
