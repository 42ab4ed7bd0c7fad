"""builder.binary on real files the interpreter brings along (its own ELF shared objects, the
PE launchers distlib ships) and on hand-built fatbins, hostile ones included."""

from __future__ import annotations

import io
import random
import signal
import struct
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from types import FrameType

import pytest
from elftools.elf.elffile import ELFFile
from hypothesis import given, settings
from hypothesis import strategies as st

from wheelfarm.builder.binary import (
    FATBIN_MAGIC,
    KIND_CUBIN,
    KIND_PTX,
    BinaryInfo,
    inspect_binary,
    parse_fatbin,
)

linux_only = pytest.mark.skipif(
    sys.platform != "linux", reason="the interpreter's own shared objects are ELF on Linux"
)


@contextmanager
def deadline(seconds: float = 5.0) -> Iterator[None]:
    """Turn a hang in the body into a test failure (SIGALRM; a no-op where there is none)."""
    if not hasattr(signal, "SIGALRM"):
        yield
        return

    def expire(signum: int, frame: FrameType | None) -> None:
        msg = f"still running after {seconds}s"
        raise TimeoutError(msg)

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def entry(kind: int, sm: int, payload: bytes = b"\0" * 16, header: int = 64) -> bytes:
    """One fatbin entry: kind, version 0x101, header size, payload size, SM at offset 28."""
    head = struct.pack("<HHIQ", kind, 0x101, header, len(payload)) + b"\0" * 12
    head += struct.pack("<I", sm)
    return head.ljust(64, b"\0") + payload


def container(*entries: bytes, header: int = 16, size: int | None = None) -> bytes:
    body = b"".join(entries)
    return struct.pack("<IHHQ", FATBIN_MAGIC, 1, header, len(body) if size is None else size) + body


GOOD = container(entry(KIND_CUBIN, 80), entry(KIND_CUBIN, 90), entry(KIND_PTX, 90))


def interpreter() -> Path:
    return Path(sys.executable).resolve()


def stdlib_extension() -> Path:
    """A lib-dynload module that links libc (and libssl)."""
    ssl = pytest.importorskip("_ssl")
    if not ssl.__file__:
        pytest.skip("_ssl is built into this interpreter")
    return Path(ssl.__file__).resolve()


def launcher(name: str) -> Path:
    import distlib

    return Path(distlib.__file__).parent / name


# --- fatbin ------------------------------------------------------------------------------------


def test_fatbin_entries_become_sm_names() -> None:
    assert parse_fatbin(GOOD) == (frozenset({"sm_80", "sm_90"}), frozenset({"sm_90"}))


def test_fatbin_reads_every_container_and_skips_padding_and_other_kinds() -> None:
    blob = GOOD + b"\0" * 8 + container(entry(KIND_CUBIN, 120), entry(16, 75)) + b"\0" * 24
    assert parse_fatbin(blob) == (frozenset({"sm_80", "sm_90", "sm_120"}), frozenset({"sm_90"}))
    assert parse_fatbin(b"") == (frozenset(), frozenset())


HOSTILE = {
    "entry header size 0": container(entry(KIND_CUBIN, 80, header=0)),
    "entry header shorter than its SM field": container(entry(KIND_CUBIN, 80, header=8)),
    "entry header size past the end": container(entry(KIND_CUBIN, 80, header=0xFFFFFFFF)),
    "container header size 0, body 0": struct.pack("<IHHQ", FATBIN_MAGIC, 1, 0, 0) * 4,
    "container header size past the end": struct.pack("<IHHQ", FATBIN_MAGIC, 1, 0xFFFF, 0),
    "magic alone at the end": b"\0" * 8 + struct.pack("<I", FATBIN_MAGIC),
}


