"""builder/platforms/: the platform is chosen once from sys.platform, and each builder module
asks it. The Windows platform cannot run here, so its object is built and asked explicitly
(its tools replaced by recorders: no process starts)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.runner import Recorder
from wheelfarm.builder import driver, envs, shard, toolchain
from wheelfarm.builder.platforms import LINUX, REPAIRERS, WINDOWS, current, for_os, linux, windows
from wheelfarm.core.errors import BuildError


@pytest.fixture
def ran() -> Recorder:
    """The runner both platforms are made with here: it records their commands."""
    return Recorder()


def test_the_platform_is_chosen_from_sys_platform() -> None:
    assert for_os("win32") is WINDOWS
    assert for_os("linux") is LINUX
    assert current() is for_os(sys.platform)
    assert REPAIRERS == {"linux_x86_64": LINUX, "linux_aarch64": LINUX, "win_amd64": WINDOWS}


def test_paths_names_and_compile_variables_differ_per_os(tmp_path: Path) -> None:
    assert WINDOWS.venv_python(tmp_path) == tmp_path / "Scripts" / "python.exe"
    assert LINUX.venv_python(tmp_path) == tmp_path / "bin" / "python"
    assert WINDOWS.nvcc(tmp_path) == tmp_path / "bin" / "nvcc.exe"
    assert LINUX.nvcc(tmp_path) == tmp_path / "bin" / "nvcc"
    assert WINDOWS.compile_env({"CPPFLAGS": "-DX"}, tmp_path) == {"DISTUTILS_USE_SDK": "1"}
    assert LINUX.compile_env({"CPPFLAGS": "-DX"}, tmp_path) == {
        "CPPFLAGS": f"-DX -ffile-prefix-map={tmp_path}=.",
        "NVCC_APPEND_FLAGS": f"-Xcompiler=-ffile-prefix-map={tmp_path}=.",
        "LDFLAGS": "-Wl,-x",
    }
    assert WINDOWS.husk_link({}) == {"LINK": "/FORCE:UNRESOLVED"}
    assert WINDOWS.husk_link({"LINK": "/DEBUG"}) == {"LINK": "/DEBUG /FORCE:UNRESOLVED"}
    assert LINUX.husk_link({"LINK": "/DEBUG"}) == {}
    assert (WINDOWS.fakes_driver, LINUX.fakes_driver) == (False, True)
    assert WINDOWS.fixed_compiler == "msvc (from vcvars; checked by nvcc)"
    assert LINUX.fixed_compiler is None


def test_each_makes_its_empty_object_with_its_host_compiler(tmp_path: Path, ran: Recorder) -> None:
    obj = windows.Windows(ran).empty_object({"NVCC_CCBIN": "C:/msvc/cl.exe", "PATH": ""}, tmp_path)
    assert obj == tmp_path / "empty.obj"
    src = str(tmp_path / "empty.c")
    assert ran.commands.pop() == ["C:/msvc/cl.exe", "/nologo", "/c", src, f"/Fo{obj}"]
    cc = tmp_path / "bin" / "cc"
    cc.parent.mkdir()
    cc.write_text("")
    cc.chmod(0o755)
    assert linux.Linux(ran).empty_object({"PATH": str(cc.parent)}, tmp_path) == tmp_path / "empty.o"
    assert ran.commands.pop() == [str(cc), "-c", src, "-o", str(tmp_path / "empty.o")]
    assert (tmp_path / "empty.c").read_text().startswith("/* stub object")


def test_each_ninja_shim_runs_the_shard_module(tmp_path: Path) -> None:
    script = (LINUX.ninja_shim(tmp_path / "posix") / "ninja").read_text()
    assert script == f'#!/bin/sh\nexec {sys.executable} -m wheelfarm.builder.shard "$@"\n'
    made = list(WINDOWS.ninja_shim(tmp_path / "win").iterdir())  # a launcher script off Windows
    assert [p.stem for p in made] == ["ninja"]
    assert "from wheelfarm.builder.shard import console" in made[0].read_text(errors="replace")


def test_windows_passes_a_non_build_ninja_call_on_by_its_status(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def fail(argv: list[str]) -> str:
        msg = "ninja: error"
        raise BuildError(msg)

    failing = Recorder(fail)
    monkeypatch.setenv("WHEELFARM_REAL_NINJA", "C:/tools/ninja.exe")
    assert shard.shim_main(["-t", "compdb"], platform=windows.Windows(failing)) == 1
    assert failing.commands == [["C:/tools/ninja.exe", "-t", "compdb"]]
    assert shard.shim_main(["--version"], platform=windows.Windows(Recorder())) == 0


def test_a_windows_compile_shard_links_its_husk_unresolved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ran: Recorder
) -> None:
    ninja = tmp_path / "tools" / "ninja"
    ninja.parent.mkdir()
    ninja.write_text("")
    ninja.chmod(0o755)
    monkeypatch.setattr(shard, "current", lambda: windows.Windows(ran))
    env = {"PATH": str(ninja.parent), "NVCC_CCBIN": "cl.exe", "LINK": "/DEBUG"}
    out = shard.prepare(env, shard.Split(shard=1, count=2), src=tmp_path, work=tmp_path)
    assert out["LINK"] == "/DEBUG /FORCE:UNRESOLVED"
    assert out["PATH"].split(os.pathsep)[0] == str(tmp_path / "split" / "bin")
    assert out["WHEELFARM_EMPTY_OBJECT"] == str(tmp_path / "split" / "empty.obj")
    assert ran.commands[0][:3] == ["cl.exe", "/nologo", "/c"]


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
