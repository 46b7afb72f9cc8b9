"""``scrapy-templates summary`` and ``show`` on exported items, text and JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.runner import run_cli
from tests.report.sample_items import marked, shop_items, write_items


@pytest.fixture
def items(tmp_path: Path) -> Path:
    return write_items(tmp_path / "items.jsonl", shop_items(), "not json")


def test_summary_text(items: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, text = run_cli("summary", str(items))
    assert code == 0
    shop, blog = text.split("\n\n")
    lines = shop.splitlines()
    assert lines[0] == "shop.test: 5 pages, 3 marked, 2 not marked (not-html 1, no-marks 1)"
    assert lines[1] == "  template text: 50.0% of the average page"  # no text_chars exported
    assert lines[3].split() == ["pages", "items", "tag", "path", "text"]
    assert lines[4].split() == ["3", "3", "body/header", "Shop", "Home", "Cart"]
    assert "pages to look at (3):" in shop and "shared store was down" in shop
    assert "not marked: not-html (application/pdf)" in shop
    assert blog.startswith("blog.test: 1 pages, 1 marked") and "no template pagelet" in blog
    assert f"{items}:7: not JSON (Expecting value)" in capsys.readouterr().err


def test_summary_gives_the_progress_lines_share_when_items_carry_their_length(
    tmp_path: Path,
) -> None:
    short = marked("http://shop.test/a", "x", share=0.5, info={"text_chars": 100})
    long = marked("http://shop.test/b", "y", share=0.0, info={"text_chars": 300})
    path = tmp_path / "items.jsonl"
    path.write_text("\n".join(json.dumps(item) for item in (short, long)) + "\n")
    code, text = run_cli("summary", str(path))
    assert code == 0
    assert text.splitlines()[1] == (
        "  template text: 25.0% of the average page, 12.5% of all page text "
        "(the progress line's figure)"
    )


def test_summary_top_cuts_every_list(items: Path) -> None:
    text = run_cli("summary", str(items), "--top", "1")[1]
    assert "body/footer" not in text and "… 2 more (--top, or --json)" in text


def test_summary_json(items: Path) -> None:
    code, out = run_cli("summary", str(items), "--json")
    shop, blog = json.loads(out)
    assert code == 0 and (shop["site"], shop["pages"], shop["marked"]) == ("shop.test", 5, 3)
    assert shop["templates"][0] == {
        "path": "body/header",
        "text": "Shop Home Cart",
        "pages": 3,
        "items": 3,
    }
    assert len(shop["flagged"]) == 3 and blog["template_share"] == 0.0


def test_summary_fits_a_narrow_terminal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "60")
    long_text = "word " * 60
    item = marked(
        "http://shop.test/a",
        "A",
        extra=[{"path": "body/aside", "text": long_text, "pages": 3, "template": True}],
    )
    path = write_items(tmp_path / "i.jsonl", [item])
    text = run_cli("summary", str(path))[1]
    assert max(len(line) for line in text.splitlines()) <= 60
    assert any(
        line.startswith("    3") and line.endswith("word wor…") for line in text.splitlines()
    )


def test_show_text(items: Path) -> None:
    code, text = run_cli("show", str(items), "/b")
    assert code == 0
    lines = text.splitlines()
    assert lines[0] == "http://shop.test/b"
    assert "50% of the text in template pagelets; decided with 2 pages of shop.test seen" in text
    rows = [r for r in (line.split(None, 3) for line in lines) if len(r) == 4 and r[1].isdigit()]
    assert [(r[0], r[2]) for r in rows] == [
        ("T", "body/header"),
        ("C", "body/main/p"),
        ("T", "body/footer"),
    ]
    assert lines[-2:] == ["content text:", "  Bananas are yellow."]


def test_show_marks_blocks_flagged_by_the_layout_model(tmp_path: Path) -> None:
    item = marked("http://shop.test/a", "Apples.")
    item["pagelets"][0]["static"] = True
    path = write_items(tmp_path / "i.jsonl", [item])
    text = run_cli("show", str(path), "/a")[1]
    rows = [line.split(None, 3) for line in text.splitlines()]
    marks = [r[0] for r in rows if len(r) == 4 and r[1].isdigit()]
    assert marks == ["t", "C", "T"]


def test_show_a_page_that_was_not_marked(items: Path) -> None:
    code, text = run_cli("show", str(items), "big.pdf")
    assert code == 0 and "not marked: not-html (application/pdf)" in text
    assert "content text" not in text


def test_show_json(items: Path) -> None:
    data = json.loads(run_cli("show", str(items), "http://shop.test/c", "--json")[1])
    assert data["url"] == "http://shop.test/c" and data["marked"] is True
    assert [p["template"] for p in data["pagelets"]] == [True, False, True]
    assert "shared store was down" in data["flagged"]


def test_show_errors(items: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli("show", str(items), "shop.test")[0] == 2
    err = capsys.readouterr().err
    assert "5 items match 'shop.test'; give one of:" in err and "http://shop.test/raw" in err
    assert run_cli("show", str(items), "http://nowhere.test/")[0] == 2
    assert "no item with URL 'http://nowhere.test/'" in capsys.readouterr().err
    assert run_cli("summary", str(items.with_name("missing.jsonl")))[0] == 2
    assert "cannot read" in capsys.readouterr().err
    text = items.with_name("notes.txt")
    text.write_text("a line of text\nanother\n")
    assert run_cli("summary", str(text))[0] == 2
    assert "notes.txt is not JSON lines" in capsys.readouterr().err
    binary = items.with_name("image.png")
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe\x00")
    assert run_cli("summary", str(binary))[0] == 2
    assert "image.png is not UTF-8 text" in capsys.readouterr().err


def test_field_names_of_a_crawl_that_renamed_them(tmp_path: Path) -> None:
    renamed = [
        {"link": i["url"], "marks": i.get("templates"), "blocks": i.get("pagelets")}
        for i in shop_items()
    ]
    path = write_items(tmp_path / "renamed.jsonl", renamed)
    fields = ["--url-field", "link", "--info-field", "marks", "--pagelets-field", "blocks"]
    shop = json.loads(run_cli("summary", str(path), "--json", *fields)[1])[0]
    assert (shop["pages"], shop["marked"], shop["templates"][0]["pages"]) == (5, 3, 3)
