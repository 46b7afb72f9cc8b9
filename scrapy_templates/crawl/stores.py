"""Builds the configured store from Scrapy settings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scrapy.exceptions import NotConfigured
from scrapy.settings import BaseSettings
from scrapy.utils.misc import load_object

from scrapy_templates.store.base import TemplateStore
from scrapy_templates.store.memory import MemoryStore


def redis_url(settings: BaseSettings) -> str | None:
    """``TEMPLATES_REDIS_URL``, else scrapy-redis's ``REDIS_URL``."""
    url = settings.get("TEMPLATES_REDIS_URL") or settings.get("REDIS_URL")
    return str(url) if url else None


def build_store(settings: BaseSettings) -> TemplateStore:
    kind = settings.get("TEMPLATES_STORE", "memory")
    limits: dict[str, Any] = {
        "max_links": settings.getint("TEMPLATES_MAX_LINKS"),
        "max_owners": settings.getint("TEMPLATES_MAX_OWNERS"),
    }
    if kind == "memory":
        jobdir = settings.get("JOBDIR")
        path = Path(jobdir) / settings.get("TEMPLATES_STORE_FILE") if jobdir else None
        return MemoryStore(path=path, **limits)
    if kind == "redis":
        from scrapy_templates.store.redis import RedisStore

        url = redis_url(settings)
        if not url:
            raise NotConfigured(
                "TEMPLATES_STORE is 'redis' but neither TEMPLATES_REDIS_URL nor REDIS_URL is set"
            )
        return RedisStore(url, prefix=settings.get("TEMPLATES_REDIS_PREFIX"), **limits)
    store_cls = load_object(kind)
    store: TemplateStore = store_cls.from_settings(settings)
    return store
