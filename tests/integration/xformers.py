"""What the two xformers tests share (test_build_torch_stable.py: 0.0.35 on torch's stable ABI;
test_build_abi3_kind.py: 0.0.33.post2, the abi3 kind): the build through the real CLI, and installs by
real pip and uv from a served index, each followed by a call into the binary."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from .conftest import fresh_venv, needs_uv, pip, uv_install, wheelfarm

# The ops load only if the library loads into this torch; the build-version op runs on the CPU,
# so no GPU is needed to call into the binary.
CHECK = (
    "import torch, xformers, xformers.ops\n"
    "from xformers import _cpp_lib\n"
    "assert _cpp_lib._cpp_library_load_exception is None, _cpp_lib._cpp_library_load_exception\n"
    "print(tuple(torch.ops.xformers._nvcc_build_version()))\n"
)


def build(
    tmp: pytest.TempPathFactory, cache: Path, *args: str, env: dict[str, str] | None = None
) -> Path:
    """xformers built here for sm_90 (`args`: e.g. --package-version); the wheel's path."""
    result = wheelfarm(
        "build", "--local", "--package", "xformers", "--archs", "9.0", *args,
        "--out", tmp.mktemp("xformers"), "--work", tmp.mktemp("xformers-work"), "--cache", cache,
        env={**os.environ, **(env or {})},
    )  # fmt: skip
    return Path(result.stdout.strip().splitlines()[-1])


def _ops_run(py: Path) -> None:
    out = subprocess.run([py, "-c", CHECK], capture_output=True, text=True, check=True).stdout
    assert out.strip().startswith("(13, 0,"), out  # the nvcc that compiled it: this toolkit's


# the installers a test runs: real pip, and real uv where the test extra installed it
INSTALLERS = ["pip", pytest.param("uv", marks=needs_uv)]


def installs(
    tool: str, url: str, torch_env: Path, venv: Path, requirement: str, version: str
) -> None:
    """`<tool> install --extra-index-url <url>cu130/torch2.14/ <requirement>` into a fresh venv
    beside torch installs `version`, and its ops run."""
    py = fresh_venv(venv, torch_env)
    index = ("--extra-index-url", f"{url}cu130/torch2.14/", requirement)
    result = pip(py, "install", *index) if tool == "pip" else uv_install(py, *index)
    assert result.returncode == 0, result.stderr
    assert f"Version: {version}\n" in pip(py, "show", "xformers").stdout
    _ops_run(py)
