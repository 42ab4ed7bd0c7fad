"""The farm's real torch-stable package, end to end: xformers 0.0.35 from its PyPI sdist, built
here for sm_90 against torch 2.14 on torch's stable ABI (floor 2.10) with no Python C API (its
own setup.py tags it py39-none), filed under every cu130 torch from 2.10, installed by real pip
and uv from the served index into fresh venvs, and its TORCH_LIBRARY ops loaded and called."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from packaging.version import Version

from tests.integration import xformers
from tests.integration.conftest import serve_wheel
from tests.roots import REPO
from wheelfarm.matrix.load import load_matrix

pytestmark = [pytest.mark.integration, pytest.mark.slow]  # a real upstream build


VERSION = "0.0.35+cu130torch2.10.stable"


NAME = f"xformers-{VERSION}-py39-none-manylinux_"


@pytest.fixture(scope="module")
def xformers_wheel(tmp_path_factory: pytest.TempPathFactory, cache_dir: Path) -> Path:
    return xformers.build(tmp_path_factory, cache_dir)


@pytest.fixture(scope="module")
def served_xformers(
    xformers_wheel: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Path, str]]:
    with serve_wheel(xformers_wheel, tmp_path_factory) as site_url:
        yield site_url


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


@pytest.mark.parametrize("tool", xformers.INSTALLERS)
def test_pip_and_uv_install_it_and_its_ops_run(
    served_xformers: tuple[Path, str], torch_env: Path, tmp_path: Path, tool: str
) -> None:
    _, url = served_xformers
    xformers.installs(tool, url, torch_env, tmp_path / "venv", "xformers", VERSION)
