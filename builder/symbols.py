"""Check that a binary's every import exists in the libraries of the torch it loads with.

One compile serves the CUDA minors of a major (docs/adr/0019-one-compile-per-cuda-major.md): a
cu132 wheel is the cu130 compile relabelled, so before it is listed verify reads what each of
its binaries imports and looks each import up in what that minor's torch environment exports.
A symbol the variant's runtime lacks (an API newer than its libcudart, a torch symbol of
another build) is refused with one line naming it, before any user's import fails on it.

What is checked:
- ELF: every global undefined symbol with a version (`cudaMalloc@libcudart.so.13`) whose
  version's library (`.gnu.version_r`) is in the environment must be defined there with that
  version (`.gnu.version_d`); an unversioned one of torch's own (C++ in c10, at, torch, the
  stable ABI's C shim) must be defined by a library it needs (DT_NEEDED) that the environment
  holds. Weak imports are optional, and what only the interpreter, libc or the driver provides
  (Python's C API, libcuda) is not in an environment and not checked here (auditwheel's policy
  holds the system libraries).
- PE: every import by name from a DLL the environment holds must be in its export table.

The symbol tables are read with `struct` over sections pyelftools finds: libtorch_cuda holds
over 100,000 dynamic symbols, which pyelftools' per-symbol parsing takes minutes to walk.
Every offset comes from the file and is checked against it, so a hostile binary fails with a
ValueError in a line, never a hang or a traceback.
"""

from __future__ import annotations

import os
import struct
import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import IO

import pefile  # type: ignore[import-untyped]
from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile
from elftools.elf.gnuversions import GNUVerDefSection, GNUVerNeedSection
from elftools.elf.sections import Section

from wheelfarm.builder.binary import ELF_ERRORS, PE_ERRORS, MeteredStream, is_binary

_SHN_UNDEF = 0
_BIND_GLOBAL, _BIND_WEAK = 1, 2
ELF64 = 64
_SYM = {32: struct.Struct("<IIIBBH"), ELF64: struct.Struct("<IBBHQQ")}  # Elf32_Sym / Elf64_Sym
# the symbols of torch's own libraries: C++ in its namespaces (const members too) and the
# stable ABI's C shim; anything else unversioned may come from the interpreter or the system
TORCH_PREFIXES = ("_ZN3c10", "_ZNK3c10", "_ZN2at", "_ZNK2at", "_ZN5torch", "_ZNK5torch")
TORCH_C_PREFIXES = ("aoti_torch_", "torch_")


@dataclass(frozen=True)
class Import:
    """One symbol a binary imports: from `library` with `version` where it names them."""

    name: str
    version: str | None = None
    library: str | None = None


@dataclass(frozen=True)
class _Symbols:
    """A binary's imports and exports (`name@version`, and the bare name for unversioned
    ones), and the libraries it needs."""

    imports: tuple[Import, ...]
    exports: frozenset[str]
    needed: tuple[str, ...]
    versioned: bool = False  # its exports carry versions (.gnu.version_d)


def read_symbols(stream: IO[bytes], size: int) -> _Symbols:
    """The symbols of an ELF or PE file read from `stream` (`size` bytes); ValueError for a
    file that is neither or is corrupt."""
    stream.seek(0)
    magic = stream.read(4)
    stream.seek(0)
    if magic == b"\x7fELF":
        try:
            return _elf_symbols(stream, size)
        except ELF_ERRORS as exc:
            msg = f"corrupt ELF symbol tables: {exc or type(exc).__name__}"
            raise ValueError(msg) from exc
    if magic[:2] == b"MZ":
        try:
            return _pe_symbols(stream.read(size))
        except PE_ERRORS as exc:
            reason = str(exc).strip("'") or type(exc).__name__  # pefile quotes its messages
            msg = f"corrupt PE import or export table: {reason}"
            raise ValueError(msg) from exc
    msg = "not an ELF or PE binary"
    raise ValueError(msg)


