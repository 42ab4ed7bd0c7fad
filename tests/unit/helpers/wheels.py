"""Wheel, fatbin, wheelhouse and archive builders and the wheel names the unit tests share."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import struct
import tarfile
import warnings
import zipfile
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any, Literal

import pytest
from elftools.elf.elffile import ELFFile

from ghsim.synthetic import elf_with_fatbin, sample_record
from ghsim.synthetic import fatbin as fatbin_one_arch_per_binary
from tests.roots import REPO
from tests.unit.helpers.install import SHA
from wheelfarm.builder.binary import KIND_CUBIN, KIND_PTX
from wheelfarm.builder.build import BuildOptions, expectation
from wheelfarm.builder.policy import library_policy
from wheelfarm.builder.target import FarmWheel, resolve
from wheelfarm.builder.verify import Expectation, verify_static
from wheelfarm.cli import main
from wheelfarm.core.record import WheelFacts, path_for
from wheelfarm.core.wheelfile import write_wheel
from wheelfarm.index.catalog import Catalog
from wheelfarm.index.entries import Covered, WheelEntry
from wheelfarm.index.refusals import Refused
from wheelfarm.index.site import Site
from wheelfarm.index.sources import Policy, Saved, Yanks, read_wheelhouse
from wheelfarm.matrix.expand import expand
from wheelfarm.matrix.load import load_matrix
from wheelfarm.matrix.model import Arch, ArchList, Matrix

FATBINS = Path(__file__).parents[1] / "fatbins"  # tests/unit/fatbins


def _options(tmp_path: Path, cls: type[BuildOptions] = BuildOptions, **kw: object) -> BuildOptions:
    return cls(out_dir=tmp_path / "out", work_dir=tmp_path / "work", cache=tmp_path, **kw)


def _distinct(cls: type) -> dict[str, str]:
    """A value per recorded option that no default equals."""
    return {f.name: f"recorded {f.name}" for f in dataclasses.fields(cls)}


def _wheel(tmp: Path, version: str = "1.0", headers: str = "") -> Path:
    info = f"demo_pkg-{version}.dist-info"
    meta = f"Metadata-Version: 2.1\nName: demo-pkg\nVersion: {version}\n{headers}"
    files = {
        "demo_pkg/__init__.py": b"",
        f"{info}/METADATA": meta.encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nTag: cp312-cp312-linux_x86_64\n",
    }
    path = tmp / f"demo_pkg-{version}-cp312-cp312-linux_x86_64.whl"
    write_wheel(path, files, info)
    return path


W = "demo_pkg-1.0.0+cu130torch2.14-cp312-cp312-manylinux_2_28_x86_64.whl"


def wheel(house: Path, name: str = W, body: bytes = b"") -> Path:
    info = "-".join(name.split("-")[:2]) + ".dist-info"
    path = house / name
    write_wheel(
        path,
        {
            "demo_pkg/__init__.py": body,
            f"{info}/METADATA": b"Metadata-Version: 2.1\nName: demo-pkg\nVersion: 1.0.0\n",
            f"{info}/WHEEL": b"Wheel-Version: 1.0\nTag: cp312-cp312-manylinux_2_28_x86_64\n",
        },
        info,
    )
    return path


def wheelhouse_catalog(
    house: Path,
    matrix: Matrix | None,
    yanked: Yanks,
    site: Site | None = None,
    policy: Policy | None = None,
    saved: Saved | None = None,
) -> Catalog:
    """The wheelhouse's catalog as index_wheelhouse composes it: each wheel the source reads
    placed on `site` (when one is given), its entry kept."""
    reads = read_wheelhouse(house, matrix, yanked, policy, saved)
    if site is not None:
        return Catalog(site.placed(reads))
    return Catalog(r if isinstance(r, Refused) else r.entry for r in reads)


def site(house: Path, out: Path, matrix: Matrix | None = None) -> None:
    with Site(out) as written:
        entries = wheelhouse_catalog(house, matrix, {}, written)
        written.commit(entries, templates=REPO.templates)


def _empty_wheel(tmp_path: Path) -> Path:
    """A wheel with no binaries: nothing to load, no driver to stub."""
    wheel = tmp_path / "pkg-1.0-cp312-cp312-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("pkg-1.0.dist-info/RECORD", "pkg-1.0.dist-info/RECORD,,\n")
    return wheel


BASE_ID = "base-1.0.0-cu130torch2.14-cp312-linux_x86_64"


BASE_WHEEL = "base-1.0.0+cu130torch2.14-cp312-cp312-manylinux_2_28_x86_64.whl"


REQUIRED = FarmWheel("base==1.0.0+cu130torch2.14", "cu130", "2.14", BASE_ID)


def _house(folder: Path, data: bytes = b"the wheel", **changes: Any) -> Path:
    """A wheelhouse holding base's wheel and its build record (with `changes`)."""
    folder.mkdir(exist_ok=True)
    wheel = folder / BASE_WHEEL
    wheel.write_bytes(data)
    facts = WheelFacts(filename=BASE_WHEEL, sha256=hashlib.sha256(data).hexdigest(), size=len(data))
    made = sample_record(**({"build_id": BASE_ID, "wheel": facts} | changes))
    path_for(wheel).write_text(made.to_json())
    return wheel


