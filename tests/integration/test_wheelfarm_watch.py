"""Tests of what wheelfarm_watch does (filed by module: tests/README.md)."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from tests.integration.conftest import Wheel, releases, serve_index, shipped, wheelfarm
from tests.roots import REPO
from wheelfarm.core.digest import sha256_file
from wheelfarm.index.serve import served

pytestmark = pytest.mark.integration


def run_watch(
    farm: Path, tmp_path: Path, files: list[Wheel], *args: str, check: bool = True
) -> tuple[str, str, int]:
    site = tmp_path / "index"
    serve_index(site / "whl", files)
    with served(site) as url:
        result = wheelfarm("watch", "--torch-index", f"{url}whl/", "--pypi-index", "none",
                           "--summary", tmp_path / "summary.md", *args, cwd=farm,
                           check=check)  # fmt: skip
    return result.stdout, result.stderr, result.returncode


def accepted(farm: Path) -> dict[str, object]:
    wheelfarm("validate", cwd=farm)
    return json.loads(wheelfarm("plan", "--format", "json", cwd=farm).stdout)


# A package's own upstream: a project page on a served fake PyPI, real sdists behind it.
SETUP_OLD = "from setuptools import setup\nsetup(name='demo-up', version='{v}')\nCXX_STD = 17\n"


SETUP_NEW = "from setuptools import setup\nsetup(name='demo-up', version='{v}')\nCXX_STD = 20\n"


KEEPS = """--- a/setup.py
+++ b/setup.py
@@ -1,2 +1,3 @@
 from setuptools import setup
+import os
 setup(name='demo-up', version='{v}')
"""


BREAKS = """--- a/setup.py
+++ b/setup.py
@@ -2,2 +2,2 @@
 setup(name='demo-up', version='{v}')
-CXX_STD = 17
+CXX_STD = 23
"""


PACKAGE = """# yaml-language-server: $schema=../schema/package.schema.json
# a comment the watch keeps
name: {name}
versions:
  - version: "1.0"   # the farm's pin
    source: {{{source}}}
    patches: [{patches}]
abi: {{kind: cpython}}
arch: {{via: torch}}
import: [demo_up]
"""


def sdist(folder: Path, name: str, version: str, setup: str, *, link: bool = False) -> Path:
    """A real .tar.gz sdist `name-version/` holding setup.py (and, hostile, a symlink out)."""
    path = folder / f"{name}-{version}.tar.gz"
    with tarfile.open(path, "w:gz") as tf:
        data = setup.format(v=version).encode()
        info = tarfile.TarInfo(f"{name}-{version}/setup.py")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
        if link:
            out = tarfile.TarInfo(f"{name}-{version}/escape")
            out.type, out.linkname = tarfile.SYMTYPE, "/etc/passwd"
            tf.addfile(out)
    return path


def project(site: Path, name: str, files: list[tuple[Path, str]]) -> None:
    """A PEP 503 project page on the fake PyPI: each file with the sha256 the page gives."""
    page = site / "simple" / name
    page.mkdir(parents=True, exist_ok=True)
    links = []
    for path, sha256 in files:
        shutil.copy(path, page / path.name)
        links.append(f'<a href="{path.name}#sha256={sha256}">{path.name}</a>')
    (page / "index.html").write_text("<html><body>" + "".join(links) + "</body></html>")


def add_package(farm: Path, name: str, source: str, patches: dict[str, str]) -> Path:
    for patch, text in patches.items():
        (farm / "matrix" / "patches" / patch).write_text(text.format(v="1.0"))
    path = farm / "matrix" / "packages" / f"{name}.yaml"
    path.write_text(PACKAGE.format(name=name, source=source, patches=", ".join(patches)))
    return path


@pytest.fixture
def upstream_farm(tmp_path: Path) -> Path:
    """The shipped matrix with its package files swapped for test packages: no package asks a
    real host."""
    root = tmp_path / "farm"
    shutil.copytree(REPO.matrix, root / "matrix")
    for path in (root / "matrix" / "packages").glob("*.yaml"):
        path.unlink()
    return root


@pytest.fixture
def dists(tmp_path: Path) -> Path:
    """Where a test's sdists are made before the fake PyPI serves them."""
    folder = tmp_path / "dists"
    folder.mkdir()
    return folder


