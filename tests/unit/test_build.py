"""builder/build.py's pure parts: where a group job finds each of its Pythons."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.version import Version

from tests.roots import REPO
from wheelfarm.builder import toolchain
from wheelfarm.builder.build import compile_env, find_python
from wheelfarm.builder.target import resolve
from wheelfarm.core.errors import ToolchainError
from wheelfarm.matrix.expand import expand
from wheelfarm.matrix.load import load_matrix


def _python(cache: Path, folder: str, exe: str = "x64/python.exe") -> Path:
    path = cache / "Python" / folder / exe
    path.parent.mkdir(parents=True)
    path.write_bytes(b"")
    return path


def test_a_windows_group_finds_each_python_in_the_runners_tool_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """setup-python installs every Python of the group's list into RUNNER_TOOL_CACHE; the build
    takes the newest patch of each minor, a release candidate where that is all there is."""
    _python(tmp_path, "3.10.11")
    newest = _python(tmp_path, "3.10.20")
    rc = _python(tmp_path, "3.15.0-rc.1")
    _python(tmp_path, "3.100.1")  # not 3.10
    (tmp_path / "Python" / "3.10.99").mkdir()  # no interpreter in it
    environ = {"RUNNER_TOOL_CACHE": str(tmp_path)}
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))  # no python3.X on PATH, as on Windows
    assert find_python("3.10", None, environ) == str(newest)
    assert find_python("3.15", None, environ) == str(rc)
    with pytest.raises(ToolchainError, match=r"no Python 3\.9 found .*the runner's tool cache"):
        find_python("3.9", None, environ)
    assert find_python("3.9", "C:/py/python.exe", environ) == "C:/py/python.exe"


def _env(build_id: str, tmp_path: Path) -> dict[str, str]:
    """compile_env of one planned build of the shipped catalog (no tools run)."""
    matrix = load_matrix(REPO)
    target = resolve(matrix, expand(matrix), build_id)
    tc = toolchain.Toolchain(tmp_path, tmp_path / "bin" / "nvcc", Version("13.0.88"), "gcc")
    return compile_env(target, tc, tmp_path / "venv" / "bin", None, tmp_path, tmp_path / "cache")


def test_a_cmake_build_without_torch_gets_its_archs_in_cmakes_spelling(tmp_path: Path) -> None:
    env = _env("llama-cpp-python-0.3.36-cu130-py3-none-linux_x86_64", tmp_path)
    want = "75-real;80-real;86-real;90-real;100-real;120-real;120-virtual"  # cu130 policy, 12.0+PTX
    assert f"-DCMAKE_CUDA_ARCHITECTURES={want}" in env["CMAKE_ARGS"].split()
    assert "-DGGML_CUDA=on" in env["CMAKE_ARGS"].split()
    assert "CMAKE_GENERATOR" not in env  # Windows only


def test_windows_only_flags_reach_the_windows_build_alone(tmp_path: Path) -> None:
    linux = _env("deepspeed-0.19.8-cu130torch2.14-cp312-linux_x86_64", tmp_path / "l")
    windows = _env("deepspeed-0.19.8-cu130torch2.14-cp312-win_amd64", tmp_path / "w")
    assert linux["DS_BUILD_OPS"] == windows["DS_BUILD_OPS"] == "1"
    assert windows["DS_BUILD_AIO"] == windows["DS_BUILD_SPARSE_ATTN"] == "0"
    assert "DS_BUILD_AIO" not in linux
