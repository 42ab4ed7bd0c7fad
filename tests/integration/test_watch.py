"""`wheelfarm watch` against a local index laid out like PyTorch's (download.pytorch.org/whl/:
a root `torch/` page listing every variant's wheels, and `cuXYZ/torch/` pages), in its real page
shape, served on loopback: each scenario ends in a torch.yaml that validate and plan accept."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import quote

import pytest
import yaml

from tests.roots import REPO
from wheelfarm.index.serve import served

from .conftest import wheelfarm

pytestmark = pytest.mark.integration
PLATFORM_TAGS = {
    "linux_x86_64": "manylinux_2_28_x86_64",
    "linux_aarch64": "manylinux_2_28_aarch64",
    "win_amd64": "win_amd64",
}
Wheel = tuple[str, str, str, str, bool]  # version, cuda, python, platform, yanked


def page(files: Iterable[Wheel], prefix: str) -> str:
    """A torch project page as download.pytorch.org writes it (absolute paths, %2B, hashes)."""
    rows = []
    for version, cuda, python, platform, yanked in files:
        cp = f"cp{python.replace('.', '')}"
        name = f"torch-{version}+{cuda}-{cp}-{cp}-{PLATFORM_TAGS[platform]}.whl"
        attrs = ' data-yanked=""' if yanked else ""
        rows.append(
            f'    <a href="{prefix}{cuda}/{quote(name)}#sha256={"0" * 64}" '
            f'data-dist-info-metadata="sha256={"1" * 64}"{attrs}>{name}</a><br/>'
        )
    return (
        "<!DOCTYPE html>\n<html>\n  <body>\n    <h1>Links for torch</h1>\n"
        + "\n".join(rows)
        + "\n  </body>\n</html>\n"
    )


def shipped() -> list[Wheel]:
    """Every wheel torch.yaml says torch ships (the index as it is today)."""
    data = yaml.safe_load((REPO.matrix / "torch.yaml").read_text())
    out = []
    for r in data["releases"]:
        lo, hi = (int(v.split(".")[1]) for v in r["python"])
        for cuda, platforms in r["builds"].items():
            out += [
                (r["torch"], cuda, f"3.{m}", p, False) for p in platforms for m in range(lo, hi + 1)
            ]
    return out


def serve_index(folder: Path, files: list[Wheel]) -> None:
    (folder / "torch").mkdir(parents=True)
    (folder / "torch" / "index.html").write_text(page(files, "/whl/"))
    for cuda in {f[1] for f in files}:
        (folder / cuda / "torch").mkdir(parents=True)
        (folder / cuda / "torch" / "index.html").write_text(
            page([f for f in files if f[1] == cuda], "/whl/")
        )


@pytest.fixture
def farm(tmp_path: Path) -> Path:
    root = tmp_path / "farm"
    shutil.copytree(REPO.matrix, root / "matrix")
    return root


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


def releases(farm: Path) -> dict[str, dict[str, object]]:
    data = yaml.safe_load((farm / "matrix" / "torch.yaml").read_text())
    return {r["torch"].rsplit(".", 1)[0]: r for r in data["releases"]}


def accepted(farm: Path) -> dict[str, object]:
    wheelfarm("validate", cwd=farm)
    return json.loads(wheelfarm("plan", "--format", "json", cwd=farm).stdout)


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
