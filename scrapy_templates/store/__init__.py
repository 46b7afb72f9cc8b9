"""The only shared state of the add-on: per-site pagelet counters (and, for the global
algorithm, owner pages and links). Backends: :class:`MemoryStore` and :class:`RedisStore`."""

from scrapy_templates.store.base import Observation, StoreError, TemplateStore
from scrapy_templates.store.memory import MemoryStore

__all__ = ["MemoryStore", "Observation", "StoreError", "TemplateStore"]
