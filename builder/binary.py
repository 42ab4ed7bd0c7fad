"""Read what a compiled extension carries, without cuobjdump: the SM cubins and PTX in its
fatbin, its NEEDED libraries and the newest glibc symbol version it asks for.

The containers are read with libraries that know them: pyelftools for ELF (Linux .so: the
`.nv_fatbin` section, DT_NEEDED in the dynamic section, the GLIBC_x.y names in the version
requirements `.gnu.version_r`), pefile for PE (Windows .pyd/.dll: the `.nv_fatb` section and
the import directory). No library reads NVIDIA's fatbin layout (fatbinary.h), so
`parse_fatbin` does: a 16-byte container header, then entries whose header gives the kind
(1 PTX, 2 ELF cubin), header size, padded payload size, the SM number at offset 28 and, in the
64-bit flags at offset 40, the target's variant: 0x100000 arch-specific (`sm_90a`), 0x200000
family-specific (`sm_120f`). The variant is read there and not from the cubin's ELF e_flags:
CUDA 13's cubins (ELF ABI version 8) carry the same e_flags for sm_90 and sm_90a and for
sm_120a and sm_120f (measured on nvcc 13.0 output; LLVM's reviewers found the same for `f`,
llvm/llvm-project#151604), and PTX has no ELF at all. NVIDIA's cuobjdump names each entry the
same way (`arch = sm_120f`); tests/integration/test_binary.py holds the two together.

Wheels come from anywhere, so a corrupt file must fail fast and plainly: every loop here moves
forward and stays inside the bytes it was given, and a broken ELF or PE raises ValueError.
"""

from __future__ import annotations

import io
import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field

import pefile  # type: ignore[import-untyped]
from elftools.common.exceptions import ELFError
from elftools.construct import ConstructError
from elftools.elf.dynamic import DynamicSection, DynamicTag
from elftools.elf.elffile import ELFFile
from elftools.elf.gnuversions import GNUVerNeedSection
from elftools.elf.sections import Section

FATBIN_MAGIC = 0xBA55ED50
KIND_PTX, KIND_CUBIN = 1, 2

_MAGIC = struct.pack("<I", FATBIN_MAGIC)
_CONTAINER = struct.Struct("<IHHQ")  # magic, version, header size, body size
_ENTRY = struct.Struct("<HHIQ")  # kind, version, header size, padded payload size
_ENTRY_SM = struct.Struct("<I")
_SM_OFFSET = 28
_ENTRY_MIN = _SM_OFFSET + _ENTRY_SM.size  # an entry header reaches at least past its SM field
_ENTRY_FLAGS = struct.Struct("<Q")
_FLAGS_OFFSET = 40  # an older, shorter entry header has no flags: a plain target
# The variant bits of an entry's flags, as nvcc 13.0 writes them and cuobjdump reads them.
VARIANT_BITS = ((0x100000, "a"), (0x200000, "f"))

_ELF32_HEADER, _ELF64_HEADER = 52, 64
_IMPORT_DESCRIPTOR = 20  # IMAGE_IMPORT_DESCRIPTOR; the table ends with one of zeros
_GLIBC = re.compile(r"GLIBC_([0-9]+)\.([0-9]+)(?:\.[0-9]+)*")
_VERSION_RECORD = 16  # Elf_Verneed and Elf_Vernaux are 16 bytes in both ELF classes
# pyelftools follows the offsets a file gives it; a hostile file can point them in a circle.
# The stream it reads through charges every read (bytes plus a per-call cost) and gives up
# once the charge passes the file's length plus this slack; real files stay far below it.
_READ_SLACK = 1 << 20
_READ_CALL_COST = 64

ELF_ERRORS: tuple[type[Exception], ...] = (
    ELFError,
    ConstructError,
    struct.error,
    IndexError,
    KeyError,
    ValueError,
    OverflowError,
    AssertionError,  # pyelftools asserts the type of linked sections
    AttributeError,
    TypeError,
    RecursionError,
)
PE_ERRORS: tuple[type[Exception], ...] = (
    pefile.PEFormatError,
    struct.error,
    IndexError,
    KeyError,
    ValueError,
    OverflowError,
    AttributeError,
    TypeError,
)


class _CorruptBinaryError(ValueError):
    """A truncated or malformed ELF/PE file (a ValueError, so callers catch it as one)."""


@dataclass(frozen=True)
class BinaryInfo:
    """What verify checks in one shared object."""

    cubins: frozenset[str] = field(default_factory=frozenset)
    ptx: frozenset[str] = field(default_factory=frozenset)
    needed: tuple[str, ...] = ()
    glibc: tuple[int, int] | None = None
    # its RUNPATH (or RPATH) names $ORIGIN: libraries beside it in the wheel are found
    origin: bool = False

    @property
    def has_device_code(self) -> bool:
        return bool(self.cubins or self.ptx)


