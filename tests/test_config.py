"""TemplatesConfig: every TEMPLATES_* setting read, converted and checked in one place."""

from __future__ import annotations

import dataclasses
import pickle
import re
import types
import typing
from collections.abc import Callable
from typing import Any

import pytest
from scrapy.settings import Settings

from scrapy_templates import Addon
from scrapy_templates.config import (
    Invalid,
    SettingError,
    TemplatesConfig,
    attribute_name,
    convert,
    effective_store,
)
from scrapy_templates.settings import (
    DEFAULTS,
    SETTINGS,
    Choice,
    Flag,
    Number,
    Reference,
    Setting,
    Text,
    Whole,
    render_markdown,
)
from scrapy_templates.sites import BUILTIN_SITES, domain_site, host_site
from scrapy_templates.templates.variability import COMPARISONS

BY_NAME = {s.name: s for s in SETTINGS}


def load(**values: Any) -> TemplatesConfig:
    return TemplatesConfig.from_settings(Settings(values))


def error_of(**values: Any) -> SettingError:
    with pytest.raises(SettingError) as caught:
        load(**values)
    return caught.value


def tld_site(url: str) -> str:
    """A site function importable by dotted path."""
    return url.rpartition(".")[2]


NOT_A_FUNCTION = 42


class FakeStore:
    """A store class as TEMPLATES_STORE names one: it only needs from_settings here."""

    @classmethod
    def from_settings(cls, settings: Any) -> FakeStore:
        return cls()


# -- defaults ------------------------------------------------------------------------------


def test_defaults_load_from_empty_settings() -> None:
    config = load()
    for setting in SETTINGS:
        assert getattr(config, attribute_name(setting.name)) == setting.default, setting.name
    assert config.min_pages == 2
    assert config.algorithm == "local"
    assert config.parse_workers is None


def test_defaults_load_from_the_addon_settings() -> None:
    settings = Settings()
    Addon().update_settings(settings)
    assert TemplatesConfig.from_settings(settings) == load()


def test_every_setting_has_a_kind_and_its_default_passes_it() -> None:
    for setting in SETTINGS:
        assert isinstance(setting.kind, (Flag, Whole, Number, Text, Choice, Reference))
        assert setting.allowed.strip() and setting.type_name.strip()
        value = convert(setting, setting.default)
        assert value == setting.default and type(value) is type(setting.default), setting.name


def test_attributes_and_settings_match_one_to_one_in_order() -> None:
    attributes = [f.name for f in dataclasses.fields(TemplatesConfig)]
    assert attributes == [attribute_name(s.name) for s in SETTINGS]
    assert len(set(attributes)) == len(attributes) == len(DEFAULTS)


def _fits(value: Any, hint: Any) -> bool:
    """Whether ``value`` is of the annotated type (Literal, unions, callables, classes)."""
    origin = typing.get_origin(hint)
    if origin is typing.Literal:
        return value in typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, arg) for arg in typing.get_args(hint))
    if origin is type:
        return isinstance(value, type)
    if hint is type(None):
        return value is None
    if origin is not None and issubclass(origin, Callable):  # type: ignore[arg-type]
        return callable(value)
    return type(value) is hint


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: s.name)
def test_attribute_types_agree_with_the_kinds(setting: Setting) -> None:
    hint = typing.get_type_hints(TemplatesConfig)[attribute_name(setting.name)]
    assert _fits(convert(setting, setting.default), hint)
    if isinstance(setting.kind, Choice):
        assert typing.get_args(hint) == setting.kind.choices
    if setting.none is not None:
        assert _fits(None, hint)
    else:
        assert not _fits(None, hint)


def test_choices_are_the_ones_the_code_knows() -> None:
    compare = BY_NAME["TEMPLATES_BLOCK_COMPARE"].kind
    site = BY_NAME["TEMPLATES_SITE"].kind
    assert isinstance(compare, Choice) and set(compare.choices) == set(COMPARISONS)
    assert isinstance(site, Reference) and set(site.names) == set(BUILTIN_SITES)


def test_config_is_frozen_and_slotted() -> None:
    config = load()
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.min_pages = 3  # type: ignore[misc]
    assert not hasattr(config, "__dict__")


