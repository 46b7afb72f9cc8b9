"""Hand-made exported items, shaped like the pipeline's output, for the report and CLI tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HEADER = {"path": "body/header", "text": "Shop Home Cart", "template": True}
FOOTER = {"path": "body/footer", "text": "© 2026 Shop", "template": True}
HOSTILE = '<script>document.title="pwned"</script><img src=x onerror="document.title=1">'


def marked(
    url: str,
    body: str,
    *,
    pages: int = 3,
    share: float = 0.5,
    extra: list[dict[str, Any]] | None = None,
    info: dict[str, Any] | None = None,
    title: str = "",
) -> dict[str, Any]:
    """An item the pipeline marked: header and footer templates around one content pagelet."""
    pagelets = [
        {**HEADER, "pages": pages},
        {"path": "body/main/p", "text": body, "pages": 1, "template": False},
        *(extra or []),
        {**FOOTER, "pages": pages - 1},
    ]
    return {
        "url": url,
        "title": title,
        "pagelets": pagelets,
        "content_text": body,
        "templates": {"site": "shop.test", "pages_seen": pages, "template_share": share}
        | (info or {}),
    }


def shop_items() -> list[dict[str, Any]]:
    """Three marked pages, one cut before parsing, one that never reached the pipeline's marks,
    and a page of a second site."""
    return [
        marked("http://shop.test/a", "Apples are red.", pages=1, share=0.25),
        marked("http://shop.test/b", "Bananas are yellow.", pages=2, share=0.5),
        marked(
            "http://shop.test/c",
            "Cherries are dark.",
            share=0.75,
            info={"store": "local-fallback"},
        ),
        {
            "url": "http://shop.test/big.pdf",
            "templates": {"site": "shop.test", "reason": "not-html", "detail": "application/pdf"},
        },
        {"url": "http://shop.test/raw"},
        {
            "url": "http://blog.test/post",
            "pagelets": [{"path": "body/p", "text": "Hello", "pages": 1, "template": False}],
            "content_text": "Hello",
            "templates": {"site": "blog.test", "pages_seen": 1, "template_share": 0.0},
        },
    ]


def write_items(path: Path, items: list[dict[str, Any]], *extra_lines: str) -> Path:
    lines = [json.dumps(item) for item in items]
    path.write_text("\n".join([*lines, *extra_lines]) + "\n", encoding="utf-8")
    return path
