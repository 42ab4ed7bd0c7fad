"""wheelfarm itself as a package users run: scripts/release.sh (release.yml's build step) builds
the sdist and wheel with uv and checks the wheel outside the checkout; the wheel carries the
matrix, and `uvx wheelfarm doctor` (uv's tool run of that wheel) checks a real installed farm
wheel, its binaries loaded. Publishing (PyPI's trusted publishing) cannot run here."""

from __future__ import annotations

import os
import subprocess
import zipfile
from importlib.metadata import version
from pathlib import Path

import pytest

from tests.integration.conftest import UV, DemoBuild, fresh_venv, needs_uv
from tests.roots import REPO

pytestmark = [pytest.mark.integration, needs_uv]
VERSION = version("wheelfarm")  # the checkout's, installed editable


def release(tag: str, out: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{Path(UV).parent}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(["bash", REPO.path / "scripts" / "release.sh", tag, out],
                          capture_output=True, text=True, env=env, check=False)  # fmt: skip


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    done = release(f"v{VERSION}", out)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.glob("wheelfarm-*")) == [
        f"wheelfarm-{VERSION}-py3-none-any.whl",
        f"wheelfarm-{VERSION}.tar.gz",
    ]
    return out / f"wheelfarm-{VERSION}-py3-none-any.whl"


def test_the_wheel_carries_the_matrix_and_the_install_helper(dist: Path) -> None:
    names = set(zipfile.ZipFile(dist).namelist())
    packages = {p.name for p in REPO.packages.glob("*.yaml")}
    assert {f"wheelfarm/matrix/packages/{p}" for p in packages} <= names
    assert {"wheelfarm/matrix/torch.yaml", "wheelfarm/matrix/schema/package.schema.json",
            "wheelfarm/index/templates/landing.html",
            "wheelfarm/scripts/wheelfarm_install.py"} <= names  # fmt: skip


def test_a_tag_that_is_not_the_version_is_refused(tmp_path: Path) -> None:
    done = release("v99.0", tmp_path / "out")
    assert done.returncode == 1
    assert f"tag v99.0 is not v{VERSION} (pyproject.toml's version)" in done.stderr
    assert not (tmp_path / "out").exists()


def test_uvx_runs_doctor_from_the_wheel_on_an_installed_farm_wheel(
    dist: Path, demo_build: DemoBuild, tmp_path: Path
) -> None:
    """As docs/install.md says: `uvx wheelfarm doctor NAME --python VENV`, from any folder."""
    py = fresh_venv(tmp_path / "venv", demo_build.torch_env)
    got = subprocess.run([py, "-m", "pip", "install", "-q", "--no-deps", demo_build.wheel],
                         capture_output=True, text=True, check=False)  # fmt: skip
    assert got.returncode == 0, got.stderr
    done = subprocess.run([UV, "tool", "run", "--from", dist, "wheelfarm", "doctor",
                           "wheelfarm-demo", "--python", py],
                          capture_output=True, text=True, cwd=tmp_path, check=False)  # fmt: skip
    lines = {x.split()[1]: x for x in done.stdout.splitlines() if x.startswith(("pass", "FAIL"))}
    assert set(lines) == {"python", "platform", "torch", "cuda", "gpu", "driver", "import"}, done
    for check in ("python", "platform", "torch", "cuda", "import"):
        assert lines[check].startswith("pass"), lines[check]
    assert "loaded 1 binaries" in lines["import"]
