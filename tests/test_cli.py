"""The command line: every command, as text and as JSON."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from scrapy_templates.cli import main
from scrapy_templates.urlnorm.clusters import Sample
from tests.urlnorm.url_sets import mirror_site

SID_URL = "http://www.example.com/archive2/17/display?sid=abc"


def _run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(argv), out)
    return code, out.getvalue()


@pytest.fixture
def samples(tmp_path: Path) -> Path:
    urls, clusters = mirror_site()
    path = tmp_path / "samples.jsonl"
    lines = [Sample(u, cluster=str(c)).to_json() for u, c in zip(urls, clusters, strict=True)]
    path.write_text("\n".join([*lines, "not json", '{"no": "url"}']) + "\n")
    return path


@pytest.fixture
def rules_file(samples: Path, tmp_path: Path) -> Path:
    path = tmp_path / "rules.json"
    assert _run("rules", "learn", str(samples), "-o", str(path))[0] == 0
    return path


def test_learn_prints_a_table_and_writes_rules(samples: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "r.json"
    code, text = _run("rules", "learn", str(samples), "-o", str(path))
    assert code == 0
    header, row = text.splitlines()[:2]
    assert header.split() == ["host", "samples", "urls", "clusters", "rules", "seconds"]
    assert row.split()[:4] == ["www.example.com", "200", "200", "50"]
    assert "2 lines skipped" in text
    assert "skipped" in capsys.readouterr().err
    assert json.loads(path.read_text())[0]["site"] == "www.example.com"


def test_learn_json(samples: Path) -> None:
    code, text = _run("rules", "learn", str(samples), "--json")
    data = json.loads(text)
    assert code == 0 and data["hosts"][0]["clusters"] == 50 and data["skipped_lines"] == 2


def test_show_text_and_json(rules_file: Path) -> None:
    code, text = _run("rules", "show", str(rules_file))
    assert code == 0
    assert "www.example.com: version 1" in text and "->" in text and "drop ?sid" in text
    rows = json.loads(_run("rules", "show", str(rules_file), "--json")[1])
    assert rows and {"source", "target", "operations", "support", "fpr"} <= set(rows[0])


def test_apply_text_and_json(rules_file: Path) -> None:
    code, text = _run("rules", "apply", str(rules_file), SID_URL, "http://elsewhere.example/")
    assert code == 0
    assert "(rewritten)" in text and "no rules for this host" in text
    rows = json.loads(_run("rules", "apply", str(rules_file), SID_URL, "--json")[1])
    assert rows[0]["url"] == SID_URL and "sid" not in rows[0]["canonical"]


def test_errors_are_one_line_and_status_2(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert _run("rules", "show", str(tmp_path / "missing.json"))[0] == 2
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "other"}')
    assert _run("rules", "apply", str(bad), SID_URL)[0] == 2
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    assert _run("rules", "learn", str(empty))[0] == 2
    err = capsys.readouterr().err
    assert "cannot read" in err and "not a scrapy-templates rule set" in err


def test_module_entry_point_has_help() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "scrapy_templates", "rules", "learn", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "rel=canonical" in proc.stdout


def test_state_reads_a_memory_store_file(tmp_path: Path) -> None:
    import asyncio

    from scrapy_templates.store.memory import MemoryStore
    from scrapy_templates.templates.model import TemplateModel

    path = tmp_path / "scrapy-templates.json"

    async def fill() -> None:
        store = MemoryStore(path=path)
        await store.open()
        await store.observe("shop.test", "p1", [1, 2], content_key="a")
        await store.observe("shop.test", "p2", [1], content_key="b")
        model = TemplateModel("shop.test", 2, 2, "/body/main", 2, ((1, 2),))
        await store.publish("shop.test", "model", 2, model.dumps())
        await store.publish("shop.test", "rules", 1, "not json")
        await store.close()

    asyncio.run(fill())
    text, json_out = io.StringIO(), io.StringIO()
    assert main(["state", "--file", str(path)], text) == 0
    assert main(["state", "--file", str(path), "--json"], json_out) == 0
    [row] = json.loads(json_out.getvalue())
    assert (row["site"], row["pages"], row["counters"]) == ("shop.test", 2, 2)
    assert row["model"] == {"version": 2, "main_path": "/body/main", "templates": 1}
    assert row["rules"]["version"] == 1 and "error" in row["rules"]
    line = text.getvalue().splitlines()[1]
    assert line.split()[:4] == ["shop.test", "2", "2", "0"] and "/body/main" in line


def test_state_of_a_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    assert main(["state", "--file", str(tmp_path / "nope.json")], io.StringIO()) == 2
