"""Run the demo crawl: serve the bundled site on 127.0.0.1, crawl it with scrapy-templates
enabled (embedded memory store, kept in a fresh JOBDIR), print a short summary of what was
marked and write the HTML report.

    python example_project/run_demo.py [--output DIR]   (default: example_project/output)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
os.environ.setdefault("TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS", "")
os.environ["SCRAPY_SETTINGS_MODULE"] = "demo.settings"


def main(argv: list[str] | None = None) -> int:
    from demo.site import DemoSite
    from scrapy.crawler import CrawlerProcess
    from scrapy.utils.project import get_project_settings

    from scrapy_templates.cli import main as cli

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, default=HERE / "output", metavar="DIR")
    output = parser.parse_args(argv).output.resolve()
    os.chdir(HERE)
    out = output / "items.jsonl"
    jobdir = output / "job"
    shutil.rmtree(jobdir, ignore_errors=True)
    settings = get_project_settings()
    settings.set("JOBDIR", str(jobdir), priority="cmdline")
    settings.set("FEEDS", {str(out): settings.getdict("FEEDS")["output/items.jsonl"]}, "cmdline")
    with DemoSite() as site:
        process = CrawlerProcess(settings)
        crawler = process.create_crawler("site")
        process.crawl(crawler, base_url=site.url)
        process.start()
    stats = crawler.stats.get_stats() if crawler.stats else {}
    items = [json.loads(line) for line in out.read_text(encoding="utf8").splitlines()]
    print_summary(items, stats, out)
    store = jobdir / "scrapy-templates.json"
    report = output / "report.html"
    print()
    code = cli(["report", str(out), "--store", str(store), "-o", str(report)])
    print(f"  inspect: scrapy-templates summary {out}")
    article = next((i["url"] for i in items if "/articles/" in i["url"]), items[0]["url"])
    print(f"           scrapy-templates show {out} '{article}'")
    print(f"           scrapy-templates state --store {store}")
    return code


def print_summary(items: list[dict], stats: dict, out: Path) -> None:
    marked = [i for i in items if "content_text" in i]
    top: Counter[tuple[str, str]] = Counter()
    for item in marked:
        for p in item["pagelets"]:
            if p["template"]:
                top[(p["path"].rsplit("/", 2)[-1], p["text"][:50])] += 1
    share = sum(i["templates"]["template_share"] for i in marked) / max(len(marked), 1)
    print()
    print("scrapy-templates demo crawl")
    print(f"  pages downloaded      {stats.get('downloader/response_count', 0)}")
    print(f"  items exported        {len(items)}  ->  {out}")
    print(f"  items marked          {len(marked)}")
    print(f"  first items waiting   {stats.get('templates/bootstrap_waits', 0)} (cold start)")
    print(f"  template share (mean) {share:.1%} of page text")
    print(
        f"  URL rules             {stats.get('templates/urls/rules', 0)} in force after "
        f"{stats.get('templates/urls/learn_count', 0)} learning runs; "
        f"{stats.get('templates/urls/rewritten', 0)} requests rewritten before enqueue, "
        f"{stats.get('templates/urls/dropped', 0)} dropped as duplicates"
    )
    print("  most frequent template pagelets:")
    for (path, text), n in top.most_common(8):
        print(f"    {n:5d}  {path:<28.28}  {text}")


if __name__ == "__main__":
    sys.exit(main())
