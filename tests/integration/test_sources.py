"""Source and toolchain paths that need real tools: git fetch of a pinned commit (from a local
repository: GitHub is out of reach here), and a CUDA 13 toolkit assembled from NVIDIA's PyPI
wheels."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from packaging.version import Version

from tests.roots import REPO
from wheelfarm.builder import toolchain
from wheelfarm.builder.source import fetch, sdist_url
from wheelfarm.index.serve import served
from wheelfarm.matrix.model import PackageVersion, Source

pytestmark = pytest.mark.integration


def test_git_source_checks_out_the_pinned_commit_and_patches(tmp_path: Path) -> None:
    upstream = tmp_path / "upstream"
    shutil.copytree(REPO.path / "demo" / "wheelfarm-demo", upstream)
    git = ["git", "-C", str(upstream), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git[:3], "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "one"], check=True)
    commit = subprocess.run(
        [*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    (upstream / "setup.py").write_text("raise SystemExit('a later commit')\n")
    subprocess.run([*git, "commit", "-qam", "two"], check=True)
    source = PackageVersion(
        version=Version("0.1.0"), source=Source(git=upstream.as_uri(), commit=commit)
    )
    tree = fetch(
        "wheelfarm-demo",
        source,
        tmp_path / "work",
        root=REPO,
        cache=tmp_path / "cache",
        sdist_index="unused",
        log=tmp_path / "log",
    )
    assert "CUDAExtension" in (tree / "setup.py").read_text()  # the pinned commit, not HEAD


def _repo(path: Path, files: dict[str, str]) -> list[str]:
    """A one-commit repository at `path`; its git command prefix."""
    path.mkdir()
    for name, text in files.items():
        (path / name).write_text(text)
    git = ["git", "-C", str(path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git[:3], "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "one"], check=True)
    return git


def _head(git: list[str]) -> str:
    return subprocess.run(
        [*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()


def test_git_source_with_submodules_checks_out_the_pinned_submodule_commit(
    tmp_path: Path,
) -> None:
    sub = _repo(tmp_path / "glm", {"glm.hpp": "pinned\n"})
    pinned = _head(sub)
    upstream = _repo(tmp_path / "upstream", {"setup.py": "pass\n"})
    add = ["-c", "protocol.file.allow=always", "submodule", "add", "-q"]
    subprocess.run([*upstream, *add, (tmp_path / "glm").as_uri(), "third_party/glm"], check=True)
    subprocess.run([*upstream, "commit", "-qm", "glm"], check=True)
    commit = _head(upstream)
    (tmp_path / "glm" / "glm.hpp").write_text("later\n")  # the submodule moves on upstream
    subprocess.run([*sub, "commit", "-qam", "two"], check=True)

    def fetched(*, submodules: bool) -> Path:
        source = Source(git=(tmp_path / "upstream").as_uri(), commit=commit, submodules=submodules)
        return fetch(
            "glm-user",
            PackageVersion(version=Version("1.0"), source=source),
            tmp_path / f"work-{submodules}",
            root=REPO,
            cache=tmp_path / "cache",
            sdist_index="unused",
            log=tmp_path / "log",
        )

    assert (fetched(submodules=True) / "third_party/glm/glm.hpp").read_text() == "pinned\n"
    status = subprocess.run(
        ["git", "-C", str(tmp_path / "work-True" / "src"), "submodule", "status"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert pinned in status
    assert not (fetched(submodules=False) / "third_party/glm/glm.hpp").exists()


@pytest.mark.skipif(os.environ.get("WHEELFARM_SKIP_PYPI_TOOLKIT") == "1", reason="asked to skip")
def test_cuda13_toolkit_from_pypi_wheels(tmp_path: Path) -> None:
    home = toolchain.assemble_from_pypi("cu130", tmp_path / "tk", tmp_path / "log")
    env = {"PATH": os.environ["PATH"], "CUDA_HOME": str(home)}
    tc = toolchain.detect("cu130", env, work=tmp_path, log=tmp_path / "log", root=REPO)
    assert tc.cuda_home == home
    assert (tc.version.major, tc.version.minor) == (13, 0)
    assert (home / "include" / "cuda_runtime.h").is_file()


def test_the_sdist_is_found_on_a_pep503_page(tmp_path: Path) -> None:
    page = tmp_path / "simple" / "causal-conv1d"
    page.mkdir(parents=True)
    (page / "index.html").write_text(
        '<a href="../../f/causal_conv1d-1.7.0-py3-none-any.whl#sha256=00">causal_conv1d-1.7.0-py3-none-any.whl</a>'
        '<a href="../../f/causal_conv1d-1.6.0.tar.gz#sha256=11">causal_conv1d-1.6.0.tar.gz</a>'
        '<a href="../../f/causal_conv1d-1.7.0.tar.gz#sha256=22">causal_conv1d-1.7.0.tar.gz</a>'
    )
    with served(tmp_path) as url:
        found = sdist_url(f"{url}simple", "causal_conv1d", "1.7.0")
    assert found == f"{url}f/causal_conv1d-1.7.0.tar.gz"
