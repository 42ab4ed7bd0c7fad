"""The builder for real: nvcc compiles the demo, auditwheel repairs it, verify reads its fatbin,
and pip installs and imports it. Negative cases tamper with that real wheel."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.roots import REPO
from wheelfarm.core.digest import sha256_file
from wheelfarm.core.wheelfile import dist_info, write_wheel

from .conftest import DemoBuild, fresh_venv, pip, wheelfarm

pytestmark = pytest.mark.integration


def test_demo_wheel_is_repaired_labelled_and_imports(demo_build: DemoBuild, tmp_path: Path) -> None:
    wheel = demo_build.wheel
    assert "+cu130torch2.14-" in wheel.name
    assert "-manylinux_" in wheel.name  # auditwheel repaired it
    assert demo_build.record["archs_found"] == {
        next(iter(demo_build.record["archs_found"])): {
            "cubins": ["sm_80", "sm_90"],
            "ptx": ["sm_90"],
        }
    }
    py = fresh_venv(tmp_path / "venv", demo_build.torch_env)
    installed = pip(py, "install", "--no-deps", "--no-index", wheel)
    assert installed.returncode == 0, installed.stderr
    show = pip(py, "show", "wheelfarm-demo").stdout
    assert "Version: 0.1.0+cu130torch2.14" in show
    out = subprocess.run(
        [py, "-c", "import torch, wheelfarm_demo; print(wheelfarm_demo._C.saxpy.__doc__)"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert "alpha * x + y" in out


def test_verify_reports_exactly_the_policy_archs(demo_build: DemoBuild) -> None:
    result = wheelfarm("verify", demo_build.wheel, "--local", "--no-import")
    assert "SASS sm_80 sm_90; PTX sm_90" in result.stdout
    cp = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    assert result.stdout.strip().endswith(
        f"matches wheelfarm-demo-0.1.0-cu130torch2.14-{cp}-linux_x86_64"
    )


def test_verify_fails_a_missing_arch(demo_build: DemoBuild, tmp_path: Path) -> None:
    # the wheel alone: beside its build record, verify takes the record's archs and refuses an
    # --archs that contradicts them
    alone = Path(shutil.copy(demo_build.wheel, tmp_path))
    result = wheelfarm(
        "verify",
        alone,
        "--local",
        "--no-import",
        "--archs",
        "8.0;9.0;10.0+PTX",
        check=False,
    )
    assert result.returncode == 6
    assert "missing SASS for sm_100" in result.stderr
    assert "unexpected PTX for sm_90" in result.stderr


def _tamper(wheel: Path, dest_dir: Path, edit: object) -> Path:
    with zipfile.ZipFile(wheel) as zf:
        files = {n: zf.read(n) for n in zf.namelist()}
    info = dist_info(list(files))
    edit(files, info)  # type: ignore[operator]
    dest = dest_dir / wheel.name
    write_wheel(dest, files, info)
    return dest


def test_verify_fails_a_vendored_libtorch(demo_build: DemoBuild, tmp_path: Path) -> None:
    libc10 = next(demo_build.torch_env.glob("lib/python*/site-packages/torch/lib/libc10.so"))

    def add_libc10(files: dict[str, bytes], info: str) -> None:
        files["wheelfarm_demo.libs/libc10.so"] = libc10.read_bytes()

    bad = _tamper(demo_build.wheel, tmp_path, add_libc10)
    result = wheelfarm("verify", bad, "--local", "--no-import", check=False)
    assert result.returncode == 6
    assert "ships wheelfarm_demo.libs/libc10.so: torch/CUDA provide it" in result.stderr


def test_verify_fails_filename_metadata_mismatch(demo_build: DemoBuild, tmp_path: Path) -> None:
    def wrong_version(files: dict[str, bytes], info: str) -> None:
        meta = files[f"{info}/METADATA"].decode()
        files[f"{info}/METADATA"] = meta.replace(
            "Version: 0.1.0+cu130torch2.14", "Version: 0.1.0+cu130torch2.13"
        ).encode()

    bad = _tamper(demo_build.wheel, tmp_path, wrong_version)
    result = wheelfarm("verify", bad, "--local", "--no-import", check=False)
    assert result.returncode == 6
    assert (
        "METADATA Version '0.1.0+cu130torch2.13' != file name version '0.1.0+cu130torch2.14'"
        in result.stderr
    )


def test_verify_fails_a_renamed_wheel(demo_build: DemoBuild, tmp_path: Path) -> None:
    renamed = tmp_path / demo_build.wheel.name.replace("+cu130torch2.14", "+cu130torch2.13")
    shutil.copy(demo_build.wheel, renamed)
    result = wheelfarm("verify", renamed, "--local", "--no-import", check=False)
    assert result.returncode == 6
    assert "file name: version 0.1.0+cu130torch2.13, expected 0.1.0+cu130torch2.14" in result.stderr


def test_a_wheel_that_fails_verify_never_reaches_the_wheelhouse(
    tmp_path: Path, cache_dir: Path
) -> None:
    root = tmp_path / "fork"  # a farm root holding the edited YAML and the demo it builds
    shutil.copytree(REPO.matrix, root / "matrix")
    shutil.copytree(REPO.path / "demo", root / "demo", ignore=shutil.ignore_patterns("build"))
    demo = root / "matrix" / "packages" / "wheelfarm-demo.yaml"
    demo.write_text(
        demo.read_text().replace(
            "import: [wheelfarm_demo, wheelfarm_demo._C]",
            "import: [wheelfarm_demo, wheelfarm_demo.missing]",
        )
    )
    out, work = tmp_path / "out", tmp_path / "work"
    result = wheelfarm(
        "build",
        "--local",
        "--root",
        root,
        "--out",
        out,
        "--work",
        work,
        "--cache",
        cache_dir,
        check=False,
    )
    assert result.returncode == 6
    assert (
        "import of wheelfarm_demo, wheelfarm_demo.missing failed in a fresh venv" in result.stderr
    )
    assert "[7/8] verify FAILED" in result.stderr
    assert list(out.glob("*.whl")) == []  # nothing publishable left behind
    assert (out / "logs").is_dir() and any(work.iterdir())  # logs and work folder kept


def test_the_same_target_built_again_elsewhere_gives_the_same_bytes(
    demo_build: DemoBuild, tmp_path: Path, cache_dir: Path
) -> None:
    """Another work folder, another time: repair and all, the wheel is byte-identical."""
    out = tmp_path / "again"
    result = wheelfarm("build", "--local", "--out", out, "--work", tmp_path / "elsewhere",
                       "--cache", cache_dir)  # fmt: skip
    again = Path(result.stdout.strip().splitlines()[-1])
    assert again.name == demo_build.wheel.name
    assert sha256_file(again) == sha256_file(demo_build.wheel)


def test_verify_rebuild_says_identical_or_names_the_members_that_differ(
    demo_build: DemoBuild, tmp_path: Path, cache_dir: Path
) -> None:
    """The rebuild compiles cold (an empty compiler cache) in its own work folder: the prefix
    maps, the local symbols dropped at link and nvcc's module id named by the path inside the
    work folder make it byte-identical to the session's demo wheel, its record too but for
    times. (Through ccache, as every farm build compiles: with CCACHE_DISABLE=1 the bytes are
    reproducible too, but others, for ccache hands the compiler paths relative to the work
    folder.)"""
    cold = {**os.environ, "CCACHE_DIR": str(tmp_path / "empty-ccache")}
    same = wheelfarm("verify", demo_build.wheel, "--rebuild", "--cache", cache_dir, env=cold)
    assert same.stdout.startswith(f"identical: {demo_build.wheel.name} rebuilt from ")
    record = json.loads(
        demo_build.wheel.with_name(demo_build.wheel.name + ".build.json").read_text()
    )
    assert record["environment"]["NVCC_APPEND_FLAGS"] == "-Xcompiler=-ffile-prefix-map=<work>=."
    assert "timing" in record and "created" not in record

    def edit_init(files: dict[str, bytes], info: str) -> None:
        files["wheelfarm_demo/__init__.py"] += b"# changed\n"

    changed = _tamper(demo_build.wheel, tmp_path, edit_init)
    record = demo_build.wheel.with_name(demo_build.wheel.name + ".build.json")
    result = wheelfarm("verify", changed, "--rebuild", "--record", record, "--cache", cache_dir,
                       check=False)  # fmt: skip
    assert result.returncode == 6, result.stderr[-2000:]
    assert "not byte-identical to its rebuild" in result.stderr
    assert "wheelfarm_demo/__init__.py: differs" in result.stderr
    assert ".so: differs" not in result.stderr
