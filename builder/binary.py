"""Read what a compiled extension carries, without cuobjdump: the SM cubins and PTX in its
fatbin, its NEEDED libraries and the newest glibc symbol version it asks for.

ELF (Linux .so) sections: `.nv_fatbin` holds the CUDA fatbin, `.dynamic` + `.dynstr` the
NEEDED list. PE (Windows .pyd/.dll) keeps the fatbin in section `.nv_fatb`. The fatbin layout
is NVIDIA's (fatbinary.h): a 16-byte container header, then entries whose header gives the kind
(1 PTX, 2 ELF cubin), header size, padded payload size and the SM number at offset 28.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field

FATBIN_MAGIC = 0xBA55ED50
KIND_PTX, KIND_CUBIN = 1, 2
_DT_NEEDED = 1
_PE32_PLUS = 0x20B
_GLIBC = re.compile(rb"GLIBC_([0-9]+)\.([0-9]+)")


@dataclass(frozen=True)
class BinaryInfo:
    """What verify checks in one shared object."""

    cubins: frozenset[str] = field(default_factory=frozenset)
    ptx: frozenset[str] = field(default_factory=frozenset)
    needed: tuple[str, ...] = ()
    glibc: tuple[int, int] | None = None

    @property
    def has_device_code(self) -> bool:
        return bool(self.cubins or self.ptx)


def parse_fatbin(blob: bytes) -> tuple[frozenset[str], frozenset[str]]:
    """(cubins, ptx) as {'sm_90', ...} from the bytes of a fatbin section (many containers)."""
    cubins: set[str] = set()
    ptx: set[str] = set()
    pos = 0
    while pos + 16 <= len(blob):
        magic, _, header, size = struct.unpack_from("<IHHQ", blob, pos)
        if magic != FATBIN_MAGIC:
            pos += 8  # containers are 8-aligned; skip padding between them
            continue
        entry, end = pos + header, pos + header + size
        while entry + 32 <= end:
            kind, _, entry_header, payload = struct.unpack_from("<HHIQ", blob, entry)
            (sm,) = struct.unpack_from("<I", blob, entry + 28)
            if entry_header == 0:
                break
            (ptx if kind == KIND_PTX else cubins if kind == KIND_CUBIN else set()).add(f"sm_{sm}")
            entry += entry_header + payload
        pos = end
    return frozenset(cubins), frozenset(ptx)


def _elf(data: bytes) -> BinaryInfo:
    if data[4] != 2 or data[5] != 1:  # noqa: PLR2004 - ELFCLASS64, little-endian
        msg = "only 64-bit little-endian ELF is supported"
        raise ValueError(msg)
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    sections = []
    for i in range(shnum):
        name, kind, _, _, offset, size, link = struct.unpack_from(
            "<IIQQQQI", data, shoff + i * shentsize
        )
        sections.append((name, kind, offset, size, link))
    str_off = sections[shstrndx][2]

    def section_name(index: int) -> str:
        start = str_off + sections[index][0]
        return data[start : data.index(b"\0", start)].decode()

    cubins: frozenset[str] = frozenset()
    ptx: frozenset[str] = frozenset()
    needed: list[str] = []
    for i, (_, _, offset, size, link) in enumerate(sections):
        name = section_name(i)
        if name == ".nv_fatbin":
            cubins, ptx = parse_fatbin(data[offset : offset + size])
        elif name == ".dynamic":
            dynstr = sections[link][2]
            for pos in range(offset, offset + size, 16):
                tag, value = struct.unpack_from("<qQ", data, pos)
                if tag == _DT_NEEDED:
                    needed.append(data[dynstr + value : data.index(b"\0", dynstr + value)].decode())
    versions = [(int(a), int(b)) for a, b in _GLIBC.findall(data)]
    return BinaryInfo(cubins, ptx, tuple(needed), max(versions) if versions else None)


def _pe(data: bytes) -> BinaryInfo:
    """PE (.pyd/.dll): the fatbin section, and the DLL names in the import directory."""
    (pe,) = struct.unpack_from("<I", data, 0x3C)
    (nsections,) = struct.unpack_from("<H", data, pe + 6)
    (optional_size,) = struct.unpack_from("<H", data, pe + 20)
    (magic,) = struct.unpack_from("<H", data, pe + 24)
    directories = pe + 24 + (112 if magic == _PE32_PLUS else 96)
    (import_rva,) = struct.unpack_from("<I", data, directories + 8)  # entry 1: import table
    sections = []
    for i in range(nsections):
        raw = pe + 24 + optional_size + i * 40
        name = data[raw : raw + 8].rstrip(b"\0").decode(errors="replace")
        vsize, va, size, offset = struct.unpack_from("<IIII", data, raw + 8)
        sections.append((name, va, max(vsize, size), offset, size))

    def at(rva: int) -> int:
        for _, va, span, offset, _ in sections:
            if va <= rva < va + span:
                return int(rva - va + offset)
        msg = f"RVA {rva:#x} lies in no section"
        raise ValueError(msg)

    cubins: frozenset[str] = frozenset()
    ptx: frozenset[str] = frozenset()
    for name, _, _, offset, size in sections:
        if name == ".nv_fatb":
            cubins, ptx = parse_fatbin(data[offset : offset + size])
    needed = []
    pos = at(import_rva) if import_rva else -1
    while pos >= 0 and any(data[pos : pos + 20]):
        (name_rva,) = struct.unpack_from("<I", data, pos + 12)
        start = at(name_rva)
        needed.append(data[start : data.index(b"\0", start)].decode())
        pos += 20
    return BinaryInfo(cubins, ptx, tuple(needed))


def inspect_binary(data: bytes) -> BinaryInfo:
    """Dispatch on the file magic; anything else carries no device code."""
    if data[:4] == b"\x7fELF":
        return _elf(data)
    if data[:2] == b"MZ":
        return _pe(data)
    return BinaryInfo()
