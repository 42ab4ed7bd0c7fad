"""Tests of what builder_platforms does (filed by module: tests/README.md)."""

from __future__ import annotations

import sys
from pathlib import Path

from wheelfarm.builder.platforms import LINUX, REPAIRERS, WINDOWS, current, for_os


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


def test_each_ninja_shim_runs_the_shard_module(tmp_path: Path) -> None:
    script = (LINUX.ninja_shim(tmp_path / "posix") / "ninja").read_text()
    assert script == f'#!/bin/sh\nexec {sys.executable} -m wheelfarm.builder.shard "$@"\n'
    made = list(WINDOWS.ninja_shim(tmp_path / "win").iterdir())  # a launcher script off Windows
    assert [p.stem for p in made] == ["ninja"]
    assert "from wheelfarm.builder.shard import console" in made[0].read_text(errors="replace")
