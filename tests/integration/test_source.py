"""Tests of what source does (filed by module: tests/README.md)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from packaging.version import Version

from tests.integration.conftest import dripping, serve
from tests.roots import REPO
from wheelfarm.builder.source import fetch, sdist_url
from wheelfarm.core.errors import BuildError, NetworkError
from wheelfarm.core.http import DeadlineError
from wheelfarm.core.root import FarmRoot
from wheelfarm.index.serve import served
from wheelfarm.matrix.model import PackageVersion, Source

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("url", ["ext::sh -c touch% {marker}", "--upload-pack=touch {marker}"])
def test_a_git_url_never_runs_a_command(url: str, tmp_path: Path) -> None:
    """The loader refuses these URLs; fetch is safe even for a hand-made Source."""
    marker = tmp_path / "pwned"
    source = Source(git=url.format(marker=marker), commit="0" * 40)
    with pytest.raises(BuildError):
        fetch(
            "pkg",
            PackageVersion(version=Version("1.0"), source=source),
            tmp_path / "work",
            root=REPO,
            cache=tmp_path / "cache",
            sdist_index="unused",
            log=tmp_path / "log",
        )
    assert not marker.exists()


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


def _fetch_within(source: PackageVersion, tmp: Path, index: str) -> tuple[str, float]:
    """fetch with a 2 s --timeout: the DeadlineError's message and the seconds it took."""
    started = time.monotonic()
    with pytest.raises(DeadlineError) as caught:
        fetch("causal-conv1d", source, tmp / "work", root=REPO, cache=tmp / "cache",
              sdist_index=index, log=tmp / "log", timeout=2.0)  # fmt: skip
    return str(caught.value), time.monotonic() - started


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


def test_an_sdist_index_dripping_bytes_cannot_hold_the_build_past_its_timeout(
    tmp_path: Path,
) -> None:
    """A page that sends a byte every half second (each read is quick, so the per-request
    timeout never fires): build's --timeout stops the source step, exit 9 (a NetworkError)."""

    source = PackageVersion(version=Version("1.7.0"),
                            source=Source(sdist="causal-conv1d", sha256="0" * 64))  # fmt: skip
    with serve(dripping("text/html")) as base:
        message, took = _fetch_within(source, tmp_path, f"{base}/simple/")
    assert "stopped at the overall time limit (--timeout 2s)" in message
    assert took < 8


def test_a_git_fetch_that_hangs_is_killed_at_the_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A remote that never answers (a git that sleeps in its fetch): killed at --timeout, one
    DeadlineError naming the URL and the option, not a build error about git."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    real = shutil.which("git")
    fake = bin_dir / "git"
    fake.write_text(f'#!/bin/sh\ncase " $* " in *" fetch "*) sleep 60;; esac\nexec {real} "$@"\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    source = PackageVersion(version=Version("1.7.0"),
                            source=Source(git="https://example.invalid/x.git", commit="a" * 40))  # fmt: skip
    message, took = _fetch_within(source, tmp_path, "unused")
    assert message.startswith("git fetch of https://example.invalid/x.git stopped at the overall")
    assert "--timeout 2s" in message
    assert took < 8


def test_a_wrong_sha256_names_the_package_file_line_and_the_files_hash(tmp_path: Path) -> None:
    """A maintainer's new package file with a mistyped sha256: the error names the YAML file and
    line that pin it and the hash of the file served, so the fix is one edit."""
    sdist = tmp_path / "site" / "f" / "newpkg-1.0.tar.gz"
    sdist.parent.mkdir(parents=True)
    sdist.write_bytes(b"not the pinned bytes")
    got = hashlib.sha256(sdist.read_bytes()).hexdigest()
    page = tmp_path / "site" / "simple" / "newpkg"
    page.mkdir(parents=True)
    (page / "index.html").write_text('<a href="../../f/newpkg-1.0.tar.gz">newpkg-1.0.tar.gz</a>')
    root = tmp_path / "farm"
    (root / "matrix" / "packages").mkdir(parents=True)
    wrong = "ab" * 32
    (root / "matrix" / "packages" / "newpkg.yaml").write_text(
        f'name: newpkg\nversions:\n  - version: "1.0"\n    source: {{sdist: newpkg, sha256: "{wrong}"}}\n'
    )
    source = PackageVersion(version=Version("1.0"), source=Source(sdist="newpkg", sha256=wrong))
    with served(tmp_path / "site") as url, pytest.raises(NetworkError) as caught:
        fetch("newpkg", source, tmp_path / "work", root=FarmRoot(root), cache=tmp_path / "cache",
              sdist_index=f"{url}simple/", log=tmp_path / "log")  # fmt: skip
    assert str(caught.value) == (
        f"sha256 mismatch for {url}f/newpkg-1.0.tar.gz: expected {wrong}, got {got}; "
        f"matrix/packages/newpkg.yaml:4 pins {wrong}: if {got} is the sha256 its index lists "
        "for the file, put it there; else the file changed upstream"
    )