def run_upstream(farm: Path, site: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    serve_index(site / "whl", shipped())
    with served(site) as url:
        return wheelfarm("watch", "--torch-index", f"{url}whl/", "--pypi-index", f"{url}simple/",
                         "--summary", tmp_path / "summary.md", "--write", cwd=farm,
                         check=False)  # fmt: skip


def test_an_index_like_torch_yaml_changes_nothing(farm: Path, tmp_path: Path) -> None:
    before = (farm / "matrix" / "torch.yaml").read_text()
    out, _, _ = run_watch(farm, tmp_path, shipped(), "--write")
    assert "up to date" in out
    assert (farm / "matrix" / "torch.yaml").read_text() == before


def test_a_new_patch_release_moves_its_minor_forward(farm: Path, tmp_path: Path) -> None:
    files = shipped()
    files += [("2.14.2", c, p, pl, False) for v, c, p, pl, _ in files if v == "2.14.1"]
    before = (farm / "matrix" / "torch.yaml").read_text()
    out, _, _ = run_watch(farm, tmp_path, files, "--write")
    assert '-  - torch: "2.14.1"' in out and '+  - torch: "2.14.2"' in out
    after = (farm / "matrix" / "torch.yaml").read_text()
    assert after == before.replace('torch: "2.14.1"', 'torch: "2.14.2"')  # comments and all kept
    plan = accepted(farm)
    assert any("torch" in b and b["torch"] == "2.14.2" for b in plan["builds"])  # type: ignore[index, union-attr]


def test_a_new_minor_on_some_platforms_with_a_new_cuda(farm: Path, tmp_path: Path) -> None:
    files = shipped()
    files += [("2.16.0", "cu130", f"3.{m}", p, False) for m in (11, 12, 13, 14)
              for p in ("linux_x86_64", "linux_aarch64", "win_amd64")]  # fmt: skip
    files += [("2.16.0", "cu132", "3.12", "linux_x86_64", False)]  # one platform only
    files += [("2.16.0", "cu140", "3.12", "linux_x86_64", False)]  # a CUDA the farm lacks
    out, err, code = run_watch(farm, tmp_path, files, "--write", check=False)
    assert code == 10  # ConfigError: a person must add the new CUDA's arch lists and toolkit
    assert "policy.'14.0' needs arch lists for linux_x86_64" in err
    assert "toolkits.cu140 needs the full CUDA 14.0.x version" in err
    assert "`python scripts/pin_toolkit_manifest.py cu140 14.0.N` proposes the pin" in err
    new = releases(farm)["2.16"]
    assert new["python"] == ["3.11", "3.14"]
    assert new["builds"] == {
        "cu130": ["linux_x86_64", "linux_aarch64", "win_amd64"],
        "cu132": ["linux_x86_64"],
    }
    summary = (tmp_path / "summary.md").read_text()
    assert "torch 2.16.0: new release" in summary and "new builds" in summary
    plan = accepted(farm)  # written without cu140, it validates and plans unedited
    assert any(b["torch"] == "2.16.0" for b in plan["builds"])  # type: ignore[index, union-attr]
    assert '+  - torch: "2.16.0"' in out


def test_a_yanked_patch_is_left_for_the_one_before(farm: Path, tmp_path: Path) -> None:
    files = shipped()
    files += [("2.14.2", c, p, pl, True) for v, c, p, pl, _ in files if v == "2.14.1"]
    out, _, _ = run_watch(farm, tmp_path, files, "--write")
    assert "up to date" in out
    assert releases(farm)["2.14"]["torch"] == "2.14.1"


def test_an_unreachable_index_is_a_clear_error_and_no_change(farm: Path, tmp_path: Path) -> None:
    before = (farm / "matrix" / "torch.yaml").read_text()
    result = wheelfarm("watch", "--torch-index", "http://127.0.0.1:9/whl/", "--pypi-index",
                       "http://127.0.0.1:9/simple/", "--write", cwd=farm, check=False)  # fmt: skip
    assert result.returncode == 9
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert (farm / "matrix" / "torch.yaml").read_text() == before


def test_a_new_sdist_upstream_becomes_the_package_change_with_its_patches_tried(
    upstream_farm: Path, dists: Path, tmp_path: Path
) -> None:
    site = tmp_path / "site"
    old = sdist(dists, "demo_up", "1.0", SETUP_OLD)
    new = sdist(dists, "demo_up", "1.1", SETUP_NEW)  # its C++ line moved: BREAKS no longer applies
    newest = sdist(dists, "demo_up", "1.2rc1", SETUP_NEW)  # a pre-release: not proposed
    project(site, "demo-up", [(old, sha256_file(old)), (new, sha256_file(new)),
                              (newest, sha256_file(newest))])  # fmt: skip
    path = add_package(upstream_farm, "demo-up",
                       f"sdist: demo-up, sha256: {sha256_file(old)}",
                       {"demo_up-1.0-keeps.patch": KEEPS, "demo_up-1.0-breaks.patch": BREAKS})  # fmt: skip
    for name in ("demo-git", "demo-git2"):  # a git host that does not answer: one line, once
        add_package(upstream_farm, name,
                    f"git: https://127.0.0.1:9/demo/{name}, commit: {'a1' * 20}", {})  # fmt: skip
    before = path.read_text()
    result = run_upstream(upstream_farm, site, tmp_path)
    assert result.returncode == 10, result.stderr  # a patch a person must rebase
    assert "Traceback" not in result.stderr
    after = path.read_text()
    assert after == before.replace('"1.0"', '"1.1"').replace(sha256_file(old), sha256_file(new))
    assert f"+    source: {{sdist: demo-up, sha256: {sha256_file(new)}}}" in result.stdout
    summary = (tmp_path / "summary.md").read_text()
    assert "demo-up 1.0 -> 1.1 (demo_up-1.1.tar.gz, sha256" in summary
    assert "patches that still apply: demo_up-1.0-keeps.patch" in summary
    assert "patches that no longer apply: demo_up-1.0-breaks.patch" in summary
    assert "demo_up-1.0-breaks.patch no longer applies to demo-up 1.1" in result.stderr
    silent = [ln for ln in result.stderr.splitlines() if ln.startswith("demo-git")]
    assert silent[0].startswith("demo-git 1.0: upstream unchecked: 127.0.0.1 did not answer")
    assert silent[1] == "demo-git2 1.0: upstream unchecked: 127.0.0.1:9 did not answer (said above)"
    assert len(silent) == 2  # the fake PyPI on the same host, another port, answered
    wheelfarm("validate", cwd=upstream_farm)  # the written file is one validate accepts


def test_a_hostile_upstream_is_one_line_each_and_the_report_goes_on(
    upstream_farm: Path, dists: Path, tmp_path: Path
) -> None:
    site = tmp_path / "site"
    old = sdist(dists, "demo_up", "1.0", SETUP_OLD)
    patches = {"demo_up-1.0-keeps.patch": KEEPS}
    lying = sdist(dists, "demo_lie", "1.1", SETUP_OLD)
    project(site, "demo-lie", [(lying, "0" * 64)])  # the page's hash is not the file's
    linked = sdist(dists, "demo_link", "1.1", SETUP_OLD, link=True)
    project(site, "demo-link", [(linked, sha256_file(linked))])
    (site / "simple" / "demo-away").mkdir(parents=True)
    (site / "simple" / "demo-away" / "index.html").write_text(
        f'<a href="https://evil.invalid/demo_away-2.0.tar.gz#sha256={"0" * 64}">demo_away-2.0.tar.gz</a>'
    )
    for name in ("demo-lie", "demo-link", "demo-away", "demo-gone"):  # demo-gone: a 404
        add_package(upstream_farm, name, f"sdist: {name}, sha256: {sha256_file(old)}", patches)
    result = run_upstream(upstream_farm, site, tmp_path)
    assert result.returncode == 0 and "Traceback" not in result.stderr  # facts, no change
    lines = result.stderr.splitlines()
    assert any("demo-lie 1.0" in ln and "sha256 mismatch" in ln for ln in lines)
    assert any("demo-link 1.0" in ln and "symlink" in ln for ln in lines)
    assert any("demo-away 1.0: upstream unchecked" in ln and "evil.invalid" in ln for ln in lines)
    assert any("demo-gone 1.0: upstream unchecked" in ln and "404" in ln for ln in lines)
    assert not (upstream_farm / "escape").exists()
    away = (upstream_farm / "matrix" / "packages" / "demo-away.yaml").read_text()
    assert '"1.0"' in away  # nothing proposed from a file URL off the index's host
