"""`distribution` (a wheel named per CUDA, as spconv-cu130 requiring cumm-cu130) and
`farm_build_requires` (a farm wheel the build itself imports). Build ids, release tags, pins
and verify's expected name follow the wheel's own name, so a published wheel read back by
`build_id_from_wheel` is the build the planner made; the loader names each bad value."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable

import pytest

from wheelfarm.builder.build import expectation
from wheelfarm.builder.target import FarmWheel, resolve
from wheelfarm.core.errors import ConfigError, PlanError
from wheelfarm.core.root import FarmRoot
from wheelfarm.core.wheelname import build_id_from_wheel
from wheelfarm.github.assets import release_tag
from wheelfarm.matrix.expand import expand
from wheelfarm.matrix.load import load_matrix
from wheelfarm.matrix.plan import make_plan

from .conftest import package_yaml

MakeRoot = Callable[..., FarmRoot]
BASE = (
    'abi: {kind: torch-free}\nconstraints: {torch: ">=2.14", cuda: "==13.0", '
    "platforms: [linux_x86_64]}\n"
)
WHEEL = "base_cu130-1.0.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl"


def _root(matrix_dir: MakeRoot, base: str = 'distribution: "base-{cuda_tag}"\n') -> FarmRoot:
    user = BASE + "farm_requires: [base]\nfarm_build_requires: [base]\n"
    return matrix_dir(
        {
            "base": package_yaml("base", extra=BASE + base),
            "user": package_yaml("user", extra=user + 'distribution: "user-{cuda_tag}"\n'),
        }
    )


def test_the_build_id_is_the_wheels_own_name(matrix_dir: MakeRoot) -> None:
    m = load_matrix(_root(matrix_dir))
    e = expand(m)
    base = [b for b in e.builds if b.package == "base"]
    assert {b.distribution for b in base} == {"base-cu130"}
    assert build_id_from_wheel(WHEEL) in e.by_id
    assert release_tag(WHEEL) == "base-cu130-v1.0.0"
    # the published wheel is the planned build: the next plan skips it
    plan = make_plan(m, e, existing={build_id_from_wheel(WHEEL)})
    assert build_id_from_wheel(WHEEL) not in {b.id for b in plan.todo}


def test_the_target_pins_and_verifies_by_the_per_cuda_name(matrix_dir: MakeRoot) -> None:
    m = load_matrix(_root(matrix_dir))
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


def test_without_a_distribution_the_wheel_is_named_by_the_package(matrix_dir: MakeRoot) -> None:
    e = expand(load_matrix(_root(matrix_dir, base="")))
    assert "base-1.0.0-cu130-cp312-linux_x86_64" in e.by_id
    user = e.by_id["user-cu130-1.0.0-cu130-cp312-linux_x86_64"]
    assert user.requires == ("base-1.0.0-cu130-cp312-linux_x86_64",)


@pytest.mark.parametrize(
    ("extra", "problem"),
    [
        ('distribution: "base-cu"\n', "has no {cuda_tag}: it would be one name for every CUDA"),
        ('distribution: "base-{cuda_tag}-"\n', "is no distribution name once {cuda_tag} is cu130"),
        ('distribution: "base-{cuda}"\n', "does not match"),
        ("farm_build_requires: [user]\n", "'user' is not in farm_requires: add it there too"),
    ],
)
def test_the_loader_names_a_bad_value(matrix_dir: MakeRoot, extra: str, problem: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_matrix(_root(matrix_dir, base=extra))
    assert problem in str(info.value)
    assert "base.yaml" in str(info.value)


@pytest.mark.parametrize(
    ("name", "extra", "key"),
    [
        ("newcomer", 'distribution: "Base_{cuda_tag}"\n', "distribution"),  # cumm's, respelled
        ("base-cu130", "", "distribution"),  # a file named as base's per-CUDA wheel
    ],
)
def test_two_files_of_one_wheel_name_are_refused_naming_both(
    matrix_dir: MakeRoot, name: str, extra: str, key: str
) -> None:
    """Issue 36: a second file claiming `base-cu130` would give its builds base's ids, and
    `build` of base's id would build the newcomer's source."""
    user = BASE + "farm_requires: [base]\nfarm_build_requires: [base]\n"
    root = matrix_dir(
        {
            "base": package_yaml("base", extra=BASE + 'distribution: "base-{cuda_tag}"\n'),
            "user": package_yaml("user", extra=user + 'distribution: "user-{cuda_tag}"\n'),
            name: package_yaml(name, extra=BASE + extra),
        }
    )
    with pytest.raises(ConfigError) as info:
        load_matrix(root)
    (line,) = [p for p in str(info.value).splitlines() if "wheel name" in p]
    files = sorted([f"{name}.yaml", "base.yaml"])  # the later file is refused, naming the first
    wanted = rf"{files[1]}: {key}: wheel name 'base-cu1\d+' is also {files[0]}'s: one package file"
    assert re.search(wanted.replace(".yaml", r"\.yaml"), line)


def test_builds_are_never_indexed_over_one_another(matrix_dir: MakeRoot) -> None:
    e = expand(load_matrix(_root(matrix_dir)))
    twin = dataclasses.replace(e.builds[0], package="newcomer")
    doubled = dataclasses.replace(e, builds=(*e.builds, twin))
    with pytest.raises(PlanError, match=f"build id '{twin.id}' is planned twice"):
        _ = doubled.by_id
