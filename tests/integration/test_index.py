"""The index for real: a site built from real demo wheels (plus retagged copies for other
combos), served on 127.0.0.1, installed from by real pip and uv in fresh venvs."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from wheelfarm.core.commands import UV_OUTSIDE_A_VENV, install_commands
from wheelfarm.index.serve import served

from .conftest import DemoBuild, fresh_venv, needs_uv, pip, retag, uv_install, wheelfarm

pytestmark = pytest.mark.integration
CP = f"cp{sys.version_info[0]}{sys.version_info[1]}"


@pytest.fixture(scope="module")
def served_site(
    demo_build: DemoBuild, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Path, str]]:
    house = tmp_path_factory.mktemp("house")
    shutil.copy(demo_build.wheel, house)
    shutil.copy(demo_build.wheel.with_name(demo_build.wheel.name + ".build.json"), house)
    retag(demo_build.wheel, house, label="cu126torch2.14", python=CP)
    retag(
        demo_build.wheel,
        house,
        label="cu130torch2.13",
        python="cp312" if CP != "cp312" else "cp313",
    )
    site = tmp_path_factory.mktemp("site")
    wheelfarm("index", "--wheelhouse", house, "--out", site)
    with served(site) as url:
        yield site, url


def test_site_layout_and_hashes(served_site: tuple[Path, str], demo_build: DemoBuild) -> None:
    site, _ = served_site
    page = (site / "cu130" / "torch2.14" / "wheelfarm-demo" / "index.html").read_text()
    assert demo_build.record["wheel"]["sha256"] in page
    assert 'data-core-metadata="sha256=' in page and 'data-requires-python="&gt;=3.9"' in page
    assert (site / "files" / (demo_build.wheel.name + ".metadata")).is_file()
    manifest = json.loads((site / "packages.json").read_text())
    assert {w["label"] for w in manifest["wheels"]} == {
        "cu130torch2.14",
        "cu126torch2.14",
        "cu130torch2.13",
    }
    assert (site / "cu126" / "torch2.14" / "wheelfarm-demo" / "index.html").is_file()


def test_pip_installs_the_matching_wheel_with_hash_checked(
    served_site: tuple[Path, str], demo_build: DemoBuild, tmp_path: Path
) -> None:
    _, url = served_site
    py = fresh_venv(tmp_path / "venv", demo_build.torch_env)
    result = pip(py, "install", "--extra-index-url", f"{url}cu130/torch2.14/", "wheelfarm-demo")
    assert result.returncode == 0, result.stderr
    show = pip(py, "show", "wheelfarm-demo").stdout
    assert "Version: 0.1.0+cu130torch2.14" in show
    subprocess.run([py, "-c", "import torch, wheelfarm_demo"], check=True)


def test_pip_refuses_a_wrong_hash(
    served_site: tuple[Path, str], demo_build: DemoBuild, tmp_path: Path
) -> None:
    site, _ = served_site
    bad = tmp_path / "bad"
    shutil.copytree(site, bad)
    page = bad / "cu130" / "torch2.14" / "wheelfarm-demo" / "index.html"
    page.write_text(page.read_text().replace(demo_build.record["wheel"]["sha256"], "0" * 64))
    py = fresh_venv(tmp_path / "venv", demo_build.torch_env)
    with served(bad) as url:
        result = pip(
            py,
            "install",
            "--no-cache-dir",
            "--no-deps",  # the wheel's own hash is the point; torch is there already
            "--index-url",
            f"{url}cu130/torch2.14/",
            "wheelfarm-demo",
        )
    assert result.returncode != 0
    assert "HASHES" in result.stderr.upper()


@needs_uv
def test_uv_installs_the_matching_wheel(
    served_site: tuple[Path, str], demo_build: DemoBuild, tmp_path: Path
) -> None:
    _, url = served_site
    py = fresh_venv(tmp_path / "venv", demo_build.torch_env)
    result = uv_install(py, "--extra-index-url", f"{url}cu130/torch2.14/", "wheelfarm-demo")
    assert result.returncode == 0, result.stderr
    assert "wheelfarm-demo==0.1.0+cu130torch2.14" in result.stderr
    subprocess.run([py, "-c", "import torch, wheelfarm_demo"], check=True)


def test_a_combo_without_a_matching_wheel_installs_nothing(
    served_site: tuple[Path, str], demo_build: DemoBuild, tmp_path: Path
) -> None:
    _, url = served_site
    py = fresh_venv(tmp_path / "venv", demo_build.torch_env)
    result = pip(py, "install", "--index-url", f"{url}cu130/torch2.13/", "wheelfarm-demo")
    assert result.returncode != 0
    assert "No matching distribution found for wheelfarm-demo" in result.stderr
    assert pip(py, "show", "wheelfarm-demo").returncode != 0


def test_local_farm_prints_a_working_pip_command(
    demo_build: DemoBuild, tmp_path: Path, cache_dir: Path
) -> None:
    """README's main command, end to end: plan -> build -> local site -> printed pip command."""
    store = tmp_path / "store"
    result = wheelfarm(
        "farm",
        "--store",
        store,
        "--site",
        tmp_path / "site",
        "--work",
        tmp_path / "work",
        "--cache",
        cache_dir,
    )
    lines = result.stdout.splitlines()
    index = f"{(tmp_path / 'site').resolve().as_uri()}/cu130/torch2.14/"
    printed = install_commands("wheelfarm-demo", "0.1.0+cu130torch2.14", index)
    assert lines[:3] == [printed.pip, f"# {UV_OUTSIDE_A_VENV}", printed.uv]
    py = fresh_venv(tmp_path / "venv", demo_build.torch_env)
    installed = pip(py, *shlex.split(printed.pip)[1:])
    assert installed.returncode == 0, installed.stderr
    assert "Version: 0.1.0+cu130torch2.14" in pip(py, "show", "wheelfarm-demo").stdout
    again = wheelfarm("farm", "--store", store, "--site", tmp_path / "site", "--cache", cache_dir)
    assert "[plan] 0 to build, 1 already in" in again.stderr
