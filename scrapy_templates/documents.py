"""Reading a JSON document that another process (or anyone with access to the store) wrote.

A document is refused with :class:`DocumentError` — never another exception — when it is
larger than :data:`MAX_DOCUMENT_BYTES`, is not JSON, holds ``NaN`` or an infinity, or nests
deeper than Python's parser can follow.
"""

from __future__ import annotations

import json
from typing import Any

# far above any rule set or template model a crawl learns (a few hundred KB at most)
MAX_DOCUMENT_BYTES = 16 * 1024 * 1024


class DocumentError(ValueError):
    """A stored document that cannot be read; the message says why."""


def _no_constant(name: str) -> Any:
    raise DocumentError(f"{name} is not a number a document may hold")


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise DocumentError(f"{text} is out of range")
    return value


def read_document(text: str | bytes, what: str) -> Any:
    """The JSON value of ``text`` (``what`` names the document in errors)."""
    if len(text) > MAX_DOCUMENT_BYTES:
        raise DocumentError(f"{what} of {len(text)} bytes is over {MAX_DOCUMENT_BYTES}")
    try:
        return json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except RecursionError:
        raise DocumentError(f"{what} nests too deeply") from None
    except DocumentError:
        raise
    except ValueError as exc:
        raise DocumentError(f"{what} is not JSON: {exc}") from None


# versions and counts in a document are 64-bit whole numbers, as Redis keeps them
MAX_WHOLE = 2**63 - 1


def whole(value: Any, what: str) -> int:
    """``value`` when it is a whole number from 0 to :data:`MAX_WHOLE` (not a float, not a
    bool, not a string); :class:`DocumentError` naming ``what`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_WHOLE:
        raise DocumentError(f"{what} {str(value)[:40]!r} is not a whole number from 0 to 2**63-1")
    return value
