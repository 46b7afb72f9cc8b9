"""A site's template model: what a relearn publishes so every process decides alike.

The per-page decision needs only the shared counts, which every process reads anyway; what a
process cannot see alone is the site's main content region, learned from the pages *it*
decided (:class:`~scrapy_templates.templates.region.SiteRegion`). The model carries the main
path learned from the most pages, and — for inspection — the site's template fingerprints with
their page counts. It travels as JSON and is validated when read: a foreign or corrupt
document is refused with :class:`ModelError`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scrapy_templates.documents import DocumentError, read_document, whole
from scrapy_templates.templates.decide import Thresholds, is_template

FORMAT = "scrapy-templates/model/1"


class ModelError(ValueError):
    """A document that is not a template model of this format."""


@dataclass(frozen=True, slots=True)
class TemplateModel:
    """``pages``: pages counted when learned; ``main_path``: the site's main content path
    (``None``: the whole page) learned from ``region_pages`` pages; ``templates``: the most
    common template fingerprints as (fingerprint, pages), most common first;
    ``layout_clusters``: the learner's layout clusters of the site (0: layout model off)."""

    site: str
    version: int
    pages: int
    main_path: str | None
    region_pages: int
    templates: tuple[tuple[int, int], ...] = ()
    layout_clusters: int = 0

    def dumps(self) -> str:
        return json.dumps(
            {
                "format": FORMAT,
                "site": self.site,
                "version": self.version,
                "pages": self.pages,
                "main_path": self.main_path,
                "region_pages": self.region_pages,
                "templates": [[f"{fp:016x}", n] for fp, n in self.templates],
                "layout_clusters": self.layout_clusters,
            }
        )

    @classmethod
    def loads(cls, text: str) -> TemplateModel:
        try:
            data: Any = read_document(text, "template model")
            if not isinstance(data, dict) or data.get("format") != FORMAT:
                raise ModelError(f"not a template model (format {_format_of(data)!r})")
            main = data["main_path"]
            if main is not None and not _is_tag_path(main):
                raise ModelError(f"main_path {main!r} is not a tag path")
            model = cls(
                site=_text(data["site"]),
                version=_count(data["version"]),
                pages=_count(data["pages"]),
                main_path=main,
                region_pages=_count(data["region_pages"]),
                templates=tuple((int(fp, 16), _count(n)) for fp, n in data["templates"]),
                layout_clusters=_count(data.get("layout_clusters", 0)),
            )
        except ModelError:
            raise
        except DocumentError as exc:
            raise ModelError(str(exc)) from exc
        except (ValueError, KeyError, TypeError, OverflowError) as exc:
            raise ModelError(f"malformed template model: {exc!r}") from exc
        return model


def _is_tag_path(value: Any) -> bool:
    """A pagelet tag path as :mod:`scrapy_templates.page` writes it: ``body/div#page/main``."""
    return isinstance(value, str) and bool(value) and all(value.split("/"))


def _format_of(data: Any) -> Any:
    return data.get("format") if isinstance(data, dict) else type(data).__name__


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise ModelError(f"{value!r} is not a string")
    return value


def _count(value: Any) -> int:
    try:
        return whole(value, "count")
    except DocumentError as exc:
        raise ModelError(str(exc)) from None


def learn_model(
    site: str,
    version: int,
    pages: int,
    counts: Mapping[int, int],
    thresholds: Thresholds,
    *,
    main_path: str | None,
    region_pages: int,
    layout_clusters: int = 0,
    limit: int = 100,
) -> TemplateModel:
    """The model of a site from its shared counts and the main region learned so far; the
    listed templates are the ``limit`` most common fingerprints past the decision threshold."""
    found = [(fp, n) for fp, n in counts.items() if is_template(n, pages, thresholds)]
    found.sort(key=lambda pair: (-pair[1], pair[0]))
    return TemplateModel(
        site, version, pages, main_path, region_pages, tuple(found[:limit]), layout_clusters
    )
