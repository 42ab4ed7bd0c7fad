"""farm_requires with real pip: the import check's install of a required farm wheel, exactly the
build of its cell, from a wheelhouse folder and from a served farm index (the demo wheel stands
in for torch-scatter; torch-sparse itself was built here through it, docs/building.md)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from packaging.utils import parse_wheel_filename

from tests.integration.conftest import DemoBuild, fresh_venv, serve_wheel
from wheelfarm.builder.importcheck import install_farm_wheel
from wheelfarm.builder.target import FarmWheel
from wheelfarm.core.errors import VerifyError
from wheelfarm.core.wheelname import build_id_from_wheel

pytestmark = pytest.mark.integration


def _pinned(demo_build: DemoBuild) -> FarmWheel:
    name, version, _, _ = parse_wheel_filename(demo_build.wheel.name)
    return FarmWheel(
        f"{name}=={version}", "cu130", "2.14", build_id_from_wheel(demo_build.wheel.name)
    )


@pytest.mark.parametrize("source", ["wheelhouse", "index"])
def test_the_required_wheel_is_installed_from_a_wheelhouse_or_the_index(
    demo_build: DemoBuild, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, source: str
) -> None:
    py = fresh_venv(tmp_path / "venv", demo_build.torch_env)
    required = _pinned(demo_build)
    with serve_wheel(demo_build.wheel, tmp_path_factory) as (_, url):
        where = demo_build.wheel.parent if source == "wheelhouse" else url
        install_farm_wheel(py, required, where, log=tmp_path / "log", for_wheel="user.whl")
    out = subprocess.run(
        [py, "-c", "import torch, wheelfarm_demo._C"], capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr


def test_a_wheelhouse_without_it_is_a_verify_error_naming_the_pin(
    demo_build: DemoBuild, tmp_path: Path
) -> None:
    py = fresh_venv(tmp_path / "venv", demo_build.torch_env)
    pinned = _pinned(demo_build)
    other_cell = FarmWheel(
        pinned.pin.replace("torch2.14", "torch2.13"),
        "cu130",
        "2.13",
        pinned.build_id.replace("torch2.14", "torch2.13"),
    )
    with pytest.raises(VerifyError) as info:
        install_farm_wheel(
            py, other_cell, demo_build.wheel.parent, log=tmp_path / "log", for_wheel="user.whl"
        )
    assert f"its modules import {other_cell.pin} (farm_requires)" in str(info.value)
