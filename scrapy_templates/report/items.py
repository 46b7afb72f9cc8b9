"""Exported items read back and summarised per site, for the CLI and the HTML report.

Works on the JSON lines a crawl with scrapy-templates exported (any feed with the item fields
of ``TEMPLATES_*_FIELD``); plain data in, plain data out — no Scrapy.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scrapy_templates.settings import DEFAULTS
from scrapy_templates.sites import host_site


class ItemsError(Exception):
    """The items file cannot be read at all (missing, unreadable, no item in it)."""


@dataclass(frozen=True)
class Fields:
    """The item field names the crawl used (its ``TEMPLATES_*_FIELD`` settings)."""

    url: str = DEFAULTS["TEMPLATES_URL_FIELD"]
    pagelets: str = DEFAULTS["TEMPLATES_PAGELETS_FIELD"]
    content: str = DEFAULTS["TEMPLATES_CONTENT_FIELD"]
    info: str = DEFAULTS["TEMPLATES_INFO_FIELD"]


@dataclass(frozen=True)
class Pagelet:
    path: str
    text: str
    pages: int
    template: bool
    outside_main: bool = False
    static: bool = False


@dataclass
class PageRecord:
    """One exported item, as far as the report needs it."""

    url: str
    site: str
    line: int
    title: str = ""
    pagelets: list[Pagelet] = field(default_factory=list)
    content_text: str = ""
    template_share: float = 0.0
    text_chars: int = 0
    pages_seen: int = 0
    reason: str | None = None
    detail: str = ""
    notes: list[str] = field(default_factory=list)
    local_fallback: bool = False

    @property
    def marked(self) -> bool:
        return self.reason is None

    def why_flagged(self) -> str | None:
        """Why a person should look at this page, or ``None``."""
        if self.reason is not None:
            return f"not marked: {self.reason}" + (f" ({self.detail})" if self.detail else "")
        parts = list(self.notes)
        if self.local_fallback:
            parts.append("decided on local counts while the shared store was down")
        return "; ".join(parts) or None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "url": self.url,
            "site": self.site,
            "title": self.title,
            "marked": self.marked,
            "template_share": self.template_share,
            "pages_seen": self.pages_seen,
            "pagelets": [
                {
                    "path": p.path,
                    "text": p.text,
                    "pages": p.pages,
                    "template": p.template,
                    "outside_main": p.outside_main,
                    "static": p.static,
                }
                for p in self.pagelets
            ],
            "content_text": self.content_text,
        }
        flagged = self.why_flagged()
        if flagged:
            data["flagged"] = flagged
        return data


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def record_from_item(item: Any, line: int, fields: Fields = Fields()) -> PageRecord:
    """A :class:`PageRecord` from one decoded item; ``ValueError`` when it has no URL."""
    if not isinstance(item, dict):
        raise ValueError("not a JSON object")
    url = item.get(fields.url)
    if not isinstance(url, str) or not url:
        raise ValueError(f"no URL in field {fields.url!r}")
    raw_info = item.get(fields.info)
    info = raw_info if isinstance(raw_info, dict) else {}
    record = PageRecord(url=url, site=_str(info.get("site")) or host_site(url), line=line)
    record.title = _str(item.get("title"))
    if "reason" in info or not isinstance(raw_info, dict):
        record.reason = _str(info.get("reason")) or "no-marks"
        record.detail = _str(info.get("detail"))
        if not isinstance(raw_info, dict):
            record.detail = f"the item has no {fields.info!r} object"
        return record
    raw = item.get(fields.pagelets)
    for entry in raw if isinstance(raw, list) else []:
        if isinstance(entry, dict):
            record.pagelets.append(
                Pagelet(
                    path=_str(entry.get("path")),
                    text=_str(entry.get("text")),
                    pages=_int(entry.get("pages")),
                    template=entry.get("template") is True,
                    outside_main=entry.get("outside_main") is True,
                    static=entry.get("static") is True,
                )
            )
    record.content_text = _str(item.get(fields.content))
    share = info.get("template_share")
    record.template_share = float(share) if isinstance(share, (int, float)) else 0.0
    record.pages_seen = _int(info.get("pages_seen"))
    record.text_chars = max(0, _int(info.get("text_chars")))
    notes = info.get("notes")
    record.notes = [str(n) for n in notes] if isinstance(notes, list) else []
    record.local_fallback = info.get("store") == "local-fallback"
    return record


def read_items(path: Path, fields: Fields = Fields()) -> tuple[list[PageRecord], list[str]]:
    """Every item of a JSON-lines file, and one problem line per line that is not an item."""
    try:
        handle = path.open(encoding="utf-8")
    except OSError as exc:
        raise ItemsError(f"cannot read {path}: {exc.strerror}") from exc
    records: list[PageRecord] = []
    problems: list[str] = []
    lines = not_json = 0
    with handle:
        try:
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                lines += 1
                try:
                    records.append(record_from_item(json.loads(line), number, fields))
                except json.JSONDecodeError as exc:
                    not_json += 1
                    problems.append(f"{path}:{number}: not JSON ({exc.msg})")
                except ValueError as exc:
                    problems.append(f"{path}:{number}: {exc}")
        except UnicodeDecodeError as exc:
            raise ItemsError(f"{path} is not UTF-8 text (JSON lines): {exc.reason}") from exc
    if not records:
        if lines and not_json == lines:
            raise ItemsError(f"{path} is not JSON lines ({problems[0]})")
        raise ItemsError(f"no item with a URL in {path}")
    return records, problems


@dataclass
class TemplateRow:
    """A template pagelet of a site: where it is, what it says, how widely it occurs."""

    path: str
    text: str
    pages: int
    items: int


@dataclass
class SiteSummary:
    site: str
    records: list[PageRecord]
    templates: list[TemplateRow]
    reasons: Counter[str]

    @property
    def pages(self) -> int:
        return len(self.records)

    @property
    def marked(self) -> list[PageRecord]:
        return [r for r in self.records if r.marked]

    @property
    def template_share(self) -> float:
        """Mean share of page text in template pagelets over the marked pages."""
        marked = self.marked
        return sum(r.template_share for r in marked) / len(marked) if marked else 0.0

    @property
    def template_text_share(self) -> float | None:
        """Template text over all the text of the marked pages, the crawl's progress line's
        figure (long pages weigh more); ``None`` for items exported without ``text_chars``."""
        marked = self.marked
        total = sum(r.text_chars for r in marked)
        if not total:
            return None
        return sum(r.template_share * r.text_chars for r in marked) / total

    @property
    def flagged(self) -> list[tuple[PageRecord, str]]:
        out = []
        for record in self.records:
            why = record.why_flagged()
            if why:
                out.append((record, why))
        return out

    def to_json(self, top: int) -> dict[str, Any]:
        return {
            "site": self.site,
            "pages": self.pages,
            "marked": len(self.marked),
            "template_share": round(self.template_share, 4),
            "template_text_share": (
                None if self.template_text_share is None else round(self.template_text_share, 4)
            ),
            "not_marked": dict(self.reasons),
            "templates": [vars(t) for t in self.templates[:top]],
            "flagged": [{"url": r.url, "why": why} for r, why in self.flagged],
        }


def summarise(records: list[PageRecord]) -> list[SiteSummary]:
    """Per site (most pages first): its pages, template pagelets ranked by page count, and the
    reasons pages went unmarked."""
    by_site: dict[str, list[PageRecord]] = {}
    for record in records:
        by_site.setdefault(record.site, []).append(record)
    summaries = []
    for site, site_records in by_site.items():
        rows: dict[tuple[str, str], TemplateRow] = {}
        for record in site_records:
            for p in record.pagelets:
                if not p.template:
                    continue
                row = rows.get((p.path, p.text))
                if row is None:
                    rows[(p.path, p.text)] = TemplateRow(p.path, p.text, p.pages, 1)
                else:
                    row.pages = max(row.pages, p.pages)
                    row.items += 1
        ranked = sorted(rows.values(), key=lambda r: (-r.pages, -r.items, r.path, r.text))
        reasons = Counter(r.reason for r in site_records if r.reason is not None)
        summaries.append(SiteSummary(site, site_records, ranked, reasons))
    summaries.sort(key=lambda s: (-s.pages, s.site))
    return summaries


def find_page(records: list[PageRecord], url: str) -> PageRecord | list[PageRecord]:
    """The record of ``url``: an exact match first, then the only record whose URL ends with
    it (``/about``), then the only one that contains it. Returns the candidates instead when
    none or several match."""
    exact = [r for r in records if r.url == url]
    if exact:
        return exact[-1]
    ending = [r for r in records if r.url.endswith(url)]
    if len(ending) == 1:
        return ending[0]
    partial = [r for r in records if url in r.url]
    return partial[0] if len(partial) == 1 else partial
