"""builder/symbols.py's reader on hostile bytes (its lookups against real ELF files the C
compiler links are in tests/integration/test_symbols.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wheelfarm.builder.symbols import check

# a real ELF with versioned imports and exports: this machine's C library
LIBC = next(
    (p for p in (Path("/lib/x86_64-linux-gnu/libc.so.6"), Path("/lib64/libc.so.6")) if p.is_file()),
    None,
)
pytestmark = pytest.mark.skipif(LIBC is None, reason="needs a glibc libc.so.6 to mutate")


@settings(max_examples=300, deadline=None, database=None)
@given(data=st.data())
def test_hostile_bytes_are_one_line_never_a_traceback(data: st.DataObject) -> None:
    """Cut, flipped or random bytes after a real ELF's header: a list of lines, no exception."""
    assert LIBC is not None
    real = LIBC.read_bytes()
    kind = data.draw(st.sampled_from(["cut", "flip", "random"]))
    if kind == "cut":
        blob = real[: data.draw(st.integers(4, len(real) - 1))]
    elif kind == "flip":
        at = data.draw(st.lists(st.integers(16, len(real) - 1), min_size=1, max_size=16))
        buf = bytearray(real)
        for i in at:
            buf[i] = data.draw(st.integers(0, 255))
        blob = bytes(buf)
    else:
        blob = data.draw(st.sampled_from([b"\x7fELF", b"MZ"])) + data.draw(st.binary(max_size=4096))
    lines = check("pkg/libc.so.6", blob, {}, "env")
    assert all(isinstance(line, str) and "\n" not in line for line in lines)
