"""matrix/model.py: what the typed package view gives a build. A CMake build without torch
(llama-cpp-python) takes its arch list as CMAKE_CUDA_ARCHITECTURES inside CMAKE_ARGS, and a
package's Windows-only flags sit over its shared ones on that platform only."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.utils import canonicalize_name

from wheelfarm.matrix.model import Abi, ArchFormat, ArchList, Package


@pytest.mark.parametrize(
    ("listed", "fmt", "spelled"),
    [
        ("8.0;9.0;12.0+PTX", "cmake", "80-real;90-real;120-real;120-virtual"),
        ("9.0", "cmake", "90-real"),  # no PTX the policy did not ask for (plain '90' adds it)
        ("10.0a;12.0a", "cmake", "100a-real;120a-real"),
        ("8.0;9.0+PTX", "semicolon-int", "80;90"),
        ("8.0;9.0+PTX", "comma-int", "80,90"),
        ("8.0;9.0+PTX", "torch", "8.0;9.0+PTX"),
    ],
)
def test_each_format_spells_the_list(listed: str, fmt: ArchFormat, spelled: str) -> None:
    assert ArchList.parse(listed).spelled(fmt) == spelled


def _package(env: dict[str, str], platform_env: dict[str, dict[str, str]]) -> Package:
    return Package(
        name=canonicalize_name("pkg"),
        display_name="pkg",
        file=Path("pkg.yaml"),
        versions=(),
        abi=Abi(kind="torch-free"),
        arch_via="env",
        arch_env="CMAKE_CUDA_ARCHITECTURES",
        arch_format="cmake",
        env=env,
        platform_env=platform_env,
    )


def test_archs_in_env_are_the_builds_list_in_the_packages_format() -> None:
    pkg = _package({"CMAKE_ARGS": "-DGGML_CUDA=on -DCMAKE_CUDA_ARCHITECTURES={archs}"}, {})
    env = pkg.env_for("cu130", "linux_x86_64", ArchList.parse("9.0;12.0+PTX"))
    assert env == {
        "CMAKE_ARGS": "-DGGML_CUDA=on -DCMAKE_CUDA_ARCHITECTURES=90-real;120-real;120-virtual"
    }


def test_platform_env_applies_on_its_platform_only_and_wins() -> None:
    pkg = _package(
        {"DS_BUILD_OPS": "1", "DS_BUILD_AIO": "1"},
        {"win_amd64": {"DS_BUILD_AIO": "0", "CUDA_V": "{cuda}"}},
    )
    archs = ArchList.parse("9.0")
    assert pkg.env_for("cu130", "linux_x86_64", archs) == {"DS_BUILD_OPS": "1", "DS_BUILD_AIO": "1"}
    assert pkg.env_for("cu130", "win_amd64", archs) == {
        "DS_BUILD_OPS": "1",
        "DS_BUILD_AIO": "0",
        "CUDA_V": "13.0",
    }
