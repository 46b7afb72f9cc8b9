"""``scrapy-templates summary`` and ``show``: what a crawl flagged, read from its exported
items."""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path
from typing import Any, TextIO

from scrapy_templates.cli.output import CliError, table, terminal_width, write_json
from scrapy_templates.report.items import (
    Fields,
    ItemsError,
    PageRecord,
    find_page,
    read_items,
    summarise,
)


def load_items(args: argparse.Namespace) -> list[PageRecord]:
    fields = Fields(
        url=args.url_field,
        pagelets=args.pagelets_field,
        content=args.content_field,
        info=args.info_field,
    )
    try:
        records, problems = read_items(args.items, fields)
    except ItemsError as exc:
        raise CliError(str(exc)) from exc
    for problem in problems[:10]:
        print(f"skipped {problem}", file=sys.stderr)
    if len(problems) > 10:
        print(f"skipped {len(problems) - 10} more lines", file=sys.stderr)
    return records


def short_path(path: str, width: int = 40) -> str:
    """A tag path cut from the left, where its common prefix (``body/div…``) says least."""
    return path if len(path) <= width else "…" + path[-(width - 1) :]


def cmd_summary(args: argparse.Namespace, out: TextIO) -> int:
    summaries = summarise(load_items(args))
    if args.json:
        write_json([s.to_json(args.top) for s in summaries], out)
        return 0
    for number, s in enumerate(summaries):
        if number:
            print(file=out)
        not_marked = sum(s.reasons.values())
        line = f"{s.site}: {s.pages} pages, {len(s.marked)} marked"
        if not_marked:
            reasons = ", ".join(f"{r} {n}" for r, n in s.reasons.most_common())
            line += f", {not_marked} not marked ({reasons})"
        print(line, file=out)
        share = f"  template text: {s.template_share:.1%} of the average page"
        if s.template_text_share is not None:
            share += f", {s.template_text_share:.1%} of all page text (the progress line's figure)"
        print(share, file=out)
        if s.templates:
            print(f"  top template pagelets ({len(s.templates)} distinct):", file=out)
            rows: list[list[Any]] = [["    pages", "items", "tag path", "text"]]
            for row in s.templates[: args.top]:
                rows.append([f"    {row.pages}", row.items, short_path(row.path), row.text])
            table(rows, out)
        else:
            print("  no template pagelet flagged", file=out)
        flagged = s.flagged
        if flagged:
            print(f"  pages to look at ({len(flagged)}):", file=out)
            for record, why in flagged[: args.top]:
                print(f"    {record.url}\n      {why}", file=out)
            if len(flagged) > args.top:
                print(f"    … {len(flagged) - args.top} more (--top, or --json)", file=out)
    return 0


def cmd_show(args: argparse.Namespace, out: TextIO) -> int:
    found = find_page(load_items(args), args.url)
    if isinstance(found, list):
        if not found:
            raise CliError(f"no item with URL {args.url!r} in {args.items}")
        listed = "\n  ".join(r.url for r in found[:10])
        raise CliError(f"{len(found)} items match {args.url!r}; give one of:\n  {listed}")
    record = found
    if args.json:
        write_json(record.to_json(), out)
        return 0
    print(record.url, file=out)
    if record.title:
        print(record.title, file=out)
    why = record.why_flagged()
    if not record.marked:
        print(why, file=out)
        return 0
    print(
        f"{record.template_share:.0%} of the text in template pagelets; decided with "
        f"{record.pages_seen} pages of {record.site} seen",
        file=out,
    )
    if why:
        print(f"note: {why}", file=out)
    print(
        "\nT template · t template by layout (varies little across its layout cluster) · "
        "C content · o outside the main region (not in the content)",
        file=out,
    )
    rows: list[list[Any]] = [["", "pages", "tag path", "text"]]
    for p in record.pagelets:
        mark = ("t" if p.static else "T") if p.template else ("o" if p.outside_main else "C")
        rows.append([mark, p.pages, short_path(p.path, 48), p.text])
    table(rows, out)
    print("\ncontent text:", file=out)
    width = min(terminal_width(), 100) - 2
    for paragraph in record.content_text.splitlines():
        wrapped = textwrap.fill(paragraph, width, initial_indent="  ", subsequent_indent="  ")
        print(wrapped, file=out)
    return 0


def add_field_arguments(parser: argparse.ArgumentParser) -> None:
    fields = Fields()
    group = parser.add_argument_group("item fields (when the crawl changed TEMPLATES_*_FIELD)")
    group.add_argument("--url-field", default=fields.url, metavar="NAME")
    group.add_argument("--pagelets-field", default=fields.pagelets, metavar="NAME")
    group.add_argument("--content-field", default=fields.content, metavar="NAME")
    group.add_argument("--info-field", default=fields.info, metavar="NAME")


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    summary = commands.add_parser(
        "summary",
        help="per site: pages, template share, top template pagelets, pages to look at",
        description=(
            "Summarise a crawl's exported items (JSON lines, e.g. FEEDS items.jsonl) per site: "
            "how many pages were marked, the mean share of page text in template pagelets, "
            "the template pagelets ranked by the number of pages holding them, and the pages "
            "worth a look (not marked, with the reason; cut before parsing; decided while the "
            "shared store was down)."
        ),
    )
    summary.add_argument("items", type=Path, metavar="ITEMS.jsonl")
    summary.add_argument("--top", type=int, default=10, help="rows per list (default 10)")
    summary.add_argument("--json", action="store_true", help="machine-readable output")
    add_field_arguments(summary)
    summary.set_defaults(func=cmd_summary)

    show = commands.add_parser(
        "show",
        help="one page: its pagelets in order, each marked template or content",
        description=(
            "Show one exported page: its pagelets in document order with their tag path, the "
            "number of pages of the site holding them and the template mark, then the content "
            "text the item carries. URL is the item's URL, or any part of it that matches one "
            "item only."
        ),
    )
    show.add_argument("items", type=Path, metavar="ITEMS.jsonl")
    show.add_argument("url", metavar="URL")
    show.add_argument("--json", action="store_true", help="machine-readable output")
    add_field_arguments(show)
    show.set_defaults(func=cmd_show)
