"""Synthetic farm wheels for tests that need thousands: a real ELF whose `.nv_fatbin` section
carries exactly the SASS and PTX its build promises, so `verify` passes them as it would a
compiled one. nvcc cannot build 1,517 targets here; verify cannot tell the difference."""

from __future__ import annotations

import dataclasses
import os
import struct
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name

from wheelfarm.builder.binary import FATBIN_MAGIC, KIND_CUBIN, KIND_PTX, VARIANT_BITS
from wheelfarm.builder.build import expectation
from wheelfarm.builder.target import resolve
from wheelfarm.builder.verify import Expectation
from wheelfarm.core import record
from wheelfarm.core.digest import sha256_file
from wheelfarm.core.wheelfile import write_wheel
from wheelfarm.matrix.expand import Build, Expansion, expand
from wheelfarm.matrix.model import Arch, Matrix

_ENTRY_HEADER = 64


def fatbin(entries: Sequence[tuple[int, Arch | int]]) -> bytes:
    """One fatbin container in NVIDIA's layout: (kind, arch or SM number) entries with tiny
    payloads, each arch's variant (`a`, `f`) in the entry's flags as nvcc writes it
    (builder/binary.py)."""
    body = b""
    for kind, given in entries:
        arch = given if isinstance(given, Arch) else Arch(given)
        payload = b"\0" * 16
        flags = next((bit for bit, v in VARIANT_BITS if v == arch.variant), 0)
        header = struct.pack("<HHIQ", kind, 0x101, _ENTRY_HEADER, len(payload)) + b"\0" * 12
        header += struct.pack("<I", arch.sm).ljust(12, b"\0") + struct.pack("<Q", flags)
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


def binaries(want: Expectation) -> dict[str, list[tuple[int, Arch]]]:
    """The extension modules a build of `want` holds, by stem, with their fatbin entries: one
    module with every arch; (one_arch_per_binary, tiny-cuda-nn) one per arch with its SASS
    and its PTX; or (some_archs_per_binary, SageAttention) that module and one per arch as the
    list spells it. A package that compiles no device code gets one module whose fatbin is
    empty."""
    archs = want.archs.archs
    if want.one_arch_per_binary:
        return {f"_C_{a.sm}{a.variant}": [(KIND_CUBIN, a), (KIND_PTX, a)] for a in archs}

    def entries(held: Sequence[Arch]) -> list[tuple[int, Arch]]:
        return [(KIND_CUBIN, a) for a in held] + [(KIND_PTX, a) for a in held if a.ptx]

    every = {"_C": entries(archs)}
    if want.some_archs_per_binary:
        return every | {f"_C_{a.sm}{a.variant}": entries((a,)) for a in archs}
    return every


def farm_wheel(
    matrix: Matrix,
    build: Build,
    dest: Path,
    *,
    payload: int = 0,
    expansion: Expansion | None = None,
) -> Path:
    """The wheel `build` promises, with its build record beside it: named and laid out from
    the same Expectation `verify` checks a real build against (distribution name, tags, archs
    with their variants, one arch per binary), so a schema feature the catalog uses cannot be
    missed here. `payload` adds that many bytes of data (for memory measurements)."""
    want = expectation(resolve(matrix, expansion or _expansion(matrix), build.id))
    dist = canonicalize_name(want.name).replace("-", "_")
    version = f"{want.version}+{want.label}"
    py, _, abi = want.python_tag.partition("-")  # 'cp312', 'cp310-abi3' or 'py39-none'
    abi = abi or py
    platform = matrix.farm.platforms[build.platform].wheel_platform
    info = f"{dist}-{version}.dist-info"
    suffix = ".pyd" if build.platform == "win_amd64" else ".so"
    files = {f"{dist}/__init__.py": b""}
    for stem, entries in binaries(want).items():
        files[f"{dist}/{stem}{suffix}"] = elf_with_fatbin(fatbin(entries))
    files[f"{info}/METADATA"] = (
        f"Metadata-Version: 2.1\nName: {want.name}\nVersion: {version}\n"
        f"Requires-Python: >={build.python_floor or build.python}\n"
    ).encode()
    files[f"{info}/WHEEL"] = (
        f"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: {py}-{abi}-{platform}\n".encode()
    )
    if payload:
        files[f"{dist}/data.bin"] = os.urandom(payload)  # incompressible: the wheel is that big
    wheel = dest / f"{dist}-{version}-{py}-{abi}-{platform}.whl"
    write_wheel(wheel, files, info)
    covers = tuple(record.Cell(**asdict(c)) for c in build.covers)
    made = sample_record(
        build_id=build.id,
        target=dataclasses.replace(SAMPLE.target, covers=covers),
        wheel=record.WheelFacts(
            filename=wheel.name, sha256=sha256_file(wheel), size=wheel.stat().st_size
        ),
    )
    record.path_for(wheel).write_text(made.to_json())
    return wheel


_EXPANSIONS: dict[int, tuple[Matrix, Expansion]] = {}  # the matrix is held: its id stays its own


def _expansion(matrix: Matrix) -> Expansion:
    """The matrix's expansion, made once per matrix (the whole grid takes a second)."""
    if id(matrix) not in _EXPANSIONS:
        _EXPANSIONS[id(matrix)] = (matrix, expand(matrix))
    return _EXPANSIONS[id(matrix)][1]


CELL = record.Cell(
    package="demo-pkg", version="1.0.0", torch="2.14", cuda="cu130", python="3.12",
    platform="linux_x86_64",
)  # fmt: skip
SAMPLE = record.BuildRecord(
    version=record.VERSION,
    build_id="demo-pkg-1.0.0-cu130torch2.14-cp312-linux_x86_64",
    wheelfarm="0.1.0",
    target=record.TargetFacts(
        package="demo-pkg", version="1.0.0", abi="cpython", cuda="cu130", torch="2.14.0",
        python="3.12", platform="linux_x86_64", label="cu130torch2.14", archs="9.0",
        covers=(CELL,),
    ),
    source=record.SourceFacts(
        sdist=None, git=None, path="demo/wheelfarm-demo", subdir=None,
        digest="path:demo/wheelfarm-demo", patches=(),
    ),
    toolchain=record.ToolchainFacts(cuda="13.0.88", cuda_home="/usr/local/cuda", compiler="gcc 13"),
    torch=record.TorchFacts(torch="2.14.0+cu130", cuda="13.0"),
    options=record.RecordedOptions(
        torch_index="https://download.pytorch.org/whl/cu130", sdist_index="https://pypi.org/simple",
        plat="manylinux_2_28_x86_64",
    ),
    environment={"MAX_JOBS": "2", "CCACHE_BASEDIR": "<work>"},
    archs_found={"demo_pkg/_C.so": record.Archs(cubins=("sm_90",), ptx=())},
    wheel=record.WheelFacts(
        filename="demo_pkg-1.0.0+cu130torch2.14-cp312-cp312-linux_x86_64.whl", sha256="ab" * 32,
        size=1,
    ),
    timing=record.Timing(
        created="2026-01-01T00:00:00+00:00", steps_seconds={"compile": 81.5}, ccache={"hits": 0}
    ),
)  # fmt: skip


def sample_record(**changes: Any) -> record.BuildRecord:
    """A complete build record as `wheelfarm build` writes one, with `changes`."""
    return dataclasses.replace(SAMPLE, **changes)
