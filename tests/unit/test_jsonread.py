"""The one JSON reader refuses what is too large or too deep with a ValueError naming it."""

from __future__ import annotations

import contextlib
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wheelfarm.core.jsonread import JSONLimitError, depth, loads

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def test_deep_nesting_is_a_value_error_not_a_recursion_error() -> None:
    with pytest.raises(JSONLimitError, match=r"packages\.json: JSON nested 100000 deep"):
        loads("[" * 100_000 + "]" * 100_000, what="packages.json")


def test_size_cap_names_the_document() -> None:
    with pytest.raises(JSONLimitError, match=r"body: 12 bytes of JSON, more than the 10"):
        loads(b'"0123456789"', what="body", max_bytes=10)


def test_brackets_inside_strings_do_not_count() -> None:
    assert depth(b'["[[[[", {"a": "\\"]]]"}]') == 2
    assert loads('{"k": "[[[["}', what="x", max_depth=1) == {"k": "[[[["}


@pytest.mark.parametrize("text", ["{", "\udcff", b"\xff\xfe", "[1,]", ""])
def test_broken_json_is_a_value_error(text: str | bytes) -> None:
    with pytest.raises(ValueError, match="x: not valid JSON"):
        loads(text, what="x")


@given(JSON)
def test_round_trip(value: object) -> None:
    assert loads(json.dumps(value), what="x") == value


@given(st.binary(max_size=200))
def test_any_bytes_read_or_refuse(data: bytes) -> None:
    with contextlib.suppress(ValueError):
        loads(data, what="x", max_depth=3)
