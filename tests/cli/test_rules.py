"""``scrapy-templates rules learn|show|apply``, text and JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scrapy_templates.urlnorm.clusters import Sample
from tests.cli.runner import run_cli
from tests.urlnorm.url_sets import mirror_site

SID_URL = "http://www.example.com/archive2/17/display?sid=abc"


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
    assert run_cli("rules", "learn", str(samples), "-o", str(path))[0] == 0
    return path


def test_learn_prints_a_table_and_writes_rules(samples: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "r.json"
    code, text = run_cli("rules", "learn", str(samples), "-o", str(path))
    assert code == 0
    header, row = text.splitlines()[:2]
    assert header.split() == ["host", "samples", "urls", "clusters", "rules", "seconds"]
    assert row.split()[:4] == ["www.example.com", "200", "200", "50"]
    assert "2 lines skipped" in text
    assert "skipped" in capsys.readouterr().err
    assert json.loads(path.read_text())[0]["site"] == "www.example.com"


def test_learn_json(samples: Path) -> None:
    code, text = run_cli("rules", "learn", str(samples), "--json")
    data = json.loads(text)
    assert code == 0 and data["hosts"][0]["clusters"] == 50 and data["skipped_lines"] == 2


def test_show_text_and_json(rules_file: Path) -> None:
    code, text = run_cli("rules", "show", str(rules_file))
    assert code == 0
    assert "www.example.com: version 1" in text and "->" in text and "drop ?sid" in text
    assert "duplicate pairs joined" in text and "share of rewrites that join distinct" in text
    rows = json.loads(run_cli("rules", "show", str(rules_file), "--json")[1])
    assert rows and {"source", "target", "operations", "support", "fpr"} <= set(rows[0])
    assert "rel=canonical" not in text


def test_show_says_when_a_sites_canonical_links_proved_wrong(rules_file: Path) -> None:
    data = json.loads(rules_file.read_text())
    data[0]["claims_refuted"] = True
    rules_file.write_text(json.dumps(data))
    code, text = run_cli("rules", "show", str(rules_file))
    assert code == 0
    assert "its rel=canonical links proved wrong, and teach nothing" in text.splitlines()[0]


def test_apply_text_and_json(rules_file: Path) -> None:
    code, text = run_cli("rules", "apply", str(rules_file), SID_URL, "http://elsewhere.example/")
    assert code == 0
    assert "(rewritten)" in text and "no rules for this host" in text
    rows = json.loads(run_cli("rules", "apply", str(rules_file), SID_URL, "--json")[1])
    assert rows[0]["url"] == SID_URL and "sid" not in rows[0]["canonical"]


def test_errors_are_one_line_and_status_2(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert run_cli("rules", "show", str(tmp_path / "missing.json"))[0] == 2
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "other"}')
    assert run_cli("rules", "apply", str(bad), SID_URL)[0] == 2
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    assert run_cli("rules", "learn", str(empty))[0] == 2
    err = capsys.readouterr().err
    assert "cannot read" in err and "not a scrapy-templates rule set" in err
