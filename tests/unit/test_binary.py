"""builder.binary on real files the interpreter brings along (its own ELF shared objects, the
PE launchers distlib ships) and on hand-built fatbins, hostile ones included."""

from __future__ import annotations

import io
import random
import struct
import sys
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.helpers.strategies import FEW, SOME, _mutated, _outcome, deadline
from tests.unit.helpers.wheels import (
    FATBINS,
    _own,
    _problems_one_arch_per_binary,
    _wheel_one_arch_per_binary,
    elf_with_origin,
)
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
def test_a_runpath_naming_origin_is_read() -> None:
    plain, origin = elf_with_origin()
    assert not inspect_binary(plain).origin
    info = inspect_binary(origin)
    assert info.origin
    assert not any(name.startswith("libssl") for name in info.needed)


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
# (tests/unit/fatbins/README.md; tests/integration/test_binary.py rebuilds it).
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


def _flagged(kind: int, sm: int, flags: int, header: int = 64) -> bytes:
    """One entry with `flags` at offset 40 (where nvcc puts the variant bits)."""
    head = struct.pack("<HHIQ", kind, 0x101, header, 16) + b"\0" * 12 + struct.pack("<I", sm)
    head = head.ljust(40, b"\0") + struct.pack("<Q", flags)
    return head.ljust(header, b"\0")[:header] + b"\0" * 16


@pytest.mark.parametrize("arch", ["sm_90", "sm_90a", "sm_120a", "sm_120f"])
def test_nvcc_fatbins_keep_their_variant(arch: str) -> None:
    cubins, ptx = parse_fatbin((FATBINS / f"{arch}.fatbin").read_bytes())
    assert cubins == ptx == frozenset({arch})


def test_variant_bits_of_hand_built_entries() -> None:
    blob = container(
        _flagged(KIND_CUBIN, 100, 0x100011),
        _flagged(KIND_CUBIN, 120, 0x200011),
        _flagged(KIND_PTX, 103, 0x300000),  # both bits (no nvcc writes it): the narrower, `a`
        _flagged(KIND_PTX, 80, 0x11),
    )
    assert parse_fatbin(blob) == (
        frozenset({"sm_100a", "sm_120f"}),
        frozenset({"sm_103a", "sm_80"}),
    )


def test_a_header_too_short_for_flags_is_a_plain_target() -> None:
    """Headers of 32-47 bytes end before the flags: read as plain, nothing past the header."""
    short = struct.pack("<HHIQ", KIND_CUBIN, 0x101, 40, 8) + b"\0" * 12 + struct.pack("<I", 90)
    blob = container(short.ljust(40, b"\xff") + b"\xff" * 8)
    assert parse_fatbin(blob) == (frozenset({"sm_90"}), frozenset())


def fatbin(entries: list[tuple[int, int]]) -> bytes:
    """A fatbin container in NVIDIA's layout: (kind, sm) entries with tiny payloads."""
    body = b""
    for kind, sm in entries:
        payload = b"\0" * 16
        header = struct.pack("<HHIQ", kind, 0x101, 64, len(payload)) + b"\0" * 12
        header += struct.pack("<I", sm) + b"\0" * (64 - 32)
        body += header + payload
    return struct.pack("<IHHQ", FATBIN_MAGIC, 1, 16, len(body)) + body


def test_parse_fatbin_reads_sass_and_ptx_across_containers() -> None:
    blob = fatbin([(2, 80), (2, 90), (1, 90)]) + b"\0" * 8 + fatbin([(2, 120)])
    cubins, ptx = parse_fatbin(blob)
    assert cubins == {"sm_80", "sm_90", "sm_120"}
    assert ptx == {"sm_90"}


@pytest.mark.parametrize(
    ("binaries", "problem"),
    [
        ({80: _own(80)}, "no binary holds sm_90"),
        ({80: [(KIND_CUBIN, 80)], 90: _own(90)}, "_80_C.cpython-311-x86_64-linux-gnu.so: missing PTX for sm_80"),
        ({80: [*_own(80), (KIND_CUBIN, 90)], 90: _own(90)}, "_80_C.cpython-311-x86_64-linux-gnu.so: holds SASS for sm_80, sm_90, not one arch of 8.0;9.0"),
        ({80: _own(80), 90: _own(90), 86: _own(86)}, "_86_C.cpython-311-x86_64-linux-gnu.so: holds SASS for sm_86, not one arch"),
    ],
)  # fmt: skip
def test_a_binary_off_the_layout_is_named(
    tmp_path: Path, binaries: dict[int, list[tuple[int, int]]], problem: str
) -> None:
    problems = _problems_one_arch_per_binary(
        _wheel_one_arch_per_binary(tmp_path, binaries), "8.0;9.0"
    )
    assert any(problem in p for p in problems), problems


ELF_OR_PE = st.sampled_from([b"\x7fELF", b"\x7fELF\x02\x01\x01", b"\x7fELF\x01\x02\x01", b"MZ"])


ENTRIES = st.builds(
    entry,
    st.integers(0, 3),  # kind: 1 PTX, 2 cubin, others skipped
    st.integers(0, 2**32 - 1),  # sm
    st.binary(max_size=32),
    header=st.sampled_from([0, 8, 64, 2**32 - 1]) | st.integers(0, 200),
)


CONTAINERS = st.builds(
    lambda entries, header, size: container(*entries, header=header, size=size),
    st.lists(ENTRIES, max_size=4),
    st.sampled_from([0, 16, 0xFFFF]) | st.integers(0, 64),
    st.none() | st.integers(0, 2**64 - 1),
)


@SOME
@given(
    data=st.one_of(
        st.binary(max_size=512), st.builds(bytes.__add__, ELF_OR_PE, st.binary(max_size=512))
    )
)
def test_inspect_binary_on_bytes(data: bytes) -> None:
    assert isinstance(_outcome(lambda: inspect_binary(data), ValueError), (BinaryInfo, ValueError))


@FEW
@given(data=st.data())
@pytest.mark.parametrize("which", ["elf", "pe", "pe_fatbin"])
def test_inspect_binary_on_mutated_real_files(which: str, data: st.DataObject) -> None:
    if which == "elf" and sys.platform != "linux":
        pytest.skip("the interpreter's own shared objects are ELF on Linux")
    paths = {"pe": launcher("t64.exe"), "pe_fatbin": FATBIN_DLL}
    path = stdlib_extension() if which == "elf" else paths[which]
    blob = data.draw(_mutated(path.read_bytes()[:65536]))
    outcome = _outcome(lambda: inspect_binary(blob), ValueError)
    assert isinstance(outcome, (BinaryInfo, ValueError))
    assert "\n" not in str(outcome)  # an error is one line


@SOME
@given(parts=st.lists(CONTAINERS | st.binary(max_size=80), max_size=6))
def test_parse_fatbin_is_total(parts: list[bytes]) -> None:
    cubins, ptx = _outcome(lambda: parse_fatbin(b"".join(parts)))
    assert all(name.startswith("sm_") for name in cubins | ptx)
