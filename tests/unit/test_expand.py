"""Tests of what expand does (filed by module: tests/README.md)."""

from __future__ import annotations

import dataclasses
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.roots import REPO
from tests.unit.helpers.roots import (
    ONLY_214,
    TORCH_FREE,
    USER,
    MakeRoot,
    _matrix,
    _root,
    _root_distribution,
    _root_farm_requires,
    package_yaml,
)
from wheelfarm.builder.target import resolve
from wheelfarm.core.errors import ConfigError, PlanError
from wheelfarm.core.root import FarmRoot
from wheelfarm.matrix.expand import expand
from wheelfarm.matrix.load import load_matrix

ONE_CELL = """\
    arch: {via: none}
    constraints: {torch: ">=2.14", cuda: "==13.0", python: "==3.12", platforms: [linux_x86_64]}
    build_minutes_per_arch: 6
    """


def test_via_none_builds_with_no_archs_at_one_unit_of_minutes(
    matrix_dir: Callable[..., Path],
) -> None:
    m = load_matrix(matrix_dir({"pkg": package_yaml("pkg", abi=TORCH_FREE, extra=ONE_CELL)}))
    (b,) = expand(m).builds
    assert b.archs.archs == () and b.archs.torch == ""
    assert b.minutes == 6  # build_minutes_per_arch x 1, not x 0
    assert m.arch.for_target(m.package("pkg"), "1.0", "cu130", "linux_x86_64").archs == ()


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        (
            '  cu121: {version: "12.1.1", manifest_sha256: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", gcc_toolset: 13, msvc_toolset: "14.29"}',
            "cu121 gcc_toolset 13: CUDA 12.1 accepts gcc <= 12 (compat.yaml); use gcc-toolset-12",
        ),
        (
            '  cu118: {version: "11.8.0", manifest_sha256: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", gcc_toolset: 11, msvc_toolset: "14.44"}',
            "cu118 msvc_toolset '14.44' is MSVC 19.44; CUDA 11.8 accepts MSVC 19.10-19.39",
        ),
        (
            '  cu126: {version: "12.6.3", manifest_sha256: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", gcc_toolset: 13, msvc_toolset: "14.38"}',
            "cu126 msvc_toolset '14.38' is not on windows-2022 (has 14.44, 14.29",
        ),
        (
            '  cu130: {version: "13.1.0", manifest_sha256: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", gcc_toolset: 14, msvc_toolset: "14.44"}',
            "cuda has no host-compiler facts for 13.1 (toolkits.yaml cu130)",
        ),
    ],
    ids=["gcc too new", "msvc too new", "msvc not installed", "no facts"],
)
def test_a_table_that_contradicts_the_facts_is_refused(
    matrix_dir: Callable[..., FarmRoot], line: str, problem: str
) -> None:
    matrix = load_matrix(_root(matrix_dir, toolkit_line=line))
    with pytest.raises(ConfigError) as err:
        expand(matrix)
    assert problem in str(err.value)


def test_missing_cuda13_components_are_refused(matrix_dir: Callable[..., FarmRoot]) -> None:
    root = matrix_dir({"demo-pkg": package_yaml()})
    path = root.matrix / "toolkits.yaml"
    path.write_text(path.read_text().replace('"13": [cuda_crt, libnvvm]', '"13": [cuda_crt]'))
    with pytest.raises(ConfigError, match="cu130 lacks libnvvm, which CUDA 13 nvcc needs"):
        expand(load_matrix(root))


def test_without_a_distribution_the_wheel_is_named_by_the_package(matrix_dir: MakeRoot) -> None:
    e = expand(load_matrix(_root_distribution(matrix_dir, base="")))
    assert "base-1.0.0-cu130-cp312-linux_x86_64" in e.by_id
    user = e.by_id["user-cu130-1.0.0-cu130-cp312-linux_x86_64"]
    assert user.requires == ("base-1.0.0-cu130-cp312-linux_x86_64",)


def test_builds_are_never_indexed_over_one_another(matrix_dir: MakeRoot) -> None:
    e = expand(load_matrix(_root_distribution(matrix_dir)))
    twin = dataclasses.replace(e.builds[0], package="newcomer")
    doubled = dataclasses.replace(e, builds=(*e.builds, twin))
    with pytest.raises(PlanError, match=f"build id '{twin.id}' is planned twice"):
        _ = doubled.by_id


def test_a_cell_the_required_package_does_not_serve_is_excluded(matrix_dir: MakeRoot) -> None:
    base_only_214 = 'constraints: {torch: ">=2.14", cuda: "==13.0", platforms: [linux_x86_64]}\n'
    e = expand(load_matrix(_root_farm_requires(matrix_dir, USER, base_only_214)))
    user = [b for b in e.builds if b.package == "user"]
    assert {c.torch for b in user for c in b.covers} == {"2.14"}
    dropped = [x for x in e.excluded if x.cell.package == "user" and "farm_requires" in x.rule]
    assert {x.cell.torch for x in dropped} == {"2.13"}
    assert "farm_requires base serves no cu130 / torch 2.13 / Python 3.10" in dropped[0].rule


def test_each_build_requires_the_build_of_its_own_cell(matrix_dir: MakeRoot) -> None:
    e = expand(load_matrix(_root_farm_requires(matrix_dir, USER)))
    b = e.by_id["user-1.0.0-cu130torch2.14-cp312-linux_x86_64"]
    assert b.requires == ("base-1.0.0-cu130torch2.14-cp312-linux_x86_64",)
    assert all(not x.requires for x in e.builds if x.package == "base")


