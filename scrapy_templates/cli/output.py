"""What every command shares: the user-error type, aligned tables that fit the terminal, JSON."""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from typing import Any, TextIO


class CliError(Exception):
    """A user error: printed as one line, exit status 2."""


def terminal_width() -> int:
    return max(60, shutil.get_terminal_size((100, 24)).columns)


def table(rows: Sequence[Sequence[Any]], out: TextIO, *, width: int | None = None) -> None:
    """Rows as left-aligned columns two spaces apart; the last column is cut with "…" so that
    each line fits ``width`` (the terminal's, by default)."""
    text = [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in text) for i in range(len(text[0]))]
    limit = terminal_width() if width is None else width
    room = max(limit - sum(widths[:-1]) - 2 * (len(widths) - 1), 12)
    for row in text:
        last = row[-1] if len(row[-1]) <= room else row[-1][: room - 1] + "…"
        cells = [c.ljust(w) for c, w in zip(row[:-1], widths, strict=False)]
        print("  ".join([*cells, last]).rstrip(), file=out)


def write_json(data: Any, out: TextIO) -> None:
    json.dump(data, out, indent=1, ensure_ascii=False)
    print(file=out)
