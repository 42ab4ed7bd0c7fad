"""The standalone install helper (scripts/wheelfarm_install.py), fetched from a served site and
run against real venvs: it reads the venv's torch, CUDA, Python and platform and installs the one
matching wheel with real pip."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from wheelfarm.index.serve import served

from .conftest import DemoBuild, fresh_venv, pip, retag, wheelfarm

pytestmark = pytest.mark.integration
HELPER = Path(__file__).parents[2] / "scripts" / "wheelfarm_install.py"
CP = f"cp{sys.version_info[0]}{sys.version_info[1]}"


@pytest.fixture(scope="module")
def site_url(demo_build: DemoBuild, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    house = tmp_path_factory.mktemp("house")
    shutil.copy(demo_build.wheel, house)
    shutil.copy(demo_build.wheel.with_name(demo_build.wheel.name + ".build.json"), house)
    retag(demo_build.wheel, house, label="cu126torch2.14", python=CP)
    site = tmp_path_factory.mktemp("site")
    wheelfarm("index", "--wheelhouse", house, "--out", site)  # the root serves install.py
    assert (site / "install.py").read_bytes() == HELPER.read_bytes()
    with served(site) as url:
        yield url


def _helper(url: str, *args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, HELPER, *map(str, args), "--index", url],
                          capture_output=True, text=True, check=False)  # fmt: skip


def test_installs_the_wheel_matching_the_venvs_torch(
    site_url: str, demo_build: DemoBuild, tmp_path: Path
) -> None:
    py = fresh_venv(tmp_path / "venv", demo_build.torch_env)  # torch 2.14.1+cu130
    result = _helper(site_url, "wheelfarm-demo", "--python", py)
    assert result.returncode == 0, result.stderr
    assert f"--extra-index-url {site_url}cu130/torch2.14/" in result.stdout
    show = pip(py, "show", "wheelfarm-demo").stdout
    assert "Version: 0.1.0+cu130torch2.14" in show


def test_no_matching_wheel_names_what_exists(site_url: str, demo_build: DemoBuild) -> None:
    result = _helper(site_url, "wheelfarm-demo==9.9", "--python", demo_build.torch_env / "bin" / "python",
                     "--dry-run")  # fmt: skip
    assert result.returncode == 1
    assert "no wheelfarm-demo==9.9 wheel for cuda cu130, torch 2.14" in result.stderr
    assert "cu126/torch2.14, cu130/torch2.14" in result.stderr


def test_a_python_without_torch_is_told_what_to_do(site_url: str, tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", tmp_path / "bare"], check=True)
    result = _helper(site_url, "wheelfarm-demo", "--python", tmp_path / "bare" / "bin" / "python")
    assert result.returncode == 2
    assert "no CUDA build of torch is installed" in result.stderr
