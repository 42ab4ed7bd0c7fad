"""The one JSON reader: every JSON the farm reads (packages.json, the site's file list, build
records, API bodies, PEP 691 pages) comes from a file or a server it does not control, so it is
read with a size and a nesting limit and fails as a `ValueError` naming what was read, never as
a RecursionError or a MemoryError. `decode` then turns a parsed value into a dataclass, every
field's type checked (the build record, a packages.json wheel entry)."""

from __future__ import annotations

import dataclasses
import json
import re
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, TypeVar

MAX_BYTES = 256 << 20  # a packages.json of 100,000 wheels is about 60 MB
MAX_DEPTH = 64  # the deepest document the farm writes or reads nests 6 levels
# a JSON string, its escapes taken whole: runs of plain bytes are matched at once, not a byte
# and an alternation at a time (2.6 times faster on a 1 MB plan, which every job reads)
_STRINGS = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BRACKETS = re.compile(rb"[\[\]{}]")
_OPENERS = frozenset(b"[{")
_SHOWN = 60  # characters of a hostile key an error quotes
_T = TypeVar("_T")


class JSONLimitError(ValueError):
    """A document is larger or deeper than the reader allows."""


def depth(data: bytes) -> int:
    """The deepest nesting of `data`'s arrays and objects, brackets inside strings not counted.
    Linear, and without recursion, so a hostile document cannot exhaust the stack."""
    level = deepest = 0
    for match in _BRACKETS.finditer(_STRINGS.sub(b'""', data)):
        if match.group()[0] in _OPENERS:
            level += 1
            deepest = max(deepest, level)
        else:
            level -= 1
    return deepest


def loads(
    data: str | bytes, *, what: str, max_bytes: int = MAX_BYTES, max_depth: int = MAX_DEPTH
) -> Any:  # noqa: ANN401 - JSON
    """Parse `data` (named `what` in errors), refusing more than `max_bytes` or a nesting deeper
    than `max_depth`. Every failure is a ValueError whose message names `what` and the limit."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if len(raw) > max_bytes:
        msg = f"{what}: {len(raw):,} bytes of JSON, more than the {max_bytes:,} allowed"
        raise JSONLimitError(msg)
    found = depth(raw)
    if found > max_depth:
        msg = f"{what}: JSON nested {found} deep, more than the {max_depth} allowed"
        raise JSONLimitError(msg)
    try:
        return json.loads(raw)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        msg = f"{what}: not valid JSON ({exc})"
        raise ValueError(msg) from exc


@dataclass(frozen=True)
class _Reading:
    """How one `decode` reports and what it allows."""

    what: str  # the file or source, first in every message
    whole: str  # the decoded value itself, where a message has no field to name
    error: type[ValueError]
    extra_keys: bool  # keys no field names are ignored (else refused)


def decode(
    cls: type[_T],
    data: object,
    *,
    what: str,
    whole: str = "the value",
    error: type[ValueError] = ValueError,
    extra_keys: bool = False,
) -> _T:
    """`data` (parsed JSON) as the dataclass `cls`: strings, integers, numbers (an integer read
    as one), booleans, optionals, tuples, mappings and nested dataclasses, each checked; a
    wrong one is an `error` naming `what` and the field, never the hostile value itself."""
    return typing.cast("_T", _value(cls, data, _Reading(what, whole, error, extra_keys), ""))


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _value(hint: Any, value: object, r: _Reading, at: str) -> object:  # noqa: ANN401 - a type
    """`value` checked against the type `hint`, containers rebuilt; an error at `at`."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        (inner,) = (a for a in args if a is not type(None))
        return _value(inner, value, r, at)
    if dataclasses.is_dataclass(hint):
        return _dataclass(typing.cast("type", hint), value, r, at)
    if origin is tuple:
        items = _expect(value, list, "a list", r, at)
        return tuple(_value(args[0], v, r, f"{at}[{i}]") for i, v in enumerate(items))
    if origin is Mapping:
        obj = _expect(value, dict, "an object", r, at)
        return {k: _value(args[1], v, r, f"{at}[{shown(k)}]") for k, v in obj.items()}
    return _scalar(hint, value, r, at)


def _scalar(hint: type, value: object, r: _Reading, at: str) -> object:
    """A string, an integer, a number (an integer read as one) or a boolean, each only itself."""
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    names = {str: "a string", int: "an integer", float: "a number", bool: "a boolean"}
    return _expect(value, hint, names[hint], r, at)


def _dataclass(cls: type, value: object, r: _Reading, at: str) -> object:
    obj = _expect(value, dict, "an object", r, at)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(obj) - set(fields))
    if unknown and not r.extra_keys:
        msg = f"{r.what}: {at or r.whole} has an unknown key {shown(unknown[0])}"
        raise r.error(msg)
    hints, kwargs = _hints(cls), {}
    for name, field in fields.items():
        where = f"{at}.{name}" if at else name
        if name in obj:
            kwargs[name] = _value(hints[name], obj[name], r, where)
        elif field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            msg = f"{r.what}: {where} is missing"
            raise r.error(msg)
    return cls(**kwargs)


def _expect(value: object, kind: type[_T], named: str, r: _Reading, at: str) -> _T:
    if isinstance(value, kind) and not (isinstance(value, bool) and kind is not bool):
        return value
    msg = f"{r.what}: {at or r.whole} should be {named}, not {kind_of(value)}"
    raise r.error(msg)


def kind_of(value: object) -> str:
    """A JSON value's kind, never its content (which may be hostile)."""
    kinds = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    kinds |= {int: "an integer", float: "a number", type(None): "null"}
    return kinds.get(type(value), type(value).__name__)


def shown(value: object) -> str:
    """A hostile key or value quoted for a one-line message: escaped and cut short."""
    text = ascii(value)
    return text if len(text) <= _SHOWN else f"{text[:_SHOWN]}..."