def parse_fatbin(blob: bytes) -> tuple[frozenset[str], frozenset[str]]:
    """(cubins, ptx) as {'sm_90', 'sm_120a', ...} from the bytes of a fatbin section (many
    containers); PTX is named by its target too ('sm_120f' for compute_120f).

    Sizes come from the file, so none is trusted: a container or entry whose sizes run past
    the end is not read past it, and each step advances by at least one header.
    """
    cubins: set[str] = set()
    ptx: set[str] = set()
    pos = blob.find(_MAGIC)
    while pos >= 0 and pos + _CONTAINER.size <= len(blob):
        _, _, header, size = _CONTAINER.unpack_from(blob, pos)
        if header < _CONTAINER.size:  # not a container header: look for the next magic
            pos = blob.find(_MAGIC, pos + 1)
            continue
        end = pos + header + size
        for kind, arch in _entries(blob, pos + header, min(end, len(blob))):
            if kind == KIND_PTX:
                ptx.add(arch)
            elif kind == KIND_CUBIN:
                cubins.add(arch)
        pos = blob.find(_MAGIC, end)  # past the end of blob: -1
    return frozenset(cubins), frozenset(ptx)


def _entries(blob: bytes, pos: int, end: int) -> Iterator[tuple[int, str]]:
    """(kind, 'sm_90a') of each whole entry in blob[pos:end]; stops at the first one that is
    not."""
    while pos + _ENTRY_MIN <= end:
        kind, _, header, payload = _ENTRY.unpack_from(blob, pos)
        following = pos + header + payload
        if header < _ENTRY_MIN or following > end:
            return
        (sm,) = _ENTRY_SM.unpack_from(blob, pos + _SM_OFFSET)
        flags = 0
        if header >= _FLAGS_OFFSET + _ENTRY_FLAGS.size:
            (flags,) = _ENTRY_FLAGS.unpack_from(blob, pos + _FLAGS_OFFSET)
        # both bits (no nvcc writes that): `a`, the narrower
        variant = next((v for bit, v in VARIANT_BITS if flags & bit), "")
        yield kind, f"sm_{sm}{variant}"
        pos = following


class MeteredStream(io.BytesIO):
    """The ELF bytes, charging each read so that no table walk can go on forever."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self._left = len(data) + _READ_SLACK

    def read(self, size: int | None = -1, /) -> bytes:
        chunk = super().read(size)
        self._left -= len(chunk) + _READ_CALL_COST
        if self._left < 0:
            msg = "corrupt ELF: its tables overlap or loop (read far more than the file holds)"
            raise _CorruptBinaryError(msg)
        return chunk


def _elf(data: bytes) -> BinaryInfo:
    try:
        return _read_elf(data)
    except _CorruptBinaryError:
        raise
    except ELF_ERRORS as exc:
        msg = f"corrupt ELF: {exc or type(exc).__name__}"
        raise _CorruptBinaryError(msg) from exc


def _read_elf(data: bytes) -> BinaryInfo:
    if len(data) < (_ELF64_HEADER if data[4:5] == b"\x02" else _ELF32_HEADER):
        msg = "truncated ELF: shorter than its file header"
        raise _CorruptBinaryError(msg)
    elf = ELFFile(MeteredStream(data))
    count = elf.num_sections()
    table_end: int = elf["e_shoff"] + count * elf["e_shentsize"]
    if count and table_end > len(data):
        msg = "truncated ELF: the section header table ends past the end of the file"
        raise _CorruptBinaryError(msg)
    cubins: set[str] = set()
    ptx: set[str] = set()
    needed: list[str] = []
    origin = False
    glibc: list[tuple[int, int]] = []
    for section in elf.iter_sections():
        if section.name == ".nv_fatbin":
            found_cubins, found_ptx = parse_fatbin(_section_bytes(section, data))
            cubins |= found_cubins
            ptx |= found_ptx
        elif isinstance(section, DynamicSection):
            for tag in _tags(section, len(data), elf.elfclass):
                if tag["d_tag"] == "DT_NEEDED":
                    needed.append(_tag_text(tag, "needed"))
                elif tag["d_tag"] in {"DT_RUNPATH", "DT_RPATH"}:
                    paths = _tag_text(tag, "runpath" if tag["d_tag"] == "DT_RUNPATH" else "rpath")
                    origin |= bool({"$ORIGIN", "${ORIGIN}"} & set(paths.split(":")))
        elif isinstance(section, GNUVerNeedSection):
            glibc.extend(_glibc_versions(section, len(data)))
    return BinaryInfo(
        frozenset(cubins), frozenset(ptx), tuple(needed), max(glibc, default=None), origin
    )


def _section_end(section: Section, size: int) -> int:
    """The file offset where section's bytes end, checked against the file size."""
    end = section["sh_offset"] + section["sh_size"]
    if section["sh_type"] != "SHT_NOBITS" and end > size:
        msg = f"truncated ELF: section {section.name} ends past the end of the file"
        raise _CorruptBinaryError(msg)
    return end


def _section_bytes(section: Section, data: bytes) -> bytes:
    if section["sh_type"] == "SHT_NOBITS":
        return b""
    if section.compressed:  # linkers compress debug sections only; nvcc never this one
        msg = f"unsupported ELF: section {section.name} is compressed"
        raise _CorruptBinaryError(msg)
    return data[section["sh_offset"] : _section_end(section, len(data))]


