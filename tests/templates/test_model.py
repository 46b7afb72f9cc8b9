"""The published template model: learned from counts, JSON round trip, refusal of bad input."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings

from scrapy_templates.templates.decide import Thresholds
from scrapy_templates.templates.model import ModelError, TemplateModel, learn_model
from tests.mutations import mutated_json


def test_learned_model_lists_the_templates_past_the_threshold_most_common_first() -> None:
    counts = {0xA: 40, 0xB: 55, 0xC: 1, 0xD: 55}
    model = learn_model(
        "shop.test", 3, 60, counts, Thresholds(), main_path="body/main", region_pages=50, limit=2
    )
    assert model.templates == ((0xB, 55), (0xD, 55))
    assert (model.version, model.pages, model.region_pages) == (3, 60, 50)


@pytest.mark.parametrize("main_path", ["body/div#page/main#content", "body", None])
def test_round_trip_with_the_paths_pages_really_have(main_path: str | None) -> None:
    model = TemplateModel("shop.test", 2, 40, main_path, 40, ((2**64 - 1, 40), (7, 39)), 4)
    assert TemplateModel.loads(model.dumps()) == model


def test_a_model_published_before_layout_clusters_still_loads() -> None:
    text = TemplateModel("s", 1, 1, None, 1).dumps().replace(', "layout_clusters": 0', "")
    assert "layout_clusters" not in text
    assert TemplateModel.loads(text).layout_clusters == 0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json", "not JSON"),
        ('{"format": "other"}', "not a template model"),
        ("[1]", "not a template model"),
    ],
)
def test_foreign_documents_are_refused(text: str, message: str) -> None:
    with pytest.raises(ModelError, match=message):
        TemplateModel.loads(text)


@pytest.mark.parametrize("main_path", ["", "/body/main", "body//main", 3])
def test_a_main_path_that_no_page_can_have_is_refused(main_path: object) -> None:
    data = TemplateModel("s", 1, 1, "body", 1).dumps().replace('"body"', json.dumps(main_path))
    with pytest.raises(ModelError, match="is not a tag path"):
        TemplateModel.loads(data)


def test_bad_counts_and_fingerprints_are_refused() -> None:
    good = TemplateModel("s", 1, 1, None, 1, ((5, 1),)).dumps()
    for bad in (good.replace('"pages": 1', '"pages": -1'), good.replace("0000000000000005", "xyz")):
        with pytest.raises(ModelError):
            TemplateModel.loads(bad)


@pytest.mark.parametrize("version", ["1e300", "1.0", "true", '"1"', str(2**63)])
def test_a_version_that_is_not_a_whole_number_is_refused(version: str) -> None:
    good = TemplateModel("s", 1, 1, None, 1, ((5, 1),)).dumps()
    with pytest.raises(ModelError, match="whole number"):
        TemplateModel.loads(good.replace('"version": 1', f'"version": {version}'))


_GOOD = TemplateModel("s", 3, 40, "body/main", 30, ((5, 40), (9, 31)), 2).dumps()


@settings(max_examples=300)
@given(mutated_json(_GOOD))
def test_any_mutation_of_a_model_loads_or_is_refused_as_a_model_error(text: str) -> None:
    try:
        model = TemplateModel.loads(text)
    except ModelError:
        return
    assert TemplateModel.loads(model.dumps()) == model  # what loads is a model that round-trips
