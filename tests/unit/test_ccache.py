"""ccache goes in front of the host compiler and nvcc whatever torch does: scripts and a linked
toolkit on Linux, the cl.exe masquerade and PYTORCH_NVCC on Windows; torch's own wrapper is off
so nothing is cached twice. (The integration test builds through it and counts the hits.)"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from wheelfarm.builder import ccache, envs
from wheelfarm.builder.platforms import WINDOWS
from wheelfarm.builder.wrapper import Spec


def _exe(path: Path, text: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


@pytest.fixture
def tools(tmp_path: Path) -> dict[str, str]:
    """A PATH with ccache and a g++, and a toolkit with nvcc, include/ and lib64."""
    _exe(tmp_path / "tools" / "ccache")
    _exe(tmp_path / "gcc-toolset" / "g++")
    cuda = tmp_path / "cuda"
    _exe(cuda / "bin" / "nvcc")
    _exe(cuda / "bin" / "ptxas")
    (cuda / "include").mkdir()
    (cuda / "lib").mkdir()
    (cuda / "lib64").symlink_to("lib")
    path = os.pathsep.join([str(tmp_path / "tools"), str(tmp_path / "gcc-toolset")])
    return {"PATH": path, "CXX": str(tmp_path / "gcc-toolset" / "g++")}


def test_linux_wraps_the_host_compiler_and_nvcc(tmp_path: Path, tools: dict[str, str]) -> None:
    work = tmp_path / "work"
    env = ccache.wrap_compilers(tools, tmp_path / "cuda", work / "shims", base=work)
    ccache_exe = tmp_path / "tools" / "ccache"
    assert env["TORCH_NO_COMPILER_WRAPPER"] == "1"
    cxx = Path(env["CXX"])
    assert cxx.name == "g++"  # torch recognises gcc by its name
    assert cxx.read_text() == (
        f'#!/bin/sh\nset -- "$@" "-ffile-prefix-map=$PWD=./build-temp"\n'
        f'exec {ccache_exe} {tmp_path}/gcc-toolset/g++ "$@"\n'
    )
    home = Path(env["CUDA_HOME"])
    nvcc = (home / "bin" / "nvcc").read_text()
    assert nvcc.startswith("#!/bin/sh\n")
    assert nvcc.endswith(f'\nexec {ccache_exe} {tmp_path}/cuda/bin/nvcc "$@"\n')
    # a .cu under the work folder is named by its path there: cudafe++'s module id, hashed
    # into the file's symbol names, is then the same in every work folder
    assert f'case $src in {work}/*) set -- "$@" -Xcudafe' in nvcc
    assert f'"--orig_src_path_name=.${{src#{work}}}"' in nvcc
    assert os.access(home / "bin" / "nvcc", os.X_OK) and os.access(cxx, os.X_OK)
    assert (home / "bin" / "ptxas").resolve() == tmp_path / "cuda" / "bin" / "ptxas"
    assert (home / "include").resolve() == tmp_path / "cuda" / "include"
    assert (home / "lib64").resolve() == tmp_path / "cuda" / "lib"
    # made again for the next build in the same folder
    again = ccache.wrap_compilers(tools, tmp_path / "cuda", work / "shims", base=work)
    assert again == env


def test_no_ccache_leaves_the_environment_alone(
    tmp_path: Path, tools: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "tools" / "ccache").unlink()
    with caplog.at_level(logging.WARNING):
        assert (
            ccache.wrap_compilers(tools, tmp_path / "cuda", tmp_path / "shims", base=tmp_path)
            == tools
        )
    assert "compiling uncached" in caplog.text
    assert not (tmp_path / "shims").exists()


def test_windows_wraps_cl_and_nvcc_behind_the_launcher(
    tmp_path: Path, tools: dict[str, str]
) -> None:
    real_cl = _exe(tmp_path / "msvc" / "cl.exe")
    env = {**tools, "PATH": tools["PATH"] + os.pathsep + str(real_cl.parent)}
    out = ccache.wrap_compilers(
        env, tmp_path / "cuda", tmp_path / "shims", base=tmp_path, platform=WINDOWS
    )
    assert out["PATH"].split(os.pathsep)[0] == str(tmp_path / "shims")
    assert out["PYTORCH_NVCC"] == str(tmp_path / "shims" / "nvcc.exe")
    spec = Spec.from_env(out)  # what builder/wrapper.py runs as cl and as nvcc
    assert (spec.ccache, spec.cl) == (f"{tmp_path}/tools/ccache", str(real_cl))
    assert spec.nvcc == f"{tmp_path}/cuda/bin/nvcc.exe"
    assert out["NVCC_CCBIN"] == str(real_cl)  # nvcc's own host compiles skip the wrapper
    assert out["TORCH_NO_COMPILER_WRAPPER"] == "1"


def test_linux_wrappers_reach_the_torch_envs_headers_through_views(
    tmp_path: Path, tools: dict[str, str]
) -> None:
    """Views in the work folder (read-only clones or copies of a sealed env's files, never
    links: tests/unit/test_envs.py) of torch's headers and the nvidia-* wheels'; the
    wrappers name them (tests/integration/test_ccache.py runs the wrappers)."""
    site = tmp_path / "env" / "lib" / "python3.11" / "site-packages"
    (site / "torch" / "include" / "ATen").mkdir(parents=True)
    (site / "torch" / "include" / "torch").mkdir()
    (site / "torch" / "include" / "ATen" / "ATen.h").write_text("// aten\n")
    (site / "nvidia" / "cusparse" / "include").mkdir(parents=True)
    (site / "nvidia" / "cusparse" / "include" / "cusparse.h").write_text("// cusparse\n")
    envs.seal(tmp_path / "env", envs.manifest_of(tmp_path / "env"))
    work = tmp_path / "work"
    headers = ccache.Headers(
        torch=site / "torch" / "include", libraries=(site / "nvidia" / "cusparse" / "include",)
    )
    env = ccache.wrap_compilers(
        tools, tmp_path / "cuda", work / "shims", base=work, headers=headers
    )
    view = work / ccache.TORCH_VIEW
    assert (view / "ATen" / "ATen.h").stat().st_ino != (
        site / "torch" / "include" / "ATen" / "ATen.h"
    ).stat().st_ino  # a clone or a copy, never a hard link
    assert (view / "ATen" / "ATen.h").read_text() == "// aten\n"
    library = work / ccache.LIBRARY_VIEWS / "0-cusparse"
    assert (library / "cusparse.h").read_text() == "// cusparse\n"
    assert "CPATH" not in env
    for wrapper in (Path(env["CXX"]), Path(env["CUDA_HOME"]) / "bin" / "nvcc"):
        text = wrapper.read_text()
        assert f"*{site}/torch/include*)" in text and f"-I{library}" in text


def test_without_ccache_the_library_headers_go_on_cpath(
    tmp_path: Path, tools: dict[str, str]
) -> None:
    (tmp_path / "tools" / "ccache").unlink()
    folder = tmp_path / "site" / "nvidia" / "cusparse" / "include"
    env = ccache.wrap_compilers(
        {**tools, "CPATH": "/mine"},
        tmp_path / "cuda",
        tmp_path / "shims",
        base=tmp_path,
        headers=ccache.Headers(libraries=(folder,)),
    )
    assert env["CPATH"] == f"{folder}{os.pathsep}/mine"


def test_windows_reaches_the_torch_envs_headers_through_views_as_linux_does(
    tmp_path: Path, tools: dict[str, str]
) -> None:
    """The wrappers rewrite torch's folder to its view and add the nvidia-* headers' views as
    -I: no CPATH, which nvcc.exe and cl read but ccache does not hash (ADR 16)."""
    real_cl = _exe(tmp_path / "msvc" / "cl.exe")
    site = tmp_path / "env" / "Lib" / "site-packages"
    (site / "torch" / "include" / "torch").mkdir(parents=True)
    (site / "nvidia" / "cublas" / "include").mkdir(parents=True)
    env = {**tools, "PATH": tools["PATH"] + os.pathsep + str(real_cl.parent)}
    headers = ccache.Headers(
        torch=site / "torch" / "include", libraries=(site / "nvidia" / "cublas" / "include",)
    )
    work = tmp_path / "work"
    out = ccache.wrap_compilers(
        env, tmp_path / "cuda", work / "shims", base=work, headers=headers, platform=WINDOWS
    )
    spec = Spec.from_env(out)
    assert "CPATH" not in out
    assert spec.include == (str(work / ccache.LIBRARY_VIEWS / "0-cublas"),)
    assert spec.rewrite == {str(site / "torch" / "include"): str(work / ccache.TORCH_VIEW)}
    assert (work / ccache.TORCH_VIEW / "torch").is_dir()


def test_a_ccache_log_gives_each_compiles_command_object_and_result(tmp_path: Path) -> None:
    """Lines of interleaved processes, as ccache writes them; a call that compiles nothing (a
    link) and an unreadable log give no compile."""
    log = tmp_path / "ccache.log"
    log.write_text(
        "[2026-12-02T12:38:20.829 9983 ] Command line: /v/ccache /usr/bin/g++ -c b.cpp -o b.o\n"
        "[2026-12-02T12:38:20.830 9987 ] Command line: /v/ccache /cuda/bin/nvcc -c k.cu -o k.o\n"
        "[2026-12-02T12:38:20.831 9983 ] Object file: csrc/binding.o\n"
        "[2026-12-02T12:38:20.832 9987 ] Object file: csrc/kernels.o\n"
        "[2026-12-02T12:38:21.100 9987 ] Result: direct_cache_miss\n"
        "[2026-12-02T12:38:21.101 9987 ] Result: preprocessed_cache_hit\n"
        "[2026-12-02T12:38:59.000 9983 ] Result: cache_miss\n"
        "[2026-12-02T12:38:59.001 9983 ] Result: local_storage_miss\n"
        "[2026-12-02T12:39:30.000 9990 ] Command line: /v/ccache /usr/bin/g++ -shared b.o -o x.so\n"
        "[2026-12-02T12:39:30.001 9990 ] Result: called_for_link\n",
        encoding="utf-8",
    )
    got = ccache.compile_results(log)
    assert [(c.compiler, c.object, c.result) for c in got] == [
        ("nvcc", "csrc/kernels.o", "preprocessed_cache_hit"),
        ("g++", "csrc/binding.o", "cache_miss"),
    ]
    assert ccache.compile_results(tmp_path / "missing.log") == []
