"""``scrapy-templates state`` on the memory store's file and on a real Redis server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from scrapy_templates.store.base import TemplateStore
from scrapy_templates.store.memory import MemoryStore
from scrapy_templates.store.redis import RedisStore
from scrapy_templates.templates.model import TemplateModel
from tests.cli.runner import run_cli
from tests.conftest import RedisServer


async def _fill(store: TemplateStore) -> None:
    """Two pages of one site, a model the crawl would accept, rules it would refuse."""
    await store.open()
    await store.observe("shop.test", "p1", [1, 2], content_key="a")
    await store.observe("shop.test", "p2", [1], content_key="b")
    model = TemplateModel("shop.test", 2, 2, "body/main", 2, ((1, 2),), layout_clusters=3)
    await store.publish("shop.test", "model", 2, model.dumps())
    await store.publish("shop.test", "rules", 1, "not json")
    await store.close()


def _check(text: str, data: dict) -> None:  # type: ignore[type-arg]
    [row] = data["sites"]
    assert (row["site"], row["pages"], row["counters"]) == ("shop.test", 2, 2)
    assert row["model"] == {
        "version": 2,
        "main_path": "body/main",
        "templates": 1,
        "layout_clusters": 3,
    }
    assert row["rules"] == {"version": 1}
    assert "rules v1 refused" in row["problems"][0]
    assert data["bytes"] > 0
    lines = text.splitlines()
    assert lines[1].split() == [
        "site",
        "pages",
        "counters",
        "samples",
        "rules",
        "model",
        "main",
        "region",
    ]
    assert lines[2].split()[:5] == ["shop.test", "2", "2", "0", "v1:"]
    assert (
        "refused" in lines[2]
        and "v2: 1 templates, 3 layouts" in lines[2]
        and "body/main" in lines[2]
    )
    assert lines[3].startswith("shop.test: rules v1 refused:")


def test_state_of_a_memory_store_file(tmp_path: Path) -> None:
    path = tmp_path / "scrapy-templates.json"
    asyncio.run(_fill(MemoryStore(path=path)))
    code, text = run_cli("state", "--store", str(path))
    assert code == 0 and text.startswith(f"{path}: ") and "on disk" in text
    code, out = run_cli("state", "--file", str(path), "--json")
    data = json.loads(out)
    assert code == 0 and data["keys"] is None and data["bytes"] == path.stat().st_size
    _check(text, data)


def test_state_of_a_redis_store(redis_server: RedisServer) -> None:
    asyncio.run(_fill(RedisStore(redis_server.url, prefix="cli-state")))
    code, text = run_cli("state", "--redis", redis_server.url, "--prefix", "cli-state")
    assert code == 0 and "keys" in text and "MEMORY USAGE" in text
    data = json.loads(
        run_cli("state", "--redis", redis_server.url, "--prefix", "cli-state", "--json")[1]
    )
    assert data["keys"] >= 4
    _check(text, data)
    code, text = run_cli("state", "--redis", redis_server.url, "--prefix", "nothing-here")
    assert code == 0 and "the store holds no site" in text


def test_state_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli("state", "--file", str(tmp_path / "nope.json"))[0] == 2
    assert "no store file at" in capsys.readouterr().err
    port_without_server = "redis://127.0.0.1:1/0"
    assert run_cli("state", "--redis", port_without_server)[0] == 2
    assert "scrapy-templates: error:" in capsys.readouterr().err
    assert run_cli("state", "--redis", "localhost:6400")[0] == 2
    assert "did you mean redis://localhost:6400/0?" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        run_cli("state")
