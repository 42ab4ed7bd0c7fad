"""Tests of what windows does (filed by module: tests/README.md)."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path, PurePosixPath

import pytest

from tests.integration.conftest import MINGW, _dll
from tests.roots import REPO
from wheelfarm.builder.binary import inspect_binary, is_binary
from wheelfarm.builder.platforms.common import RepairJob
from wheelfarm.builder.platforms.windows import Windows
from wheelfarm.builder.policy import library_policy
from wheelfarm.builder.verify import Expectation, verify_static
from wheelfarm.core.errors import BuildError
from wheelfarm.core.wheelfile import write_wheel
from wheelfarm.matrix.model import ArchList

pytestmark = pytest.mark.integration


TORCH = ("c10.dll", "torch_cpu.dll", "torch_cuda.dll", "torch_python.dll")


CUDA = ("cudart64_13.dll", "cublas64_13.dll")


SYSTEM = ("python311.dll", "vcruntime140.dll", "msvcp140.dll", "vcomp140.dll")


THIRD_PARTY = "LibZstd.dll"  # neither torch's, CUDA's nor the system's: the wheel must carry it


ON_DISK = THIRD_PARTY.upper()  # Windows finds a DLL whatever its case; so must repair and verify


NAME, VERSION = "winstub", "1.0+cu130torch2.11"


PYD = "winstub/_C.cp311-win_amd64.pyd"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The stub DLLs in three folders (torch's lib, CUDA's bin, the third party's), and a wheel
    whose .pyd imports them all."""
    if shutil.which(MINGW) is None:
        pytest.skip("needs mingw-w64 (apt-get install gcc-mingw-w64-x86-64)")
    root = tmp_path_factory.mktemp("windows")
    dirs = {d: root / d for d in ("torch_lib", "cuda_bin", "system", "third", "ext")}
    for d in dirs.values():
        d.mkdir()
    dlls = [_dll(dirs["torch_lib"], n) for n in TORCH]
    dlls += [_dll(dirs["cuda_bin"], n) for n in CUDA]
    dlls += [_dll(dirs["system"], n) for n in SYSTEM]
    dlls.append(_dll(dirs["third"], THIRD_PARTY))
    pyd = _dll(dirs["ext"], "_C.pyd", tuple(dlls))
    dlls[-1].rename(dirs["third"] / ON_DISK)
    wheel = root / "dist" / f"{NAME}-{VERSION}-cp311-cp311-win_amd64.whl"
    info = f"{NAME}-{VERSION}.dist-info"
    meta = f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {VERSION}\n"
    tags = (
        "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\nTag: cp311-cp311-win_amd64\n"
    )
    write_wheel(
        wheel,
        {
            "winstub/__init__.py": b"from ._C import *\n",
            PYD: pyd.read_bytes(),
            f"{info}/METADATA": meta.encode(),
            f"{info}/WHEEL": tags.encode(),
        },
        info,
    )
    return {**dirs, "wheel": wheel, "root": root}


def _repair(built: dict[str, Path], out: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The farm's repair; the third party's DLL is found on PATH, as delvewheel finds it on
    a Windows runner."""
    monkeypatch.setenv("PATH", f"{built['third']}:{Path(shutil.which('python3') or '').parent}")
    job = RepairJob(
        wheel=built["wheel"],
        out_dir=built["root"] / out,
        plat="win_amd64",
        torch_lib=built["torch_lib"],
        policy=library_policy(REPO, "windows"),
        log=built["root"] / f"{out}.log",
    )
    return Windows().repair(job)


def test_the_pyd_imports_every_stub_dll(built: dict[str, Path]) -> None:
    with zipfile.ZipFile(built["wheel"]) as zf:
        needed = inspect_binary(zf.read(PYD)).needed
    assert sorted(needed) == sorted([*TORCH, *CUDA, *SYSTEM, THIRD_PARTY])


def test_delvewheel_vendors_exactly_what_the_policy_says(
    built: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    repaired = _repair(built, "repaired", monkeypatch)
    assert repaired.name.endswith("-win_amd64.whl")
    with zipfile.ZipFile(repaired) as zf:
        names = zf.namelist()
        binaries = [PurePosixPath(n) for n in names if is_binary(n)]
        vendored = sorted(p.name for p in binaries if p.parent.name.endswith(".libs"))
        assert vendored == [ON_DISK]  # the name on disk, not the one the .pyd imports
        assert [p.parent.name for p in binaries if p.name == ON_DISK] == [f"{NAME}.libs"]
        needed = inspect_binary(zf.read(PYD)).needed
        init = zf.read("winstub/__init__.py").decode()
    assert sorted(needed) == sorted([*TORCH, *CUDA, *SYSTEM, THIRD_PARTY])  # not renamed
    # delvewheel's patch for CPython 3.8+: the top-level winstub.libs on the DLL search path,
    # before the package's own code (no .load-order file: that is for older Pythons)
    assert "os.add_dll_directory" in init
    assert f"os.pardir, '{NAME}.libs'" in init
    assert not [n for n in names if ".load-order" in n]
    assert init.rstrip().endswith("from ._C import *")
    want = Expectation(
        name=NAME, version="1.0", label="cu130torch2.11", python_tag="cp311",
        platform="win_amd64", archs=ArchList(()), policy=library_policy(REPO, "windows"),
        vendor_allow=(ON_DISK,),
    )  # fmt: skip
    assert verify_static(repaired, want).problems == []
    report = verify_static(repaired, want.__class__(**{**want.__dict__, "vendor_allow": ()}))
    assert report.problems == [f"vendors {ON_DISK}, which the package's vendor_allow does not list"]


def test_a_dll_the_policy_does_not_know_fails_in_one_line(
    built: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", "/usr/bin")  # the third party's DLL is nowhere to be found
    job_out = built["root"] / "unknown"
    with pytest.raises(BuildError) as caught:
        Windows().repair(
            RepairJob(
                wheel=built["wheel"], out_dir=job_out, plat="win_amd64",
                torch_lib=built["torch_lib"], policy=library_policy(REPO, "windows"),
                log=built["root"] / "unknown.log",
            )
        )  # fmt: skip
    message = str(caught.value)
    assert "\n" not in message
    assert THIRD_PARTY.lower() in message  # as delvewheel names it
    assert not job_out.exists() or not list(job_out.iterdir())