def test_the_shipped_torch_sparse_waits_for_torch_scatter() -> None:
    from tests.roots import REPO

    m = load_matrix(REPO)
    e = expand(m)
    sparse = [b for b in e.builds if b.package == "torch-sparse"]
    assert sparse
    for b in sparse:
        (required,) = b.requires
        assert required == b.id.replace("torch-sparse-0.6.18", "torch-scatter-2.1.2")


def test_a_version_may_carry_its_own_abi(matrix_dir: Callable[..., Path]) -> None:
    """xformers: 0.0.34 is abi3 on the full torch ABI, 0.0.35 on the stable ABI."""
    text = f"""\
name: pkg
versions:
  - version: "0.0.34"
    source: {{sdist: pkg, sha256: "{"a" * 64}"}}
    abi: {{kind: abi3, python_floor: '3.9'}}
  - version: "0.0.35"
    source: {{sdist: pkg, sha256: "{"b" * 64}"}}
abi: {{kind: torch-stable, min_torch: '2.14', python: none, python_floor: '3.9'}}
arch: {{via: torch}}
import: [pkg]
{textwrap.dedent(ONLY_214)}"""
    ids = sorted(b.id for b in expand(load_matrix(matrix_dir({"pkg": text}))).builds)
    assert ids == [
        "pkg-0.0.34-cu130torch2.14-cp39-abi3-linux_x86_64",
        "pkg-0.0.35-cu130torch2.14.stable-py39-none-linux_x86_64",
    ]


def test_phantom_combinations_are_never_planned() -> None:
    m = load_matrix(REPO)
    e = expand(m)
    shipped = {
        (r.minor, cuda, plat, py)
        for r in m.releases
        for cuda, plats in r.builds.items()
        for plat in plats
        for py in r.pythons()
    }
    for c in e.cells:
        assert (c.torch, c.cuda, c.platform, c.python) in shipped
    ids = {c.id for c in e.cells}
    assert (
        "flash-attn-2.8.3.post2-cu128-torch2.14-cp312-linux_x86_64" not in ids
    )  # no cu128 after 2.11
    assert "causal-conv1d-1.7.0-cu130-torch2.8-cp312-linux_x86_64" not in ids  # cu130 from 2.9
    assert "causal-conv1d-1.7.0-cu126-torch2.14-cp39-linux_x86_64" not in ids  # 3.9 dropped in 2.9


@pytest.mark.parametrize(("flag", "torch"), [("import_with_torch: true\n", "2.14.1"), ("", None)])
def test_import_with_torch_imports_beside_the_newest_torch_of_its_cuda(
    matrix_dir: Callable[..., Path], flag: str, torch: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PIP_CONSTRAINT", "")  # no pip cap: not this machine's pip config
    extra = 'constraints: {cuda: "==13.0", platforms: [linux_x86_64]}\n' + flag
    m = _matrix(matrix_dir, "{kind: torch-free, python: abi3}", extra=extra)
    (b,) = expand(m).builds
    assert (b.torch, resolve(m, expand(m), b.id).import_torch) == (None, torch)


TWO_RELEASES = """\
    versions:
      - version: "2.0.0"
        source: {sdist: pkg, sha256: "SHA"}
        abi: {kind: torch-stable, min_torch: "2.13"}
      - version: "1.9.0"
        source: {sdist: pkg, sha256: "SHA"}
        abi: {kind: abi3, python_floor: "3.9"}
        torch: "<2.13"
        env: {SUFFIX: ".v19-{cuda_major}"}
    arch:
      via: torch
      override:
        - {version: "<2.0", archs: "8.0;9.0"}
        - {archs: "8.0;9.0;12.0"}
    env: {SUFFIX: ".v20", KEEP: "1"}
    constraints: {torch: ">=2.12", cuda: "==13.0", platforms: [linux_x86_64]}
    """.replace("SHA", "a" * 64)


def test_a_version_keeps_its_own_torch_range_env_and_arch_list(
    matrix_dir: Callable[..., Path],
) -> None:
    """sageattention's shape: an older per-torch release serves the torch minors below the
    stable-ABI release's floor, with its own version suffix and without the newer kernels."""
    m = load_matrix(matrix_dir({"pkg": package_yaml("pkg", extra=TWO_RELEASES)}))
    grid = expand(m)
    torches = {b.version: sorted({c.torch for c in b.covers}) for b in grid.builds}
    assert torches == {"2.0.0": ["2.13", "2.14"], "1.9.0": ["2.12"]}
    why = {
        (x.cell.version, x.cell.torch): x.rule
        for x in grid.excluded
        if (x.cell.cuda, x.cell.platform) == ("cu130", "linux_x86_64")
    }
    assert why["1.9.0", "2.13"] == "pkg.yaml: versions[1].torch <2.13"
    archs = {b.version: b.archs.spelled("torch") for b in grid.builds}
    assert archs == {"2.0.0": "8.0;9.0;12.0", "1.9.0": "8.0;9.0"}
    pkg = m.package("pkg")
    assert pkg.env_for("cu130", "linux_x86_64", None, "1.9.0") == {"SUFFIX": ".v19-13", "KEEP": "1"}
    assert pkg.env_for("cu130", "linux_x86_64", None, "2.0.0") == {"SUFFIX": ".v20", "KEEP": "1"}
