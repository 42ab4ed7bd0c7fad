"""An upstream package built for real: causal-conv1d 1.7.0 from its sdist, for one arch, as torch
2.15's CUDA 13 group: compiled once by this machine's nvcc 13.0 against PyPI's torch 2.15.0,
which is the cu132 build, and loaded there (ADR 19). Its own file, so that pytest-xdist
(--dist loadfile) runs its minutes of nvcc on one worker while the other takes the demo's tests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.conftest import wheelfarm

pytestmark = pytest.mark.integration


@pytest.mark.slow
@pytest.mark.long_build  # ten minutes of nvcc on one worker: CI leaves it out
def test_causal_conv1d_builds_repairs_and_verifies(tmp_path: Path, cache_dir: Path) -> None:
    """Upstream causal-conv1d 1.7.0 sdist (sha256-checked, arch patch applied), sm_90 only, for
    Python 3.11 (this interpreter: PyPI has torch 2.15 from 3.11)."""
    result = wheelfarm(
        "build", "causal-conv1d-1.7.0-cu13torch2.15-linux_x86_64", "--pythons", "3.11",
        "--torch-index", "pip", "--archs", "9.0", "--plat", "auto",
        "--out", tmp_path / "out", "--work", tmp_path / "work", "--cache", cache_dir,
    )  # fmt: skip
    wheel = Path(result.stdout.strip().splitlines()[-1])
    assert wheel.name.startswith("causal_conv1d-1.7.0+cu132torch2.15-cp311-cp311-manylinux_")
    record = json.loads(wheel.with_name(wheel.name + ".build.json").read_text())
    assert record["torch"]["torch"] == "2.15.0+cu132"
    assert record["toolchain"]["cuda"].startswith("13.0.")
    assert record["compiled"]["cuda"] == "cu130"
    assert "symbols: 0 missing against" in result.stderr + (
        tmp_path / "out" / "logs" / "causal-conv1d-1.7.0-cu132torch2.15-cp311-linux_x86_64"
        / "7-verify.log"
    ).read_text()  # fmt: skip
    assert "[7/8] verify done" in result.stderr
