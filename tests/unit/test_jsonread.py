"""The one JSON reader refuses what is too large or too deep with a ValueError naming it."""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wheelfarm.core.jsonread import JSONLimitError, decode, depth, loads

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


def _nesting(value: object) -> int:
    if isinstance(value, list):
        return 1 + max(map(_nesting, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(_nesting, value.values()), default=0)
    return 0


@given(JSON, st.booleans())
def test_depth_is_the_nesting_whatever_the_strings_hold(value: object, ascii_only: bool) -> None:
    """Quotes, backslashes and brackets inside keys and strings never move the count."""
    assert depth(json.dumps(value, ensure_ascii=ascii_only).encode()) == _nesting(value)


@given(JSON)
def test_round_trip(value: object) -> None:
    assert loads(json.dumps(value), what="x") == value


@given(st.binary(max_size=200))
def test_any_bytes_read_or_refuse(data: bytes) -> None:
    with contextlib.suppress(ValueError):
        loads(data, what="x", max_depth=3)


@dataclass(frozen=True)
class _Row:
    size: int
    flag: bool = False
    tags: tuple[str, ...] = ()


def test_decode_checks_each_field_and_never_takes_a_boolean_for_a_number() -> None:
    row = _Row(3, flag=True, tags=("a",))
    assert decode(_Row, {"size": 3, "flag": True, "tags": ["a"]}, what="f") == row
    with pytest.raises(ValueError, match=r"^f: size should be an integer, not a boolean$"):
        decode(_Row, {"size": True}, what="f")
    with pytest.raises(ValueError, match=r"^f: tags\[1\] should be a string, not null$"):
        decode(_Row, {"size": 1, "tags": ["a", None]}, what="f")


def test_decode_refuses_an_unknown_key_unless_told_to_pass_over_it() -> None:
    with pytest.raises(ValueError, match=r"^f: the row has an unknown key 'name'$"):
        decode(_Row, {"size": 1, "name": "x"}, what="f", whole="the row")
    assert decode(_Row, {"size": 1, "name": "x"}, what="f", extra_keys=True) == _Row(1)
