"""Every ``TEMPLATES_*`` setting, read once into a typed, checked, immutable object.

:meth:`TemplatesConfig.from_settings` converts each setting the way Scrapy's getters do (so
``scrapy crawl -s TEMPLATES_MIN_PAGES=3`` still works) and checks it against what
:data:`~scrapy_templates.settings.SETTINGS` allows. Every value that is not allowed is reported
in one :class:`SettingError` naming the setting, the value and what is allowed, before the crawl
starts, instead of a bare ``ValueError`` from deep inside a component, a component quietly
turned off, or an error in the middle of the crawl.
"""

from __future__ import annotations

import math
import numbers
import pkgutil
import reprlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from scrapy_templates.settings import (
    SETTINGS,
    Choice,
    Flag,
    Number,
    Reference,
    Setting,
    Text,
    Whole,
)
from scrapy_templates.sites import BUILTIN_SITES, SiteFunction

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

Algorithm = Literal["local", "global"]
BlockCompare = Literal["bits", "words"]

PREFIX = "TEMPLATES_"
# what an optional setting may be given as to mean None (a command line cannot pass None)
_NONE_STRINGS = ("", "None", "none")


@dataclass(frozen=True, slots=True)
class Invalid:
    """One setting whose value is not allowed: its name, the value, what is allowed and, when
    the allowed values alone do not say, why."""

    name: str
    value: Any
    allowed: str
    reason: str = ""

    def __str__(self) -> str:
        text = f"{self.name} = {self.value!r} is not allowed: {self.allowed}"
        return f"{text} ({self.reason})" if self.reason else text


class SettingError(ValueError):
    """``TEMPLATES_*`` settings whose values are not allowed, all of them in one error."""

    def __init__(self, problems: Sequence[Invalid]) -> None:
        self.problems: tuple[Invalid, ...] = tuple(problems)
        if len(self.problems) == 1:
            message = str(self.problems[0])
        else:
            lines = [f"{len(self.problems)} scrapy-templates settings are not allowed:"]
            lines += [f"  {problem}" for problem in self.problems]
            message = "\n".join(lines)
        super().__init__(message)

    def __reduce__(self) -> tuple[type[SettingError], tuple[tuple[Invalid, ...]]]:
        return SettingError, (self.problems,)


class _Rejected(Exception):
    """A value its setting does not allow; ``reason`` says why when the allowed values alone
    do not."""

    def __init__(self, reason: str = "") -> None:
        super().__init__(reason)
        self.reason = reason


def attribute_name(setting_name: str) -> str:
    """The :class:`TemplatesConfig` attribute of a setting: ``TEMPLATES_MIN_PAGES`` →
    ``min_pages``."""
    return setting_name.removeprefix(PREFIX).lower()


def convert(setting: Setting, value: Any) -> Any:
    """``value`` of ``setting`` as its attribute holds it; raises :class:`SettingError` when
    the setting does not allow it."""
    try:
        return _convert(setting, value)
    except _Rejected as exc:
        raise SettingError([Invalid(setting.name, value, setting.allowed, exc.reason)]) from None


def _convert(setting: Setting, value: Any) -> Any:
    """``value`` of ``setting`` as its attribute holds it (``None`` for an optional setting
    given as none); raises :class:`_Rejected` when the setting does not allow it."""
    if setting.none is not None and (value is None or _is_none_string(value)):
        return None
    kind = setting.kind
    if isinstance(kind, Flag):
        return _flag(value)
    if isinstance(kind, Whole):
        return _bounded_whole(kind, value)
    if isinstance(kind, Number):
        return _bounded_number(kind, value)
    if isinstance(kind, Text):
        return _text(kind, value)
    if isinstance(kind, Choice):
        return _choice(kind, value)
    return _reference(kind, value)


def _bounded_whole(kind: Whole, value: Any) -> int:
    """``value`` as a whole number (see :func:`_whole`) within ``kind``'s bounds."""
    whole = _whole(value)
    if (kind.low is not None and whole < kind.low) or (kind.high is not None and whole > kind.high):
        raise _Rejected()
    return whole


def _bounded_number(kind: Number, value: Any) -> float:
    """``value`` as a finite number (see :func:`_number`) within ``kind``'s bounds, its low
    bound left out when ``kind.low_open``."""
    number = _number(value)
    if kind.low is not None and (number < kind.low or (kind.low_open and number == kind.low)):
        raise _Rejected()
    if kind.high is not None and number > kind.high:
        raise _Rejected()
    return number


