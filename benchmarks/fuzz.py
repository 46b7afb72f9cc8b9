"""A long fuzz run of the template pipeline: hostile pages in, every item out.

Cases: hand-made pathological pages (deep nesting, floods of attributes and tags, control
characters, NUL bytes, other encodings, huge text), random markup, and real pages (the Debian
documentation sites of :mod:`benchmarks.realsites`) mutated by byte flips, cuts, splices and
repetition. Each mode runs in a process of its own: the compiled walk or pure Python
(``SCRAPY_TEMPLATES_PURE_PYTHON=1``), with no parse worker or with one.

Counted per mode: cases, crashes (an exception out of ``process_item`` or an item marked
``internal-error``), items lost (not returned, or returned without marks and without a reason),
the reasons given, the slowest page and the peak memory (the crawl process and, apart, its
workers). Writes the table of ``docs/reliability.md`` between its markers.

    python -m benchmarks.fuzz --cases 1500
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import resource
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parent.parent / "docs" / "reliability.md"
BEGIN, END = "<!-- fuzz:begin -->", "<!-- fuzz:end -->"
MODES = {
    "compiled, no worker": ({}, 0),
    "compiled, one worker": ({}, 1),
    "pure Python, no worker": ({"SCRAPY_TEMPLATES_PURE_PYTHON": "1"}, 0),
    "pure Python, one worker": ({"SCRAPY_TEMPLATES_PURE_PYTHON": "1"}, 1),
}


def handmade() -> list[bytes]:
    """Pages built to hurt a parser or a walk."""
    pages = [
        "<div>" * 255 + "deep" + "</div>" * 255,
        "<p>before</p>" + "<div>" * 2100 + "deeper" + "</div>" * 2100,
        "<span>" * 20000,
        "<div " + " ".join(f"a{i}='1'" for i in range(30000)) + ">x</div>",
        "".join("<p " + " ".join(f"a{i}" for i in range(900)) + ">y</p>" for _ in range(60)),
        "<b>x</b>" * 120_000,
        "<p>" + "word " * 1_000_000 + "</p>",
        "<p>a\x01b&#1;c&#x0;d&#xFFFE;e\x0c\x0b</p>",
        "<!--" + "x" * 100_000,
        "<" * 200_000,
        "<a href='" + "/x" * 50_000 + "'>long href</a>",
        "<table>" + "<tr><td>" * 5000 + "cell",
        "<svg><path d='" + " ".join(f"L {i} {i}" for i in range(50_000)) + "'/></svg>",
        "<script>" + "<div>" * 10_000 + "</script><p>after a script</p>",
    ]
    out = [f"<html><body>{page}</body></html>".encode() for page in pages]
    out += [
        "<html><body><p>ünïcödé in UTF-16</p></body></html>".encode("utf-16"),
        b"<html><body><p>" + bytes(range(256)) * 40 + b"</p></body></html>",
        b"\x00" * 5000,
        b"%PDF-1.4 not a page",
        b"",
        b'<meta charset="x-unknown"><p>odd charset</p>',
        b"<html><body><p>" + b"\xff\xfe" * 10_000 + b"</p></body></html>",
    ]
    return out


_PIECES = [
    "<div>", "</div>", "<p>", "</p>", "<a href='/x'>", "</a>", "<li>", "<ul>", "<br>",
    "<title>", "<h1>", "<script>", "</script>", "<table><td>", "<!--", "-->", "&amp;", "&#1;",
    "&#x1f;", "&bogus;", "\x00", "\x0c", "ü", "日", " ", "\n", "text", "<nav>", "</nav>",
]  # fmt: skip


def random_markup(rng: random.Random) -> bytes:
    return "".join(rng.choice(_PIECES) for _ in range(rng.randint(1, 400))).encode()


def mutate(rng: random.Random, page: bytes, donor: bytes) -> bytes:
    """``page`` with a few random edits: byte flips, a cut, a splice of ``donor``, a
    repeated slice."""
    data = bytearray(page)
    for _ in range(rng.randint(1, 4)):
        kind = rng.choice(["flip", "cut", "splice", "repeat"])
        if not data:
            break
        at = rng.randrange(len(data))
        if kind == "flip":
            for i in range(at, min(len(data), at + rng.randint(1, 64))):
                data[i] = rng.randrange(256)
        elif kind == "cut":
            del data[at : at + rng.randint(1, len(data))]
        elif kind == "splice":
            start = rng.randrange(max(1, len(donor)))
            data[at:at] = donor[start : start + rng.randint(1, 4096)]
        else:
            chunk = bytes(data[at : at + rng.randint(1, 200)])
            data[at:at] = chunk * rng.randint(2, 200)
    return bytes(data)


def cases(n: int, seed: int) -> list[tuple[str, bytes]]:
    from benchmarks.speed import load_pages

    rng = random.Random(seed)
    real = [html for _, html in load_pages(400, seed=seed)]
    out = [(f"http://fuzz.test/hand/{i}", page) for i, page in enumerate(handmade())]
    while len(out) < n:
        i = len(out)
        roll = rng.random()
        if roll < 0.3:
            out.append((f"http://fuzz.test/random/{i}", random_markup(rng)))
        else:
            page, donor = rng.choice(real), rng.choice(real)
            out.append((f"http://fuzz.test/mutated/{i}", mutate(rng, page, donor)))
    return out


def run_mode(n: int, seed: int, workers: int) -> dict[str, Any]:
    """Every case through one pipeline in this process; the figures of the mode."""
    from benchmarks.harness import template_pipeline
    from scrapy_templates.settings import DEFAULTS

    items = cases(n, seed)
    pipeline = template_pipeline(
        {**DEFAULTS, "TEMPLATES_BOOTSTRAP_PAGES": 0, "TEMPLATES_PARSE_WORKERS": workers}
    )
    reasons: Counter[str] = Counter()
    crashes = lost = 0
    slowest = (0.0, "")

    async def go() -> None:
        nonlocal crashes, lost, slowest
        await pipeline.open_spider()
        if pipeline.workers is not None:
            await pipeline.workers.until_ready()
        for url, html in items:
            item = {"url": url, "html": html}
            t0 = time.perf_counter()
            try:
                out = await pipeline.process_item(item)
            except Exception:
                crashes += 1
                continue
            took = time.perf_counter() - t0
            slowest = max(slowest, (took, url))
            info = out.get("templates") if out is item else None
            if not isinstance(info, dict) or ("reason" not in info and "pagelets" not in out):
                lost += 1
                continue
            reason = info.get("reason")
            if reason == "internal-error":
                crashes += 1
            reasons[reason or "marked"] += 1
        await pipeline.close_spider()
        await pipeline.runtime.spider_closed()

    asyncio.run(go())
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024
    return {
        "cases": len(items),
        "crashes": crashes,
        "lost": lost,
        "reasons": dict(reasons),
        "slowest_s": round(slowest[0], 3),
        "slowest_url": slowest[1],
        "peak_mb": own,
        "worker_peak_mb": children if workers else None,
    }


def _table(results: dict[str, dict[str, Any]], n: int, seed: int) -> str:
    lines = [
        f"`python -m benchmarks.fuzz --cases {n} --seed {seed}`, one process per mode:",
        "",
        "| mode | cases | crashes | items lost | slowest page | peak memory (crawl / worker) |",
        "|---|--:|--:|--:|--:|--:|",
    ]
    for mode, r in results.items():
        worker = f" / {r['worker_peak_mb']} MB" if r["worker_peak_mb"] is not None else ""
        lines.append(
            f"| {mode} | {r['cases']} | {r['crashes']} | {r['lost']} | {r['slowest_s']:.2f} s "
            f"({r['slowest_url'].rsplit('/', 2)[-2]}) | {r['peak_mb']} MB{worker} |"
        )
    reasons: Counter[str] = Counter()
    for r in results.values():
        reasons.update(r["reasons"])
    lines += [
        "",
        "Outcomes over all modes: "
        + ", ".join(f"{reason} {count}" for reason, count in reasons.most_common())
        + ".",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cases", type=int, default=1500, help="cases per mode")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--mode-workers", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--no-docs", action="store_true")
    args = parser.parse_args()
    if args.mode_workers is not None:  # one mode, in this process
        print(json.dumps(run_mode(args.cases, args.seed, args.mode_workers)))
        return
    from benchmarks.realsites import SITES, ensure_installed

    ensure_installed(list(SITES.values()))
    results = {}
    for mode, (env, workers) in MODES.items():
        command = [sys.executable, "-m", "benchmarks.fuzz", "--cases", str(args.cases)]
        command += ["--seed", str(args.seed), "--mode-workers", str(workers)]
        done = subprocess.run(
            command, env={**os.environ, **env}, capture_output=True, text=True, check=True
        )
        results[mode] = json.loads(done.stdout.strip().splitlines()[-1])
        print(mode, results[mode], flush=True)
    table = _table(results, args.cases, args.seed)
    print(table)
    if not args.no_docs:
        text = DOCS.read_text(encoding="utf-8")
        pattern = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
        DOCS.write_text(pattern.sub(f"{BEGIN}\n{table}\n{END}", text), encoding="utf-8")


if __name__ == "__main__":
    main()
