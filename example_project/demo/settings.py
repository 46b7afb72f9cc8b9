"""Settings of the demo project: one line enables scrapy-templates."""

BOT_NAME = "demo"
SPIDER_MODULES = ["demo.spiders"]
NEWSPIDER_MODULE = "demo.spiders"

ADDONS = {"scrapy_templates.Addon": 500}

ROBOTSTXT_OBEY = False
COOKIES_ENABLED = False
TELNETCONSOLE_ENABLED = False
CONCURRENT_REQUESTS = 16
LOG_LEVEL = "INFO"
TWISTED_REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"

# The exported items do not need the raw HTML once the pagelets are marked.
TEMPLATES_KEEP_HTML = False

FEEDS = {"output/items.jsonl": {"format": "jsonlines", "overwrite": True, "encoding": "utf8"}}
