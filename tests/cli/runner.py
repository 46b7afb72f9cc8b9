from __future__ import annotations

import io

from scrapy_templates.cli import main


def run_cli(*argv: str) -> tuple[int, str]:
    """Run one command in-process; its exit status and what it printed to stdout."""
    out = io.StringIO()
    code = main(list(argv), out)
    return code, out.getvalue()
