"""Every fix doctor prints is a command that works: each `fix:`/`or:` line that is a command is
run as printed, against a local index, and does what it says. The farm's site serves the demo
wheel; PyTorch's index (torch.yaml's `index_url` of a copied farm root) is a served stand-in
holding torch wheels of its names and versions (this machine reaches no download.pytorch.org).
The torch the fixes replace is real: the CPU torch 2.13.0 wheel, and the farm's torch 2.14.1."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.integration.conftest import (
    DemoBuild,
    cpu_torch_venv,
    fresh_venv,
    retag,
    serve_wheel,
    standin_torch,
    wheelfarm,
)
from tests.roots import REPO
from wheelfarm.index.serve import served

pytestmark = pytest.mark.integration


@dataclass(frozen=True)
class Farm:
    root: Path
    site: str
    pypi: str


@pytest.fixture(scope="module")
def farm(demo_build: DemoBuild, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Farm]:
    """(a farm root whose torch.yaml names the stand-in PyTorch index, the served site); an
    empty index stands for PyPI (every installer's default), so only the indexes a fix names
    can answer."""
    pytorch, empty = tmp_path_factory.mktemp("pytorch"), tmp_path_factory.mktemp("empty")
    standin_torch(pytorch / "cu130", "2.13.0+cu130", "2.14.1+cu130")
    root = tmp_path_factory.mktemp("root")
    shutil.copytree(REPO.matrix, root / "matrix")
    with (
        served(pytorch) as torch_url,
        served(empty) as nothing,
        serve_wheel(demo_build.wheel, tmp_path_factory) as (_, site),
    ):
        torch_yaml = root / "matrix" / "torch.yaml"
        text = torch_yaml.read_text(encoding="utf-8")
        torch_yaml.write_text(
            text.replace("https://download.pytorch.org/whl/{cuda}", f"{torch_url}{{cuda}}")
        )
        yield Farm(root, site, nothing)


def fixes(py: Path, target: str | Path, root: Path, site: str) -> dict[str, list[str]]:
    """doctor's fixes by check, each line as printed."""
    result = wheelfarm("doctor", target, "--python", py, "--root", root, "--site", site,
                       check=False)  # fmt: skip
    out: dict[str, list[str]] = {}
    check = ""
    for line in result.stdout.splitlines():
        if line.startswith(("pass", "FAIL")):
            check = line.split()[1]
        elif line.strip().startswith(("fix:", "or:")):
            out.setdefault(check, []).append(line.strip().split(None, 1)[1])
    return out


def run(command: str, farm: Farm) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "VIRTUAL_ENV"))}
    env |= {"PIP_CONFIG_FILE": os.devnull, "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            "PIP_INDEX_URL": farm.pypi}  # fmt: skip
    return subprocess.run(
        shlex.split(command), capture_output=True, text=True, env=env, check=False
    )


def torch_of(py: Path) -> str:
    code = "from importlib.metadata import version; print(version('torch'))"
    return subprocess.run(
        [py, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()


def test_a_cpu_torch_of_another_minor_gets_commands_that_install_pytorchs_cuda_torch(
    farm: Farm, demo_build: DemoBuild, tmp_path: Path
) -> None:
    root, site = farm.root, farm.site
    py = cpu_torch_venv(tmp_path / "venv", importable=True)
    got = subprocess.run([py, "-m", "pip", "install", "-q", "--no-deps", demo_build.wheel],
                         capture_output=True, text=True, check=False)  # fmt: skip
    assert got.returncode == 0, got.stderr
    found = fixes(py, "wheelfarm-demo", root, site)
    assert found["cuda"] == [
        f'{py} -m pip install "torch==2.13.0+cu130" --index-url {root_torch(root)}'
    ]
    assert found["torch"] == [
        f'{py} -m pip install "torch==2.14.1+cu130" --index-url {root_torch(root)}'
    ]
    for command in (*found["cuda"], *found["torch"]):
        done = run(command, farm)
        assert done.returncode == 0, done.stderr
    assert torch_of(py) == "2.14.1+cu130"
    after = fixes(py, "wheelfarm-demo", root, site)
    assert "torch" not in after and "cuda" not in after  # both pass now


def test_a_wheel_for_another_torch_gets_the_farms_wheel_for_this_one(
    farm: Farm, demo_build: DemoBuild, tmp_path: Path
) -> None:
    """The demo relabelled for torch 2.13, beside the farm's real torch 2.14.1: the first fix
    installs the farm's torch 2.14 wheel from the site, the second PyTorch's torch 2.13."""
    root, site = farm.root, farm.site
    py = fresh_venv(tmp_path / "venv", demo_build.torch_env)
    other = retag(
        demo_build.wheel,
        tmp_path,
        label="cu130torch2.13",
        python=demo_build.wheel.name.split("-")[2],
    )
    found = fixes(py, other, root, site)
    ours, theirs = found["torch"]
    assert ours.startswith(
        f'{py} -m pip install "wheelfarm-demo==0.1.0+cu130torch2.14" --extra-index-url {site}cu130/torch2.14/'
    )
    done = run(ours, farm)
    assert done.returncode == 0, done.stderr
    assert "wheelfarm-demo-0.1.0+cu130torch2.14" in done.stdout
    assert theirs == f'{py} -m pip install "torch==2.13.0+cu130" --index-url {root_torch(root)}'
    assert run(theirs, farm).returncode == 0
    assert torch_of(py) == "2.13.0+cu130"


def root_torch(root: Path) -> str:
    """PyTorch's cu130 index as the copied root's torch.yaml names it."""
    lines = (root / "matrix" / "torch.yaml").read_text(encoding="utf-8").splitlines()
    (line,) = (x for x in lines if x.startswith("index_url:"))
    return line.split('"')[1].replace("{cuda}", "cu130")
