"""``scrapy-templates state``: what a store holds — sites, counters, published rules and models
— read from a Redis server or the memory store's file, without writing to it."""

from __future__ import annotations

import argparse
import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from scrapy_templates.cli.output import CliError, table, write_json
from scrapy_templates.store.base import StoreError, TemplateStore
from scrapy_templates.store.memory import MemoryStore
from scrapy_templates.templates.model import ModelError, TemplateModel
from scrapy_templates.urlnorm.rules import RuleSet, RuleSetError


@dataclass
class SiteState:
    site: str
    pages: int
    counters: int
    url_samples: int
    rules_version: int | None = None
    rules: RuleSet | None = None
    model_version: int | None = None
    model: TemplateModel | None = None
    problems: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        row: dict[str, Any] = {
            "site": self.site,
            "pages": self.pages,
            "counters": self.counters,
            "url_samples": self.url_samples,
        }
        if self.rules_version is not None:
            row["rules"] = {"version": self.rules_version}
            if self.rules is not None:
                row["rules"]["rules"] = self.rules.rule_count
        if self.model_version is not None:
            row["model"] = {"version": self.model_version}
            if self.model is not None:
                row["model"].update(
                    main_path=self.model.main_path,
                    templates=len(self.model.templates),
                    layout_clusters=self.model.layout_clusters,
                )
        if self.problems:
            row["problems"] = list(self.problems)
        return row


@dataclass
class StoreState:
    where: str
    sites: list[SiteState]
    keys: int | None
    bytes: int

    def rulesets(self) -> dict[str, RuleSet]:
        return {s.site: s.rules for s in self.sites if s.rules is not None}

    def models(self) -> dict[str, TemplateModel]:
        return {s.site: s.model for s in self.sites if s.model is not None}


async def _read_site(store: TemplateStore, site: str) -> SiteState:
    pages, counts = await store.counts(site)
    state = SiteState(site, pages, len(counts), len(await store.url_samples(site)))
    problems = []
    found = await store.published(site, "rules")
    if found is not None:
        state.rules_version = found[0]
        try:
            state.rules = RuleSet.loads(found[1])
        except (RuleSetError, ValueError) as exc:
            problems.append(f"rules v{found[0]} refused: {exc}")
    found = await store.published(site, "model")
    if found is not None:
        state.model_version = found[0]
        try:
            state.model = TemplateModel.loads(found[1])
        except ModelError as exc:
            problems.append(f"model v{found[0]} refused: {exc}")
    state.problems = tuple(problems)
    return state


async def _read(store: TemplateStore) -> tuple[list[SiteState], tuple[int, int] | None]:
    await store.open()
    try:
        sites = [await _read_site(store, site) for site in await store.sites()]
        usage = getattr(store, "memory_usage", None)
        return sites, (await usage() if usage is not None else None)
    finally:
        await store.close()


def read_state(redis: str | None, prefix: str, file: Path | None) -> StoreState:
    """The whole learned state of a Redis store (``redis``) or a memory-store file."""
    store: TemplateStore
    if redis:
        from scrapy_templates.store.redis import RedisStore

        try:
            store = RedisStore(redis, prefix=prefix)
        except StoreError as exc:
            raise CliError(f"--redis {redis}: {exc}") from exc
        where = f"{redis} (prefix {prefix!r})"
    elif file is None or not file.exists():
        raise CliError(f"no store file at {file}")
    else:
        store = MemoryStore(path=file)
        where = str(file)
    try:
        sites, usage = asyncio.run(_read(store))
    except StoreError as exc:
        raise CliError(str(exc)) from exc
    if usage is not None:
        return StoreState(where, sites, usage[0], usage[1])
    assert file is not None
    return StoreState(where, sites, None, file.stat().st_size)


def cmd_state(args: argparse.Namespace, out: TextIO) -> int:
    state = read_state(args.redis, args.prefix, args.file)
    if args.json:
        write_json(
            {
                "store": state.where,
                "keys": state.keys,
                "bytes": state.bytes,
                "sites": [s.to_json() for s in state.sites],
            },
            out,
        )
        return 0
    size = f"{state.bytes / 1024:,.1f} KB"
    if state.keys is not None:
        print(f"{state.where}: {state.keys} keys, {size} (Redis MEMORY USAGE)", file=out)
    else:
        print(f"{state.where}: {size} on disk", file=out)
    if not state.sites:
        print("the store holds no site", file=out)
        return 0
    rows: list[list[Any]] = [
        ["site", "pages", "counters", "samples", "rules", "model", "main region"]
    ]
    for s in state.sites:
        rules = "-"
        if s.rules_version is not None:
            rules = f"v{s.rules_version}: " + (
                f"{s.rules.rule_count} rules" if s.rules is not None else "refused"
            )
        model = region = "-"
        if s.model_version is not None:
            model = f"v{s.model_version}: " + (
                f"{len(s.model.templates)} templates, {s.model.layout_clusters} layouts"
                if s.model is not None
                else "refused"
            )
            if s.model is not None:
                region = s.model.main_path or "whole page"
        rows.append([s.site, s.pages, s.counters, s.url_samples, rules, model, region])
    table(rows, out)
    for s in state.sites:
        for problem in s.problems:
            print(f"{s.site}: {problem}", file=out)
    return 0


def add_store_arguments(parser: argparse.ArgumentParser, *, required: bool) -> None:
    where = parser.add_mutually_exclusive_group(required=required)
    where.add_argument("--redis", metavar="URL", help="Redis URL, e.g. redis://localhost:6379/0")
    where.add_argument(
        "--store",
        "--file",
        dest="file",
        type=Path,
        metavar="FILE",
        help="the memory store's file, JOBDIR/scrapy-templates.json",
    )
    parser.add_argument(
        "--prefix", default="templates", help="the crawl's TEMPLATES_REDIS_PREFIX (with --redis)"
    )


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    state = commands.add_parser(
        "state",
        help="what the store holds: sites, pages, counters, published rules and models",
        description=(
            "Read the shared store a crawl left behind: a Redis server (--redis) or the memory "
            "store's file in JOBDIR (--store). Nothing is written. Rules or models the crawl "
            "would refuse are listed as refused, with the reason."
        ),
    )
    add_store_arguments(state, required=True)
    state.add_argument("--json", action="store_true", help="machine-readable output")
    state.set_defaults(func=cmd_state)
