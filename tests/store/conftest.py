from __future__ import annotations

import itertools
from collections.abc import AsyncIterator

import pytest

from scrapy_templates.store.base import TemplateStore
from scrapy_templates.store.memory import MemoryStore
from scrapy_templates.store.redis import RedisStore

_prefixes = itertools.count()


@pytest.fixture(params=["memory", "redis"])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[TemplateStore]:
    """Each backend, fresh: the Redis one gets a key prefix of its own on the shared server."""
    backend: TemplateStore
    if request.param == "memory":
        backend = MemoryStore(max_links=50, max_owners=64)
    else:
        server = request.getfixturevalue("redis_server")
        backend = RedisStore(server.url, prefix=f"t{next(_prefixes)}", max_links=50, max_owners=64)
    await backend.open()
    yield backend
    await backend.close()
