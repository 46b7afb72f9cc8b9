"""Redis store: counters shared by every crawler process.

Each page is recorded by one Lua script, so a page costs one round trip and its counts are
atomic across processes. Keys (``P`` = ``TEMPLATES_REDIS_PREFIX``, ``S`` = site):

- ``P:sites`` — set of ``P:S`` of every site seen;
- ``P:S:seen:<g>:<i>`` / ``P:S:seen:n`` — the pages and contents recorded (a page is counted
  once), as 80-bit ids (from the SHA-1 of ``p<page id>`` and ``c<content key>``) in small
  hashes: generation ``g`` has 16·2^g buckets and takes 1,280·2^g ids, so every bucket stays
  in Redis's compact listpack encoding however large the site grows, and a small site costs
  a few keys; ``seen:n`` counts the ids stored;
- ``P:S:n`` — number of pages counted;
- ``P:S:counts`` — hash: fingerprint (16 hex digits) → pages holding it;
- ``P:S:urls`` / ``P:S:urls:n`` — list of URL samples (JSON) kept by reservoir sampling, and
  how many were offered;
- ``P:S:pub`` — hash: ``<kind>`` → published JSON document, ``<kind>:v`` → its version;
- ``P:epoch`` — raised by every publication; ``P:lock:<name>`` — a lock (holder id, expiry);
- global algorithm only: ``P:S:out:<page>`` / ``P:S:in:<page>`` (link sets) and
  ``P:S:uf:<fp>`` / ``P:S:ufsize:<fp>`` / ``P:S:uflargest:<fp>`` (union-find of owner pages).

The script builds key names itself, so it needs a standalone Redis (or one shard). Values are
plain Redis strings and integers — nothing is pickled.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.connection import BlockingConnectionPool, parse_url
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from scrapy_templates.store.base import Observation, StoreError, StoreUnavailable

# Connections a crawler keeps to Redis: a command beyond them waits up to _POOL_WAIT seconds
# for one (a healthy Redis frees one in milliseconds), and up to _TIMEOUT for its answer
# (once more on a fresh connection); longer is an outage
MAX_CONNECTIONS = 32
_POOL_WAIT = 2.0
_TIMEOUT = 5.0

_UNION_FIND = """
local function find(uf, x, compress)
  local root = x
  local parent = redis.call('HGET', uf, root)
  while parent and parent ~= root do
    root = parent
    parent = redis.call('HGET', uf, root)
  end
  if compress then
    local cur = x
    while cur ~= root do
      local nxt = redis.call('HGET', uf, cur)
      redis.call('HSET', uf, cur, root)
      cur = nxt
    end
  end
  return root
end
local function component(base, fp, page)
  local uf = base .. ':uf:' .. fp
  if redis.call('HEXISTS', uf, page) == 0 then return 1 end
  local root = find(uf, page, false)
  return tonumber(redis.call('HGET', base .. ':ufsize:' .. fp, root))
end
"""

_OBSERVE = (
    _UNION_FIND
    + """
local base, page, content = ARGV[1], ARGV[2], ARGV[3]
local use_components = ARGV[4] == '1'
local max_links, max_owners = tonumber(ARGV[5]), tonumber(ARGV[6])
local nfp = tonumber(ARGV[7])
local fps = {}
for i = 1, nfp do fps[i] = ARGV[7 + i] end
local links = {}
for i = 8 + nfp, #ARGV do links[#links + 1] = ARGV[i] end

