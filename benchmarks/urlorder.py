"""How much of plain Scrapy's duplicate downloads URL rules could catch, learned in crawl order.

    python -m benchmarks.urlorder [--sites demo,trac,roundup,gitweb] [--every 25]

Reads the plain-Scrapy crawls that :mod:`benchmarks.urlcrawls` recorded
(``benchmarks/output/urlcrawls-<site>-plain/record.jsonl``; run it first) and replays their
downloads in order. Every ``--every`` successful downloads the learner is given all downloads so
far, each with its page (:func:`benchmarks.recorder.page_identity`, or the demo site's own
page key: exact duplicate evidence, better than a crawl has), and the rules it returns are in
force for the downloads that follow.
A download is *caught* when it is a duplicate and the rules in force take its URL for a URL
downloaded before with the same page; a *wrong merge* when they take it for one with another
page. Two bounds come out, the crawl's order aside:

- *in crawl order*: what rules learned from the pages fetched so far could cut — a crawl that
  fetches a page's variants together has the evidence only after it downloaded them;
- *after the crawl*: rules learned from all downloads, applied to them — what the URL
  patterns allow once everything is known.

Both use the learner's default thresholds. A real crawl differs: it learns from fewer samples
(HTML pages only, by content hash), and what it turns away changes which URLs come next. The
figures say how far learning in crawl order can go on the site, and what stands in its way.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

from benchmarks.urlcrawls import KEYS
from scrapy_templates.urlnorm.learn import learn_rules
from scrapy_templates.urlnorm.rules import RuleSet

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "output"


@dataclass
class Bound:
    """What one replay counted: successful downloads, duplicate downloads among them, the
    duplicates the rules in force caught, wrong merges, and the rules in force at the end."""

    downloads: int = 0
    duplicates: int = 0
    caught: int = 0
    wrong: int = 0
    rules: int = 0


def downloads(site: str) -> list[tuple[str, str]]:
    """(URL, page) of each successful download of the site's plain crawl, in order."""
    path = OUT / f"urlcrawls-{site}-plain" / "record.jsonl"
    if not path.is_file():
        raise SystemExit(f"{path} is missing: run python -m benchmarks.urlcrawls --sites {site}")
    with path.open(encoding="utf-8") as f:
        events = [json.loads(line) for line in f]
    key = KEYS.get(site)
    return [
        (e["url"], key(e["url"]) if key else e["page"])
        for e in events
        if e["kind"] == "response" and e["status"] == 200
    ]


def _learn(fetched: list[tuple[str, str]]) -> RuleSet:
    ids: dict[str, int] = {}
    clusters = [ids.setdefault(page, len(ids)) for _, page in fetched]
    return learn_rules([url for url, _ in fetched], clusters).ruleset


def in_crawl_order(fetched: list[tuple[str, str]], every: int | None) -> Bound:
    """Replay ``fetched`` with rules relearned every ``every`` downloads from those so far
    (``None``: the rules learned from all of them, in force from the start)."""
    bound = Bound(downloads=len(fetched))
    rules = _learn(fetched) if every is None else None
    keyed: dict[str, str] = {}  # URL under the rules in force → the page first seen there
    seen: set[str] = set()
    for i, (url, page) in enumerate(fetched):
        duplicate = page in seen
        bound.duplicates += duplicate
        seen.add(page)
        if rules is not None:
            key = rules.apply(url)
            first = keyed.get(key)
            if first is None:
                keyed[key] = page
            elif first == page:
                bound.caught += duplicate
            else:
                bound.wrong += 1
        if every is not None and (i + 1) % every == 0:
            rules = _learn(fetched[: i + 1])
            keyed = {}
            for done, done_page in fetched[: i + 1]:
                keyed.setdefault(rules.apply(done), done_page)
    bound.rules = len(rules.rules) if rules is not None else 0
    return bound


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sites", default="demo,trac,roundup,gitweb")
    parser.add_argument("--every", type=int, default=25, help="downloads between relearns")
    args = parser.parse_args()
    if args.every < 1:
        parser.error("--every must be at least 1")
    print("| site | bound | downloads | duplicates | caught | share | wrong merges | rules |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for site in args.sites.split(","):
        fetched = downloads(site)
        for label, bound in (
            ("in crawl order", in_crawl_order(fetched, args.every)),
            ("after the crawl", in_crawl_order(fetched, None)),
        ):
            share = bound.caught / bound.duplicates if bound.duplicates else 0.0
            print(
                f"| {site} | {label} | {bound.downloads} | {bound.duplicates} | {bound.caught} "
                f"| {share:.2f} | {bound.wrong} | {bound.rules} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
