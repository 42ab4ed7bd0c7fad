"""Tests of what target does (filed by module: tests/README.md)."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.roots import REPO
from tests.unit.helpers.roots import (
    ONLY_214,
    USER,
    MakeRoot,
    _root_distribution,
    _root_farm_requires,
)
from wheelfarm.builder.build import expectation
from wheelfarm.builder.target import FarmWheel, resolve, select
from wheelfarm.core.errors import PlanError
from wheelfarm.matrix.expand import expand
from wheelfarm.matrix.load import load_matrix


def test_resolve_unknown_build_id_suggests(tmp_path: Path) -> None:
    matrix = load_matrix(REPO)
    with pytest.raises(
        PlanError, match=r"did you mean 'causal-conv1d-1\.7\.0-cu130torch2\.14-cp312-linux_x86_64'"
    ):
        resolve(matrix, expand(matrix), "causal-conv1d-1.7.0-cu130torch2.14-cp312-linux_x86")


@pytest.mark.parametrize(
    ("build_id", "flags"),
    [
        ("pytorch3d-0.7.9-cu130torch2.14-cp312-win_amd64", "-Xcompiler /Zc:preprocessor"),
        ("pytorch3d-0.7.9-cu126torch2.9-cp312-win_amd64", None),  # CCCL 2: no such need
        ("pytorch3d-0.7.9-cu130torch2.14-cp312-linux_x86_64", None),
    ],
)
def test_windows_builds_get_compat_yamls_nvcc_flags_for_their_cuda(
    build_id: str, flags: str | None
) -> None:
    """CUDA 13's CCCL refuses MSVC's traditional preprocessor: every Windows build of a CUDA 13
    cell passes /Zc:preprocessor to nvcc's host pass (compat.yaml msvc_nvcc_flags), after the
    NVCC_APPEND_FLAGS already set; Linux and CUDA 12 builds get nothing."""
    from wheelfarm.builder.platforms import append_nvcc_flags

    matrix = load_matrix(REPO)
    target = resolve(matrix, expand(matrix), build_id)
    assert append_nvcc_flags({}, target.nvcc_flags).get("NVCC_APPEND_FLAGS") == flags
    if flags:
        before = {"NVCC_APPEND_FLAGS": "-DX"}
        assert append_nvcc_flags(before, target.nvcc_flags) == {"NVCC_APPEND_FLAGS": f"-DX {flags}"}


def test_the_target_pins_and_verifies_by_the_per_cuda_name(matrix_dir: MakeRoot) -> None:
    m = load_matrix(_root_distribution(matrix_dir))
    e = expand(m)
    t = resolve(m, e, "user-cu130-1.0.0-cu130-cp312-linux_x86_64")
    assert t.farm_requires == (
        FarmWheel(
            "base-cu130==1.0.0+cu130",
            "cu130",
            "2.14",
            "base-cu130-1.0.0-cu130-cp312-linux_x86_64",
            at_build=True,
        ),
    )
    assert t.farm_requires[0].requirement == "base-cu130==1.0.0"
    assert expectation(t).name == "user-cu130"
    assert t.build.package == "user"  # the package file it came from keeps its name


def test_the_target_pins_the_required_build_of_its_import_cell(matrix_dir: MakeRoot) -> None:
    m = load_matrix(_root_farm_requires(matrix_dir, USER))
    e = expand(m)
    t = resolve(m, e, "user-1.0.0-cu130torch2.13-cp311-linux_x86_64")
    assert t.farm_requires == (
        FarmWheel(
            "base==1.0.0+cu130torch2.13",
            "cu130",
            "2.13",
            "base-1.0.0-cu130torch2.13-cp311-linux_x86_64",
        ),
    )
    local = select(m, e, package="user", cuda="cu130", python="3.12", platform="linux_x86_64")
    assert local.farm_requires == (
        FarmWheel(
            "base==1.0.0+cu130torch2.14",
            "cu130",
            "2.14",
            "base-1.0.0-cu130torch2.14-cp312-linux_x86_64",
        ),
    )
    assert resolve(m, e, "base-1.0.0-cu130torch2.13-cp311-linux_x86_64").farm_requires == ()


TWO_VERSIONS = f"""\
name: pkg
versions:
  - version: "2.0"
    source: {{sdist: pkg, sha256: "{"b" * 64}"}}
  - version: "1.5"
    source: {{sdist: pkg, sha256: "{"c" * 64}"}}
    abi: {{kind: abi3}}
    build_minutes_per_arch: 7
abi: {{kind: cpython}}
arch: {{via: torch}}
import: [pkg]
build_minutes_per_arch: 1
{textwrap.dedent(ONLY_214)}"""


def test_a_local_build_takes_the_newest_version_or_the_one_asked_for(
    matrix_dir: Callable[..., Path],
) -> None:
    m = load_matrix(matrix_dir({"pkg": TWO_VERSIONS}))
    e = expand(m)
    where = {"package": "pkg", "cuda": "cu130", "python": "3.12", "platform": "linux_x86_64"}
    assert select(m, e, **where).build.version == "2.0"
    old = select(m, e, **where, version="1.5.0")  # PEP 440 equal
    assert (old.build.id, old.build.minutes / len(old.build.archs.archs)) == (
        "pkg-1.5-cu130torch2.14-cp310-abi3-linux_x86_64",
        7,
    )
    assert select(m, e, **where).build.minutes / len(old.build.archs.archs) == 1
    with pytest.raises(PlanError, match=r"pkg lists no version '1\.4': it lists 2\.0, 1\.5"):
        select(m, e, **where, version="1.4")
    with pytest.raises(PlanError, match="'not a version' is not a PEP 440 version"):
        select(m, e, **where, version="not a version")
