"""torch-scatter's kernel check on its real CPU kernels: its PyPI sdist (2.1.2, the catalog's
version) built CPU-only (FORCE_ONLY_CPU=1, g++ alone: this test took 8 min 42 s here, beside two
workers of Actions-model tests on the 2 shared cores) into a venv over the torch env, then
checks/torch_scatter.py's CPU path run by builder/gpucheck.py: the check's op names and
signatures meet the package itself, not a stand-in. (The farm's own wheel, FORCE_CUDA, takes
12 minutes and its kernels need a GPU.)"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.integration.conftest import fresh_venv
from tests.roots import REPO
from wheelfarm.builder import gpucheck

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_torch_scatters_check_passes_on_its_cpu_kernels(torch_env: Path, tmp_path: Path) -> None:
    py = fresh_venv(tmp_path / "venv", torch_env)
    env = {**os.environ, "FORCE_ONLY_CPU": "1", "MAX_JOBS": "2"}
    subprocess.run(
        [py, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
         "--no-binary", "torch-scatter", "torch-scatter==2.1.2"],
        check=True, env=env,
    )  # fmt: skip
    ran = gpucheck.run_check(py, REPO, "torch-scatter", "cpu", env={}, log=tmp_path / "log")
    assert ran.passed, ran.failure
    assert [op.name for op in ran.ops] == [
        "scatter sum", "scatter mean", "scatter_max", "segment_csr sum", "segment_coo sum",
    ]  # fmt: skip
