"""scrapy-templates: template pagelets flagged on Scrapy items while the crawl runs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scrapy_templates.addon import Addon

__version__ = "0.1.0"

__all__ = ["Addon", "__version__"]


def __getattr__(name: str) -> Any:
    # Scrapy is imported when the add-on is asked for, not by every module of the package
    # (a parse worker needs the parser alone).
    if name == "Addon":
        from scrapy_templates.addon import Addon

        return Addon
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
