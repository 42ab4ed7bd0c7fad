"""The farm's real torch-stable package, end to end: xformers 0.0.35 from its PyPI sdist, built
here for sm_90 against torch 2.14 on torch's stable ABI (floor 2.10) with no Python C API (its
own setup.py tags it py39-none), filed under every cu130 torch from 2.10, installed by real pip
and uv from the served index into fresh venvs, and its TORCH_LIBRARY ops loaded and called."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from packaging.version import Version

from tests.roots import REPO
from wheelfarm.index.serve import served
from wheelfarm.matrix.load import load_matrix

from .conftest import fresh_venv, needs_uv, pip, uv_install, wheelfarm

pytestmark = [pytest.mark.integration, pytest.mark.slow]  # a real upstream build
NAME = "xformers-0.0.35+cu130torch2.10.stable-py39-none-manylinux_"
# The ops load only if the stable-ABI library loads into this torch; the build-version op runs
# on the CPU, so no GPU is needed to call into the binary.
CHECK = (
    "import torch, xformers, xformers.ops\n"
    "from xformers import _cpp_lib\n"
    "assert _cpp_lib._cpp_library_load_exception is None, _cpp_lib._cpp_library_load_exception\n"
    "print(tuple(torch.ops.xformers._nvcc_build_version()))\n"
)


@pytest.fixture(scope="module")
def xformers_wheel(tmp_path_factory: pytest.TempPathFactory, cache_dir: Path) -> Path:
    out = tmp_path_factory.mktemp("xformers")
    work = tmp_path_factory.mktemp("xformers-work")
    result = wheelfarm(
        "build", "--local", "--package", "xformers", "--archs", "9.0",
        "--out", out, "--work", work, "--cache", cache_dir,
    )  # fmt: skip
    return Path(result.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def torch_env(cache_dir: Path) -> Path:
    return max((cache_dir / "envs").glob("torch2.14.*-cu130-cp*"))


@pytest.fixture(scope="module")
def served_xformers(
    xformers_wheel: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Path, str]]:
    house = tmp_path_factory.mktemp("xformers-house")
    shutil.copy(xformers_wheel, house)
    shutil.copy(xformers_wheel.with_name(xformers_wheel.name + ".build.json"), house)
    site = tmp_path_factory.mktemp("xformers-site")
    wheelfarm("index", "--wheelhouse", house, "--out", site, "--strict")
    with served(site) as url:
        yield site, url


def test_one_wheel_for_every_python_and_stable_torch(xformers_wheel: Path) -> None:
    assert xformers_wheel.name.startswith(NAME)
    assert xformers_wheel.name.endswith("_x86_64.whl")


def test_it_is_filed_under_every_cu130_torch_from_its_floor(
    served_xformers: tuple[Path, str], xformers_wheel: Path
) -> None:
    site, _ = served_xformers
    minors = [r.minor for r in load_matrix(REPO).releases if "cu130" in r.builds]
    assert {m for m in minors if Version(m) >= Version("2.10")} >= {"2.10", "2.14"}
    for minor in minors:
        page = site / "cu130" / f"torch{minor}" / "xformers" / "index.html"
        if Version(minor) >= Version("2.10"):
            assert xformers_wheel.name in page.read_text(), minor
        else:
            assert not page.exists(), minor  # below the stable ABI floor
    assert not (site / "cu126").exists()


def _works(py: Path) -> None:
    out = subprocess.run([py, "-c", CHECK], capture_output=True, text=True, check=True).stdout
    assert out.strip().startswith("(13, 0,"), out  # the nvcc that compiled it: this toolkit's


def test_pip_installs_it_and_its_ops_run(
    served_xformers: tuple[Path, str], torch_env: Path, tmp_path: Path
) -> None:
    _, url = served_xformers
    py = fresh_venv(tmp_path / "venv", torch_env)
    result = pip(py, "install", "--extra-index-url", f"{url}cu130/torch2.14/", "xformers")
    assert result.returncode == 0, result.stderr
    assert "Version: 0.0.35+cu130torch2.10.stable" in pip(py, "show", "xformers").stdout
    _works(py)


@needs_uv
def test_uv_installs_it_and_its_ops_run(
    served_xformers: tuple[Path, str], torch_env: Path, tmp_path: Path
) -> None:
    _, url = served_xformers
    py = fresh_venv(tmp_path / "venv", torch_env)
    result = uv_install(py, "--extra-index-url", f"{url}cu130/torch2.14/", "xformers")
    assert result.returncode == 0, result.stderr
    assert "xformers==0.0.35+cu130torch2.10.stable" in result.stderr
    _works(py)