# -- errors --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        # wrong type
        (
            "TEMPLATES_MIN_PAGES",
            "abc",
            "TEMPLATES_MIN_PAGES = 'abc' is not allowed: a whole number of at least 1",
        ),
        (
            "TEMPLATES_MIN_PAGES",
            2.5,
            "TEMPLATES_MIN_PAGES = 2.5 is not allowed: a whole number of at least 1",
        ),
        (
            "TEMPLATES_MIN_PAGES",
            True,
            "TEMPLATES_MIN_PAGES = True is not allowed: a whole number of at least 1",
        ),
        (
            "TEMPLATES_MIN_SHARE",
            "half",
            "TEMPLATES_MIN_SHARE = 'half' is not allowed: a number from 0 to 1",
        ),
        (
            "TEMPLATES_KEEP_HTML",
            "yes",
            "TEMPLATES_KEEP_HTML = 'yes' is not allowed: true or false (1/0, '1'/'0', "
            "'true'/'false' and 'True'/'False' also work)",
        ),
        (
            "TEMPLATES_HTML_FIELD",
            "",
            "TEMPLATES_HTML_FIELD = '' is not allowed: an item field name (a non-empty string)",
        ),
        (
            "TEMPLATES_INFO_FIELD",
            3,
            "TEMPLATES_INFO_FIELD = 3 is not allowed: an item field name (a non-empty string)",
        ),
        (
            "TEMPLATES_PARSE_WORKERS",
            "auto",
            "TEMPLATES_PARSE_WORKERS = 'auto' is not allowed: None (one worker when this process "
            "may use more than one CPU, else none) or a whole number of at least 0",
        ),
        (
            "TEMPLATES_REDIS_URL",
            "localhost:6379",
            "TEMPLATES_REDIS_URL = 'localhost:6379' is not allowed: None (unset: scrapy-redis's "
            "REDIS_URL is used) or a URL starting with redis://, rediss:// or unix://",
        ),
        # out of range
        (
            "TEMPLATES_MIN_SHARE",
            1.5,
            "TEMPLATES_MIN_SHARE = 1.5 is not allowed: a number from 0 to 1",
        ),
        (
            "TEMPLATES_MIN_PAGES",
            -3,
            "TEMPLATES_MIN_PAGES = -3 is not allowed: a whole number of at least 1",
        ),
        (
            "TEMPLATES_SNIPPET_CHARS",
            -5,
            "TEMPLATES_SNIPPET_CHARS = -5 is not allowed: a whole number of at least 0",
        ),
        (
            "TEMPLATES_URL_SIMHASH_DISTANCE",
            10,
            "TEMPLATES_URL_SIMHASH_DISTANCE = 10 is not allowed: None (page simhashes are no "
            "duplicate evidence) or a whole number from 0 to 3",
        ),
        (
            "TEMPLATES_URL_SIMHASH_DISTANCE",
            4,
            "TEMPLATES_URL_SIMHASH_DISTANCE = 4 is not allowed: None (page simhashes are no "
            "duplicate evidence) or a whole number from 0 to 3",
        ),
        (
            "TEMPLATES_LOCK_TTL",
            0,
            "TEMPLATES_LOCK_TTL = 0 is not allowed: a finite number above 0",
        ),
        (
            "TEMPLATES_BOOTSTRAP_TIMEOUT",
            float("inf"),
            "TEMPLATES_BOOTSTRAP_TIMEOUT = inf is not allowed: a finite number of at least 0",
        ),
        (
            "TEMPLATES_BLOCK_SAMPLES",
            1,
            "TEMPLATES_BLOCK_SAMPLES = 1 is not allowed: a whole number of at least 2",
        ),
        (
            "TEMPLATES_LINK_THRESHOLD",
            2**31,
            "TEMPLATES_LINK_THRESHOLD = 2147483648 is not allowed: "
            "a whole number from 1 to 2147483647",
        ),
        # bad choice
        (
            "TEMPLATES_ALGORITHM",
            "lokal",
            "TEMPLATES_ALGORITHM = 'lokal' is not allowed: 'local' or 'global'",
        ),
        (
            "TEMPLATES_BLOCK_COMPARE",
            "word",
            "TEMPLATES_BLOCK_COMPARE = 'word' is not allowed: 'bits' or 'words'",
        ),
        (
            "TEMPLATES_SITE",
            "tld",
            "TEMPLATES_SITE = 'tld' is not allowed: 'host', 'domain', a function url -> site, "
            "or the dotted path to one",
        ),
        (
            "TEMPLATES_STORE",
            "Redis",
            "TEMPLATES_STORE = 'Redis' is not allowed: None ('redis' when TEMPLATES_REDIS_URL "
            "or scrapy-redis's REDIS_URL is set, else 'memory') or 'memory', 'redis', a store "
            "class with from_settings, or the dotted path to one",
        ),
    ],
)
def test_a_value_not_allowed_is_named_with_what_is_allowed(
    name: str, value: Any, message: str
) -> None:
    error = error_of(**{name: value})
    assert str(error) == message
    assert error.problems == (Invalid(name, value, BY_NAME[name].allowed),)
    assert isinstance(error, ValueError)


