"""Builds the configured store."""

from __future__ import annotations

import pkgutil
from pathlib import Path
from typing import Any

from scrapy.settings import BaseSettings

from scrapy_templates.config import TemplatesConfig, effective_store
from scrapy_templates.store.base import TemplateStore
from scrapy_templates.store.memory import MemoryStore


def redis_url(config: TemplatesConfig, settings: BaseSettings) -> str | None:
    """``TEMPLATES_REDIS_URL``, else scrapy-redis's ``REDIS_URL``."""
    url = config.redis_url or settings.get("REDIS_URL")
    return str(url) if url else None


def build_store(config: TemplatesConfig, settings: BaseSettings) -> TemplateStore:
    """The store ``TEMPLATES_STORE`` names, or Redis when it is unset and a Redis URL is
    (``settings``: for ``JOBDIR``, ``REDIS_URL`` and a store class's own ``from_settings``)."""
    limits: dict[str, Any] = {"max_links": config.max_links, "max_owners": config.max_owners}
    store = effective_store(config.store, redis_url(config, settings))
    if store == "memory":
        jobdir = settings.get("JOBDIR")
        path = Path(jobdir) / config.store_file if jobdir else None
        return MemoryStore(path=path, **limits)
    if store == "redis":
        from scrapy_templates.store.redis import RedisStore

        url = redis_url(config, settings)
        if not url:  # the settings check refuses this; kept for a config built by hand
            raise ValueError(
                "TEMPLATES_STORE is 'redis' but neither TEMPLATES_REDIS_URL nor REDIS_URL is set"
            )
        return RedisStore(url, prefix=config.redis_prefix, **limits)
    store_cls = pkgutil.resolve_name(store) if isinstance(store, str) else store
    built: TemplateStore = store_cls.from_settings(settings)
    return built