def _tags(section: DynamicSection, size: int, elfclass: int) -> Iterator[DynamicTag]:
    """The dynamic section's tags, reading no more than the section holds."""
    _section_end(section, size)
    capacity = section["sh_size"] // (2 * elfclass // 8)  # Elf_Dyn: d_tag, d_val
    for index, tag in enumerate(section.iter_tags()):
        if index >= capacity:
            return  # no DT_NULL inside the section: stop at its end
        yield tag


def _tag_text(tag: DynamicTag, field: str) -> str:
    """A string tag's text (pyelftools sets `needed`, `runpath`, `rpath` from .dynstr)."""
    text = getattr(tag, field, None)
    if not isinstance(text, str):
        msg = f"corrupt ELF: a {tag['d_tag']} entry has no name"
        raise _CorruptBinaryError(msg)
    return text


def _glibc_versions(section: GNUVerNeedSection, size: int) -> Iterator[tuple[int, int]]:
    """(major, minor) of every GLIBC_x.y[.z] version the file requires (`.gnu.version_r`)."""
    _section_end(section, size)
    capacity = section["sh_size"] // _VERSION_RECORD
    records = 0
    for _, auxiliaries in section.iter_versions():
        records += 1
        for aux in auxiliaries:
            records += 1
            if records > capacity:
                break
            match = _GLIBC.fullmatch(aux.name)
            if match:
                yield int(match[1]), int(match[2])
        if records > capacity:  # sh_info or vn_cnt claim more records than fit
            msg = f"corrupt ELF: {section.name} lists more versions than it holds"
            raise _CorruptBinaryError(msg)


def _pe(data: bytes) -> BinaryInfo:
    try:
        return _read_pe(data)
    except _CorruptBinaryError:
        raise
    except PE_ERRORS as exc:
        reason = str(exc).strip("'") or type(exc).__name__  # pefile quotes its messages
        msg = f"corrupt PE: {reason}"
        raise _CorruptBinaryError(msg) from exc


def _read_pe(data: bytes) -> BinaryInfo:
    """PE (.pyd/.dll): the fatbin section, and the DLL names in the import directory."""
    pe = pefile.PE(data=data, fast_load=True)
    declared: int = pe.FILE_HEADER.NumberOfSections
    if len(pe.sections) < declared:  # pefile stops at the first unreadable section header
        msg = f"truncated PE: only {len(pe.sections)} of {declared} section headers are readable"
        raise _CorruptBinaryError(msg)
    cubins: set[str] = set()
    ptx: set[str] = set()
    for section in pe.sections:
        name = bytes(section.Name).rstrip(b"\0").decode(errors="replace")
        start: int = section.PointerToRawData
        raw_size: int = section.SizeOfRawData
        if start + raw_size > len(data):
            msg = f"truncated PE: section {name} ends past the end of the file"
            raise _CorruptBinaryError(msg)
        if name == ".nv_fatb":
            found_cubins, found_ptx = parse_fatbin(bytes(section.get_data()))
            cubins |= found_cubins
            ptx |= found_ptx
    index: int = pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_IMPORT"]
    pe.parse_data_directories(directories=[index], import_dllnames_only=True)
    needed = [bytes(entry.dll).decode() for entry in getattr(pe, "DIRECTORY_ENTRY_IMPORT", [])]
    directories = pe.OPTIONAL_HEADER.DATA_DIRECTORY
    rva = directories[index].VirtualAddress if index < len(directories) else 0
    # mingw-w64's ld writes an import directory of only its null descriptor for a DLL that
    # imports nothing: an empty table, not a corrupt one
    if not needed and rva and pe.get_data(rva, _IMPORT_DESCRIPTOR) != bytes(_IMPORT_DESCRIPTOR):
        msg = "corrupt PE: the import directory could not be read"
        raise _CorruptBinaryError(msg)
    return BinaryInfo(frozenset(cubins), frozenset(ptx), tuple(needed))


BINARY_SUFFIXES = (".so", ".pyd", ".dll")


def is_binary(name: str) -> bool:
    """A shared object by its file name: .so, .pyd, .dll, or a versioned libfoo.so.1.

    >>> is_binary("pkg/_C.cpython-312-x86_64-linux-gnu.so"), is_binary("x.libs/libgomp.so.1")
    (True, True)
    >>> is_binary("pkg/__init__.py"), is_binary("pkg.libs/LIBZSTD.DLL")
    (False, True)

    Windows names are of any case: delvewheel vendors a DLL under the name it has on disk.
    """
    return name.lower().endswith(BINARY_SUFFIXES) or ".so." in name.rsplit("/", 1)[-1]


def inspect_binary(data: bytes) -> BinaryInfo:
    """Dispatch on the file magic; anything else carries no device code.

    Raises ValueError, with a short reason, for a truncated or malformed ELF or PE file.
    """
    if data[:4] == b"\x7fELF":
        return _elf(data)
    if data[:2] == b"MZ":
        return _pe(data)
    return BinaryInfo()