def _bytes_of(section: Section, size: int) -> bytes:
    start, length = section["sh_offset"], section["sh_size"]
    if section["sh_type"] == "SHT_NOBITS":
        return b""
    if start + length > size:
        msg = f"section {section.name} ends past the end of the file"
        raise ValueError(msg)
    return bytes(section.data())


def _name(strings: bytes, offset: int) -> str:
    if offset >= len(strings):
        msg = "a symbol's name lies outside its string table"
        raise ValueError(msg)
    end = strings.find(b"\0", offset)
    return strings[offset : end if end >= 0 else len(strings)].decode("utf-8", "replace")


def _elf_symbols(stream: IO[bytes], size: int) -> _Symbols:
    elf = ELFFile(stream)
    dynsym = elf.get_section_by_name(".dynsym")
    needed: list[str] = []
    dynamic = elf.get_section_by_name(".dynamic")
    if isinstance(dynamic, DynamicSection):
        capacity = dynamic["sh_size"] // (2 * elf.elfclass // 8)
        for index, tag in enumerate(dynamic.iter_tags()):
            if index >= capacity or tag["d_tag"] == "DT_NULL":
                break
            if tag["d_tag"] == "DT_NEEDED":
                needed.append(str(getattr(tag, "needed", "")))
    if dynsym is None:
        return _Symbols((), frozenset(), tuple(needed))
    table = _bytes_of(dynsym, size)
    strings = _bytes_of(elf.get_section(dynsym["sh_link"]), size)
    versions = _version_names(elf)
    versym = elf.get_section_by_name(".gnu.version")
    indexes = _bytes_of(versym, size) if versym is not None else b""
    layout = _SYM[elf.elfclass]
    # (st_name, st_info, st_shndx) sit at other places in the two classes' records
    at_name, at_info, at_shndx = (0, 1, 3) if elf.elfclass == ELF64 else (0, 3, 5)
    imports: list[Import] = []
    exports: set[str] = set()
    whole = table[: len(table) // layout.size * layout.size]
    for number, fields in enumerate(layout.iter_unpack(whole)):
        name_at, info, shndx = fields[at_name], fields[at_info], fields[at_shndx]
        bind = info >> 4
        if number == 0 or bind not in (_BIND_GLOBAL, _BIND_WEAK):
            continue
        name = _name(strings, name_at)
        at = 2 * number
        index = (
            int.from_bytes(indexes[at : at + 2], "little") & 0x7FFF if at + 2 <= len(indexes) else 1
        )
        version, library = versions.get(index, (None, None))
        if shndx == _SHN_UNDEF:
            if bind == _BIND_GLOBAL:
                imports.append(Import(name, version, library))
        else:
            exports.add(name if version is None else f"{name}@{version}")
            exports.add(name)
    has_defs = any(isinstance(s, GNUVerDefSection) for s in elf.iter_sections())
    return _Symbols(tuple(imports), frozenset(exports), tuple(needed), has_defs)


def _version_names(elf: ELFFile) -> dict[int, tuple[str, str | None]]:
    """Version index -> (version name, the library it is needed from; None for a definition)."""
    out: dict[int, tuple[str, str | None]] = {}
    for section in elf.iter_sections():
        if isinstance(section, GNUVerNeedSection):
            for need, auxiliaries in section.iter_versions():
                for aux in auxiliaries:
                    out[aux["vna_other"] & 0x7FFF] = (str(aux.name), str(need.name))
        elif isinstance(section, GNUVerDefSection):
            for definition, auxiliaries in section.iter_versions():
                first = next(iter(auxiliaries), None)
                if first is not None and not definition["vd_flags"] & 0x1:  # not the file's own
                    out[definition["vd_ndx"]] = (str(first.name), None)
    return out


def _pe_symbols(data: bytes) -> _Symbols:
    pe = pefile.PE(data=data, fast_load=True)
    index = [
        pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_IMPORT"],
        pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_EXPORT"],
    ]
    pe.parse_data_directories(directories=index)
    imports: list[Import] = []
    needed: list[str] = []
    for entry in getattr(pe, "DIRECTORY_ENTRY_IMPORT", []):
        dll = bytes(entry.dll).decode(errors="replace")
        needed.append(dll)
        imports.extend(
            Import(bytes(i.name).decode(errors="replace"), None, dll)
            for i in entry.imports
            if i.name
        )
    exported = getattr(pe, "DIRECTORY_ENTRY_EXPORT", None)
    names = (
        {bytes(s.name).decode(errors="replace") for s in exported.symbols if s.name}
        if exported
        else set()
    )
    return _Symbols(tuple(imports), frozenset(names), tuple(needed))


def libraries(site: Path) -> dict[str, Path]:
    """The shared libraries an environment's site-packages holds (torch's, the nvidia-*
    wheels'), by file name: what a binary's DT_NEEDED or import table names. Windows' names
    are case-blind, so they are kept lower case."""
    out: dict[str, Path] = {}
    for root, _, names in os.walk(site):
        for name in names:
            lower = name.lower()
            if lower.endswith((".dll", ".so")) or ".so." in name:
                out.setdefault(lower if lower.endswith(".dll") else name, Path(root, name))
    return out


@cache
def _library(path: Path, stamp: tuple[int, int]) -> _Symbols:
    """A library's symbols, read once a process (an env's libraries are sealed: `stamp`, its
    size and mtime, tells a changed file apart)."""
    with path.open("rb") as fh:
        return read_symbols(fh, stamp[0])


def _library_symbols(path: Path) -> _Symbols:
    info = path.stat()
    return _library(path, (info.st_size, info.st_mtime_ns))


def _is_torchs(name: str) -> bool:
    return name.startswith(TORCH_PREFIXES) or name.startswith(TORCH_C_PREFIXES)


def missing(binary: _Symbols, found: Mapping[str, Path]) -> Iterator[tuple[Import, str]]:
    """Each import of `binary` that the environment's libraries (`found`, from `libraries`)
    should provide and do not, with the library it was looked for in."""

    def lookup(library: str) -> Path | None:
        return found.get(library) or found.get(library.lower())

    held = [(n, p) for n in binary.needed if (p := lookup(n)) is not None]
    for imp in binary.imports:
        if imp.library is not None and (path := lookup(imp.library)) is not None:
            lib = _library_symbols(path)
            want = (
                imp.name
                if imp.version is None or not lib.versioned
                else f"{imp.name}@{imp.version}"
            )
            if want not in lib.exports:
                yield imp, imp.library
        elif (
            imp.library is None
            and imp.version is None
            and _is_torchs(imp.name)
            and held
            and not any(imp.name in _library_symbols(p).exports for _, p in held)
        ):
            yield imp, ", ".join(n for n, _ in held)


def check(member: str, data: bytes, found: Mapping[str, Path], where: str) -> list[str]:
    """One problem line per import of the wheel's binary `member` (its bytes `data`) that the
    environment `where` names cannot provide; a binary that cannot be read is one line too."""
    try:
        symbols = read_symbols(MeteredStream(data), len(data))
    except ValueError as exc:
        return [f"{member}: {exc}"]
    out = []
    for imp, library in missing(symbols, found):
        shown = imp.name if imp.version is None else f"{imp.name}@{imp.version}"
        out.append(
            f"{member} imports {shown}, which {library} of {where} does not export: this "
            f"variant's runtime cannot load it; compile it with its own toolkit "
            f"(cuda_minor_code in the package file)"
        )
    return out


def check_wheel(wheel: Path, site: Path, where: str) -> list[str]:
    """Every import of every binary in `wheel` that the libraries under `site` (a torch env's
    site-packages, named `where` in messages) should provide and do not; a library the wheel
    itself carries (a vendored `.libs` copy) is the wheel's own, not looked up there."""
    found = libraries(site)
    with zipfile.ZipFile(wheel) as zf:
        members = [n for n in zf.namelist() if is_binary(n)]
        own = {n.rsplit("/", 1)[-1] for n in members}
        kept = {k: v for k, v in found.items() if k not in own and k.lower() not in own}
        return [p for n in members for p in check(n, zf.read(n), kept, where)]
