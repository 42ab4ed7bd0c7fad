"""The abi3 kind on a real package: xformers 0.0.33.post2 from its PyPI sdist, the last release on
torch's full C++ ABI, whose setup.py builds py_limited_api binaries (Py_LIMITED_API 3.9). One
cp39-abi3 wheel per torch minor, CUDA and platform: built here for sm_90 against torch 2.14, filed
under cu130/torch2.14 for every Python of that torch and under no other torch, installed by real
pip and uv from the served index into fresh venvs, and its ops loaded and called.

CI compiles one of its 18 CUDA sources (XFORMERS_SELECTIVE_BUILD, upstream's own filter: the
nvcc_info.cu the test calls into) beside all 13 C++ sources, to keep the run under its limit;
the full build (31 units, 8 min 45 s here) is recorded in docs/building.md."""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration import xformers
from tests.integration.conftest import serve_wheel
from tests.roots import REPO
from wheelfarm.builder.binary import inspect_binary
from wheelfarm.matrix.load import load_matrix

# A real upstream build: 8.6 minutes of one worker in CI (its 13 C++ sources), so --run-long-builds
pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.long_build]


VERSION = "0.0.33.post2+cu130torch2.14"


NAME = f"xformers-{VERSION}-cp39-abi3-manylinux_"


@pytest.fixture(scope="module")
def xformers_wheel(tmp_path_factory: pytest.TempPathFactory, cache_dir: Path) -> Path:
    return xformers.build(
        tmp_path_factory, cache_dir, "--package-version", "0.0.33.post2",
        env={"XFORMERS_SELECTIVE_BUILD": "nvcc_info"},
    )  # fmt: skip


@pytest.fixture(scope="module")
def served_xformers(
    xformers_wheel: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Path, str]]:
    with serve_wheel(xformers_wheel, tmp_path_factory) as site_url:
        yield site_url


def test_one_limited_api_wheel_on_the_full_torch_abi(xformers_wheel: Path) -> None:
    assert xformers_wheel.name.startswith(NAME)
    with zipfile.ZipFile(xformers_wheel) as zf:
        binary = inspect_binary(zf.read("xformers/_C.so"))
    assert {"libtorch_cpu.so", "libc10.so"} <= set(binary.needed)  # torch's C++ ABI, one minor
    record = json.loads(xformers_wheel.with_name(xformers_wheel.name + ".build.json").read_text())
    assert record["archs_found"] == {"xformers/_C.so": {"cubins": ["sm_90"], "ptx": []}}


def test_filed_under_its_torch_for_every_python_and_no_other_torch(
    served_xformers: tuple[Path, str], xformers_wheel: Path
) -> None:
    site, _ = served_xformers
    release = load_matrix(REPO).release("2.14")
    (entry,) = json.loads((site / "packages.json").read_text())["wheels"]
    assert {(c["torch"], c["python"]) for c in entry["covers"]} == {
        ("2.14", p) for p in release.pythons()
    }
    assert (
        xformers_wheel.name
        in (site / "cu130" / "torch2.14" / "xformers" / "index.html").read_text()
    )
    assert not (site / "cu130" / "torch2.13" / "xformers").exists()  # binds to one torch minor


@pytest.mark.parametrize("tool", xformers.INSTALLERS)
def test_pip_and_uv_install_the_abi3_wheel_and_its_ops_load(
    served_xformers: tuple[Path, str], torch_env: Path, tmp_path: Path, tool: str
) -> None:
    _, url = served_xformers
    xformers.installs(tool, url, torch_env, tmp_path / "venv", "xformers==0.0.33.post2", VERSION)
