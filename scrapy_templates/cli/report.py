"""``scrapy-templates report``: the HTML report of a crawl, from its items and, optionally,
the rules and models its store holds."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from scrapy_templates.cli.items import add_field_arguments, load_items
from scrapy_templates.cli.output import write_json
from scrapy_templates.cli.rules import read_rules
from scrapy_templates.cli.state import add_store_arguments, read_state
from scrapy_templates.report.html import render_report, write_report
from scrapy_templates.report.items import summarise
from scrapy_templates.templates.model import TemplateModel
from scrapy_templates.urlnorm.rules import RuleSet


def cmd_report(args: argparse.Namespace, out: TextIO) -> int:
    summaries = summarise(load_items(args))
    rulesets: dict[str, RuleSet] = {}
    models: dict[str, TemplateModel] = {}
    if args.redis or args.file:
        state = read_state(args.redis, args.prefix, args.file)
        rulesets.update(state.rulesets())
        models.update(state.models())
    if args.rules:
        rulesets.update({rs.site: rs for rs in read_rules(args.rules)})
    html = render_report(
        summaries,
        source=str(args.items),
        rulesets=rulesets,
        models=models,
        page_views=args.page_views,
    )
    write_report(args.output, html)
    pages = sum(s.pages for s in summaries)
    if args.json:
        write_json(
            {
                "report": str(args.output),
                "sites": len(summaries),
                "pages": pages,
                "sites_with_rules": sorted(set(rulesets) & {s.site for s in summaries}),
                "bytes": len(html.encode()),
            },
            out,
        )
    else:
        print(
            f"report of {pages} pages on {len(summaries)} site(s) written to {args.output} "
            f"({len(html.encode()) / 1024:,.0f} KB); open it in a browser",
            file=out,
        )
    return 0


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    report = commands.add_parser(
        "report",
        help="write a self-contained HTML report: sites, URL rules, templates, page views",
        description=(
            "Write one HTML file (no network needed, opens from file://) with a page per site — "
            "its URL rules, its template pagelets ranked by page count, a chart of template "
            "share across the crawl — and a view of each page with its template pagelets "
            "shaded. URL rules and the template model come from the crawl's store (--store "
            "JOBDIR/scrapy-templates.json or --redis URL) or a rules file (--rules)."
        ),
    )
    report.add_argument("items", type=Path, metavar="ITEMS.jsonl")
    report.add_argument(
        "-o", "--output", type=Path, default=Path("report.html"), help="default: report.html"
    )
    add_store_arguments(report, required=False)
    report.add_argument("--rules", type=Path, help="a rules file from `rules learn -o`")
    report.add_argument(
        "--page-views",
        type=int,
        default=200,
        metavar="N",
        help="page views per site, pages to look at first (default 200)",
    )
    report.add_argument("--json", action="store_true", help="machine-readable output")
    add_field_arguments(report)
    report.set_defaults(func=cmd_report)
