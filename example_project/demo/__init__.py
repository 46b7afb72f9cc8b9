"""Example Scrapy project that crawls the bundled demo site with scrapy-templates enabled."""
