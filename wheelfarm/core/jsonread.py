"""The one JSON reader: every JSON the farm reads (packages.json, the site's file list, build
records, API bodies, PEP 691 pages) comes from a file or a server it does not control, so it is
read with a size and a nesting limit and fails as a `ValueError` naming what was read, never as
a RecursionError or a MemoryError."""

from __future__ import annotations

import json
import re
from typing import Any

MAX_BYTES = 256 << 20  # a packages.json of 100,000 wheels is about 60 MB
MAX_DEPTH = 64  # the deepest document the farm writes or reads nests 6 levels
_STRINGS = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKETS = re.compile(rb"[\[\]{}]")
_OPENERS = frozenset(b"[{")


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
