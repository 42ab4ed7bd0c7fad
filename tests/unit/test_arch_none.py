"""`arch: {via: none}`: a package that compiles no device code (pycuda JIT-compiles through nvcc
at run time) gets no arch list, costs one unit of build_minutes_per_arch, builds without
TORCH_CUDA_ARCH_LIST and passes verify without a fatbin."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from packaging.version import Version

from ghsim.synthetic import elf_with_fatbin, fatbin
from tests.roots import REPO
from wheelfarm.builder import toolchain
from wheelfarm.builder.binary import KIND_CUBIN
from wheelfarm.builder.build import NVCC_THREADS, compile_env, expectation
from wheelfarm.builder.target import resolve
from wheelfarm.builder.verify import verify_static
from wheelfarm.core.errors import ConfigError
from wheelfarm.core.wheelfile import write_wheel
from wheelfarm.matrix.expand import expand
from wheelfarm.matrix.load import load_matrix

from .conftest import package_yaml

TORCH_FREE = "{kind: torch-free}"
ONE_CELL = """\
    arch: {via: none}
    constraints: {torch: ">=2.14", cuda: "==13.0", python: "==3.12", platforms: [linux_x86_64]}
    build_minutes_per_arch: 6
    """
PYCUDA = "pycuda-2026.1-cu130-cp312-linux_x86_64"


def test_via_none_builds_with_no_archs_at_one_unit_of_minutes(
    matrix_dir: Callable[..., Path],
) -> None:
    m = load_matrix(matrix_dir({"pkg": package_yaml("pkg", abi=TORCH_FREE, extra=ONE_CELL)}))
    (b,) = expand(m).builds
    assert b.archs.archs == () and b.archs.torch == ""
    assert b.minutes == 6  # build_minutes_per_arch x 1, not x 0
    assert m.arch.for_target(m.package("pkg"), "cu130", "linux_x86_64").archs == ()


@pytest.mark.parametrize(
    ("arch", "key"),
    [
        ("arch: {via: none, override: [{archs: '9.0'}]}\n", "arch.override"),
        ("arch: {via: none, env: PKG_ARCHS}\n", "arch.env"),
    ],
)
def test_via_none_takes_no_arch_list(matrix_dir: Callable[..., Path], arch: str, key: str) -> None:
    root = matrix_dir({"pkg": package_yaml("pkg", abi=TORCH_FREE, extra=arch)})
    with pytest.raises(ConfigError, match=rf"pkg.yaml:\d+: {key}: not allowed when via is 'none'"):
        load_matrix(root)


def test_unknown_via_lists_none_among_the_allowed(matrix_dir: Callable[..., Path]) -> None:
    root = matrix_dir({"pkg": package_yaml("pkg", extra="arch: {via: nothing}\n")})
    with pytest.raises(
        ConfigError,
        match=r"arch.via: 'nothing' is not allowed \(allowed: torch, env, patch, none\)",
    ):
        load_matrix(root)


def test_the_shipped_pycuda_builds_without_an_arch_list(tmp_path: Path) -> None:
    matrix = load_matrix(REPO)
    target = resolve(matrix, expand(matrix), PYCUDA)
    assert target.build.torch is None and target.build.label == "cu130"
    tc = toolchain.Toolchain(tmp_path, tmp_path / "bin" / "nvcc", Version("13.0.88"), "gcc")
    link = {"LIBRARY_PATH": str(tmp_path / "stubs")}
    env = compile_env(target, tc, tmp_path / "venv" / "bin", None, tmp_path, tmp_path, link)
    assert "TORCH_CUDA_ARCH_LIST" not in env
    assert env["LIBRARY_PATH"] == str(tmp_path / "stubs")
    assert env["NVCC_THREADS"] == str(NVCC_THREADS)  # the same on every machine


def _pycuda_wheel(tmp: Path, binary: bytes) -> Path:
    info = "pycuda-2026.1+cu130.dist-info"
    files = {
        "pycuda/__init__.py": b"",
        "pycuda/_driver.cpython-312-x86_64-linux-gnu.so": binary,
        f"{info}/METADATA": b"Metadata-Version: 2.1\nName: pycuda\nVersion: 2026.1+cu130\n",
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nTag: cp312-cp312-manylinux_2_28_x86_64\n",
    }
    path = tmp / "pycuda-2026.1+cu130-cp312-cp312-manylinux_2_28_x86_64.whl"
    write_wheel(path, files, info)
    return path


def test_verify_expects_no_fatbin_and_refuses_one(tmp_path: Path) -> None:
    matrix = load_matrix(REPO)
    want = expectation(resolve(matrix, expand(matrix), PYCUDA))
    plain = _pycuda_wheel(tmp_path, elf_with_fatbin(b""))  # an ELF without device code
    assert verify_static(plain, want).problems == []
    (tmp_path / "sass").mkdir()
    sass = _pycuda_wheel(tmp_path / "sass", elf_with_fatbin(fatbin([(KIND_CUBIN, 90)])))
    (problem,) = verify_static(sass, want).problems
    assert problem == (
        "pycuda/_driver.cpython-312-x86_64-linux-gnu.so: unexpected SASS for sm_90 "
        "(policy: no device code, arch.via none)"
    )
