"""The ``scrapy-templates`` command itself: its help and its entry points."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from scrapy_templates.cli import build_parser


def test_help_lists_every_command_with_an_example() -> None:
    text = build_parser().format_help()
    for command in ("summary", "show", "report", "rules", "state"):
        assert f"    {command}" in text
    assert "scrapy-templates summary items.jsonl" in text


@pytest.mark.parametrize(
    "argv",
    [
        [sys.executable, "-m", "scrapy_templates", "rules", "learn", "--help"],
        [shutil.which("scrapy-templates") or "scrapy-templates", "report", "--help"],
    ],
)
def test_entry_points_run(argv: list[str]) -> None:
    proc = subprocess.run(argv, capture_output=True, text=True, check=True)
    assert proc.stdout.startswith("usage: scrapy-templates ")


def test_a_missing_command_is_a_usage_error() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "scrapy_templates"], capture_output=True, text=True
    )
    assert proc.returncode == 2 and "required: COMMAND" in proc.stderr
