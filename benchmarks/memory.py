"""Redis memory the shared store uses per 1,000 pages crawled.

    python -m benchmarks.memory [--sizes 1000 3000 10000] [--set NAME=VALUE ...] [--no-docs]

Starts a private ``redis-server`` (no persistence) and crawls, with the Redis store:
(1) the real sites of the quality benchmark (Debian's sqlite3-doc, python-django-doc,
git-doc served from 127.0.0.1), once with pruning off and once with the default (counters at
1 pruned as the crawl goes and at spider close); (2) a synthetic site of generated pages at
each of ``--sizes`` pages, to show how the footprint grows. The footprint is the sum of
Redis's ``MEMORY USAGE`` over every key under the crawl's prefix, read after the crawl.
Writes ``docs/memory.md``.
"""

from __future__ import annotations

import argparse
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import redis

from benchmarks.realsites import SITES, LocalServer, ensure_installed, serve

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "output"

_SYLLABLES = ["ka", "lo", "ri", "ven", "sta", "mor", "di", "pel", "tu", "gra", "ne", "sho"]
_WORDS = ["".join(random.Random(i).choices(_SYLLABLES, k=2 + i % 2)) for i in range(40)]


@contextmanager
def redis_server() -> Iterator[str]:
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("redis-server is missing (Debian: apt-get install redis-server)")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    workdir = tempfile.mkdtemp()
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--save", "", "--appendonly", "no", "--dir", workdir],
        stdout=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    client = redis.Redis.from_url(url)
    for _ in range(100):
        try:
            client.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.05)
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


def _page(n: int, total: int) -> bytes:
    """Page ``n`` of the synthetic site: shared header, navigation and footer, a dated
    sidebar, a text of its own and links to ten other pages."""
    rng = random.Random(n)
    nav = "".join(f'<li><a href="/section/{i}">Section {i}</a></li>' for i in range(6))
    links = "".join(f'<li><a href="/p/{rng.randrange(total)}">Story</a></li>' for _ in range(10))
    text = "".join(
        "<p>" + " ".join(rng.choice(_WORDS) for _ in range(40)) + "</p>" for _ in range(4)
    )
    return (
        f"<html><head><title>Story {n}</title></head><body>"
        f"<header><h1>The Daily Example</h1><ul>{nav}</ul></header>"
        f"<main><h2>Story {n}</h2>{text}</main>"
        f"<aside><p>Updated {n % 28 + 1} March</p><ul>{links}</ul></aside>"
        "<footer><a href='/about'>About</a> <a href='/contact'>Contact</a> "
        "<a href='/privacy'>Privacy</a> © Example</footer></body></html>"
    ).encode()


@contextmanager
def synthetic_site(total: int) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            parts = self.path.strip("/").split("/")
            n = int(parts[1]) if parts[0] == "p" and len(parts) == 2 and parts[1].isdigit() else 0
            body = _page(n % total, total)
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return None

    server = LocalServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/p/0"
    finally:
        server.shutdown()
        server.server_close()


def footprint(url: str, prefix: str) -> tuple[int, int]:
    """Bytes under ``prefix`` and pages counted there."""
    client = redis.Redis.from_url(url)
    total = 0
    pages = 0
    for key in client.scan_iter(match=f"{prefix}:*", count=1000):
        total += int(client.memory_usage(key, samples=0) or 0)
        if key.endswith(b":n") and not key.endswith((b":urls:n", b":seen:n")):
            pages += int(client.get(key) or 0)
    return total, pages


def crawl(start: str, url: str, prefix: str, *settings: str) -> dict[str, Any]:
    out = OUT / f"memory-{prefix}"
    cmd = [sys.executable, "-m", "benchmarks.crawl", start, str(out)]
    for pair in (
        "TEMPLATES_STORE=redis",
        f"TEMPLATES_REDIS_URL={url}",
        f"TEMPLATES_REDIS_PREFIX={prefix}",
        *settings,
    ):
        cmd += ["--set", pair]
    subprocess.run(cmd, check=True, cwd=ROOT)
    size, pages = footprint(url, prefix)
    return {"prefix": prefix, "bytes": size, "pages": pages, "per_1000": size / pages * 1000}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="*", default=[1000, 3000, 10000])
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--no-docs", action="store_true", help="print, do not write docs/")
    args = parser.parse_args()
    ensure_installed(list(SITES.values()))
    real: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
    growth: list[dict[str, Any]] = []
    with redis_server() as url:
        for name, site in SITES.items():
            with serve(site) as start:
                unpruned = crawl(
                    start, url, f"{name}-unpruned", "TEMPLATES_PRUNE_PAGES=0", *args.set
                )
                pruned = crawl(start, url, f"{name}-pruned", *args.set)
            real.append((name, unpruned, pruned))
            print(name, unpruned, pruned, flush=True)
        for size in args.sizes:
            with synthetic_site(size * 2) as start:
                row = crawl(
                    start, url, f"synthetic-{size}", f"CLOSESPIDER_ITEMCOUNT={size}", *args.set
                )
            growth.append(row)
            print(row, flush=True)
    lines = [
        "# Redis memory",
        "",
        "Generated by `python -m benchmarks.memory` (Redis `MEMORY USAGE` summed over every key",
        "of a crawl's prefix, read after the crawl; default settings, local algorithm, URL rules",
        "on). Target: at most 200 KB per 1,000 pages after pruning.",
        "",
        "What takes the space after pruning: the URL samples (one compact JSON array per page,",
        "at most `TEMPLATES_URL_SAMPLE_SIZE` = 5,000 per site, so their share per page falls",
        "as a site grows), the ids of the pages and contents seen (about 20 bytes each, in",
        "small hashes that stay in Redis's compact encoding), the counters that repeat on at",
        "least 5% of the pages, and the published rules and model. Without pruning the",
        "counters of every pagelet seen once dominate.",
        "",
        "## Real sites",
        "",
        "| site | pages | KB, pruning off | KB / 1,000 pages | KB, pruned | KB / 1,000 pages |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, off, on in real:
        lines.append(
            f"| {name} | {on['pages']} | {off['bytes'] / 1024:.0f} | {off['per_1000'] / 1024:.0f} "
            f"| {on['bytes'] / 1024:.0f} | {on['per_1000'] / 1024:.0f} |"
        )
    lines += [
        "",
        "## Growth (synthetic site, pruned)",
        "",
        "| pages | KB | KB / 1,000 pages |",
        "|---:|---:|---:|",
    ]
    for row in growth:
        lines.append(
            f"| {row['pages']} | {row['bytes'] / 1024:.0f} | {row['per_1000'] / 1024:.0f} |"
        )
    text = "\n".join(lines) + "\n"
    if not args.no_docs:
        (ROOT / "docs" / "memory.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