-- ids seen, in generations of small hashes: generation g has 16 * 2^g buckets and takes
-- 1280 * 2^g ids (80 per bucket, under Redis's 128-entry limit of the compact encoding)
local seen, seen_n = base .. ':seen:', base .. ':seen:n'
local function first_sight(key)
  local id = redis.sha1hex(key)
  local slot = tonumber(string.sub(id, 1, 6), 16)
  local field = string.sub(id, 7, 20)
  local stored = tonumber(redis.call('GET', seen_n) or '0')
  local g, top = 0, 1280
  while stored >= top do
    g = g + 1
    top = top + 1280 * 2 ^ g
  end
  for k = 0, g - 1 do
    local bucket = seen .. k .. ':' .. math.floor(slot % (16 * 2 ^ k))
    if redis.call('HEXISTS', bucket, field) == 1 then return 0 end
  end
  local bucket = seen .. g .. ':' .. math.floor(slot % (16 * 2 ^ g))
  local added = redis.call('HSETNX', bucket, field, '')
  if added == 1 then redis.call('INCR', seen_n) end
  return added
end
local new = first_sight('p' .. page)
if content ~= '' then
  if first_sight('c' .. content) == 0 then new = 0 end
end
local counted
if new == 1 then
  counted = redis.call('INCR', base .. ':n')
  redis.call('SADD', KEYS[1], base)
else
  counted = tonumber(redis.call('GET', base .. ':n') or '0')
end

local counts = {}
for i = 1, nfp do
  if new == 1 then
    counts[i] = redis.call('HINCRBY', base .. ':counts', fps[i], 1)
  else
    counts[i] = tonumber(redis.call('HGET', base .. ':counts', fps[i]) or '0')
  end
end

local sizes = {}
if use_components then
  if new == 1 then
    local out = base .. ':out:' .. page
    for _, target in ipairs(links) do
      if target ~= page and redis.call('SCARD', out) < max_links then
        redis.call('SADD', out, target)
        local incoming = base .. ':in:' .. target
        if redis.call('SCARD', incoming) < max_links then
          redis.call('SADD', incoming, page)
        end
      end
    end
    local neighbours = redis.call('SUNION', out, base .. ':in:' .. page)
    for i = 1, nfp do
      local fp = fps[i]
      local uf, size = base .. ':uf:' .. fp, base .. ':ufsize:' .. fp
      local largest = base .. ':uflargest:' .. fp
      local owners = redis.call('HLEN', uf)
      redis.call('HSET', uf, page, page)
      redis.call('HSET', size, page, 1)
      local others = {}
      if owners >= max_owners then
        others[1] = redis.call('GET', largest)
      else
        for _, q in ipairs(neighbours) do
          if q ~= page and redis.call('HEXISTS', uf, q) == 1 then others[#others + 1] = q end
        end
      end
      if owners == 0 then redis.call('SET', largest, page) end
      for _, q in ipairs(others) do
        local ra, rb = find(uf, page, true), find(uf, q, true)
        if ra ~= rb then
          local sa = tonumber(redis.call('HGET', size, ra))
          local sb = tonumber(redis.call('HGET', size, rb))
          if sa < sb then ra, rb, sa, sb = rb, ra, sb, sa end
          redis.call('HSET', uf, rb, ra)
          redis.call('HSET', size, ra, sa + sb)
          redis.call('HDEL', size, rb)
          local lr = find(uf, redis.call('GET', largest), true)
          if sa + sb >= tonumber(redis.call('HGET', size, lr) or '0') then
            redis.call('SET', largest, ra)
          end
        end
      end
    end
  end
  for i = 1, nfp do sizes[i] = component(base, fps[i], page) end
end
return {new, counted, counts, sizes}
"""
)

_LOOKUP = (
    _UNION_FIND
    + """
local base, page = ARGV[1], ARGV[2]
local use_components = ARGV[3] == '1'
local counted = tonumber(redis.call('GET', base .. ':n') or '0')
local counts, sizes = {}, {}
for i = 4, #ARGV do
  counts[#counts + 1] = tonumber(redis.call('HGET', base .. ':counts', ARGV[i]) or '0')
  if use_components then sizes[#sizes + 1] = component(base, ARGV[i], page) end
end
return {counted, counts, sizes}
"""
)


_ADD_SAMPLES = """
-- KEYS: list, counter, sites set; ARGV: cap, site base, then sample, draw pairs
local cap = tonumber(ARGV[1])
redis.call('SADD', KEYS[3], ARGV[2])
local n = 0
for i = 3, #ARGV, 2 do
  n = redis.call('INCR', KEYS[2])
  if n <= cap then
    redis.call('RPUSH', KEYS[1], ARGV[i])
  else
    local slot = math.floor(tonumber(ARGV[i + 1]) * n)
    if slot < cap then redis.call('LSET', KEYS[1], slot, ARGV[i]) end
  end
end
if n == 0 then n = tonumber(redis.call('GET', KEYS[2]) or '0') end
return n
"""


_PRUNE = """
-- KEYS: counts hash; ARGV: bound, then fields that stood below it when scanned (deleted only
-- if they still do: another process may have counted them since)
local below = tonumber(ARGV[1])
local gone = 0
for i = 2, #ARGV do
  local n = tonumber(redis.call('HGET', KEYS[1], ARGV[i]) or '0')
  if n < below then gone = gone + redis.call('HDEL', KEYS[1], ARGV[i]) end
end
return gone
"""

_PUBLISH = """
-- KEYS: publication hash, epoch, sites set; ARGV: kind, version, document, site base
-- a version or an epoch that is not a whole number was not written here: it is replaced
local raw = redis.call('HGET', KEYS[1], ARGV[1] .. ':v')
local current = 0
if raw and string.match(raw, '^%d+$') and string.len(raw) <= 18 then current = tonumber(raw) end
if current >= tonumber(ARGV[2]) then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3], ARGV[1] .. ':v', ARGV[2])
redis.call('SADD', KEYS[3], ARGV[4])
local epoch = redis.call('GET', KEYS[2])
if epoch and not string.match(epoch, '^%-?%d+$') then redis.call('SET', KEYS[2], '0') end
redis.call('INCR', KEYS[2])
return 1
"""

_ACQUIRE = """
-- KEYS: lock; ARGV: owner, ttl in ms
local holder = redis.call('GET', KEYS[1])
if holder == false then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
if holder == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
"""

_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


def _failure(what: str, exc: RedisError) -> StoreError:
    """Unreachable or slow Redis is an outage to ride out; any other error is a bad value."""
    if isinstance(exc, (RedisConnectionError, RedisTimeoutError, OSError)):
        return StoreUnavailable(f"Redis {what} failed: {exc}")
    return StoreError(f"Redis {what} failed: {exc}")


def _text(value: bytes | str) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _hex(fp: int) -> str:
    return f"{fp:016x}"


def redis_url_problem(url: str) -> str | None:
    """Why ``url`` is not a Redis URL redis-py can connect to, or ``None`` when it is."""
    try:
        parse_url(url)
    except (ValueError, TypeError) as exc:
        hint = f" (did you mean redis://{url}/0?)" if "://" not in url else ""
        return f"not a Redis URL: {exc}{hint}"
    return None


class RedisStore:
    """Template counters in Redis (``redis.asyncio``), one Lua call per page.

    ``builtin_name`` lets the dotted path of this class stand for ``TEMPLATES_STORE =
    "redis"``."""

    builtin_name = "redis"

    def __init__(
        self,
        url: str,
        *,
        prefix: str = "templates",
        max_links: int = 200,
        max_owners: int = 256,
        client: aioredis.Redis | None = None,
    ) -> None:
        if client is None and (problem := redis_url_problem(url)) is not None:
            raise StoreError(problem)
        self.url = url
        self.prefix = prefix
        self.max_links = max_links
        self.max_owners = max_owners
        self._client = client
        self._observe: Any = None
        self._lookup: Any = None
        self._add_samples: Any = None
        self._prune: Any = None
        self._publish: Any = None
        self._acquire: Any = None
        self._release: Any = None

    async def open(self) -> None:
        if self._client is None:
            # one immediate retry: a pooled connection that a Redis restart closed is replaced
            # at once, while an outage still fails fast (the resilient layer takes over).
            # A blocking pool: a crawl marks many items at once, and a command past the
            # pool's connections waits for one (redis-py's default pool raises at once,
            # which would read as an outage)
            pool = BlockingConnectionPool.from_url(
                self.url,
                max_connections=MAX_CONNECTIONS,
                timeout=_POOL_WAIT,
                socket_timeout=_TIMEOUT,
                socket_connect_timeout=_TIMEOUT,
                retry=Retry(NoBackoff(), 1),
                retry_on_error=[RedisConnectionError, RedisTimeoutError],
            )
            self._client = aioredis.Redis.from_pool(pool)
        self._observe = self._client.register_script(_OBSERVE)
        self._lookup = self._client.register_script(_LOOKUP)
        self._add_samples = self._client.register_script(_ADD_SAMPLES)
        self._prune = self._client.register_script(_PRUNE)
        self._publish = self._client.register_script(_PUBLISH)
        self._acquire = self._client.register_script(_ACQUIRE)
        self._release = self._client.register_script(_RELEASE)

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def _base(self, site: str) -> str:
        return f"{self.prefix}:{site}"

    async def ping(self) -> None:
        try:
            await self._require().ping()
        except RedisError as exc:
            raise _failure("ping", exc) from exc

    async def memory_usage(self) -> tuple[int, int]:
        """Keys under the prefix and the bytes Redis reports for them (``MEMORY USAGE``); one
        scan of the prefix, measured a thousand keys per round trip; for inspection, not for
        the crawl's hot path."""
        client = self._require()
        keys = size = 0
        batch: list[Any] = []

        async def measure() -> int:
            pipe = client.pipeline(transaction=False)
            for key in batch:
                pipe.memory_usage(key, samples=0)
            found = await pipe.execute()
            batch.clear()
            return sum(int(n or 0) for n in found)

        try:
            async for key in client.scan_iter(match=f"{self.prefix}:*", count=1000):
                keys += 1
                batch.append(key)
                if len(batch) >= 1000:
                    size += await measure()
            if batch:
                size += await measure()
        except RedisError as exc:
            raise _failure("memory usage", exc) from exc
        return keys, size

    async def sites(self) -> list[str]:
        try:
            members = await self._require().smembers(f"{self.prefix}:sites")
        except RedisError as exc:
            raise _failure("sites", exc) from exc
        skip = len(self.prefix) + 1
        return sorted(_text(m)[skip:] for m in members)

    async def counts(self, site: str) -> tuple[int, dict[int, int]]:
        client = self._require()
        base = self._base(site)
        try:
            pages = await client.get(f"{base}:n")
            raw = await client.hgetall(f"{base}:counts")
            return int(pages or 0), {int(fp, 16): int(n) for fp, n in raw.items()}
        except RedisError as exc:
            raise _failure("counts", exc) from exc
        except ValueError as exc:
            raise StoreError(f"counters of {site} hold a value this store did not write") from exc

    async def prune(self, site: str, below: int = 2) -> int:
        client = self._require()
        key = f"{self._base(site)}:counts"
        gone = 0
        try:
            cursor = 0
            while True:
                cursor, batch = await client.hscan(key, cursor, count=2000)
                fields: dict[Any, Any] = batch  # type: ignore[assignment]
                low = [fp for fp, n in fields.items() if int(n) < below]
                if low:
                    gone += int(await self._prune(keys=[key], args=[below, *low]))
                if cursor == 0:
                    return gone
        except RedisError as exc:
            raise _failure("prune", exc) from exc

    async def publish(self, site: str, kind: str, version: int, document: str) -> bool:
        self._require()
        base = self._base(site)
        keys = [f"{base}:pub", f"{self.prefix}:epoch", f"{self.prefix}:sites"]
        try:
            return bool(await self._publish(keys=keys, args=[kind, version, document, base]))
        except RedisError as exc:
            raise _failure("publish", exc) from exc

    async def published(self, site: str, kind: str) -> tuple[int, str] | None:
        client = self._require()
        try:
            version, document = await client.hmget(f"{self._base(site)}:pub", [f"{kind}:v", kind])
        except RedisError as exc:
            raise _failure("published", exc) from exc
        if version is None or document is None:
            return None
        try:
            number = int(version)
        except ValueError:
            number = -1
        if not 0 <= number < 10**18:  # what the publication script takes for a version
            raise StoreError(f"the {kind} version of {site} is not a version: {version[:40]!r}")
        return number, _text(document)

    async def epoch(self) -> int:
        try:
            value = await self._require().get(f"{self.prefix}:epoch")
            return int(value or 0)
        except RedisError as exc:
            raise _failure("epoch", exc) from exc
        except ValueError as exc:
            raise StoreError(f"{self.prefix}:epoch holds {value!r}, not a number") from exc

    async def acquire(self, name: str, owner: str, ttl: float) -> bool:
        self._require()
        try:
            keys = [f"{self.prefix}:lock:{name}"]
            return bool(await self._acquire(keys=keys, args=[owner, max(1, int(ttl * 1000))]))
        except RedisError as exc:
            raise _failure("acquire", exc) from exc

    async def release(self, name: str, owner: str) -> None:
        self._require()
        try:
            await self._release(keys=[f"{self.prefix}:lock:{name}"], args=[owner])
        except RedisError as exc:
            raise _failure("release", exc) from exc

    def _require(self) -> aioredis.Redis:
        if self._client is None:
            raise StoreError("RedisStore used before open()")
        return self._client

    async def observe(
        self,
        site: str,
        page_id: str,
        fingerprints: Sequence[int],
        links: Sequence[str] = (),
        *,
        content_key: str = "",
        components: bool = False,
    ) -> Observation:
        self._require()
        args: list[Any] = [
            self._base(site),
            page_id,
            content_key,
            "1" if components else "0",
            self.max_links,
            self.max_owners,
            len(fingerprints),
            *map(_hex, fingerprints),
        ]
        if components:
            args.extend(links)
        try:
            new, counted, counts, sizes = await self._observe(
                keys=[f"{self.prefix}:sites"], args=args
            )
        except RedisError as exc:
            raise _failure("observe", exc) from exc
        return Observation(
            int(counted), [int(c) for c in counts], [int(s) for s in sizes], new == 1
        )

    async def lookup(
        self,
        site: str,
        page_id: str,
        fingerprints: Sequence[int],
        *,
        components: bool = False,
    ) -> Observation:
        self._require()
        args = [self._base(site), page_id, "1" if components else "0", *map(_hex, fingerprints)]
        try:
            counted, counts, sizes = await self._lookup(keys=[], args=args)
        except RedisError as exc:
            raise _failure("lookup", exc) from exc
        return Observation(int(counted), [int(c) for c in counts], [int(s) for s in sizes], False)

    async def add_url_samples(
        self, site: str, samples: Sequence[str], cap: int, draws: Sequence[float]
    ) -> int:
        self._require()
        base = self._base(site)
        args: list[Any] = [cap, base]
        for sample, draw in zip(samples, draws, strict=True):
            args += [sample, repr(draw)]
        keys = [f"{base}:urls", f"{base}:urls:n", f"{self.prefix}:sites"]
        try:
            return int(await self._add_samples(keys=keys, args=args))
        except RedisError as exc:
            raise _failure("add_url_samples", exc) from exc

    async def url_samples(self, site: str, most: int | None = None) -> list[str]:
        client = self._require()
        try:
            raw = await client.lrange(
                f"{self._base(site)}:urls", 0, -1 if most is None else most - 1
            )
        except RedisError as exc:
            raise _failure("url_samples", exc) from exc
        return [_text(r) for r in raw]