def _text(kind: Text, value: Any) -> str:
    """``value`` as given when it is a string that is not blank and, when ``kind`` names
    schemes, starts with one of them (``scheme://``, in any case)."""
    if not isinstance(value, str) or not value.strip():
        raise _Rejected()
    if kind.schemes and not value.lower().startswith(tuple(f"{s}://" for s in kind.schemes)):
        raise _Rejected()
    return value


def _choice(kind: Choice, value: Any) -> str:
    """``value`` as given when it is one of ``kind``'s choices (exactly: case counts)."""
    if not isinstance(value, str) or value not in kind.choices:
        raise _Rejected()
    return value


def _is_none_string(value: Any) -> bool:
    return isinstance(value, str) and value.strip() in _NONE_STRINGS


def _flag(value: Any) -> bool:
    """As ``BaseSettings.getbool``: booleans, integers, ``'True'``/``'true'``,
    ``'False'``/``'false'`` and integer strings (``'0'``, ``'1'``)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, numbers.Integral):
        return bool(value)
    if isinstance(value, str):
        text = value.strip()
        if text in ("True", "true"):
            return True
        if text in ("False", "false"):
            return False
        try:
            return bool(int(text))
        except ValueError:
            pass
    raise _Rejected()


def _whole(value: Any) -> int:
    """As ``BaseSettings.getint`` for integers and integer strings; a float (or float string:
    ``'5e6'``) only when it is whole, and never a boolean, which is surely a mistake."""
    if isinstance(value, bool):
        raise _Rejected()
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, str):
        text = value.strip()
        try:
            return int(text)
        except ValueError:
            value = text
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise _Rejected() from None
    if not number.is_integer():
        raise _Rejected()
    return int(number)


def _number(value: Any) -> float:
    """As ``BaseSettings.getfloat`` (numbers and number strings), but finite and never a
    boolean."""
    if isinstance(value, bool):
        raise _Rejected()
    try:
        number = float(value.strip() if isinstance(value, str) else value)
    except (TypeError, ValueError, OverflowError):
        raise _Rejected() from None
    if not math.isfinite(number):
        raise _Rejected()
    return number


def _reference(kind: Reference, value: Any) -> Any:
    """A built-in name as given; otherwise the object, or its dotted path, as given once the
    object it names is found fit."""
    found = value
    if isinstance(value, str):
        if value in kind.names:
            return value
        if "." not in value.strip("."):
            raise _Rejected()
        try:
            found = pkgutil.resolve_name(value)
        except Exception as exc:
            raise _Rejected(f"cannot import it: {exc}") from None
    builtin = vars(found).get("builtin_name") if isinstance(found, type) else None
    if builtin in kind.names:  # a built-in given by its class or its path (not a subclass)
        return builtin
    if kind.attribute is None:
        if not callable(found):
            raise _Rejected(f"{reprlib.repr(found)} is not callable")
    elif not isinstance(found, type) or not callable(getattr(found, kind.attribute, None)):
        raise _Rejected(f"{reprlib.repr(found)} is not a class with {kind.attribute}()")
    return value


def effective_store(store: str | type[Any] | None, redis_url: str | None) -> str | type[Any]:
    """The store ``TEMPLATES_STORE`` stands for: unset (``None``), Redis when a Redis URL is
    set (``TEMPLATES_REDIS_URL``, else scrapy-redis's ``REDIS_URL``), else memory."""
    if store is not None:
        return store
    return "redis" if redis_url else "memory"


def _store_problems(values: dict[str, Any], settings: BaseSettings) -> list[Invalid]:
    """A Redis store needs a Redis URL that redis-py can use."""
    if "store" not in values or "redis_url" not in values:
        return []  # refused already
    url = values["redis_url"] or settings.get("REDIS_URL") or None
    if effective_store(values["store"], url) != "redis":
        return []
    if not url:
        allowed = "'redis' only with TEMPLATES_REDIS_URL or scrapy-redis's REDIS_URL set"
        return [Invalid("TEMPLATES_STORE", "redis", allowed)]
    from scrapy_templates.store.redis import redis_url_problem

    problem = redis_url_problem(str(url))
    if problem is None:
        return []
    name = "TEMPLATES_REDIS_URL" if values["redis_url"] else "REDIS_URL"
    return [Invalid(name, url, "a Redis URL such as redis://localhost:6379/0", problem)]


@dataclass(frozen=True, slots=True)
class TemplatesConfig:
    """Every ``TEMPLATES_*`` setting, converted and checked: one attribute per setting, named
    after it without the prefix, in lower case (``TEMPLATES_MIN_PAGES`` → :attr:`min_pages`).
    See ``docs/settings.md`` for what each means and allows.

    Build it with :meth:`from_settings` (or :meth:`of`); constructing or :func:`replace
    <dataclasses.replace>`-ing it directly checks the values too, but converts none."""

    enabled: bool
    pipeline_priority: int
    html_field: str
    url_field: str
    keep_html: bool
    pagelets_field: str
    content_field: str
    info_field: str
    algorithm: Algorithm
    link_threshold: int
    min_pages: int
    min_share: float
    pattern_share: float
    region_min_share: float
    main_region_share: float
    section_share: float
    layout: bool
    layout_similarity: float
    layout_max_clusters: int
    layout_max_sites: int
    block_diff_max: float
    block_shift_diff_max: float
    block_min_pages: int
    block_min_share: float
    block_samples: int
    block_compare: BlockCompare
    site: str | SiteFunction
    bootstrap_pages: int
    bootstrap_timeout: float
    max_html_bytes: int
    max_tags: int
    parse_workers: int | None
    parse_timeout: float
    logstats_interval: float
    snippet_chars: int
    store: str | type[Any] | None
    redis_url: str | None
    redis_prefix: str
    max_owners: int
    max_links: int
    store_retry: float
    store_journal: int
    store_file: str
    relearn_interval: float
    relearn_pages: int
    sync_interval: float
    lock_ttl: float
    prune_pages: int
    prune_share: float
    url_rules: bool
    url_spider_middleware_priority: int
    url_downloader_middleware_priority: int
    url_drop_repeats: bool
    url_rules_file: str | None
    url_sample_size: int
    url_min_samples: int
    url_learn_every: int
    url_simhash_distance: int | None
    url_min_share: float
    url_o_min: float
    url_dup_rate_min: float
    url_sigma_min: float
    url_fake_max: float
    url_min_support: int
    url_defer_priority: int
    url_defer_rate: float
    url_fpr_max: float
    url_check_first: int
    url_check_share: float

    def __post_init__(self) -> None:
        """Refuse a value its setting does not allow, or one of another type than the
        attribute's (``'3'`` for an int): only :meth:`from_settings` converts."""
        problems = []
        for setting in SETTINGS:
            value = getattr(self, attribute_name(setting.name))
            try:
                fit = _convert(setting, value)
            except _Rejected as exc:
                problems.append(Invalid(setting.name, value, setting.allowed, exc.reason))
                continue
            if type(fit) is not type(value) or fit != value:
                problems.append(
                    Invalid(
                        setting.name,
                        value,
                        setting.allowed,
                        f"its type must be {setting.type_name}",
                    )
                )
        if problems:
            raise SettingError(problems)

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> TemplatesConfig:
        """Read, convert and check every ``TEMPLATES_*`` setting (a setting that is absent
        takes its default). Raises :class:`SettingError` listing every value not allowed."""
        values: dict[str, Any] = {}
        problems: list[Invalid] = []
        for setting in SETTINGS:
            value = settings.get(setting.name) if setting.name in settings else setting.default
            try:
                values[attribute_name(setting.name)] = _convert(setting, value)
            except _Rejected as exc:
                problems.append(Invalid(setting.name, value, setting.allowed, exc.reason))
        problems += _store_problems(values, settings)
        if problems:
            raise SettingError(problems)
        return cls(**values)

    def site_function(self) -> SiteFunction:
        """The function ``url -> site`` that :attr:`site` names."""
        if callable(self.site):
            return self.site
        if self.site in BUILTIN_SITES:
            return BUILTIN_SITES[self.site]
        function: SiteFunction = pkgutil.resolve_name(self.site)
        return function


__all__ = [
    "Algorithm",
    "BlockCompare",
    "Invalid",
    "SettingError",
    "TemplatesConfig",
    "attribute_name",
    "convert",
]
