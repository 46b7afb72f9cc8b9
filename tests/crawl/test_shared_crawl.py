"""Several crawler processes with scrapy-redis and one Redis: rules published by one crawl
are picked up by the next, and two processes together crawl and count like one."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import redis

from tests.conftest import RedisServer
from tests.crawl.conftest import RUNNER, run_crawl

SCRAPY_REDIS = {
    "SCHEDULER": "scrapy_redis.scheduler.Scheduler",
    "DUPEFILTER_CLASS": "scrapy_redis.dupefilter.RFPDupeFilter",
    # an idle process polls the shared queue on Scrapy's 5 s heartbeat: it must outlive two
    # polls, or a process whose first poll came before the queue filled closes without work
    "MAX_IDLE_TIME_BEFORE_CLOSE": 11,
    # the first process to finish must not clear the queue and dupefilter the other still uses
    "SCHEDULER_PERSIST": True,
}


def _launch(out: Path, key: str, settings: dict[str, Any]) -> subprocess.Popen[str]:
    out.mkdir(parents=True)
    cmd = [sys.executable, str(RUNNER), str(out), "--redis-key", key]
    for name, value in {**settings, "LOG_FILE": str(out / "crawl.log")}.items():
        cmd += ["--set", f"{name}={json.dumps(value)}"]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _start(
    client: redis.Redis, key: str, url: str, outs: list[Path], procs: list[subprocess.Popen[str]]
) -> None:
    """Give the processes their start URL once every one of them is waiting for it, so that
    all take part in the crawl."""
    deadline = time.monotonic() + 60
    while not all(
        (out / "crawl.log").exists() and "Spider opened" in (out / "crawl.log").read_text()
        for out in outs
    ):
        assert all(p.poll() is None for p in procs), "a crawler process ended early"
        assert time.monotonic() < deadline, "the crawler processes did not start"
        time.sleep(0.05)
    client.lpush(f"{key}:start_urls", url)


def _finish(procs: list[subprocess.Popen[str]]) -> None:
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-3000:]


def _stats(out: Path) -> dict[str, Any]:
    return dict(json.loads((out / "stats.json").read_text()))


def _items(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "items.jsonl").read_text().splitlines()]


def test_rules_persist_and_two_processes_crawl_like_one(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    from demo.site import DemoSite

    client = redis.Redis.from_url(redis_server.url)
    store = {"TEMPLATES_STORE": "redis", "TEMPLATES_REDIS_URL": redis_server.url}
    with DemoSite() as site:
        host = site.url.split("//")[1].rstrip("/")
        # 1. a crawl learns URL rules and publishes them; the next crawl starts with them
        # (no cold start: items flow at once, and the relearn timer sees pages marked)
        first = run_crawl(
            tmp_path / "first",
            start=site.url,
            TEMPLATES_REDIS_PREFIX="learn",
            TEMPLATES_BOOTSTRAP_PAGES=0,
            **store,
        )
        version = int(client.hget(f"learn:{host}:pub", "rules:v") or 0)
        assert version >= 1 and first.stats["templates/relearn_count"] >= 1
        assert client.hget(f"learn:{host}:pub", "model") is not None
        second = run_crawl(
            tmp_path / "second", start=site.url, TEMPLATES_REDIS_PREFIX="learn", **store
        )
        assert f"URL rules of {host} v{version}" in second.log and "from the store" in second.log
        assert second.stats["templates/urls/rules_version"] >= version
        assert second.stats.get("templates/bootstrap_waits", 0) == 0  # counts persisted too
        assert second.stats["downloader/response_count"] < first.stats["downloader/response_count"]
        rules_file = tmp_path / "rules.json"
        rules_file.write_text(client.hget(f"learn:{host}:pub", "rules").decode())

        # 2. the same fixed rules, one process vs two sharing scheduler, dupefilter and store
        fixed = {
            **SCRAPY_REDIS,
            **store,
            "REDIS_URL": redis_server.url,
            "TEMPLATES_URL_RULES_FILE": str(rules_file),
            "TEMPLATES_URL_MIN_SAMPLES": 10**9,
            "TEMPLATES_BOOTSTRAP_PAGES": 0,
            "TEMPLATES_PRUNE_PAGES": 0,
            # each process checks rules in the directories it meets on its own: with checks,
            # two processes download a few pages more than one
            "TEMPLATES_URL_CHECK_FIRST": 0,
            "TEMPLATES_URL_CHECK_SHARE": 0,
            # an idle process looks at the shared queue on Scrapy's 5 s heartbeat: the crawl
            # must last well past that for the second process to take part
            "DOWNLOAD_DELAY": 0.1,
        }
        procs = [_launch(tmp_path / "one", "one", {**fixed, "TEMPLATES_REDIS_PREFIX": "one"})]
        _start(client, "one", site.url, [tmp_path / "one"], procs)
        _finish(procs)
        outs = [tmp_path / f"two{i}" for i in range(2)]
        procs = [_launch(out, "two", {**fixed, "TEMPLATES_REDIS_PREFIX": "two"}) for out in outs]
        _start(client, "two", site.url, outs, procs)
        _finish(procs)

    one = _stats(tmp_path / "one")
    twos = [_stats(tmp_path / f"two{i}") for i in range(2)]
    assert all(s.get("downloader/response_count", 0) > 0 for s in twos)  # both did work
    downloads = sum(s["downloader/response_count"] for s in twos)
    assert downloads <= one["downloader/response_count"]
    items = _items(tmp_path / "two0") + _items(tmp_path / "two1")
    assert sorted(i["url"] for i in items) == sorted(i["url"] for i in _items(tmp_path / "one"))
    for prefix in ("one", "two"):
        assert int(client.get(f"{prefix}:{host}:n") or 0) > 50
    assert client.get(f"one:{host}:n") == client.get(f"two:{host}:n")
    assert client.hgetall(f"one:{host}:counts") == client.hgetall(f"two:{host}:counts")
