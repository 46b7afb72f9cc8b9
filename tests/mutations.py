"""Hypothesis strategies for hostile input: JSON documents with one value replaced by anything
JSON can hold (or a number no JSON parser should accept), and the text of such documents cut
or spliced."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

ODD_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
    st.sampled_from(["", "../", "@evil.test", ":6379", "a/b", "?x=1&y", "\x00", "ÿ" * 50]),
    st.lists(st.integers(-3, 300), max_size=4),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in ``value`` a value can be replaced: dict keys and list indexes."""
    found = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            found += _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found += _paths(child, (*prefix, index))
    return found


def _replace(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: _replace(value[head], rest, new)}
    copy = list(value)
    copy[head] = _replace(copy[head], rest, new)
    return copy


@st.composite
def mutated_json(draw: st.DrawFn, document: str, edits: int = 3, damage: bool = True) -> str:
    """``document`` (JSON text) with up to ``edits`` values replaced, then (when ``damage``)
    possibly cut short or given a raw token JSON forbids."""
    value = json.loads(document)
    for _ in range(draw(st.integers(0, edits))):
        path = draw(st.sampled_from(_paths(value)))
        value = _replace(value, path, draw(ODD_VALUES))
    text = json.dumps(value)
    tail = draw(st.sampled_from(["", "cut", "nan", "huge"])) if damage else ""
    if tail == "cut":
        text = text[: draw(st.integers(0, len(text)))]
    elif tail == "nan":
        text = text.replace("0", "NaN", 1)
    elif tail == "huge":
        text = text.replace("1", "1e400", 1)
    return text
