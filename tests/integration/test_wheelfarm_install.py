"""The standalone install helper (scripts/wheelfarm_install.py), fetched from a served site and
run against real venvs: it reads the venv's torch, CUDA, Python and platform and installs the one
matching wheel with real pip, torch pinned; a stand-in `nvidia-smi` first on PATH plays the GPU and
driver this machine lacks."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.conftest import DemoBuild, fresh_venv, pip, retag, wheelfarm
from tests.integration.test_doctor import list_archs, smi
from wheelfarm.core.wheelfile import metadata
from wheelfarm.index.serve import served

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
    list_archs(site / "packages.json", demo_build.wheel)
    with served(site) as url:
        yield url


def _helper(
    url: str, *args: str | Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, HELPER, *map(str, args), "--index", url],
                          capture_output=True, text=True, check=False, env=env)  # fmt: skip


def test_installs_the_wheel_matching_the_venvs_torch(
    site_url: str, demo_build: DemoBuild, tmp_path: Path
) -> None:
    py = fresh_venv(tmp_path / "venv", demo_build.torch_env)  # torch 2.14.1+cu130
    result = _helper(site_url, "wheelfarm-demo", "--python", py)
    assert result.returncode == 0, result.stderr
    assert f"--extra-index-url {site_url}cu130/torch2.14/" in result.stdout
    torch = pip(py, "show", "torch").stdout.split("Version: ")[1].split()[0]
    assert f" torch=={torch} " in result.stdout  # pinned: pip keeps the torch it found
    show = pip(py, "show", "wheelfarm-demo").stdout
    assert "Version: 0.1.0+cu130torch2.14" in show


def test_the_wheel_requires_the_torch_minor_it_was_built_for(demo_build: DemoBuild) -> None:
    assert "torch>=2.14,<2.15" in metadata(demo_build.wheel)["requires_dist"]


def test_a_gpu_and_driver_the_wheel_cannot_use_are_refused(
    site_url: str, demo_build: DemoBuild, tmp_path: Path
) -> None:
    """The demo carries SASS sm_80, sm_90 and PTX 90: a 7.5 GPU runs none of it, and driver 535
    is below CUDA 13's floor (580.65.06). --ignore-gpu goes on, torch still pinned."""
    py = demo_build.torch_env / "bin" / "python"
    env = smi(tmp_path, "7.5, 535.104.05")
    result = _helper(site_url, "wheelfarm-demo", "--python", py, "--dry-run", env=env)
    assert result.returncode == 4, result.stderr
    assert result.stdout == "" and result.stderr.count("\n") == 1
    assert "GPU 0 (compute capability 7.5) has no SASS or PTX that runs on it" in result.stderr
    assert (
        "(it carries sm_80: 8.0-8.x, sm_90: 9.0-9.x, PTX sm_90: 9.0 and newer (JIT)); "
        "build it for 7.5" in result.stderr
    )
    assert "driver 535.104.05 is older than 580.65.06" in result.stderr
    result = _helper(site_url, "wheelfarm-demo", "--python", py, "--dry-run", "--ignore-gpu",
                     env=env)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert " torch==2.14.1 --extra-index-url " in result.stdout  # the dist's, not __version__
    result = _helper(site_url, "wheelfarm-demo", "--python", py, "--dry-run",
                     env=smi(tmp_path, "8.6, 580.82.07"))  # fmt: skip
    assert result.returncode == 0, result.stderr  # sm_80 SASS runs on 8.6


def test_print_requirement_is_hash_pinned(site_url: str, demo_build: DemoBuild) -> None:
    py = demo_build.torch_env / "bin" / "python"
    result = _helper(site_url, "wheelfarm-demo", "--python", py, "--print-requirement")
    line = result.stdout.strip()
    assert result.returncode == 0, result.stderr
    assert line.startswith(
        f"wheelfarm-demo @ {site_url}files/wheelfarm_demo-0.1.0%2Bcu130torch2.14-"
    )
    assert "#sha256=" in line


def test_no_matching_wheel_names_what_exists(site_url: str, demo_build: DemoBuild) -> None:
    result = _helper(site_url, "wheelfarm-demo==9.9", "--python", demo_build.torch_env / "bin" / "python",
                     "--dry-run")  # fmt: skip
    assert result.returncode == 1
    assert "no wheelfarm-demo==9.9 wheel for cuda cu130, torch 2.14" in result.stderr
    assert result.stderr.rstrip().endswith(": it has wheelfarm-demo 0.1.0 only")  # the version


def test_a_python_without_torch_is_told_what_to_do(site_url: str, tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", tmp_path / "bare"], check=True)
    result = _helper(site_url, "wheelfarm-demo", "--python", tmp_path / "bare" / "bin" / "python")
    assert result.returncode == 2
    assert "no CUDA build of torch is installed" in result.stderr
