"""The worker process: a fresh interpreter, started by
:class:`~scrapy_templates.workers.WorkerPool`, that answers requests read on its stdin with
replies on its stdout, one length-prefixed pickle each way.

``python -m scrapy_templates.worker_process parse`` parses pages; ``… mark`` also counts
and decides them (:mod:`scrapy_templates.worker_marking`); ``… urls`` does a host's URL-rule
work (:mod:`scrapy_templates.urlnorm.jobs`). A worker imports its own work, and only that,
before it says it is ready: no Scrapy, a parse worker no asyncio, and a URL-rule worker no
parser. Two
workers start while the crawl's first pages download, and on two cores each import they spare
is time the crawl has.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import pickle
import signal
import struct
import sys
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO

if TYPE_CHECKING:
    from scrapy_templates.page import Page
    from scrapy_templates.worker_marking import WorkerMarking

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

HEADER = struct.Struct("<I")
# the crawl's process id, given to its workers (a worker's parent may be gone before it reads
# its own parent's id)
PARENT_ENV = "SCRAPY_TEMPLATES_WORKER_PARENT"
# what each kind of worker imports before it is ready
_WORK = {
    "parse": "scrapy_templates.page",
    "mark": "scrapy_templates.worker_marking",
    "urls": "scrapy_templates.urlnorm.jobs",
}


@dataclass(frozen=True, slots=True)
class ParseOptions:
    """What :func:`scrapy_templates.page.parse_page` is called with, and what the detached
    page must still answer (see :meth:`scrapy_templates.page.Page.detach`)."""

    k: int = 3
    max_bytes: int = 5_000_000
    max_tags: int = 100_000
    main_path: str | None = None
    blocks: bool = False


def read_message(stream: BinaryIO) -> Any:
    """The next message on ``stream``; :class:`EOFError` at its end."""
    head = stream.read(HEADER.size)
    if len(head) < HEADER.size:
        raise EOFError
    (size,) = HEADER.unpack(head)
    return pickle.loads(stream.read(size))


def frame(message: Any) -> bytes:
    """``message`` as it goes down a pipe: its pickle's length, then the pickle."""
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return HEADER.pack(len(data)) + data


def to_wire(page: Page) -> tuple[Any, ...]:
    """A detached page as plain tuples (faster to pickle than dataclasses and named
    tuples; :func:`scrapy_templates.workers.from_wire` reads it back)."""
    return (
        page.url,
        [tuple(p) for p in page.pagelets],
        page.title,
        page.simhash,
        page.text_hash,
        page.notes,
        page.canonical,
        page.h1,
        page.sequence,
        page.below,
        page.block_texts,
        page.hidden,
    )


def answer(html: str | bytes, url: str, options: ParseOptions) -> tuple[Any, ...]:
    """What a worker sends back for one page: ``("page", wire)`` or ``("page-error", reason,
    message)``; any other exception propagates."""
    from scrapy_templates.page import PageError, parse_page

    try:
        page = parse_page(
            html, url, k=options.k, max_bytes=options.max_bytes, max_tags=options.max_tags
        )
    except PageError as exc:
        return ("page-error", exc.reason, str(exc))
    return ("page", to_wire(page.detach(options.main_path, options.blocks)))


def marked(marking: WorkerMarking, args: list[Any]) -> tuple[Any, ...]:
    """What a worker sends back for a page to mark (``html, url, site, hold, news``):
    ``("marked", Marked)`` or ``("page-error", reason, message)``."""
    from scrapy_templates.page import PageError

    ident, html, url, site, hold, news = args
    try:
        found = marking.mark(html, url, site, hold=hold, ident=ident, news=news)
    except PageError as exc:
        return ("page-error", exc.reason, str(exc))
    return ("marked", found)


def released(marking: WorkerMarking, site: str, review: bool, news: Any) -> tuple[Any, ...]:
    """What a worker sends back when a site's held pages are released: ``("released",
    [(ident, marks or failure)], summary)``, a page whose decision failed as the name and
    text of its exception."""
    decided, summary = marking.release(site, news, review=review)
    out = [
        (ident, (type(d).__name__, str(d)) if isinstance(d, Exception) else d)
        for ident, d in decided
    ]
    return ("released", out, summary)


