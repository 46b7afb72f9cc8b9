"""Aligned tables that fit the terminal, and JSON output."""

from __future__ import annotations

import io
import json

from scrapy_templates.cli.output import table, write_json


def test_columns_align_and_the_last_one_is_cut_to_fit() -> None:
    out = io.StringIO()
    table(
        [["site", "pages", "text"], ["a.test", 3, "x" * 100], ["longer.test", 12, "short"]],
        out,
        width=40,
    )
    lines = out.getvalue().splitlines()
    assert lines[0] == "site         pages  text"
    assert lines[1] == "a.test       3      " + "x" * 19 + "…"
    assert lines[2] == "longer.test  12     short"
    assert all(len(line) <= 40 for line in lines)


def test_the_last_column_keeps_some_room_on_tiny_widths() -> None:
    out = io.StringIO()
    table([["a" * 30, "b" * 30]], out, width=20)
    assert out.getvalue().rstrip("\n") == "a" * 30 + "  " + "b" * 11 + "…"


def test_json_keeps_non_ascii_text() -> None:
    out = io.StringIO()
    write_json({"text": "© 2026 Café"}, out)
    assert "© 2026 Café" in out.getvalue() and json.loads(out.getvalue()) == {"text": "© 2026 Café"}
