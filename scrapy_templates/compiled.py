"""The compiled parts of the per-page path, when the package was built with them.

``_walk`` (the pagelet partition over lxml's C tree), ``_fingerprint`` (fingerprints and
simhash in one pass over the code points), ``templates._offsets`` (word-offset signatures) and
``urlnorm._pagetext`` (the page text hashed at download) give the same output as the
pure-Python code next to them, several times faster. They are built from Cython sources when
the package is installed; without a C compiler the package installs without them and runs the
pure-Python code.
``SCRAPY_TEMPLATES_PURE_PYTHON=1`` in the environment makes it run the pure-Python code anyway
(tests compare both).
"""

from __future__ import annotations

import importlib
import os
import warnings
from types import ModuleType


def compiled(name: str) -> ModuleType | None:
    """The compiled module ``scrapy_templates.<name>``, or ``None`` when it was not built or
    pure Python is asked for."""
    if os.environ.get("SCRAPY_TEMPLATES_PURE_PYTHON", "") not in ("", "0"):
        return None
    try:
        return importlib.import_module(f"scrapy_templates.{name}")
    except ModuleNotFoundError:
        return None
    except (ImportError, ValueError) as exc:  # built against another lxml, say
        warnings.warn(
            f"scrapy-templates: the compiled module {name} does not load ({exc}); running the "
            "pure-Python code instead (reinstall the package to rebuild it)",
            RuntimeWarning,
            stacklevel=2,
        )
        return None
