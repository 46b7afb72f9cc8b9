"""``scrapy-templates report``: the HTML file from items, a store file and a rules file."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from scrapy_templates.store.memory import MemoryStore
from scrapy_templates.templates.model import TemplateModel
from scrapy_templates.urlnorm.learn import learn_rules
from tests.cli.runner import run_cli
from tests.report.sample_items import shop_items, write_items
from tests.urlnorm.url_sets import mirror_site


@pytest.fixture
def items(tmp_path: Path) -> Path:
    return write_items(tmp_path / "items.jsonl", shop_items())


def test_report_text_output_says_where_the_file_is(items: Path, tmp_path: Path) -> None:
    out = tmp_path / "deep" / "report.html"
    code, text = run_cli("report", str(items), "-o", str(out))
    assert code == 0 and out.exists()
    assert text.startswith(f"report of 6 pages on 2 site(s) written to {out} (")
    html = out.read_text(encoding="utf-8")
    assert "shop.test" in html and "blog.test" in html and "Shop Home Cart" in html


def test_report_takes_rules_and_model_from_the_store_and_a_rules_file(
    items: Path, tmp_path: Path
) -> None:
    store_file = tmp_path / "scrapy-templates.json"
    model = TemplateModel("shop.test", 5, 3, "body/div#page/main", 3, ((1, 3),))

    async def fill() -> None:
        store = MemoryStore(path=store_file)
        await store.open()
        await store.observe("shop.test", "p1", [1], content_key="a")
        await store.publish("shop.test", "model", 5, model.dumps())
        await store.close()

    asyncio.run(fill())
    urls, clusters = mirror_site()
    rules = learn_rules(urls, clusters, site="shop.test").ruleset
    rules_file = tmp_path / "rules.json"
    rules_file.write_text(json.dumps([rules.to_json()]))
    out = tmp_path / "r.html"
    args = ["report", str(items), "-o", str(out), "--store", str(store_file)]
    code, text = run_cli(*args, "--rules", str(rules_file), "--json")
    data = json.loads(text)
    assert code == 0
    assert data == {
        "report": str(out),
        "sites": 2,
        "pages": 6,
        "sites_with_rules": ["shop.test"],
        "bytes": out.stat().st_size,
    }
    html = out.read_text(encoding="utf-8")
    assert "main content region: <code>body/div#page/main</code>" in html
    assert rules.describe_rules()[0]["source"] in html


def test_report_errors(items: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["report", str(items), "-o", str(tmp_path / "r.html")]
    assert run_cli(*args, "--store", str(tmp_path / "none.json"))[0] == 2
    assert "no store file at" in capsys.readouterr().err
    assert run_cli(*args, "--rules", str(tmp_path / "none.json"))[0] == 2
    assert "cannot read" in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()
