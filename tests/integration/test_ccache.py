"""A group job's Pythons share one compiler cache (docs/adr/0016-python-groups.md), for real:
the demo built by this interpreter, then by Debian's own python3.11 (3.11.2: the same cp311
tag, other headers at other paths, its own torch env), each in its own work folder. The kernel
unit (ATen headers, no Python.h) must hit the first build's object; the binding unit, which
includes Python.h, must miss; both wheels verify and import."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.conftest import wheelfarm
from wheelfarm.builder import ccache

pytestmark = pytest.mark.integration


DEBIAN_PYTHON = Path("/usr/bin/python3.11")  # apt-get install python3.11-venv python3.11-dev


def results(log: Path) -> dict[str, str]:
    """Object file -> its ccache result (a hit kind or cache_miss)."""
    return {c.object: c.result for c in ccache.compile_results(log)}


def test_the_second_python_hits_the_kernel_unit_and_misses_the_binding(
    tmp_path: Path, cache_dir: Path
) -> None:
    if not DEBIAN_PYTHON.is_file():
        pytest.fail(f"{DEBIAN_PYTHON} is missing: apt-get install python3.11-venv python3.11-dev")
    assert os.path.realpath(sys.executable) != os.path.realpath(DEBIAN_PYTHON)
    common = ["build", "--local", "--archs", "9.0", "--cache", cache_dir]
    env = {**os.environ, "CCACHE_DIR": str(tmp_path / "ccache")}  # empty before the first
    made = {}
    for name, python in (("first", sys.executable), ("second", str(DEBIAN_PYTHON))):
        log = tmp_path / f"ccache-{name}.log"
        result = wheelfarm(
            *common, "--python-exe", python, "--work", tmp_path / f"work-{name}",
            "--out", tmp_path / f"out-{name}", env={**env, "CCACHE_LOGFILE": str(log)},
        )  # fmt: skip
        assert "[7/8] verify done" in result.stderr  # the wheel imports beside its torch
        made[name] = results(log)
    assert made["first"] == {"csrc/binding.o": "cache_miss", "csrc/kernels.o": "cache_miss"}
    second = made["second"]
    assert second["csrc/kernels.o"] in {"direct_cache_hit", "preprocessed_cache_hit"}
    assert second["csrc/binding.o"] == "cache_miss"  # it includes Python.h: never shared


def test_the_wrappers_rewrite_the_torch_env_paths_to_views(tmp_path: Path) -> None:
    """The Linux wrappers, run: torch's and Python's include paths become their views' (paths
    with a quote, a space and glob characters); the library views come last, as CPATH's would."""
    site = tmp_path / "env's *dir" / "lib" / "python3.11" / "site-packages"
    (site / "torch" / "include" / "torch").mkdir(parents=True)
    (site / "nvidia" / "cusparse" / "include").mkdir(parents=True)
    python = tmp_path / "py [3]" / "include" / "python3.11"
    python.mkdir(parents=True)
    (python / "Python.h").write_text("// Python\n")
    tools = tmp_path / "tools"
    tools.mkdir()
    # prints what it gets, and what nvcc would still read from the environment
    (tools / "ccache").write_text(
        '#!/bin/sh\nprintf "%s\\n" "$@" "left: ${NVCC_PREPEND_FLAGS-}${NVCC_APPEND_FLAGS-}"\n'
    )
    (tools / "g++").write_text("#!/bin/sh\n")
    for exe in ("ccache", "g++"):
        (tools / exe).chmod(0o755)
    cuda = tmp_path / "cuda"
    (cuda / "bin").mkdir(parents=True)
    (cuda / "bin" / "nvcc").write_text("#!/bin/sh\n")
    work = tmp_path / "work"
    env = ccache.wrap_compilers(
        {"PATH": str(tools), "CXX": str(tools / "g++")},
        cuda,
        work / "shims",
        base=work,
        headers=ccache.Headers(
            torch=site / "torch" / "include",
            libraries=(site / "nvidia" / "cusparse" / "include",),
            python=python,
        ),
    )
    view, library = work / ccache.TORCH_VIEW, work / ccache.LIBRARY_VIEWS / "0-cusparse"
    args = [f"-I{site}/torch/include", "-isystem", f"{site}/torch/include/torch/csrc/api/include",
            f"-I{python}", "-I/usr/include/other", "-c", "x.cpp"]  # fmt: skip
    rewritten = [
        f"-I{view}",
        "-isystem",
        f"{view}/torch/csrc/api/include",
        f"-I{work / ccache.PYTHON_VIEW}",  # its headers' content still differs per Python
        "-I/usr/include/other",
        "-c",
        "x.cpp",
        f"-I{library}",
    ]
    # nvcc's own flag variables, which ccache would not hash, go onto its command line
    nvcc_env = {**os.environ, "NVCC_PREPEND_FLAGS": "-DPRE", "NVCC_APPEND_FLAGS": "-DFOO=1 -O3"}
    runs = {
        Path(env["CXX"]): (os.environ, [*rewritten, f"-ffile-prefix-map={tmp_path}=./build-temp"]),
        Path(env["CUDA_HOME"]) / "bin" / "nvcc": (
            nvcc_env,
            ["-DPRE", *rewritten, "-DFOO=1", "-O3"],
        ),
    }
    for wrapper, (run_env, want) in runs.items():
        out = subprocess.run(
            [wrapper, *args], capture_output=True, text=True, check=True, cwd=tmp_path, env=run_env
        )
        assert out.stdout.splitlines()[1:] == [*want, "left: "]  # after the real compiler
