"""An upstream package built for real: causal-conv1d 1.7.0 from its sdist, for one arch. Its own
file, so that pytest-xdist (--dist loadfile) runs its 15 to 20 minutes of nvcc on one worker while
the other takes the demo's tests."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.integration.conftest import wheelfarm

pytestmark = pytest.mark.integration


@pytest.mark.slow
def test_causal_conv1d_builds_repairs_and_verifies(tmp_path: Path, cache_dir: Path) -> None:
    """Upstream causal-conv1d 1.7.0 sdist (sha256-checked, arch patch applied), sm_90 only."""
    result = wheelfarm(
        "build",
        "--local",
        "--package",
        "causal-conv1d",
        "--archs",
        "9.0",
        "--out",
        tmp_path / "out",
        "--work",
        tmp_path / "work",
        "--cache",
        cache_dir,
    )
    wheel = Path(result.stdout.strip().splitlines()[-1])
    cp = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    assert wheel.name.startswith(f"causal_conv1d-1.7.0+cu130torch2.14-{cp}-{cp}-manylinux_")
    assert "[7/8] verify done" in result.stderr
