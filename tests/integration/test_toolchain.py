"""Tests of what toolchain does (filed by module: tests/README.md)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.roots import REPO
from wheelfarm.builder import toolchain

pytestmark = pytest.mark.integration


@pytest.mark.skipif(os.environ.get("WHEELFARM_SKIP_PYPI_TOOLKIT") == "1", reason="asked to skip")
def test_cuda13_toolkit_from_pypi_wheels(tmp_path: Path) -> None:
    home = toolchain.assemble_from_pypi("cu130", tmp_path / "tk", tmp_path / "log")
    env = {"PATH": os.environ["PATH"], "CUDA_HOME": str(home)}
    tc = toolchain.detect("cu130", env, work=tmp_path, log=tmp_path / "log", root=REPO)
    assert tc.cuda_home == home
    assert (tc.version.major, tc.version.minor) == (13, 0)
    assert (home / "include" / "cuda_runtime.h").is_file()
