"""The ``scrapy-templates`` command (also ``python -m scrapy_templates``).

    scrapy-templates summary ITEMS.jsonl
    scrapy-templates show ITEMS.jsonl URL
    scrapy-templates report ITEMS.jsonl [-o report.html] [--store FILE | --redis URL]
    scrapy-templates rules (learn SAMPLES.jsonl [-o RULES.json] | show RULES.json
                            | apply RULES.json URL…)
    scrapy-templates state (--redis URL [--prefix P] | --store JOBDIR/scrapy-templates.json)

Every command prints text for a terminal; ``--json`` prints machine-readable JSON instead.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TextIO

from scrapy_templates.cli import items, report, rules, state
from scrapy_templates.cli.output import CliError

EPILOG = """\
after a crawl that exported items to items.jsonl:
  scrapy-templates summary items.jsonl            what was flagged, per site
  scrapy-templates show items.jsonl /some/page    one page, pagelet by pagelet
  scrapy-templates report items.jsonl --store JOBDIR/scrapy-templates.json -o report.html
  scrapy-templates state --redis redis://localhost:6379/0
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="scrapy-templates",
        description=(
            "Inspect what scrapy-templates flagged and learned during a crawl: template "
            "pagelets on the exported items, URL-normalization rules, the shared store."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    items.add_commands(commands)
    report.add_commands(commands)
    rules.add_commands(commands)
    state.add_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args, out or sys.stdout))
    except CliError as exc:
        print(f"scrapy-templates: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
