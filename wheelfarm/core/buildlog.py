"""Reading a build log the way a maintainer would: the first compiler error (its cause), not the
last pip line, and progress lines without the compiler's caret lines."""

from __future__ import annotations

import re
from collections.abc import Sequence

# gcc/clang `f.cpp:12:5: error: ...`, nvcc/cicc `f.cu(12): error: ...`, cl
# `f.cpp(12): error C2065: ...` and a linker's `f.obj : error LNK2019: ...`: a place, then error.
_LOCATED = re.compile(
    r"(?::\d+(?::\d+)?:|\(\d+(?:,\d+)?\)\s*:|\s:)\s*(?:fatal\s+)?error\b", re.IGNORECASE
)
# A tool's own error without a location: `nvcc fatal   : ...`, `ptxas fatal`, `ld: cannot find`.
_TOOL = re.compile(
    r"^(?:nvcc|ptxas|cicc|nvlink|fatbinary)\s+(?:fatal|error)\s*:"
    r"|^\S*ld(?:\.\w+)?: (?:cannot|error)"
)
# pip's and setuptools' summaries of a failure: they name no cause.
_SUMMARY = re.compile(
    r"subprocess-exited-with-error|Failed building wheel|failed-wheel-build"
    r"|ld returned|error: command "
)
# A compiler's caret line under a quoted source line: `   |     ^~~~` or `      ^`.
_CARET = re.compile(r"^\s*(?:\d*\s*\|)?\s*[\^~]+[\^~ ]*$")
WIDTH = 300
CONTEXT = 20


def _first_error(lines: Sequence[str]) -> int | None:
    """Index of the first compiler, cicc or linker error line in `lines`, or None."""
    for i, line in enumerate(lines):
        text = line.strip()
        if _SUMMARY.search(text):
            continue
        if _LOCATED.search(text) or _TOOL.search(text):
            return i
    return None


def cause(lines: Sequence[str]) -> str | None:
    """The first error line, shortened to one readable line, or None when the log has none."""
    found = _first_error(lines)
    if found is None:
        return None
    text = " ".join(lines[found].split())
    return text if len(text) <= WIDTH else text[: WIDTH - 3] + "..."


def around(lines: Sequence[str]) -> list[str]:
    """The CONTEXT lines around the first error (for -v), or none."""
    found = _first_error(lines)
    if found is None:
        return []
    start = max(0, found - CONTEXT // 2)
    return list(lines[start : start + CONTEXT])


def is_caret(line: str) -> bool:
    """Whether `line` is a compiler's caret/tilde marker line, which says nothing on its own."""
    return bool(_CARET.match(line)) and bool(line.strip())


def exception(lines: Sequence[str]) -> str | None:
    """The exception a Python child died of (`Type: message`, its traceback's last line) from
    the log's last traceback, or None when the log holds none."""
    starts = [i for i, line in enumerate(lines) if line.startswith("Traceback (most recent call")]
    if not starts:
        return None
    tail = [ln.strip() for ln in lines[starts[-1] + 1 :] if ln.strip()]
    body = [ln for ln in tail if not ln.startswith(("File ", "+ ", "^", "~"))]
    if not body:
        return None
    text = " ".join(body[-1].split())
    return text if len(text) <= WIDTH else text[: WIDTH - 3] + "..."
