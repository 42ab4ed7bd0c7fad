"""Tests of what toolchain does (filed by module: tests/README.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from packaging.version import Version

from tests.roots import REPO
from tests.runner import Recorder
from tests.unit.helpers.roots import PYCUDA
from wheelfarm.builder import toolchain
from wheelfarm.builder.buildenv import NVCC_THREADS, compile_env, max_jobs
from wheelfarm.builder.provenance import set_by_build
from wheelfarm.builder.target import resolve
from wheelfarm.core.errors import ToolchainError
from wheelfarm.matrix.expand import expand
from wheelfarm.matrix.load import load_matrix
from wheelfarm.matrix.toolkits import gcc_max


def test_the_shipped_pycuda_builds_without_an_arch_list(tmp_path: Path) -> None:
    matrix = load_matrix(REPO)
    target = resolve(matrix, expand(matrix), PYCUDA)
    assert target.build.torch is None and target.build.label == "cu130"
    tc = toolchain.Toolchain(tmp_path, tmp_path / "bin" / "nvcc", Version("13.0.88"), "gcc")
    link = {"LIBRARY_PATH": str(tmp_path / "stubs")}
    env = compile_env(target, tc, tmp_path / "venv" / "bin", None, tmp_path, tmp_path, link)
    assert "TORCH_CUDA_ARCH_LIST" not in env
    assert env["LIBRARY_PATH"] == str(tmp_path / "stubs")
    assert env["NVCC_THREADS"] == str(NVCC_THREADS)  # the same on every machine


@pytest.mark.parametrize(
    ("text", "version"),
    [
        (
            "nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 13.0, V13.0.88\n",
            "13.0.88",
        ),
        ("Cuda compilation tools, release 12.6, V12.6.85", "12.6.85"),
    ],
)
def test_nvcc_version(text: str, version: str) -> None:
    assert str(toolchain.nvcc_version(text)) == version


def test_nvcc_version_garbage_is_a_clear_error() -> None:
    with pytest.raises(ToolchainError, match="cannot read the CUDA version"):
        toolchain.nvcc_version("command not found")


@pytest.mark.parametrize(
    ("cuda", "gcc", "ok"),
    [
        ("12.6.3", "g++ (GCC) 13.3.1 20240611", True),
        ("12.6.3", "g++ (GCC) 14.2.1 20250110", False),
        ("13.0.88", "c++ (Debian 12.2.0-14+deb12u1) 12.2.0", True),
    ],
)
def test_host_compiler_check(
    monkeypatch: pytest.MonkeyPatch, cuda: str, gcc: str, ok: bool
) -> None:
    run = Recorder(lambda argv: gcc + "\n")
    limit = gcc_max(REPO, Version(cuda))  # compat.yaml: 13 for CUDA 12.6
    if ok:
        assert toolchain.check_compiler(Version(cuda), {}, limit, run=run) == gcc
    else:
        with pytest.raises(ToolchainError, match=r"12.6 accepts gcc <= 13 \(compat.yaml\); set"):
            toolchain.check_compiler(Version(cuda), {}, limit, run=run)
    assert run.commands[0] == ["c++", "--version"]


def test_compile_env_sets_arch_lists_label_and_jobs(tmp_path: Path) -> None:
    matrix = load_matrix(REPO)
    target = resolve(
        matrix, expand(matrix), "flash-attn-2.8.3.post2-cu130torch2.14-cp312-linux_x86_64"
    )
    tc = toolchain.Toolchain(tmp_path, tmp_path / "bin" / "nvcc", Version("13.0.88"), "gcc")
    env = compile_env(target, tc, tmp_path / "venv" / "bin", None, tmp_path, tmp_path / "cache")
    assert env["TORCH_CUDA_ARCH_LIST"] == "8.0;9.0;10.0;12.0"
    assert env["FLASH_ATTN_CUDA_ARCHS"] == "80;90;100;120"
    assert env["FLASH_ATTN_LOCAL_VERSION"] == "cu130torch2.14"
    assert env["FLASH_ATTENTION_FORCE_BUILD"] == "TRUE"
    assert int(env["MAX_JOBS"]) == max_jobs(3.0)


def test_compile_env_maps_the_work_folder_and_the_record_lists_all_it_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CPPFLAGS", "-DX")
    monkeypatch.setenv("FLASH_ATTENTION_FORCE_BUILD", "TRUE")  # the package's own, already set
    matrix = load_matrix(REPO)
    target = resolve(
        matrix, expand(matrix), "flash-attn-2.8.3.post2-cu130torch2.14-cp312-linux_x86_64"
    )
    tc = toolchain.Toolchain(tmp_path, tmp_path / "bin" / "nvcc", Version("13.0.88"), "gcc")
    work = tmp_path / "work"
    env = compile_env(target, tc, work / "venv" / "bin", None, work, tmp_path / "cache")
    assert env["CPPFLAGS"] == f"-DX -ffile-prefix-map={work}=."  # the user's flags stay first
    assert env["NVCC_APPEND_FLAGS"] == f"-Xcompiler=-ffile-prefix-map={work}=."
    assert env["LDFLAGS"] == "-Wl,-x"
    recorded = set_by_build(env, target, work)
    assert recorded["CPPFLAGS"] == "-DX -ffile-prefix-map=<work>=."
    assert recorded["CCACHE_BASEDIR"] == "<work>"
    assert recorded["FLASH_ATTENTION_FORCE_BUILD"] == "TRUE"
    assert recorded["FLASH_ATTN_LOCAL_VERSION"] == "cu130torch2.14"
    assert "HOME" not in recorded and list(recorded) == sorted(recorded)
    assert str(work) not in json.dumps(recorded)  # the same in every work folder