def _tar(path: Path, *members: tuple[tarfile.TarInfo, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tf:
        for info, data in members:
            info.size = len(data) if info.isfile() else 0
            tf.addfile(info, io.BytesIO(data))
    return path


def _member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    return info


DEMO = "wheelfarm-demo-0.1.0-cu130torch2.14-cp312-linux_x86_64"  # a build of the shipped grid


NAME = "wheelfarm_demo-0.1.0+cu130torch2.14-cp312-cp312-linux_x86_64.whl"


INFO = "wheelfarm_demo-0.1.0+cu130torch2.14.dist-info"


METADATA = b"Metadata-Version: 2.1\nName: wheelfarm-demo\nVersion: 0.1.0+cu130torch2.14\n"


@cache
def _want() -> Expectation:
    """What verify expects of the demo's build for cu130, torch 2.14, CPython 3.12 on Linux."""
    matrix = load_matrix(REPO)
    return expectation(resolve(matrix, expand(matrix), DEMO))


WHEEL = b"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: cp312-cp312-linux_x86_64\n"


def _wheel_hostile(folder: Path, **extra: bytes | None) -> Path:
    """A farm wheel with `extra` members added (or, given None, left out)."""
    files: dict[str, bytes | None] = {
        "wheelfarm_demo/__init__.py": b"",
        f"{INFO}/METADATA": METADATA,
        f"{INFO}/WHEEL": WHEEL,
        **extra,
    }
    folder.mkdir(parents=True, exist_ok=True)
    write_wheel(folder / NAME, {k: v for k, v in files.items() if v is not None}, INFO)
    return folder / NAME


GOOD = "demo_pkg-1.0.0+cu130torch2.14-cp312-cp312-manylinux_2_28_x86_64.whl"


def _house_hostile_data(tmp_path: Path, count: int = 2) -> Path:

    house = tmp_path / "house"
    house.mkdir()
    for i in range(count):
        wheel(house, GOOD.replace("cp312-cp312", f"cp31{i}-cp31{i}"), body=b"%d" % i)
    return house


def _index(house: Path, out: Path, **kw: float) -> None:
    from wheelfarm.index.write import index_wheelhouse
    from wheelfarm.matrix.expand import expand

    matrix = load_matrix(REPO)
    index_wheelhouse(matrix, expand(matrix), house, out, title="t", **kw)


DEEP = "[" * 100_000 + "]" * 100_000


NAME_one_arch_per_binary, VERSION, LABEL = "tinycudann", "2.0", "cu130torch2.14"


def _wheel_one_arch_per_binary(
    tmp: Path, binaries: Mapping[int | str, Sequence[tuple[int, Arch | int]]]
) -> Path:
    """A tinycudann wheel whose `_{key}_C` binaries hold the given (kind, sm) fatbin entries."""
    info = f"{NAME_one_arch_per_binary}-{VERSION}+{LABEL}.dist-info"
    meta = f"Metadata-Version: 2.1\nName: {NAME_one_arch_per_binary}\nVersion: {VERSION}+{LABEL}\n"
    files = {
        "tinycudann/__init__.py": b"",
        f"{info}/METADATA": meta.encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nTag: cp311-cp311-linux_x86_64\n",
    }
    for sm, entries in binaries.items():
        name = f"tinycudann_bindings/_{sm}_C.cpython-311-x86_64-linux-gnu.so"
        files[name] = elf_with_fatbin(fatbin_one_arch_per_binary(entries))
    path = tmp / f"{NAME_one_arch_per_binary}-{VERSION}+{LABEL}-cp311-cp311-linux_x86_64.whl"
    write_wheel(path, files, info)
    return path


def _problems_one_arch_per_binary(
    wheel: Path, archs: str, *, per_binary: Literal["all", "one", "some"] = "one"
) -> list[str]:
    """verify's problems with `wheel` against `archs`, read as arch.one_arch_per_binary (one),
    arch.some_archs_per_binary (some) or an ordinary package (all)."""
    want = Expectation(
        name=NAME_one_arch_per_binary, version=VERSION, label=LABEL, python_tag="cp311", platform="linux_x86_64",
        archs=ArchList.parse(archs), policy=library_policy(REPO, "linux"),
        one_arch_per_binary=per_binary == "one", some_archs_per_binary=per_binary == "some",
    )  # fmt: skip
    return verify_static(wheel, want).problems


def _own(sm: int) -> list[tuple[int, int]]:
    return [(KIND_CUBIN, sm), (KIND_PTX, sm)]


def _make_zip(members: list[tuple[str, bytes, bytes]]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a name twice is a case to test, not a mistake here
        for name, kind, data in members:
            info = zipfile.ZipInfo(name or "empty")
            info.external_attr = (0o120777 if kind == tarfile.SYMTYPE else 0o100644) << 16
            zf.writestr(info, data)
    return out.getvalue()


def entry_site(filename: str, **kw: object) -> WheelEntry:
    base = {
        "filename": filename,
        "url": f"https://example.invalid/dl/{filename.replace('+', '%2B')}",
        "sha256": SHA,
        "size": 10,
        "covers": (Covered(cuda="cu130", torch="2.14", python="3.12", platform="linux_x86_64"),),
    }
    return WheelEntry(**{**base, **kw})  # type: ignore[arg-type]


W_site = "flash_attn-2.8.3+cu130torch2.14-cp312-cp312-manylinux_2_28_x86_64.whl"


CP311 = W.replace("cp312-cp312", "cp311-cp311")


def index(house: Path, out: Path, *extra: str) -> int:
    argv = ["index", "--root", str(REPO.path), "--wheelhouse", str(house), "--out", str(out)]
    return main([*argv, *extra])


def elf_with_origin() -> tuple[bytes, bytes]:
    """A real ELF (the interpreter's _ssl module) as it is, and with its DT_NEEDED libssl
    turned into a RUNPATH of "$ORIGIN": the layout of a package that ships its own libraries
    beside its binaries (llama.cpp's libggml*.so)."""
    ssl = pytest.importorskip("_ssl")
    if not ssl.__file__:
        pytest.skip("_ssl is built into this interpreter")
    data = bytearray(Path(ssl.__file__).read_bytes())
    elf = ELFFile(io.BytesIO(bytes(data)))
    if elf.elfclass != 64:
        pytest.skip("the layout below is Elf64_Dyn")
    strings = elf.get_section_by_name(".dynstr")["sh_offset"]
    dynamic = elf.get_section_by_name(".dynamic")
    start, size = dynamic["sh_offset"], dynamic["sh_size"]
    for pos in range(start, start + size, 16):
        tag, value = struct.unpack_from("<qQ", data, pos)
        if tag == 1 and data[strings + value :].startswith(b"libssl"):  # DT_NEEDED
            data[strings + value : strings + value + 8] = b"$ORIGIN\0"
            struct.pack_into("<q", data, pos, 29)  # DT_RUNPATH
            return bytes(Path(ssl.__file__).read_bytes()), bytes(data)
    pytest.skip("_ssl here does not link libssl")
