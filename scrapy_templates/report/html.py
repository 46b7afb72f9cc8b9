"""The HTML report: one self-contained file, readable from ``file://`` with no network.

A page per site (learned URL rules, template pagelets ranked by page count, a chart of template
share across the crawl) and a view of each crawled page with its template pagelets shaded, as
in the figures of 000_… . Rendered by Jinja2 with autoescaping on, so every string taken from a
crawled page reaches the browser as text; the file also carries a Content-Security-Policy that
allows no script at all — it needs none: views are switched by URL fragment and CSS ``:target``.
What one page contributes is bounded (:data:`TEXT_LIMIT`, :data:`PAGE_LIMIT`), so items with
megabytes of text cannot make the file huge.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import jinja2

from scrapy_templates.report.items import Pagelet, PageRecord, SiteSummary
from scrapy_templates.templates.model import TemplateModel
from scrapy_templates.urlnorm.rules import RuleSet

# Characters of one string the report shows (a URL, a title, a path, a pagelet's text) and of
# the pagelet text, and the content text, of one page view.
TEXT_LIMIT = 2_000
PAGE_LIMIT = 20_000


def clip(text: str, limit: int = TEXT_LIMIT) -> str:
    """``text``, cut to ``limit`` characters with a note of how many more there were."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]} … [{len(text) - limit:,} more characters]"


@dataclass(frozen=True)
class PageView:
    """What a page view shows of a record: pagelets (each clipped) until their text reaches
    :data:`PAGE_LIMIT`, how many were left out, and the clipped content text."""

    pagelets: tuple[tuple[Pagelet, str], ...]
    hidden: int
    content: str


def page_view(record: PageRecord) -> PageView:
    shown: list[tuple[Pagelet, str]] = []
    used = 0
    for pagelet in record.pagelets:
        if used >= PAGE_LIMIT:
            break
        text = clip(pagelet.text, min(TEXT_LIMIT, PAGE_LIMIT - used))
        used += len(text)
        shown.append((pagelet, text))
    hidden = len(record.pagelets) - len(shown)
    return PageView(tuple(shown), hidden, clip(record.content_text, PAGE_LIMIT))


_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("scrapy_templates.report", "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
_ENV.filters["clip"] = clip
_ENV.globals["page_view"] = page_view
_ENV.globals["TEXT_LIMIT"] = TEXT_LIMIT
_ENV.globals["PAGE_LIMIT"] = PAGE_LIMIT


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    label: str


@dataclass(frozen=True)
class ShareChart:
    """Template share of the site's pages in crawl order, averaged into at most
    ``columns`` bars, so the first pages of a crawl can be compared with the rest."""

    bars: tuple[Bar, ...]
    mean_y: float
    width: int
    height: int


def share_chart(
    shares: list[float], *, width: int = 640, height: int = 140, columns: int = 160
) -> ShareChart:
    if not shares:
        return ShareChart((), float(height), width, height)
    per = max(1, -(-len(shares) // columns))
    groups = [shares[i : i + per] for i in range(0, len(shares), per)]
    step = width / len(groups)
    bars = []
    for index, group in enumerate(groups):
        value = sum(group) / len(group)
        first = index * per + 1
        last = first + len(group) - 1
        pages = f"page {first}" if first == last else f"pages {first}–{last}"
        bars.append(
            Bar(
                x=round(index * step, 2),
                y=round(height * (1 - value), 2),
                width=round(max(step - 1, 0.5), 2),
                height=round(height * value, 2),
                label=f"{pages}: {value:.0%} template text",
            )
        )
    mean = sum(shares) / len(shares)
    return ShareChart(tuple(bars), round(height * (1 - mean), 2), width, height)


def render_report(
    summaries: list[SiteSummary],
    *,
    source: str,
    rulesets: dict[str, RuleSet] | None = None,
    models: dict[str, TemplateModel] | None = None,
    page_views: int = 200,
    top_templates: int = 50,
) -> str:
    """The report as one HTML string. ``page_views`` bounds the page views per site (flagged
    pages first, then crawl order) so the file stays small on large crawls."""
    rulesets = rulesets or {}
    models = models or {}
    sites = []
    views: list[tuple[str, PageRecord]] = []
    for number, summary in enumerate(summaries):
        anchor = f"site-{number}"
        flagged_first = [r for r, _ in summary.flagged] + summary.records
        chosen: dict[int, str] = {}
        for record in flagged_first:
            if len(chosen) >= page_views:
                break
            if id(record) not in chosen and record.marked:
                chosen[id(record)] = f"{anchor}-page-{len(chosen)}"
        for record in summary.records:
            if id(record) in chosen:
                views.append((chosen[id(record)], record))
        ruleset = rulesets.get(summary.site)
        sites.append(
            {
                "anchor": anchor,
                "summary": summary,
                "chart": share_chart([r.template_share for r in summary.marked]),
                "templates": summary.templates[:top_templates],
                "ruleset": ruleset,
                "rules": ruleset.describe_rules() if ruleset else [],
                "model": models.get(summary.site),
                "pages": [(r, chosen.get(id(r))) for r in summary.records],
                "views_shown": len(chosen),
            }
        )
    back = {view_id: view_id.rsplit("-page-", 1)[0] for view_id, _ in views}
    template = _ENV.get_template("report.html.j2")
    return template.render(
        source=source,
        generated=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        sites=sites,
        views=views,
        back=back,
        total_pages=sum(s.pages for s in summaries),
    )


def write_report(path: Path, html: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(html, encoding="utf-8")
