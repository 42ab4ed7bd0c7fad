"""A fork's files are what the farm uses, also when wheelfarm is installed as a normal wheel (as
the workflows install it): install this project non-editable into a fresh venv, then run
validate, plan and a demo build from a fork's checkout with an extra package and an extra patch."""

from __future__ import annotations

import difflib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.roots import REPO

from .conftest import DemoBuild

MARKER = 'FORK = "built from the fork\'s checkout"\n'


def fork_patch(demo: Path) -> str:
    """A unified diff (as `diff -u` writes patches) adding MARKER to the demo's __init__.py."""
    old = (demo / "wheelfarm_demo" / "__init__.py").read_text().splitlines(keepends=True)
    new = [*old, "\n", MARKER]
    path = "wheelfarm_demo/__init__.py"
    return "".join(difflib.unified_diff(old, new, f"a/{path}", f"b/{path}"))


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with wheelfarm[build] installed from a wheel of this checkout."""
    venv = tmp_path_factory.mktemp("installed") / "venv"
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    subprocess.run(
        [venv / "bin" / "python", "-m", "pip", "install", "--quiet", f"{REPO.path}[build]"],
        check=True,
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )
    return venv / "bin"


def fork_of_this_repo(dest: Path) -> Path:
    """A fork's checkout: the shipped farm root plus one package and one patch of its own."""
    for part in ("matrix", "demo", "scripts", "index/templates"):
        shutil.copytree(REPO.path / part, dest / part, ignore=shutil.ignore_patterns("build"))
    packages = dest / "matrix" / "packages"
    scatter = (packages / "torch-scatter.yaml").read_text()
    (packages / "fork-only.yaml").write_text(
        scatter.replace("name: torch-scatter", "name: fork-only")
    )
    patch = fork_patch(dest / "demo" / "wheelfarm-demo")
    (dest / "matrix" / "patches" / "wheelfarm_demo-fork.patch").write_text(patch)
    demo = packages / "wheelfarm-demo.yaml"
    demo.write_text(
        demo.read_text().replace(
            "    source: {path: demo/wheelfarm-demo}\n",
            "    source: {path: demo/wheelfarm-demo}\n    patches: [wheelfarm_demo-fork.patch]\n",
        )
    )
    return dest


def run(bin_dir: Path, *args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [bin_dir / "wheelfarm", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, f"{args}: {result.stdout}\n{result.stderr[-3000:]}"
    return result


def test_installed_wheelfarm_uses_the_forks_checkout(
    installed: Path, tmp_path: Path, cache_dir: Path, demo_build: DemoBuild
) -> None:
    where = subprocess.run(
        [installed / "python", "-c", "import wheelfarm.matrix as m; print(m.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,  # not the checkout, whose wheelfarm/ folder would shadow the install
    ).stdout
    assert "site-packages" in where and str(REPO.path) not in where  # a normal install

    # outside any checkout: the installed package's own copy of the farm
    alone = run(installed, "validate", cwd=tmp_path)
    shipped = len(list(REPO.packages.glob("*.yaml")))
    assert f"ok: {shipped} packages" in alone.stdout and "installed package" in alone.stdout

    fork = fork_of_this_repo(tmp_path / "fork")
    inside = run(installed, "validate", cwd=fork / "demo")
    assert f"ok: {shipped + 1} packages" in inside.stdout and f"{fork}, checkout" in inside.stdout
    plan = run(installed, "plan", "--package", "fork-only", "--format", "json", cwd=fork)
    assert {b["package"] for b in json.loads(plan.stdout)["builds"]} == {"fork-only"}

    out = tmp_path / "out"
    build = run(
        installed, "build", "--local", "--out", out, "--work", tmp_path / "work",
        "--cache", cache_dir, cwd=fork,
    )  # fmt: skip
    wheel = Path(build.stdout.strip().splitlines()[-1])
    with zipfile.ZipFile(wheel) as zf:
        init = zf.read("wheelfarm_demo/__init__.py").decode()
    assert MARKER in init  # the fork's patch, applied to its demo
    record = json.loads(wheel.with_name(wheel.name + ".build.json").read_text())
    assert record["source"]["patches"] == ["wheelfarm_demo-fork.patch"]
    assert demo_build.wheel.name == wheel.name  # same target as the checkout's own demo build