def serve(requests: BinaryIO, replies: BinaryIO) -> None:
    """The worker's loop: answer requests until the input ends. A request is a page to
    parse, ``(ident, "parse", html, url, options)``; a page to mark, ``(ident, "mark", html,
    url, site, hold, news, config)``, or a site's held pages to decide, ``(ident, "release",
    site, review, news, config)``, the ``config`` given with the first of these only (the
    worker keeps its sites' counts and evidence, :mod:`scrapy_templates.worker_marking`); or a
    host's URL-rule work, ``(ident, "urls", job)``, answered by the worker's own keyring (see
    :mod:`scrapy_templates.urlnorm.jobs`)."""
    keyring = None
    marking: WorkerMarking | None = None
    reply: tuple[Any, ...]
    while True:
        try:
            ident, kind, *args = read_message(requests)
        except EOFError:
            return
        try:
            if kind in ("mark", "release"):
                *args, config = args
                if marking is None:
                    from scrapy_templates.worker_marking import WorkerMarking

                    marking = WorkerMarking(config)
                if kind == "mark":
                    reply = (ident, *marked(marking, [ident, *args]))
                else:
                    reply = (ident, *released(marking, *args))
            elif kind == "urls":
                from scrapy_templates.urlnorm.jobs import Keyring

                keyring = keyring or Keyring()
                reply = (ident, "keyed", keyring.run(args[0]))
            else:
                reply = (ident, *answer(*args))
        except Exception as exc:  # the caller does this work itself
            reply = (ident, "error", f"{type(exc).__name__}: {exc}")
        replies.write(frame(reply))
        replies.flush()


def _exit_with_parent(parent: int, every: float = 0.5) -> None:
    """End this process when its parent is gone (it was re-parented): a crawl that is killed
    never closes the worker's input, and a worker in the middle of a long page would not read
    it anyway. lxml parses without the GIL, so this thread runs during a parse."""
    while True:
        time.sleep(every)
        if os.getppid() != parent:
            os._exit(1)


# a pipe's capacity asked for: a few dozen pages each way (Linux allows unprivileged
# processes up to ``/proc/sys/fs/pipe-max-size``, 1 MB by default)
PIPE_BYTES = 1 << 20


def widen_pipes(fds: tuple[int, ...] = (0, 1), size: int = PIPE_BYTES) -> None:
    """Raise the capacity of the pipes on ``fds`` (Linux; elsewhere, or past the system's
    limit, they keep theirs). The crawl's event loop moves data through a worker's pipes once
    per turn, and a turn of a busy crawl lasts tens of milliseconds: with the default 64 KB —
    three documentation pages — the worker idled between turns while hundreds of items waited
    for it in the pipeline, holding their parsed pages (the garbage collector's work) and
    finishing long after the last download. The kernel counts the capacity against the user's
    pipe quota (64 MB by default): some thirty workers would exhaust it, and its next pipes
    would start small."""
    set_size = getattr(fcntl, "F_SETPIPE_SZ", None) if fcntl is not None else None
    if set_size is None:
        return
    for fd in fds:
        with contextlib.suppress(OSError):
            fcntl.fcntl(fd, set_size, size)


def main(work: str = "parse") -> None:
    """Import ``work``'s code (``parse``, ``mark`` or ``urls``), say so, and serve on
    stdin / stdout; anything else that writes to stdout goes to stderr instead, so it cannot
    corrupt the replies. Ctrl-C reaches the whole process group: the worker leaves it to the
    crawl, which shuts down gracefully with the pages in flight and then closes the worker's
    input. A killed crawl takes its workers with it (:func:`_exit_with_parent`)."""
    parent = int(os.environ.get(PARENT_ENV) or os.getppid())
    threading.Thread(target=_exit_with_parent, args=(parent,), daemon=True).start()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    widen_pipes()
    importlib.import_module(_WORK[work])
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    replies.write(frame((0, "ready")))  # the work is imported: requests may come
    replies.flush()
    serve(sys.stdin.buffer, replies)


if __name__ == "__main__":
    main(*sys.argv[1:2])