def test_a_dotted_path_that_does_not_import_says_why() -> None:
    error = error_of(TEMPLATES_SITE="no_such_module.site")
    assert str(error).startswith("TEMPLATES_SITE = 'no_such_module.site' is not allowed: ")
    assert "(cannot import it: No module named 'no_such_module')" in str(error)


@pytest.mark.parametrize(
    ("name", "value", "reason"),
    [
        ("TEMPLATES_SITE", f"{__name__}.NOT_A_FUNCTION", "42 is not callable"),
        ("TEMPLATES_SITE", 42, "42 is not callable"),
        ("TEMPLATES_STORE", f"{__name__}.tld_site", "is not a class with from_settings()"),
        ("TEMPLATES_STORE", FakeStore(), "is not a class with from_settings()"),
    ],
)
def test_an_object_unfit_for_its_setting_says_why(name: str, value: Any, reason: str) -> None:
    (problem,) = error_of(**{name: value}).problems
    assert problem.name == name and problem.value is value
    assert reason in problem.reason


def test_every_value_not_allowed_is_reported_in_one_error() -> None:
    error = error_of(
        TEMPLATES_URL_SIMHASH_DISTANCE=10,
        TEMPLATES_MIN_SHARE=1.5,
        TEMPLATES_ALGORITHM="lokal",
        TEMPLATES_MIN_PAGES=3,
    )
    assert [p.name for p in error.problems] == [
        "TEMPLATES_ALGORITHM",
        "TEMPLATES_MIN_SHARE",
        "TEMPLATES_URL_SIMHASH_DISTANCE",
    ]
    assert str(error).splitlines() == [
        "3 scrapy-templates settings are not allowed:",
        "  TEMPLATES_ALGORITHM = 'lokal' is not allowed: 'local' or 'global'",
        "  TEMPLATES_MIN_SHARE = 1.5 is not allowed: a number from 0 to 1",
        "  TEMPLATES_URL_SIMHASH_DISTANCE = 10 is not allowed: None (page simhashes are no "
        "duplicate evidence) or a whole number from 0 to 3",
    ]


def test_the_error_survives_pickling() -> None:
    error = error_of(TEMPLATES_MIN_SHARE=1.5, TEMPLATES_MIN_PAGES=0)
    copy = pickle.loads(pickle.dumps(error))
    assert copy.problems == error.problems and str(copy) == str(error)


def test_redis_store_needs_a_url() -> None:
    error = error_of(TEMPLATES_STORE="redis")
    assert str(error) == (
        "TEMPLATES_STORE = 'redis' is not allowed: "
        "'redis' only with TEMPLATES_REDIS_URL or scrapy-redis's REDIS_URL set"
    )
    assert load(TEMPLATES_STORE="redis", TEMPLATES_REDIS_URL="redis://h/0").redis_url == (
        "redis://h/0"
    )
    assert load(TEMPLATES_STORE="redis", REDIS_URL="redis://h/0").redis_url is None


def test_a_redis_url_chooses_the_redis_store_unless_a_store_is_named() -> None:
    assert effective_store(load().store, None) == "memory"
    assert effective_store(load().store, "redis://h:6380/0") == "redis"
    assert effective_store(load(TEMPLATES_STORE="memory").store, "redis://h/1") == "memory"


@pytest.mark.parametrize(
    ("settings", "name"),
    [
        ({"TEMPLATES_REDIS_URL": "redis://h:port/0"}, "TEMPLATES_REDIS_URL"),
        ({"REDIS_URL": "redis://:x:y:z"}, "REDIS_URL"),
        ({"REDIS_URL": "localhost:6379"}, "REDIS_URL"),
    ],
)
def test_a_redis_url_that_redis_cannot_use_is_refused_by_name(
    settings: dict[str, Any], name: str
) -> None:
    error = error_of(**settings)
    assert str(error).startswith(f"{name} = {settings[name]!r} is not allowed: a Redis URL")
    assert "not a Redis URL" in str(error)


def test_the_built_in_stores_can_be_named_by_their_dotted_paths() -> None:
    memory = "scrapy_templates.store.memory.MemoryStore"
    assert load(TEMPLATES_STORE=memory).store == "memory"
    redis = "scrapy_templates.store.redis.RedisStore"
    assert load(TEMPLATES_STORE=redis, TEMPLATES_REDIS_URL="redis://h/0").store == "redis"
    assert "'redis' only with" in str(error_of(TEMPLATES_STORE=redis))


def test_direct_construction_and_replace_are_checked_too() -> None:
    config = load()
    with pytest.raises(SettingError, match=r"TEMPLATES_MIN_SHARE = 1\.5 is not allowed"):
        dataclasses.replace(config, min_share=1.5)
    with pytest.raises(SettingError, match=r"TEMPLATES_MIN_PAGES = '3' .*its type must be int"):
        dataclasses.replace(config, min_pages="3")  # type: ignore[arg-type]
    with pytest.raises(SettingError, match=r"TEMPLATES_KEEP_HTML = 1 .*its type must be bool"):
        dataclasses.replace(config, keep_html=1)  # type: ignore[arg-type]
    assert dataclasses.replace(config, min_pages=3).min_pages == 3


