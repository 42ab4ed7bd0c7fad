"""A torch-free package for real: pycuda 2026.1 built once (no torch, no arch list, linked
against the driver stub of this slim toolkit), indexed under every cu130 torch of the grid,
installed by real pip and uv from the served index into plain venvs, and imported against the
driver stub (builder/driver.py), where its driver calls fail as on a machine with no GPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.integration.conftest import needs_uv, pip, uv_install, wheelfarm
from tests.roots import REPO
from wheelfarm.builder import driver
from wheelfarm.index.serve import served
from wheelfarm.matrix.load import load_matrix

pytestmark = [pytest.mark.integration, pytest.mark.slow]


PY = f"{sys.version_info[0]}.{sys.version_info[1]}"


CP = f"cp{PY.replace('.', '')}"


# What the import check prints: the CUDA it was built with, and how init() fails without a GPU.
PROBE = """\
import json, pycuda, pycuda.driver as drv
try:
    drv.init()
    failure = None
except drv.Error as exc:
    failure = [type(exc).__name__, str(exc)]
print(json.dumps({"version": drv.get_version(), "init": failure}))
"""


@dataclass(frozen=True)
class Built:
    wheel: Path
    record: dict[str, object]
    site: Path
    url: str


@pytest.fixture(scope="module")
def pycuda_site(tmp_path_factory: pytest.TempPathFactory, cache_dir: Path) -> Iterator[Built]:
    """pycuda built once for this machine (cu130, this Python), indexed with its record and
    served on 127.0.0.1."""
    house = tmp_path_factory.mktemp("pycuda-house")
    work = tmp_path_factory.mktemp("pycuda-work")
    result = wheelfarm(
        "build", "--local", "--package", "pycuda",
        "--out", house, "--work", work, "--cache", cache_dir,
    )  # fmt: skip
    wheel = Path(result.stdout.strip().splitlines()[-1])
    record = json.loads(wheel.with_name(wheel.name + ".build.json").read_text())
    site = tmp_path_factory.mktemp("pycuda-site")
    wheelfarm("index", "--wheelhouse", house, "--out", site, "--strict")
    with served(site) as url:
        yield Built(wheel, record, site, url)


def _imports_against_the_stub(py: Path, wheel: Path, tmp: Path) -> dict[str, object]:
    """Run PROBE in `py`'s venv with the driver stub where this machine has no driver."""
    stub = driver.import_env(wheel, tmp / "driver", os.environ, tmp / "stub.log")
    if not driver.driver_loads():
        assert "LD_LIBRARY_PATH" in stub
        bare = subprocess.run(
            [py, "-c", "import pycuda.driver"], capture_output=True, text=True, check=False
        )
        assert "libcuda.so.1" in bare.stderr  # without the stub the module cannot load
    env = {**os.environ, **stub}
    out = subprocess.run([py, "-c", PROBE], capture_output=True, text=True, env=env, check=True)
    return dict(json.loads(out.stdout))


def _check_probe(probe: dict[str, object], record: dict[str, object]) -> None:
    toolchain = record["toolchain"]
    assert isinstance(toolchain, dict)
    major, minor = map(int, str(toolchain["cuda"]).split(".")[:2])
    assert probe["version"] == [major, minor, 0]  # cuda.h's CUDA_VERSION it was compiled with
    if not driver.driver_loads():
        kind, message = probe["init"]  # type: ignore[misc]
        assert kind == "RuntimeError" and message.startswith("cuInit failed: no CUDA-capable")


def _plain_venv(path: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", path], check=True)
    return path / "bin" / "python"


def test_one_torch_free_wheel_without_device_code(pycuda_site: Built) -> None:
    name = pycuda_site.wheel.name
    assert name.startswith(f"pycuda-2026.1+cu130-{CP}-{CP}-manylinux_"), name
    assert name.endswith("_x86_64.whl")
    target = pycuda_site.record["target"]
    assert isinstance(target, dict)
    assert (target["abi"], target["torch"], target["archs"]) == ("torch-free", None, None)
    assert pycuda_site.record["archs_found"] == {}
    assert "cuInit" in driver.wheel_driver_symbols(pycuda_site.wheel)  # it links the driver


def test_listed_under_every_cu130_torch_of_the_grid(pycuda_site: Built) -> None:
    grid = {
        r.minor
        for r in load_matrix(REPO).releases
        if "linux_x86_64" in r.builds.get("cu130", ()) and PY in r.pythons()
    }
    assert "2.14" in grid and len(grid) > 1
    listed = {
        page.parent.parent.name.removeprefix("torch")
        for page in (pycuda_site.site / "cu130").glob("torch*/pycuda/index.html")
        if pycuda_site.wheel.name in page.read_text()
    }
    assert listed == grid
    assert not list(pycuda_site.site.glob("cu126/*/pycuda"))  # its CUDA only


def test_pip_installs_it_into_a_plain_venv_and_it_imports(
    pycuda_site: Built, tmp_path: Path
) -> None:
    py = _plain_venv(tmp_path / "venv")
    index = f"{pycuda_site.url}cu130/torch2.14/"
    result = pip(
        py, "install", "--only-binary", "pycuda", "--extra-index-url", index, "pycuda==2026.1"
    )
    assert result.returncode == 0, result.stderr
    assert "Version: 2026.1+cu130" in pip(py, "show", "pycuda").stdout
    assert pip(py, "show", "torch").returncode != 0  # torch-free: nothing pulled torch in
    _check_probe(_imports_against_the_stub(py, pycuda_site.wheel, tmp_path), pycuda_site.record)


@needs_uv
def test_uv_installs_it_into_a_plain_venv_and_it_imports(
    pycuda_site: Built, tmp_path: Path
) -> None:
    py = _plain_venv(tmp_path / "venv")
    index = f"{pycuda_site.url}cu130/torch2.14/"
    result = uv_install(py, "--only-binary", "pycuda", "--extra-index-url", index, "pycuda==2026.1")
    assert result.returncode == 0, result.stderr
    assert "pycuda==2026.1+cu130" in result.stderr
    _check_probe(_imports_against_the_stub(py, pycuda_site.wheel, tmp_path), pycuda_site.record)
