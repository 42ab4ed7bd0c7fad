"""Kernel checks on packages' real CPU kernels: each PyPI sdist (the catalog's version) built
CPU-only (FORCE_ONLY_CPU=1, g++ alone) into a venv over the torch env, then its checks/ module's
CPU path run by builder/gpucheck.py, so the check's op names and signatures meet the package
itself, not a stand-in. torch-scatter 2.1.2 took 8 min 42 s here, beside two workers of
Actions-model tests on the 2 shared cores. (The farm's own wheels, FORCE_CUDA, take longer and
their kernels need a GPU.)"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.integration.conftest import fresh_venv
from tests.roots import REPO
from wheelfarm.builder import gpucheck

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.long_build]

# package, version, the ops its check reports
PACKAGES = [
    ("torch-scatter", "2.1.2",
     ["scatter sum", "scatter mean", "scatter_max", "segment_csr sum", "segment_coo sum"]),
    ("torch-spline-conv", "1.2.2", ["spline_conv degree 1"]),
]  # fmt: skip


@pytest.mark.parametrize(("package", "version", "ops"), PACKAGES, ids=[p[0] for p in PACKAGES])
def test_the_check_passes_on_the_packages_cpu_kernels(
    package: str, version: str, ops: list[str], torch_env: Path, tmp_path: Path
) -> None:
    py = fresh_venv(tmp_path / "venv", torch_env)
    env = {**os.environ, "FORCE_ONLY_CPU": "1", "MAX_JOBS": "2"}
    subprocess.run(
        [py, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
         "--no-binary", package, f"{package}=={version}"],
        check=True, env=env,
    )  # fmt: skip
    ran = gpucheck.run_check(py, REPO, package, "cpu", env={}, log=tmp_path / "log")
    assert ran.passed, ran.failure
    assert [op.name for op in ran.ops] == ops
