"""docs/building.md's "Add a package", walked as a maintainer follows it: a copy of the farm root
gains a package the farm has never seen (the demo's source under another name, `guide-kernels`),
written from the guide's template, then validate, coverage --write-docs, plan, a one-arch local
build with nvcc, verify, index --strict, serve, and the pinned command `index` prints, run with
pip in a fresh venv holding the cell's torch. The only change to a printed command: PyTorch's
index is a served empty folder (this machine reaches no download.pytorch.org; the torch there is
already the cell's, so nothing is asked of it)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.conftest import fresh_venv, torch_env_of, wheelfarm
from tests.roots import REPO
from wheelfarm.index.serve import served

pytestmark = pytest.mark.integration

PACKAGE_FILE = """\
# yaml-language-server: $schema=../schema/package.schema.json
name: guide-kernels
versions:
  - version: "1.0.0"
    source: {path: demo/guide-kernels}
    patches: []
abi: {kind: cpython}
arch: {via: torch}
constraints:
  platforms: [linux_x86_64]
import: [guide_kernels, guide_kernels._C]
build_minutes_per_arch: 0.6
"""


def new_package(root: Path) -> None:
    """The demo's source as `guide-kernels` 1.0.0 (module guide_kernels), and its package file."""
    src = root / "demo" / "guide-kernels"
    shutil.copytree(REPO.path / "demo" / "wheelfarm-demo", src)
    (src / "wheelfarm_demo").rename(src / "guide_kernels")
    for path in [p for p in src.rglob("*") if p.is_file()]:
        text = path.read_text(encoding="utf-8")
        text = text.replace("wheelfarm-demo", "guide-kernels").replace(
            "wheelfarm_demo", "guide_kernels"
        )
        path.write_text(text.replace('version="0.1.0"', 'version="1.0.0"'), encoding="utf-8")
    (root / "matrix" / "packages" / "guide-kernels.yaml").write_text(PACKAGE_FILE)


def test_a_new_package_goes_from_the_guides_template_to_a_pinned_install(
    tmp_path: Path, cache_dir: Path
) -> None:
    root = tmp_path / "farm"
    root.mkdir()
    for part in ("matrix", "docs", "index"):  # a checkout: the package files, docs, templates
        shutil.copytree(REPO.path / part, root / part)
    shutil.copy(REPO.readme, root / "README.md")
    new_package(root)

    def step(*args: str | Path) -> str:
        return wheelfarm(*args, cwd=root).stdout  # run in the checkout, as the guide does

    step("validate")  # 3.
    step("coverage", "--write-docs")
    assert "| guide-kernels | linux_x86_64 |" in (root / "docs" / "coverage.md").read_text()
    packages = len(list(REPO.packages.glob("*.yaml"))) + 1
    assert f"({packages} packages, " in (root / "README.md").read_text()
    plan = step("plan", "--package", "guide-kernels")  # 4.
    assert "guide-kernels" in plan
    built = wheelfarm("build", "--local", "--package", "guide-kernels", "--archs", "9.0", cwd=root)
    said = built.stdout + built.stderr  # 5.: the archs, the compile's time, the cache's hits
    assert "archs: 9.0; MAX_JOBS=" in said and re.search(r"compile done in [\d.]+s", said)
    assert re.search(r"compiler cache: \d+ hits, \d+ misses", said)
    assert "importlib" not in said  # a fixed program is counted in the log, not echoed
    (wheel,) = (root / "wheelhouse").glob("guide_kernels-1.0.0+*.whl")
    assert wheel.with_name(wheel.name + ".build.json").is_file()
    step("verify", wheel.relative_to(root))  # 6.
    printed = step("index", "--strict")  # 7.
    (command,) = (ln.strip() for ln in printed.splitlines() if "guide-kernels==" in ln)
    label = wheel.name.split("-")[1].split("+")[1]
    assert command.startswith(
        f'pip install "guide-kernels==1.0.0+{label}" --extra-index-url http://127.0.0.1:8000/'
    )
    serve = subprocess.Popen([sys.executable, "-m", "wheelfarm", "serve", "--port", "0"], cwd=root,
                             stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert serve.stdout is not None
        site = re.search(r"at (http://\S+/)", serve.stdout.readline())
        assert site is not None
        py = fresh_venv(tmp_path / "venv", torch_env_of(cache_dir, tmp_path / "env.log"))
        # the venv's own setuptools (65.5, from ensurepip) would shadow the torch env's, which
        # meets torch's `setuptools>=77.0.3`; a user's venv where torch was installed has it
        subprocess.run([py, "-m", "pip", "uninstall", "-q", "-y", "setuptools"], check=True)
        (tmp_path / "pytorch").mkdir()
        with served(tmp_path / "pytorch") as pytorch:
            argv = shlex.split(command.replace("http://127.0.0.1:8000/", site[1]))
            argv = [pytorch if a.startswith("https://download.pytorch.org/") else a for a in argv]
            env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
            env |= {"PIP_CONFIG_FILE": os.devnull, "PIP_INDEX_URL": pytorch}  # no PyPI here
            done = subprocess.run([py, "-m", *argv], capture_output=True, text=True, env=env,
                                  check=False)  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert f"guide-kernels-1.0.0+{label}" in done.stdout
    finally:
        serve.terminate()
        serve.wait(timeout=10)
        if serve.stdout is not None:
            serve.stdout.close()
    imported = subprocess.run([py, "-c", "import torch, guide_kernels._C; print('ok')"],
                              capture_output=True, text=True, check=False)  # fmt: skip
    assert imported.stdout.strip() == "ok", imported.stderr
