"""Tests of what builder_platforms does (filed by module: tests/README.md)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from tests.roots import REPO
from wheelfarm.builder.platforms import (
    LINUX,
    REPAIRERS,
    WINDOWS,
    append_nvcc_flags,
    current,
    for_os,
)
from wheelfarm.matrix.expand import expand
from wheelfarm.matrix.load import load_matrix


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


def test_os_modules_are_reached_only_through_the_platform_table() -> None:
    """cibuildwheel's ALL_PLATFORM_MODULES: outside builder/platforms/ no code imports the
    linux or windows module, so every OS difference is asked of REPAIRERS or current()."""
    root = Path(__file__).resolve().parents[2]
    os_modules = {f"wheelfarm.builder.platforms.{m}" for m in ("linux", "windows")}
    found = []
    for folder in ("builder", "index", "matrix", "wheelfarm", "scripts"):
        for path in sorted((root / folder).rglob("*.py")):
            if "platforms" in path.relative_to(root).parts:
                continue
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.ImportFrom):
                    named = {f"{node.module}.{a.name}" for a in node.names} | {node.module}
                elif isinstance(node, ast.Import):
                    named = {a.name for a in node.names}
                else:
                    continue
                found += [f"{path.relative_to(root)}:{node.lineno}" for _ in named & os_modules]
    assert found == []


def test_each_platform_gives_its_builds_nvcc_flags() -> None:
    matrix = load_matrix(REPO)
    by_id = expand(matrix).by_id
    win = by_id["pytorch3d-0.7.9-cu130torch2.14-cp312-win_amd64"]
    assert REPAIRERS[win.platform].nvcc_flags(matrix, win) == ("-Xcompiler", "/Zc:preprocessor")
    linux = next(b for b in by_id.values() if b.platform == "linux_x86_64" and b.cuda == "cu130")
    assert REPAIRERS[linux.platform].nvcc_flags(matrix, linux) == ()
    assert append_nvcc_flags({"NVCC_APPEND_FLAGS": "-DX"}, ("-Y",)) == {
        "NVCC_APPEND_FLAGS": "-DX -Y"
    }
    assert append_nvcc_flags({"NVCC_APPEND_FLAGS": "-DX"}, ()) == {}
