"""The abi3 Python binding on a real package: torch_memory_saver 0.0.10 from its PyPI sdist,
built here into one cp39-abi3 wheel per CUDA and platform (its binaries link the CUDA driver and
runtime, never torch: a torch-free build whose Python imports torch), filed under every cu130
torch and every Python of the grid, installed by real pip and uv from the served index into
fresh venvs beside torch, and its binary loaded (against the driver stub where this machine has
no driver, builder/driver.py) and called."""

from __future__ import annotations

import json
import os
import subprocess
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.conftest import fresh_venv, needs_uv, pip, uv_install, wheelfarm
from tests.roots import REPO
from wheelfarm.builder import driver
from wheelfarm.index.serve import served
from wheelfarm.matrix.load import load_matrix

pytestmark = [pytest.mark.integration, pytest.mark.slow]  # a real upstream build


# Its own loader picks the binary for torch's CUDA major; the tag round-trip runs on the CPU.
PROBE = """\
import torch, torch_memory_saver
from torch_memory_saver.binary_wrapper import BinaryWrapper
from torch_memory_saver.utils import get_binary_path_from_package
lib = BinaryWrapper(str(get_binary_path_from_package("torch_memory_saver_hook_mode_torch"))).cdll
lib.tms_set_current_tag(b"farm")
print(lib.tms_get_current_tag().decode())
"""


@pytest.fixture(scope="module")
def tms_site(
    tmp_path_factory: pytest.TempPathFactory, cache_dir: Path
) -> Iterator[tuple[Path, Path, str]]:
    """(wheel, site, url): built once for this machine, indexed with its record, served."""
    house = tmp_path_factory.mktemp("tms-house")
    result = wheelfarm(
        "build", "--local", "--package", "torch-memory-saver",
        "--out", house, "--work", tmp_path_factory.mktemp("tms-work"), "--cache", cache_dir,
    )  # fmt: skip
    wheel = Path(result.stdout.strip().splitlines()[-1])
    site = tmp_path_factory.mktemp("tms-site")
    wheelfarm("index", "--wheelhouse", house, "--out", site, "--strict")
    with served(site) as url:
        yield wheel, site, url


def _works(py: Path, wheel: Path, tmp: Path) -> None:
    env = {**os.environ, **driver.import_env(wheel, tmp / "driver", os.environ, tmp / "stub.log")}
    out = subprocess.run([py, "-c", PROBE], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "farm"


def test_one_abi3_wheel_per_cuda(tms_site: tuple[Path, Path, str]) -> None:
    wheel, _, _ = tms_site
    assert wheel.name.startswith("torch_memory_saver-0.0.10+cu130-cp39-abi3-manylinux_")
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
    assert [n for n in names if n.endswith(".abi3.so")] == [
        "torch_memory_saver_hook_mode_preload_cu13.abi3.so",
        "torch_memory_saver_hook_mode_torch_cu13.abi3.so",
    ]  # named by {cuda_major}
    assert not [n for n in names if "libcud" in n]  # driver and runtime stay the user's


def test_filed_under_every_cu130_torch_and_every_python(tms_site: tuple[Path, Path, str]) -> None:
    wheel, site, _ = tms_site
    releases = [
        r for r in load_matrix(REPO).releases if "linux_x86_64" in r.builds.get("cu130", ())
    ]
    for r in releases:
        page = site / "cu130" / f"torch{r.minor}" / "torch-memory-saver" / "index.html"
        assert wheel.name in page.read_text(), r.minor
    (entry,) = json.loads((site / "packages.json").read_text())["wheels"]
    listed = {(c["torch"], c["python"]) for c in entry["covers"]}
    assert listed == {(r.minor, p) for r in releases for p in r.pythons()}


def test_pip_installs_it_and_its_binary_runs(
    tms_site: tuple[Path, Path, str], torch_env: Path, tmp_path: Path
) -> None:
    wheel, _, url = tms_site
    py = fresh_venv(tmp_path / "venv", torch_env)
    result = pip(py, "install", "--extra-index-url", f"{url}cu130/torch2.14/", "torch-memory-saver")
    assert result.returncode == 0, result.stderr
    assert "Version: 0.0.10+cu130" in pip(py, "show", "torch-memory-saver").stdout
    _works(py, wheel, tmp_path)


@needs_uv
def test_uv_installs_it_and_its_binary_runs(
    tms_site: tuple[Path, Path, str], torch_env: Path, tmp_path: Path
) -> None:
    wheel, _, url = tms_site
    py = fresh_venv(tmp_path / "venv", torch_env)
    result = uv_install(py, "--extra-index-url", f"{url}cu130/torch2.14/", "torch-memory-saver")
    assert result.returncode == 0, result.stderr
    assert "torch-memory-saver==0.0.10+cu130" in result.stderr
    _works(py, wheel, tmp_path)
