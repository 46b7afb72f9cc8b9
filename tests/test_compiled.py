"""Loading the compiled twins: absent, refused or asked away, the pure-Python code runs."""

from __future__ import annotations

import types

import pytest

from scrapy_templates.compiled import compiled


@pytest.mark.parametrize(
    "name", ["_walk", "_fingerprint", "templates._offsets", "urlnorm._pagetext"]
)
def test_the_twins_are_built(name: str) -> None:
    # The suite must exercise the compiled path: a build that silently fell back to pure
    # Python would leave it untested.
    assert compiled(name) is not None


def test_a_twin_that_was_not_built_is_none() -> None:
    assert compiled("_no_such_twin") is None


def test_pure_python_can_be_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCRAPY_TEMPLATES_PURE_PYTHON", "1")
    assert compiled("_walk") is None
    monkeypatch.setenv("SCRAPY_TEMPLATES_PURE_PYTHON", "0")
    assert compiled("_walk") is not None


def test_a_twin_that_does_not_load_warns_and_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    # What Cython raises when the twin was built against an lxml whose types differ.
    def refuse(name: str, *args: object, **kwargs: object) -> types.ModuleType:
        raise ValueError("lxml.etree._Element size changed, may indicate binary incompatibility")

    monkeypatch.setattr("importlib.import_module", refuse)
    with pytest.warns(RuntimeWarning, match="size changed"):
        assert compiled("_walk") is None
