"""The README's main job: the demo crawl prints its summary and ends by saying where the
report is."""

from __future__ import annotations

import io
import json
import shlex
import subprocess
import sys
from pathlib import Path

import lxml.html

from scrapy_templates.cli import main as cli
from tests.conftest import ROOT


def test_demo_crawl_writes_items_and_the_report(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "example_project" / "run_demo.py"), "--output", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    items = (tmp_path / "items.jsonl").read_text().splitlines()
    lines = proc.stdout.splitlines()
    assert f"  items exported        {len(items)}  ->  {tmp_path / 'items.jsonl'}" in lines
    report = tmp_path / "report.html"
    assert lines[-4].startswith(f"report of {len(items)} pages on 1 site(s) written to {report} (")
    assert (
        lines[-1]
        == f"           scrapy-templates state --store {tmp_path}/job/scrapy-templates.json"
    )
    suggested = shlex.split(lines[-2])
    assert suggested[:3] == ["scrapy-templates", "show", str(tmp_path / "items.jsonl")]
    assert cli(suggested[1:], io.StringIO()) == 0, "the suggested show command finds its page"
    doc = lxml.html.fromstring(report.read_bytes())
    site = doc.get_element_by_id("site-0")
    assert len(site.find_class("rules")[0].findall("tr")) > 1, "the learned URL rules are shown"
    assert "All rights reserved" in site.find_class("templates")[0].text_content()
    assert json.loads(items[0])["templates"]["site"] in site.text_content()
