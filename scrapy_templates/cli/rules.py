"""``scrapy-templates rules learn | show | apply``: URL-normalization rules offline (003_…)."""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any, TextIO

from scrapy_templates.cli.output import CliError, table, write_json
from scrapy_templates.sites import host_site
from scrapy_templates.urlnorm.clusters import Sample, duplicate_clusters
from scrapy_templates.urlnorm.learn import LearnConfig, learn_rules
from scrapy_templates.urlnorm.rules import RuleSet, RuleSetError

_DEFAULTS = LearnConfig()


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


def read_rules(path: Path) -> list[RuleSet]:
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
                report.ruleset.rule_count,
                f"{report.seconds:.2f}",
            ]
        )
        summary.append(
            {
                "host": host,
                "samples": len(by_host[host]),
                "urls": len(urls),
                "clusters": n_clusters,
                "rules": report.ruleset.rule_count,
                "seconds": round(report.seconds, 3),
            }
        )
    payload = [r.to_json() for r in rulesets]
    if args.output:
        args.output.write_text(
            json.dumps(payload, indent=1, sort_keys=True) + "\n", encoding="utf-8"
        )
    if args.json:
        write_json(
            {"hosts": summary, "skipped_lines": len(problems), "output": str(args.output or "")},
            out,
        )
    else:
        table(rows, out)
        if args.output:
            print(f"\nrules written to {args.output}", file=out)
        if problems:
            print(f"{len(problems)} lines skipped (see stderr)", file=out)
    return 0


def cmd_rules_show(args: argparse.Namespace, out: TextIO) -> int:
    rulesets = read_rules(args.rules)
    rows = [row for rs in rulesets for row in rs.describe_rules()]
    if args.json:
        write_json(rows, out)
        return 0
    for rs in rulesets:
        print(
            f"{rs.site}: version {rs.version}, {rs.rule_count} rules, "
            f"learned from {rs.learned_from} URLs"
            + (
                "; its rel=canonical links proved wrong, and teach nothing"
                if rs.claims_refuted
                else ""
            ),
            file=out,
        )
        for row in rs.describe_rules():
            print(f"  {row['source']}\n    -> {row['target']}", file=out)
            print(f"    {'; '.join(row['changes'])}", file=out)
            print(
                f"    support {row['support']} duplicate pairs joined, "
                f"fpr {row['fpr']:.4f} (share of rewrites that join distinct pages)",
                file=out,
            )
            if row["example"]:
                print(f"    e.g. {row['example'][0]}\n      => {row['example'][1]}", file=out)
    return 0


def cmd_rules_apply(args: argparse.Namespace, out: TextIO) -> int:
    by_host = {rs.site: rs for rs in read_rules(args.rules)}
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
        write_json(results, out)
    else:
        for r in results:
            print(f"{r['url']}\n  => {r['canonical']}  ({r['reason']})", file=out)
    return 0


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    rules = commands.add_parser(
        "rules",
        help="URL-normalization rules: learn them from a crawl's output, show, apply",
        description="URL-normalization rules: learn them from URL samples, show them, apply them.",
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
        "--distance",
        type=int,
        choices=range(4),
        default=None,
        help="also join pages whose simhashes differ in at most this many bits (0-3; "
        "default: page simhashes are no duplicate evidence, as in a crawl)",
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
