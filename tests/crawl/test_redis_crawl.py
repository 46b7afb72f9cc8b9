"""Crawler processes sharing one real Redis count exactly as one process does."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import redis

from tests.conftest import RedisServer
from tests.crawl.conftest import RUNNER, run_crawl


def _counts(client: redis.Redis, prefix: str, site: str) -> tuple[int, dict[bytes, bytes]]:
    base = f"{prefix}:{site}"
    return int(client.get(f"{base}:n") or 0), client.hgetall(f"{base}:counts")


def test_two_processes_count_like_one(tmp_path: Path, redis_server: RedisServer) -> None:
    from demo.site import DemoSite

    with DemoSite() as site:
        # every URL of the site, duplicates included (URL rules off: this is about counting)
        listing = run_crawl(
            tmp_path / "listing",
            start=site.url,
            TEMPLATES_BOOTSTRAP_PAGES=0,
            TEMPLATES_URL_RULES=False,
        )
        urls = sorted({item["url"] for item in listing.items})
        assert len(urls) > 100
        common = {
            "TEMPLATES_STORE": "redis",
            "TEMPLATES_REDIS_URL": redis_server.url,
            "TEMPLATES_BOOTSTRAP_PAGES": 0,
            "TEMPLATES_URL_RULES": False,
            "TEMPLATES_PRUNE_PAGES": 0,  # pruning depends on when each process relearns
        }
        single = run_crawl(tmp_path / "single", urls=urls, TEMPLATES_REDIS_PREFIX="one", **common)
        procs = []
        for name, part in (("a", urls[::2]), ("b", urls[1::2])):
            out = tmp_path / name
            out.mkdir()
            url_file = tmp_path / f"{name}.urls"
            url_file.write_text("\n".join(part))
            cmd = [sys.executable, str(RUNNER), str(out), "--urls", str(url_file)]
            for key, value in {**common, "TEMPLATES_REDIS_PREFIX": "two"}.items():
                cmd += ["--set", f"{key}={json.dumps(value)}"]
            procs.append(
                subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            )
        for proc in procs:
            _, err = proc.communicate(timeout=300)
            assert proc.returncode == 0, err[-3000:]
        site_key = site.url.split("//")[1].rstrip("/")

    client = redis.Redis.from_url(redis_server.url)
    n_one, counts_one = _counts(client, "one", site_key)
    n_two, counts_two = _counts(client, "two", site_key)
    assert n_one > 50
    assert (n_two, counts_two) == (n_one, counts_one)
    assert len(single.items) == len(urls)
    outages = [line for line in single.log.splitlines() if "shared store" in line]
    assert all(item.get("templates", {}).get("store") is None for item in single.items), outages
    assert any(p["template"] for p in single.items[-1]["pagelets"])


def test_a_redis_url_alone_shares_the_counts(tmp_path: Path, redis_server: RedisServer) -> None:
    from demo.site import DemoSite

    with DemoSite() as site:
        result = run_crawl(
            tmp_path / "url-only",
            start=site.url,
            TEMPLATES_REDIS_URL=redis_server.url,  # no TEMPLATES_STORE
            TEMPLATES_REDIS_PREFIX="urlonly",
            CLOSESPIDER_ITEMCOUNT=20,
        )
        site_key = site.url.split("//")[1].rstrip("/")
    pages, counts = _counts(redis.Redis.from_url(redis_server.url), "urlonly", site_key)
    assert pages >= 20 and counts
    assert f"counting pages in Redis at {redis_server.url}" in result.log
    assert all("reason" not in item["templates"] for item in result.items)
