"""builder/driver.py, the one place a GPU driver is faked: when it links a stub, when it loads
one for an import, what the stub defines. The compiler is never run here (integration tests
build and load real stubs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ghsim.synthetic import elf_with_fatbin
from tests.runner import Recorder
from wheelfarm.builder import driver, envs, toolchain
from wheelfarm.builder.platforms import WINDOWS, current
from wheelfarm.core.wheelfile import write_wheel


def _toolkit(tmp: Path, *, stub: str | None) -> Path:
    home = tmp / "cuda"
    (home / "include").mkdir(parents=True)
    (home / "include" / "cuda.h").write_text(
        "#define cuCtxCreate cuCtxCreate_v4\nCUresult CUDAAPI cuInit(unsigned int Flags);\n"
        "typedef struct CUctx_st *CUcontext; typedef unsigned int cuuint32_t;\n"
    )
    if stub:
        (home / stub).mkdir(parents=True)
        (home / stub / "libcuda.so").write_bytes(b"")
    return home


@pytest.fixture
def compiled() -> Recorder:
    """The runner driver.py is handed here: it records the compiler commands."""
    return Recorder()


def test_stub_returns_no_device_and_describes_it() -> None:
    source = driver.stub_source(["cuGetErrorString", "cuInit"])
    assert "int cuInit(void) { return 100; }" in source
    assert 'int cuGetErrorString(int e, const char **s) { *s = "no CUDA-capable' in source


@pytest.mark.skipif(not current().fakes_driver, reason="the driver stub is Linux only")
@pytest.mark.parametrize("stub", ["lib64/stubs", "lib/stubs"])
def test_a_toolkit_with_its_own_stub_puts_it_on_the_link_path(
    tmp_path: Path, compiled: Recorder, stub: str
) -> None:
    """-lcuda finds the toolkit's stub: no linker search path torch or CMake gives holds it."""
    home = _toolkit(tmp_path, stub=stub)
    env = driver.link_env(
        home, tmp_path / "work", {"LIBRARY_PATH": "/opt/lib"}, tmp_path / "log", run=compiled
    )
    assert env == {"LIBRARY_PATH": f"{home / stub}:/opt/lib"}
    assert compiled.commands == []


@pytest.mark.skipif(not current().fakes_driver, reason="the driver stub is Linux only")
def test_a_slim_toolkit_links_a_stub_of_every_name_cuda_h_gives(
    tmp_path: Path, compiled: Recorder
) -> None:
    home = _toolkit(tmp_path, stub=None)
    work = tmp_path / "work"
    env = driver.link_env(home, work, {"LIBRARY_PATH": "/opt/lib"}, tmp_path / "log", run=compiled)
    assert env == {"LIBRARY_PATH": f"{work}:/opt/lib"}
    (command,) = compiled.commands
    assert command[:4] == ["cc", "-shared", "-fPIC", "-Wl,-soname,libcuda.so.1"]
    assert command[-2] == str(work / "libcuda.so")
    source = (work / "libcuda_stub.c").read_text()
    names = [line.split("(")[0].split()[-1] for line in source.splitlines()]
    assert names == ["cuCtxCreate", "cuCtxCreate_v4", "cuInit"]  # no types (CUcontext, cuuint)


def test_the_real_driver_always_wins(
    tmp_path: Path, compiled: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(driver, "driver_loads", lambda: True)
    wheel = tmp_path / "missing.whl"  # not even read
    assert driver.import_env(wheel, tmp_path / "stub", {}, tmp_path / "log", run=compiled) == {}
    assert compiled.commands == []


def test_a_wheel_that_does_not_link_the_driver_gets_no_stub(
    tmp_path: Path, compiled: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(driver, "driver_loads", lambda: False)
    info = "pkg-1.0.dist-info"
    wheel = tmp_path / "pkg-1.0-cp312-cp312-linux_x86_64.whl"
    write_wheel(wheel, {"pkg/_C.so": elf_with_fatbin(b""), f"{info}/METADATA": b""}, info)
    assert driver.wheel_driver_symbols(wheel) == []
    assert driver.import_env(wheel, tmp_path / "stub", {}, tmp_path / "log", run=compiled) == {}
    assert compiled.commands == []


def test_the_builder_modules_ask_the_platform(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for module in (driver, envs, toolchain):
        monkeypatch.setattr(module, "current", lambda: WINDOWS)
    assert envs.TorchEnv(tmp_path, "2.14.1", "cu130").python == tmp_path / "Scripts/python.exe"
    assert driver.link_env(tmp_path, tmp_path, {}, tmp_path / "log") == {}  # no cuda.h read
    assert driver.import_env(tmp_path / "missing.whl", tmp_path, {}, tmp_path / "log") == {}
    checked = toolchain.check_compiler(toolchain.Version("13.0"), {}, 13)  # runs no compiler
    assert checked == "msvc (from vcvars; checked by nvcc)"
