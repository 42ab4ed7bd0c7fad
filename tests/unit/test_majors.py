"""Tests of majors: one compile for the CUDA minors of a major (ADR 19), seen through expand
(filed by module: tests/README.md)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.roots import REPO
from tests.unit.helpers.roots import MATRIX, package_yaml
from wheelfarm.matrix.expand import Build, expand
from wheelfarm.matrix.load import load_matrix

SHIPPED = expand(MATRIX)  # the shipped catalog's expansion, made once for the tests below


def _builds_of(package: str, torch: str, platform: str = "linux_x86_64") -> list[Build]:
    return [
        b
        for b in SHIPPED.builds
        if b.package == package and b.torch_minor == torch and b.platform == platform
    ]


def test_the_minors_of_a_major_share_one_compile_of_every_variants_archs() -> None:
    """torch 2.15's cu130 and cu132 builds of flash-attn are one compile (ADR 19), by CUDA 13.0,
    keeping every SASS arch either variant's list names."""
    pkg = MATRIX.package("flash-attn")
    cu130, cu132 = sorted(
        (b for b in _builds_of("flash-attn", "2.15") if b.python == "3.11"),
        key=lambda b: b.cuda,
    )
    assert (cu130.cuda, cu132.cuda) == ("cu130", "cu132")
    assert (
        cu130.compile_id
        == cu132.compile_id
        == ("flash-attn-2.8.3.post2-cu13torch2.15-cp311-linux_x86_64")
    )
    assert cu130.compile_cuda == cu132.compile_cuda == "cu130"
    assert cu130.variants == cu132.variants == ("cu130", "cu132")
    assert cu130.label == "cu130torch2.15" and cu132.label == "cu132torch2.15"
    for b in (cu130, cu132):
        own = MATRIX.arch.for_target(pkg, b.version, b.cuda, b.platform).archs
        assert set(own) <= set(b.archs.archs), b.cuda


def test_a_twelve_x_compile_of_blackwell_archs_takes_the_toolkit_that_emits_them() -> None:
    """cu126 and cu128 share a compile; 12.6 cannot emit sm_100/sm_120, so 12.8 builds it."""
    (b, *_) = (
        b for b in _builds_of("causal-conv1d", "2.7") if b.cuda == "cu126" and b.python == "3.11"
    )
    assert {a.sm for a in b.archs.archs} >= {100, 120}
    assert b.compile_cuda == "cu128"
    assert set(b.variants) == {"cu126", "cu128"}


def test_a_stable_abi_compile_takes_the_newest_torch_shipping_every_variant() -> None:
    stable = [
        b
        for b in SHIPPED.builds
        if b.package == "xformers" and b.abi == "torch-stable" and b.cuda in ("cu130", "cu132")
    ]
    assert stable
    assert {b.torch for b in stable if b.platform == "linux_x86_64"} == {"2.15.0"}
    assert len({b.compile_id for b in stable if b.platform == "linux_x86_64"}) == 1


MINOR_CELLS = """\
    constraints: {torch: "==2.14", python: "==3.12", platforms: [linux_x86_64]}
    """


@pytest.mark.parametrize(
    ("code", "compiles"),
    [
        ("", 2),  # cu126 alone (12.x), cu130 + cu132 (13.x)
        ('cuda_minor_code: {at: ["13.2"], reason: "csrc/k.cu:10 #if CUDA_VERSION >= 13020"}\n', 3),
        ('cuda_minor_code: {at: ["12.8"], reason: "csrc/k.cu:10 #if CUDA_VERSION >= 12080"}\n', 2),
    ],
)
def test_cuda_minor_code_keeps_one_compile_per_run_of_minors(
    matrix_dir: Callable[..., Path], code: str, compiles: int
) -> None:
    m = load_matrix(matrix_dir({"pkg": package_yaml("pkg", extra=MINOR_CELLS + code)}))
    made = expand(m).builds
    assert sorted(b.cuda for b in made) == ["cu126", "cu130", "cu132"]
    assert len({b.compile_id for b in made}) == compiles
    for b in made:
        assert b.cuda in b.variants and b.compile_cuda in b.variants


def test_without_cuda_majors_every_minor_compiles_on_its_own(
    matrix_dir: Callable[..., Path],
) -> None:
    farm = (REPO.matrix / "farm.yaml").read_text(encoding="utf-8")
    farm = re.sub(r"^cuda_majors:\n(?:  .*\n)+", "", farm, flags=re.MULTILINE)
    m = load_matrix(matrix_dir({"pkg": package_yaml("pkg", extra=MINOR_CELLS)}, farm=farm))
    made = expand(m).builds
    assert len({b.compile_id for b in made}) == len(made) == 3
    assert all(b.variants == (b.cuda,) for b in made)