# -- conversion ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "given", "expected"),
    [
        ("TEMPLATES_MIN_PAGES", "3", 3),
        ("TEMPLATES_MIN_PAGES", " 4 ", 4),
        ("TEMPLATES_MIN_PAGES", 5.0, 5),
        ("TEMPLATES_MAX_HTML_BYTES", "5e6", 5_000_000),
        ("TEMPLATES_MAX_HTML_BYTES", "1_000", 1000),
        ("TEMPLATES_PIPELINE_PRIORITY", "-10", -10),
        ("TEMPLATES_MIN_SHARE", "0.5", 0.5),
        ("TEMPLATES_MIN_SHARE", "1", 1.0),
        ("TEMPLATES_MIN_SHARE", 0, 0.0),
        ("TEMPLATES_BOOTSTRAP_TIMEOUT", "10", 10.0),
        ("TEMPLATES_ENABLED", "0", False),
        ("TEMPLATES_ENABLED", "1", True),
        ("TEMPLATES_ENABLED", "False", False),
        ("TEMPLATES_LAYOUT", "true", True),
        ("TEMPLATES_LAYOUT", "false", False),
        ("TEMPLATES_LAYOUT", 0, False),
        ("TEMPLATES_PARSE_WORKERS", "", None),
        ("TEMPLATES_PARSE_WORKERS", "None", None),
        ("TEMPLATES_PARSE_WORKERS", "2", 2),
        ("TEMPLATES_PARSE_WORKERS", 0, 0),
        ("TEMPLATES_REDIS_URL", "", None),
        ("TEMPLATES_REDIS_URL", "unix:///run/redis.sock", "unix:///run/redis.sock"),
        ("TEMPLATES_URL_RULES_FILE", "", None),
        ("TEMPLATES_URL_RULES_FILE", "rules.json", "rules.json"),
        ("TEMPLATES_URL_SIMHASH_DISTANCE", "0", 0),
        ("TEMPLATES_ALGORITHM", "global", "global"),
        ("TEMPLATES_SITE", "domain", "domain"),
    ],
)
def test_values_convert_as_scrapy_getters_do(name: str, given: Any, expected: Any) -> None:
    value = getattr(load(**{name: given}), attribute_name(name))
    assert value == expected and type(value) is type(expected)


def test_command_line_strings_win_over_the_addon_defaults() -> None:
    settings = Settings()
    Addon().update_settings(settings)
    for name, value in [
        ("TEMPLATES_MIN_PAGES", "3"),
        ("TEMPLATES_MIN_SHARE", "0.1"),
        ("TEMPLATES_LAYOUT", "False"),
        ("TEMPLATES_PARSE_WORKERS", "0"),
    ]:
        settings.set(name, value, priority="cmdline")
    config = TemplatesConfig.from_settings(settings)
    assert (config.min_pages, config.min_share, config.layout, config.parse_workers) == (
        3,
        0.1,
        False,
        0,
    )


@pytest.mark.parametrize("value", [False, "0", "false", 0])
def test_the_off_switch_is_readable(value: Any) -> None:
    assert load(TEMPLATES_ENABLED=value).enabled is False


def test_site_function_resolves_names_paths_and_functions() -> None:
    assert load().site_function() is host_site
    assert load(TEMPLATES_SITE="domain").site_function() is domain_site
    assert load(TEMPLATES_SITE=f"{__name__}.tld_site").site_function() is tld_site
    assert load(TEMPLATES_SITE=tld_site).site_function() is tld_site


def test_store_takes_names_paths_and_classes() -> None:
    assert load(TEMPLATES_STORE=f"{__name__}.FakeStore").store == f"{__name__}.FakeStore"
    assert load(TEMPLATES_STORE=FakeStore).store is FakeStore


# -- docs ----------------------------------------------------------------------------------


def test_docs_give_each_setting_an_anchor_type_and_allowed_values() -> None:
    page = render_markdown()
    headings = re.findall(r"^## `(TEMPLATES_\w+)`$", page, re.MULTILINE)
    assert headings == [s.name for s in SETTINGS]
    for setting in SETTINGS:
        section = page.split(f"## `{setting.name}`\n", 1)[1].split("\n## ", 1)[0]
        assert f"- type: {setting.type_name}\n" in section
        assert f"- allowed: {setting.allowed}\n" in section
        assert f"- default: `{setting.default!r}`" in section
        assert f"[`{setting.name}`](#{setting.name.lower()})" in page