@pytest.mark.parametrize("blob", HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_fatbin_yields_nothing(blob: bytes) -> None:
    with deadline():
        assert parse_fatbin(blob) == (frozenset(), frozenset())


def test_entry_whose_payload_runs_past_the_end_is_not_counted() -> None:
    head = bytearray(entry(KIND_CUBIN, 90))
    struct.pack_into("<Q", head, 8, 2**63)  # payload size
    blob = container(entry(KIND_CUBIN, 80), bytes(head))
    with deadline():
        assert parse_fatbin(blob) == (frozenset({"sm_80"}), frozenset())


def test_container_claiming_more_than_the_blob_is_read_up_to_its_end() -> None:
    blob = container(entry(KIND_CUBIN, 80), entry(KIND_PTX, 80), size=2**64 - 1)
    with deadline():
        assert parse_fatbin(blob) == (frozenset({"sm_80"}), frozenset({"sm_80"}))


def test_every_prefix_of_a_fatbin_is_read_safely() -> None:
    cubins, ptx = parse_fatbin(GOOD)
    with deadline():
        for cut in range(len(GOOD)):
            got_cubins, got_ptx = parse_fatbin(GOOD[:cut])
            assert got_cubins <= cubins
            assert got_ptx <= ptx


def test_random_bytes_with_magic_sprinkled_in() -> None:
    rng = random.Random(0)  # noqa: S311 - reproducible test data, not secrets
    magic = struct.pack("<I", FATBIN_MAGIC)
    with deadline():
        for _ in range(300):
            blob = bytearray(rng.randbytes(rng.randrange(4096)))
            for _ in range(rng.randrange(8)):
                pos = rng.randrange(len(blob) + 1)
                blob[pos:pos] = magic
            cubins, ptx = parse_fatbin(bytes(blob))
            assert all(name.startswith("sm_") for name in cubins | ptx)


# --- ELF ---------------------------------------------------------------------------------------


@linux_only
@pytest.mark.parametrize("path", [interpreter, stdlib_extension], ids=["python", "_ssl"])
def test_real_elf_needs_libc_and_names_a_glibc_version(path: Callable[[], Path]) -> None:
    info = inspect_binary(path().read_bytes())
    assert "libc.so.6" in info.needed
    assert info.glibc is not None
    major, minor = info.glibc
    assert major == 2
    assert minor >= 2
    assert not info.has_device_code
    assert info.cubins == info.ptx == frozenset()


@linux_only
def test_stdlib_extension_lists_its_own_libraries() -> None:
    info = inspect_binary(stdlib_extension().read_bytes())
    assert any(name.startswith("libssl.so") for name in info.needed)


@linux_only
@pytest.mark.parametrize(
    "cut",
    [lambda data: 64, lambda data: len(data) // 2, lambda data: 20],
    ids=["first 64 bytes", "first half", "inside the file header"],
)
def test_truncated_elf_raises_value_error(cut: Callable[[bytes], int]) -> None:
    data = stdlib_extension().read_bytes()
    with deadline(), pytest.raises(ValueError, match=r"^truncated ELF: "):
        inspect_binary(data[: cut(data)])


def section_header(data: bytes, name: str) -> int:
    """File offset of the named section's header in a 64-bit ELF."""
    elf = ELFFile(io.BytesIO(data))
    if elf.elfclass != 64:
        pytest.skip("the layout below is Elf64_Shdr")
    for index, section in enumerate(elf.iter_sections()):
        if section.name == name:
            offset: int = elf["e_shoff"] + index * elf["e_shentsize"]
            return offset
    pytest.skip(f"no {name} section")


@linux_only
def test_version_needs_that_loop_raise_instead_of_hanging() -> None:
    data = bytearray(stdlib_extension().read_bytes())
    header = section_header(bytes(data), ".gnu.version_r")
    struct.pack_into("<I", data, header + 44, 0xFFFFFFFF)  # sh_info: how many Elf_Verneed
    (start,) = struct.unpack_from("<Q", data, header + 24)  # sh_offset
    struct.pack_into("<I", data, start + 12, 0)  # vn_next 0: the same record again and again
    with deadline(), pytest.raises(ValueError, match=r"\.gnu\.version_r"):
        inspect_binary(bytes(data))


@linux_only
def test_dynamic_section_without_terminator_stops_at_its_end() -> None:
    data = bytearray(stdlib_extension().read_bytes())
    header = section_header(bytes(data), ".dynamic")
    start, size = struct.unpack_from("<QQ", data, header + 24)
    for pos in range(start, start + size, 16):
        struct.pack_into("<qQ", data, pos, 0x7FFFFFFF, 0)  # an unknown tag, never DT_NULL
    with deadline():
        assert inspect_binary(bytes(data)).needed == ()


@linux_only
def test_mutated_headers_give_a_result_or_value_error() -> None:
    """Flip bytes in the file header and the section header table (at the end of the file)."""
    original = stdlib_extension().read_bytes()
    rng = random.Random(1)  # noqa: S311 - reproducible test data, not secrets
    with deadline(20):
        for _ in range(300):
            data = bytearray(original)
            for _ in range(rng.randint(1, 8)):
                pos = rng.choice([rng.randrange(64), len(data) - 1 - rng.randrange(4096)])
                data[pos] = rng.randrange(256)
            with suppress(ValueError):  # a result or ValueError; anything else fails
                assert isinstance(inspect_binary(bytes(data)), BinaryInfo)


# --- PE ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["t64.exe", "t32.exe"])
def test_real_pe_imports(name: str) -> None:
    info = inspect_binary(launcher(name).read_bytes())
    assert "KERNEL32.dll" in info.needed
    assert not info.has_device_code
    assert info.glibc is None


@pytest.mark.parametrize(
    "cut",
    [lambda data: 64, lambda data: len(data) // 2, lambda data: 400],
    ids=["first 64 bytes", "first half", "inside the section table"],
)
def test_truncated_pe_raises_value_error(cut: Callable[[bytes], int]) -> None:
    data = launcher("t64.exe").read_bytes()
    with deadline(), pytest.raises(ValueError, match=r"^(truncated|corrupt) PE: "):
        inspect_binary(data[: cut(data)])


# The mingw-built DLL whose .nv_fatb holds nvcc 13.0's sm_90 and sm_120a (+PTX) fatbin
# (tests/unit/fatbins/README.md; tests/integration/test_windows_fatbin.py rebuilds it).
FATBIN_DLL = Path(__file__).parent / "fatbins" / "sm_90_sm_120a_ptx.dll"


def test_real_pe_fatbin_archs() -> None:
    info = inspect_binary(FATBIN_DLL.read_bytes())
    assert (info.cubins, info.ptx, info.needed) == ({"sm_90", "sm_120a"}, {"sm_120a"}, ())


@settings(max_examples=200, deadline=None, database=None)
@given(cut=st.integers(2, FATBIN_DLL.stat().st_size - 1))  # from past its "MZ"
def test_truncated_pe_fatbin_is_one_line(cut: int) -> None:
    """Cut anywhere, the stripped DLL (which ends with its last section) is refused in one line."""
    with deadline(), pytest.raises(ValueError, match=r"^(truncated|corrupt) PE: [^\n]*$"):
        inspect_binary(FATBIN_DLL.read_bytes()[:cut])


# --- dispatch ----------------------------------------------------------------------------------


@pytest.mark.parametrize("data", [b"", b"PK\x03\x04 a zip", b"#!/bin/sh\n", b"\x7fEL"])
def test_neither_elf_nor_pe_carries_nothing(data: bytes) -> None:
    assert inspect_binary(data) == BinaryInfo()


@pytest.mark.parametrize(
    "data",
    [b"\x7fELF", b"\x7fELF\x09\x01" + b"\0" * 64, b"MZ"],
    ids=["ELF magic only", "ELF of no class", "MZ only"],
)
def test_bare_magic_raises_value_error(data: bytes) -> None:
    with pytest.raises(ValueError, match=r"(ELF|PE): "):
        inspect_binary(data)
