"""Stored documents are refused with one error type whatever they hold."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_templates.crawl.publisher import Publisher
from scrapy_templates.documents import MAX_DOCUMENT_BYTES, DocumentError, read_document, whole
from scrapy_templates.store.memory import MemoryStore
from scrapy_templates.templates.model import ModelError, TemplateModel
from scrapy_templates.urlnorm.rules import RuleSet, RuleSetError
from tests.urlnorm.test_rules import _MIRROR

HOSTILE = {
    "infinity": '{"version": Infinity}',
    "overflowing float": '{"version": 1e400}',
    "nan": '{"version": NaN}',
    "deep nesting": "[" * 100_000,
    "not json": "{",
    "too large": " " * (MAX_DOCUMENT_BYTES + 1),
}


@pytest.mark.parametrize("text", HOSTILE.values(), ids=HOSTILE.keys())
def test_a_hostile_document_is_a_document_error(text: str) -> None:
    with pytest.raises(DocumentError):
        read_document(text, "test document")


def _with_version(document: str, version: str) -> str:
    """``document`` with its version written as ``version`` (raw JSON text)."""
    data = json.loads(document)
    data["version"] = "@@"
    return json.dumps(data).replace('"@@"', version)


@pytest.mark.parametrize("version", ["Infinity", "1e400", "-Infinity", "NaN"])
def test_a_version_out_of_range_refuses_the_rule_set_and_the_model(version: str) -> None:
    with pytest.raises(RuleSetError):
        RuleSet.loads(_with_version(_MIRROR.dumps(), version))
    model = TemplateModel("www.example.com", 2, 40, None, 0, ((7, 40),))
    with pytest.raises(ModelError):
        TemplateModel.loads(_with_version(model.dumps(), version))


def test_deep_nesting_refuses_the_rule_set() -> None:
    with pytest.raises(RuleSetError, match="nests too deeply"):
        RuleSet.loads("[" * 100_000)


async def test_a_publication_that_cannot_be_read_is_refused_once_and_the_crawl_goes_on() -> None:
    store = MemoryStore()
    await store.open()
    refused: list[int] = []
    publisher: Publisher[RuleSet] = Publisher(
        "rules",
        label="URL rules",
        lock="urls",
        load=RuleSet.loads,
        current=lambda site: 0,
        refused=lambda: refused.append(1),
        lock_ttl=5.0,
    )
    publisher.attach(store, "me")
    site = _MIRROR.site
    await store.publish(site, "rules", 9, _with_version(_MIRROR.dumps(), "Infinity"))
    for _ in range(3):
        assert await publisher.newer(site) is None
    assert len(refused) == 1
    await store.publish(site, "rules", 10, "[" * 100_000)
    assert await publisher.newer(site) is None
    assert len(refused) == 2


@settings(max_examples=300)
@given(st.one_of(st.text(max_size=200), st.binary(max_size=200)))
def test_any_text_is_read_or_refused_as_a_document_error(text: str | bytes) -> None:
    try:
        value = read_document(text, "doc")
    except DocumentError:
        return
    json.dumps(value, allow_nan=False)  # what is read holds no NaN or infinity


@given(st.one_of(st.integers(), st.floats(), st.booleans(), st.text(max_size=5), st.none()))
def test_whole_takes_only_whole_numbers_in_range(value: object) -> None:
    try:
        got = whole(value, "v")
    except DocumentError:
        assert isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**63
    else:
        assert got == value and type(got) is int
