"""Synthetic farm wheels for tests that need thousands: a real ELF whose `.nv_fatbin` section
carries exactly the SASS and PTX its build promises, so `verify` passes them as it would a
compiled one. nvcc cannot build 1,517 targets here; verify cannot tell the difference."""

from __future__ import annotations

import json
import os
import struct
from dataclasses import asdict
from pathlib import Path

from wheelfarm.builder.binary import FATBIN_MAGIC, KIND_CUBIN, KIND_PTX
from wheelfarm.core.http import sha256_file
from wheelfarm.core.wheelfile import write_wheel
from wheelfarm.matrix.expand import Build

_ENTRY_HEADER = 64


def fatbin(entries: list[tuple[int, int]]) -> bytes:
    """One fatbin container in NVIDIA's layout: (kind, sm) entries with tiny payloads."""
    body = b""
    for kind, sm in entries:
        payload = b"\0" * 16
        header = struct.pack("<HHIQ", kind, 0x101, _ENTRY_HEADER, len(payload)) + b"\0" * 12
        header += struct.pack("<I", sm)
        body += header.ljust(_ENTRY_HEADER, b"\0") + payload
    return struct.pack("<IHHQ", FATBIN_MAGIC, 1, 16, len(body)) + body


def elf_with_fatbin(blob: bytes) -> bytes:
    """A minimal 64-bit little-endian ELF shared object: a null section, `.nv_fatbin` holding
    `blob`, and the section-name table."""
    names = b"\0.nv_fatbin\0.shstrtab\0"
    data_at = 64
    names_at = data_at + len(blob)
    table_at = (names_at + len(names) + 7) // 8 * 8
    header = b"\x7fELF" + bytes([2, 1, 1, 0]) + b"\0" * 8
    header += struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, table_at, 0, 64, 0, 0, 64, 3, 2)

    def section(name: int, kind: int, flags: int, offset: int, size: int) -> bytes:
        return struct.pack("<IIQQQQIIQQ", name, kind, flags, 0, offset, size, 0, 0, 8, 0)

    table = section(0, 0, 0, 0, 0)
    table += section(1, 1, 2, data_at, len(blob))  # .nv_fatbin: PROGBITS, ALLOC
    table += section(12, 3, 0, names_at, len(names))  # .shstrtab: STRTAB
    padding = b"\0" * (table_at - names_at - len(names))
    return header + blob + names + padding + table


def farm_wheel(build: Build, wheel_platform: str, dest: Path, *, payload: int = 0) -> Path:
    """The wheel `build` promises, with its build record beside it; `payload` adds that many
    bytes of data (for memory measurements)."""
    dist = build.package.replace("-", "_")
    version = f"{build.version}+{build.label}"
    py, _, abi = build.python_tag.partition("-")  # 'cp312', 'cp310-abi3' or 'py39-none'
    abi = abi or py
    platform = "win_amd64" if build.platform == "win_amd64" else wheel_platform
    info = f"{dist}-{version}.dist-info"
    entries = [(KIND_CUBIN, int(s[3:])) for s in build.archs.cubins]
    entries += [(KIND_PTX, int(s[3:])) for s in build.archs.ptx]
    suffix = ".pyd" if build.platform == "win_amd64" else ".so"
    files = {
        f"{dist}/__init__.py": b"",
        f"{dist}/_C{suffix}": elf_with_fatbin(fatbin(entries)),
        f"{info}/METADATA": (
            f"Metadata-Version: 2.1\nName: {build.package}\nVersion: {version}\n"
            f"Requires-Python: >={build.python}\n"
        ).encode(),
        f"{info}/WHEEL": f"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: {py}-{abi}-{platform}\n".encode(),
    }
    if payload:
        files[f"{dist}/data.bin"] = os.urandom(payload)  # incompressible: the wheel is that big
    wheel = dest / f"{dist}-{version}-{py}-{abi}-{platform}.whl"
    write_wheel(wheel, files, info)
    record = {
        "version": 1,
        "build_id": build.id,
        "target": {"covers": [asdict(c) for c in build.covers]},
        "wheel": {
            "filename": wheel.name,
            "sha256": sha256_file(wheel),
            "size": wheel.stat().st_size,
        },
    }
    wheel.with_name(wheel.name + ".build.json").write_text(json.dumps(record))
    return wheel
