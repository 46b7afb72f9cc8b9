"""The ``scrapy-templates`` command (also ``python -m scrapy_templates``).

    scrapy-templates rules learn SAMPLES.jsonl [-o RULES.json]
    scrapy-templates rules show RULES.json
    scrapy-templates rules apply RULES.json URL [URL ...]
    scrapy-templates state (--redis URL [--prefix P] | --file JOBDIR/scrapy-templates.json)

Every command prints a readable table; ``--json`` prints machine-readable JSON instead.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from scrapy_templates.sites import host_site
from scrapy_templates.store.base import StoreError, TemplateStore
from scrapy_templates.store.memory import MemoryStore
from scrapy_templates.templates.model import ModelError, TemplateModel
from scrapy_templates.urlnorm.clusters import Sample, duplicate_clusters
from scrapy_templates.urlnorm.learn import LearnConfig, learn_rules
from scrapy_templates.urlnorm.rules import RuleSet, RuleSetError

_DEFAULTS = LearnConfig()


class CliError(Exception):
    """A user error: printed as one line, exit status 2."""


def _read_samples(path: Path, info_field: str) -> tuple[list[Sample], list[str]]:
    samples: list[Sample] = []
    problems: list[str] = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror}") from exc
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            samples.append(Sample.from_record(json.loads(line), info_field))
        except ValueError as exc:
            problems.append(f"{path}:{number}: {exc}")
    return samples, problems


def _read_rules(path: Path) -> list[RuleSet]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror}") from exc
    except ValueError as exc:
        raise CliError(f"{path} is not JSON: {exc}") from exc
    try:
        return [RuleSet.from_json(d) for d in (data if isinstance(data, list) else [data])]
    except RuleSetError as exc:
        raise CliError(f"{path}: {exc}") from exc


def _table(rows: Sequence[Sequence[Any]], out: TextIO) -> None:
    text = [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in text) for i in range(len(text[0]))]
    for row in text:
        cells = [
            c.ljust(w) if i < len(row) - 1 else c
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        print("  ".join(cells).rstrip(), file=out)


def cmd_rules_learn(args: argparse.Namespace, out: TextIO) -> int:
    samples, problems = _read_samples(args.samples, args.info_field)
    for problem in problems[:10]:
        print(f"skipped {problem}", file=sys.stderr)
    if not samples:
        raise CliError(f"no usable samples in {args.samples}")
    by_host: dict[str, list[Sample]] = defaultdict(list)
    for sample in samples:
        by_host[host_site(sample.url)].append(sample)
    config = LearnConfig(fpr_max=args.fpr_max, o_min=args.o_min, sigma_min=args.sigma_min)
    rulesets = []
    rows: list[list[Any]] = [["host", "samples", "urls", "clusters", "rules", "seconds"]]
    summary = []
    for host in sorted(by_host):
        urls, clusters = duplicate_clusters(by_host[host], distance=args.distance)
        report = learn_rules(urls, clusters, site=host, config=config)
        rulesets.append(report.ruleset)
        n_clusters = len(set(clusters))
        rows.append(
            [
                host,
                len(by_host[host]),
                len(urls),
                n_clusters,
                len(report.ruleset.rules),
                f"{report.seconds:.2f}",
            ]
        )
        summary.append(
            {
                "host": host,
                "samples": len(by_host[host]),
                "urls": len(urls),
                "clusters": n_clusters,
                "rules": len(report.ruleset.rules),
                "seconds": round(report.seconds, 3),
            }
        )
    payload = [r.to_json() for r in rulesets]
    if args.output:
        args.output.write_text(
            json.dumps(payload, indent=1, sort_keys=True) + "\n", encoding="utf-8"
        )
    if args.json:
        json.dump(
            {"hosts": summary, "skipped_lines": len(problems), "output": str(args.output or "")},
            out,
        )
        print(file=out)
    else:
        _table(rows, out)
        if args.output:
            print(f"\nrules written to {args.output}", file=out)
        if problems:
            print(f"{len(problems)} lines skipped (see stderr)", file=out)
    return 0


def _rule_rows(ruleset: RuleSet) -> list[dict[str, Any]]:
    rows = []
    for rule in ruleset.rules.values():
        rows.append(
            {
                "host": ruleset.site,
                "source": ruleset.nodes[rule.source].glob,
                "target": ruleset.nodes[rule.target].glob,
                "operations": [op.describe() for op in rule.steps[0]],
                "chain": len(rule.steps),
                "support": rule.support,
                "fpr": rule.fpr,
                "example": list(rule.examples[0]) if rule.examples else None,
            }
        )
    return rows


def cmd_rules_show(args: argparse.Namespace, out: TextIO) -> int:
    rulesets = _read_rules(args.rules)
    rows = [row for rs in rulesets for row in _rule_rows(rs)]
    if args.json:
        json.dump(rows, out, indent=1)
        print(file=out)
        return 0
    for rs in rulesets:
        print(
            f"{rs.site}: version {rs.version}, {len(rs.rules)} rules, "
            f"learned from {rs.learned_from} URLs",
            file=out,
        )
        for row in _rule_rows(rs):
            print(f"  {row['source']}\n    -> {row['target']}", file=out)
            print(f"    {'; '.join(row['operations'])}", file=out)
            print(f"    support {row['support']} pairs, fpr {row['fpr']:.4f}", file=out)
            if row["example"]:
                print(f"    e.g. {row['example'][0]}\n      => {row['example'][1]}", file=out)
    return 0


def cmd_rules_apply(args: argparse.Namespace, out: TextIO) -> int:
    by_host = {rs.site: rs for rs in _read_rules(args.rules)}
    results = []
    for url in args.urls:
        ruleset = by_host.get(host_site(url))
        if ruleset is None:
            results.append({"url": url, "canonical": url, "reason": "no rules for this host"})
            continue
        explained = ruleset.explain(url)
        results.append(
            {
                "url": url,
                "canonical": explained.result,
                "reason": explained.reason,
                "rule": None
                if explained.rule is None
                else ruleset.nodes[explained.rule.source].glob,
            }
        )
    if args.json:
        json.dump(results, out, indent=1)
        print(file=out)
    else:
        for r in results:
            print(f"{r['url']}\n  => {r['canonical']}  ({r['reason']})", file=out)
    return 0


async def _state_rows(store: TemplateStore) -> list[dict[str, Any]]:
    await store.open()
    try:
        rows = []
        for site in await store.sites():
            pages, counts = await store.counts(site)
            row: dict[str, Any] = {
                "site": site,
                "pages": pages,
                "counters": len(counts),
                "url_samples": len(await store.url_samples(site)),
            }
            found = await store.published(site, "rules")
            if found is not None:
                try:
                    ruleset = RuleSet.loads(found[1])
                    row["rules"] = {"version": found[0], "rules": len(ruleset.rules)}
                except (RuleSetError, ValueError) as exc:
                    row["rules"] = {"version": found[0], "error": str(exc)}
            found = await store.published(site, "model")
            if found is not None:
                try:
                    model = TemplateModel.loads(found[1])
                    row["model"] = {
                        "version": found[0],
                        "main_path": model.main_path,
                        "templates": len(model.templates),
                    }
                except ModelError as exc:
                    row["model"] = {"version": found[0], "error": str(exc)}
            rows.append(row)
        return rows
    finally:
        await store.close()


def cmd_state(args: argparse.Namespace, out: TextIO) -> int:
    store: TemplateStore
    if args.redis:
        from scrapy_templates.store.redis import RedisStore

        store = RedisStore(args.redis, prefix=args.prefix)
    else:
        if not args.file.exists():
            raise CliError(f"no store file at {args.file}")
        store = MemoryStore(path=args.file)
    try:
        rows = asyncio.run(_state_rows(store))
    except StoreError as exc:
        raise CliError(str(exc)) from exc
    if args.json:
        json.dump(rows, out, indent=1)
        print(file=out)
        return 0
    if not rows:
        print("the store holds no site", file=out)
        return 0
    table: list[list[Any]] = [
        ["site", "pages", "counters", "samples", "rules", "model", "main region"]
    ]
    for row in rows:
        rules, model = row.get("rules", {}), row.get("model", {})
        table.append(
            [
                row["site"],
                row["pages"],
                row["counters"],
                row["url_samples"],
                f"v{rules['version']}: {rules.get('rules', rules.get('error'))}" if rules else "-",
                f"v{model['version']}: {model.get('templates', 'refused')} templates"
                if model
                else "-",
                (model.get("main_path") or "whole page") if model else "-",
            ]
        )
    _table(table, out)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="scrapy-templates",
        description="Inspect and use what scrapy-templates learns from a crawl.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    rules = commands.add_parser(
        "rules",
        help="URL-normalization rules: learn them from a crawl's output, show, apply",
        description="URL-normalization rules (the pattern-tree method of 003_…).",
    )
    verbs = rules.add_subparsers(dest="verb", required=True)

    learn = verbs.add_parser(
        "learn",
        help="learn rules per host from samples or exported items",
        description=(
            "Learn rules from a JSON-lines file. Each line is either a sample "
            '({"url": ..., "simhash": "hex", "text_hash": ..., "canonical": ..., '
            '"redirects": [...], "cluster": ...}; any of the fields after url) or an item '
            "exported by a crawl with scrapy-templates (url plus its templates field). URLs "
            "whose pages share a text hash, a cluster id or a near simhash, or that point to "
            "each other by rel=canonical or a redirect, are duplicates."
        ),
    )
    learn.add_argument("samples", type=Path, help="JSON-lines file of samples or items")
    learn.add_argument("-o", "--output", type=Path, help="write the rule sets (JSON) here")
    learn.add_argument(
        "--distance", type=int, default=3, help="simhash bits for near-duplicates (0-3)"
    )
    learn.add_argument("--fpr-max", type=float, default=_DEFAULTS.fpr_max)
    learn.add_argument("--o-min", type=float, default=_DEFAULTS.o_min)
    learn.add_argument("--sigma-min", type=float, default=_DEFAULTS.sigma_min)
    learn.add_argument("--info-field", default="templates", help="the items' TEMPLATES_INFO_FIELD")
    learn.add_argument("--json", action="store_true", help="machine-readable output")
    learn.set_defaults(func=cmd_rules_learn)

    show = verbs.add_parser("show", help="list the rules of a rules file")
    show.add_argument("rules", type=Path)
    show.add_argument("--json", action="store_true", help="machine-readable output")
    show.set_defaults(func=cmd_rules_show)

    apply = verbs.add_parser(
        "apply", help="canonical form of URLs under a rules file, with the rule that applied"
    )
    apply.add_argument("rules", type=Path)
    apply.add_argument("urls", nargs="+", metavar="URL")
    apply.add_argument("--json", action="store_true", help="machine-readable output")
    apply.set_defaults(func=cmd_rules_apply)

    state = commands.add_parser(
        "state",
        help="what the store holds: sites, pages, counters, published rules and models",
        description=(
            "Read the shared store a crawl left behind: a Redis server (--redis) or the memory "
            "store's file in JOBDIR (--file). Nothing is written."
        ),
    )
    where = state.add_mutually_exclusive_group(required=True)
    where.add_argument("--redis", metavar="URL", help="Redis URL, e.g. redis://localhost:6379/0")
    where.add_argument("--file", type=Path, help="JOBDIR/scrapy-templates.json")
    state.add_argument("--prefix", default="templates", help="the crawl's TEMPLATES_REDIS_PREFIX")
    state.add_argument("--json", action="store_true", help="machine-readable output")
    state.set_defaults(func=cmd_state)
    return parser


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args, out or sys.stdout))
    except CliError as exc:
        print(f"scrapy-templates: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
